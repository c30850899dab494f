"""Which stand-ins of Keystone and Glance the API serves: one rule for the
all-in-one, scheduler-split-api and the WSGI entry point of a
deployment."""

import webob

from scheduler_split.api import wsgi


def _get(app, path):
    return webob.Request.blank(path).get_response(app)


def test_without_authentication_the_api_serves_identity_and_images():
    app = wsgi.make_app(compute_api=object(), auth_strategy='noauth2')
    assert _get(app, '/identity/v3').json['version']['id'] == 'v3.14'
    assert _get(app, '/image').status_int == 200
    token = webob.Request.blank('/identity/v3/auth/tokens', method='POST',
                                json={'auth': {'identity': {
                                    'methods': ['token'],
                                    'token': {'id': 'demo:demo'}}}})
    resp = token.get_response(app)
    assert resp.headers['X-Subject-Token'] == 'demo:demo'
    assert {e['type'] for e in resp.json['token']['catalog']} == {
        'compute', 'placement', 'image', 'identity'}


def test_behind_keystone_no_stand_in_identity_is_served():
    routes, public = wsgi.stand_ins('keystone')
    assert not [p for p in routes if p.startswith('/identity')]
    assert not [p for p in public if p.startswith('/identity')]
    # The images the boots read are still there for clients.
    assert '/image/v2/images' in routes


def test_with_an_image_service_the_api_serves_no_image_catalog(override):
    override('source', 'glance', group='glance')
    override('api_servers', ['http://glance.example.org:9292'],
             group='glance')
    routes, _ = wsgi.stand_ins('noauth2')
    assert not [p for p in routes if p.startswith('/image')]
    app = wsgi.make_app(compute_api=object(), auth_strategy='noauth2')
    assert _get(app, '/image').status_int == 404
    resp = webob.Request.blank('/identity/v3/auth/tokens', method='POST',
                               json={'auth': {'identity': {
                                   'methods': ['token'],
                                   'token': {'id': 'admin:admin'}}}}
                               ).get_response(app)
    images = [e for e in resp.json['token']['catalog']
              if e['type'] == 'image']
    assert images[0]['endpoints'][0]['url'] == \
        'http://glance.example.org:9292'
