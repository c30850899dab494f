"""Bad input gets a 4xx in Nova's error shape, never a 500."""

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.functional


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    from tests.functional import fixtures
    system = fixtures.System(tmp_path_factory.mktemp('errors'), 1, 1).start()
    yield system.api
    system.stop()


_error = fixtures.nova_error


def _create(api, server, **top):
    body = {'server': server}
    body.update(top)
    return api.post('/v2.1/servers', body)


GOOD = {'name': 'vm', 'flavorRef': '1',
        'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01',
        'networks': 'none'}


@pytest.mark.parametrize('change, words', [
    ({'flavorRef': None}, 'flavorRef'),
    ({'name': ''}, 'name'),
    ({'name': ' padded '}, 'name'),
    ({'unknown_field': 1}, 'unknown_field'),
    ({'min_count': 0}, 'min_count'),
    ({'min_count': 3, 'max_count': 2}, 'min_count'),
    ({'networks': 'everything'}, 'networks'),
    ({'metadata': {'k': 5}}, 'metadata'),
])
def test_invalid_server_create_is_a_bad_request(api, change, words):
    server = dict(GOOD, **change)
    if change.get('flavorRef', '') is None:
        del server['flavorRef']
    assert words in _error(_create(api, server), 400, 'badRequest')


def test_unknown_flavor_and_image_are_bad_requests(api):
    assert 'Flavor' in _error(_create(api, dict(GOOD, flavorRef='999')),
                              400, 'badRequest')
    assert 'image' in _error(_create(api, dict(GOOD, imageRef='nope')),
                             400, 'badRequest')


def test_networks_are_required_from_microversion_2_37(api):
    server = {k: v for k, v in GOOD.items() if k != 'networks'}
    _error(_create(api, server), 400, 'badRequest')
    old = api.as_user('admin:admin')
    old.session.headers['OpenStack-API-Version'] = 'compute 2.1'
    assert _create(old, server).status_code == 202


def test_image_as_block_device_boot_source_is_accepted(api):
    server = {k: v for k, v in GOOD.items() if k != 'imageRef'}
    server['imageRef'] = ''
    server['block_device_mapping_v2'] = [{
        'uuid': GOOD['imageRef'], 'boot_index': 0, 'source_type': 'image',
        'destination_type': 'local', 'delete_on_termination': True}]
    resp = _create(api, server)
    assert resp.status_code == 202, resp.text
    server = api.wait_for(resp.json()['server']['id'])
    assert server['image']['id'] == GOOD['imageRef']


def test_malformed_json_is_a_bad_request(api):
    resp = api.request('POST', '/v2.1/servers', data=b'{not json',
                       headers={'Content-Type': 'application/json'})
    _error(resp, 400, 'badRequest')
    _error(api.post('/v2.1/servers', ['a list']), 400, 'badRequest')


@pytest.mark.parametrize('content_type', [
    'application/xml', 'text/html', 'application/x-www-form-urlencoded'])
def test_a_body_in_an_unsupported_media_type_is_415(api, content_type):
    """As Nova: the compute API reads JSON only; another Content-Type is
    refused before the body is looked at, on any method."""
    resp = api.request('POST', '/v2.1/servers', data=b'<server/>',
                       headers={'Content-Type': content_type})
    assert 'Unsupported Content-Type' in _error(resp, 415, 'badMediaType')
    _error(api.request('GET', '/v2.1/servers',
                       headers={'Content-Type': content_type}),
           415, 'badMediaType')


@pytest.mark.parametrize('content_type', [
    None, '', 'text/plain', 'application/json; charset=UTF-8',
    'application/vnd.openstack.compute+json'])
def test_json_or_no_media_type_is_read_as_json(api, content_type):
    headers = {} if content_type is None else {'Content-Type': content_type}
    resp = api.request('POST', '/v2.1/os-keypairs',
                       data=b'{"keypair": {"name": ""}}', headers=headers)
    # Read as JSON, and then refused for its empty name.
    assert 'name' in _error(resp, 400, 'badRequest')


def test_unknown_server_and_flavor_are_not_found(api):
    _error(api.get('/v2.1/servers/0b5c0c1e-0000-4000-8000-000000000000'),
           404, 'itemNotFound')
    _error(api.delete('/v2.1/servers/not-a-uuid'), 404, 'itemNotFound')
    _error(api.get('/v2.1/flavors/999'), 404, 'itemNotFound')
    _error(api.get('/v2.1/no-such-thing'), 404, 'itemNotFound')


def test_wrong_method_on_a_known_path_is_405_with_allow(api):
    resp = api.request('PUT', '/v2.1/servers')
    _error(resp, 405, 'badMethod')
    assert resp.headers['Allow'] == 'GET, POST'


def test_unsupported_microversion_is_406(api):
    resp = api.get('/v2.1/servers',
                   headers={'OpenStack-API-Version': 'compute 2.999'})
    _error(resp, 406, 'notAcceptable')
    resp = api.get('/v2.1/servers',
                   headers={'OpenStack-API-Version': 'compute two'})
    _error(resp, 400, 'badRequest')


def test_all_tenants_is_for_admins_only(api):
    user = api.as_user('alice:project-a')
    _error(user.get('/v2.1/servers?all_tenants=1'), 403, 'forbidden')
    assert api.get('/v2.1/servers?all_tenants=1').status_code == 200


def test_bad_list_parameters_are_bad_requests(api):
    _error(api.get('/v2.1/servers?limit=-1'), 400, 'badRequest')
    _error(api.get('/v2.1/servers?marker=nope'), 400, 'badRequest')
    _error(api.get('/v2.1/flavors?minRam=lots'), 400, 'badRequest')


def test_version_documents_need_no_token(api):
    anonymous = api.as_user('')
    del anonymous.session.headers['X-Auth-Token']
    root = anonymous.get('/').json()
    assert [v['id'] for v in root['versions']] == ['v2.0', 'v2.1']
    v21 = anonymous.get('/v2.1').json()['version']
    assert (v21['min_version'], v21['version']) == ('2.1', '2.96')


def test_flavors_list_the_nova_defaults(api):
    flavors = api.get('/v2.1/flavors/detail').json()['flavors']
    assert [(f['name'], f['ram'], f['vcpus'], f['disk']) for f in flavors] \
        == [('m1.tiny', 512, 1, 1), ('m1.small', 2048, 1, 20),
            ('m1.medium', 4096, 2, 40), ('m1.large', 8192, 4, 80),
            ('m1.xlarge', 16384, 8, 160)]
    assert api.get('/v2.1/flavors/2').json()['flavor']['name'] == 'm1.small'


@pytest.mark.parametrize('change', [
    {'name': 'a\ud800b'},
    {'name': 'tab\there'},
    {'metadata': {'k': 'nul\x00'}},
    {'min_count': '0', 'max_count': '0'},
    {'max_count': '01'},
    {'networks': 'auto'},
    {'networks': [{'uuid': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01'}]},
    {'block_device_mapping_v2': [{'source_type': 'volume',
                                  'destination_type': 'volume',
                                  'uuid': 'x', 'boot_index': 1}]},
    {'block_device_mapping_v2': [{'source_type': 'blank',
                                  'destination_type': 'local'}]},
])
def test_input_the_system_cannot_honour_is_a_bad_request(api, change):
    _error(_create(api, dict(GOOD, **change)), 400, 'badRequest')


def test_asking_for_too_many_servers_at_once_is_over_limit(api):
    _error(_create(api, dict(GOOD, min_count=1, max_count=101)), 413,
           'overLimit')


@pytest.mark.parametrize('path', [
    '/v2.1/servers/%ff', '/v2.1/flavors/%ff', '/v2.1/servers?name=%ff',
    '/v2.1/servers/detail?status=%ff', '/v2.1/flavors?is_public=%ff'])
def test_undecodable_urls_are_bad_requests(api, path):
    _error(api.get(path), 400, 'badRequest')


def test_description_is_kept_from_microversion_2_19(api):
    resp = _create(api, dict(GOOD, name='described',
                             description='the web tier'))
    assert resp.status_code == 202, resp.text
    server = api.server(resp.json()['server']['id'])
    assert server['description'] == 'the web tier'
    old = api.as_user('admin:admin')
    old.session.headers['OpenStack-API-Version'] = 'compute 2.18'
    _error(_create(old, dict(GOOD, description='x')), 400, 'badRequest')


def test_flavor_swap_is_a_number_from_microversion_2_75(api):
    flavor = api.get('/v2.1/flavors/1').json()['flavor']
    assert flavor['swap'] == 0
    old = api.as_user('admin:admin')
    old.session.headers['OpenStack-API-Version'] = 'compute 2.74'
    assert old.get('/v2.1/flavors/1').json()['flavor']['swap'] == ''
