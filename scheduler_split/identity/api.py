"""Identity for a cloud without an identity service: the all-in-one, or
a test deployment with ``[api] auth_strategy = noauth2``.

``openstack server list`` builds an Identity v3 client before it sends a
single compute request, and fails when no identity endpoint answers
version discovery; ``openstack quota show PROJECT`` looks the project up
by name or id; ``openstack quota set`` and ``limits show`` read the
service catalog to learn which services the cloud has. Without
authentication (``noauth2``) a project is whatever a token names, so this
serves the two discovery documents under ``/identity``, answers a project
lookup with the project of that id (and name), and issues tokens: a login
with a token or a user name and password gets the ``user:project`` token
that ``noauth2`` trusts, with a catalog of the services this API serves
(compute, placement, image, identity), nothing else. Behind Keystone none of it
is served (:func:`served`): tokens come from Keystone.
"""

import datetime
import json

import webob

from scheduler_split.api import errors
from scheduler_split import conf
from scheduler_split.image import catalog as images

CONF = conf.CONF

_UPDATED = '2024-01-01T00:00:00Z'


def _version(base_url):
    return {'id': 'v3.14', 'status': 'stable', 'updated': _UPDATED,
            'links': [{'rel': 'self', 'href': base_url + '/identity/v3/'}],
            'media-types': [{'base': 'application/json',
                             'type': 'application/'
                                     'vnd.openstack.identity-v3+json'}]}


def versions(req, ctx, version):
    return {'versions': {'values': [_version(req.application_url)]}}


def v3(req, ctx, version):
    return {'version': _version(req.application_url)}


def _project(project_id):
    return {'id': project_id, 'name': project_id, 'domain_id': 'default',
            'enabled': True, 'description': '', 'is_domain': False,
            'parent_id': 'default', 'tags': [], 'options': {}}


def projects(req, ctx, version):
    """``GET /identity/v3/projects?name=NAME``: that project."""
    name = req.GET.get('name')
    return {'projects': [_project(name)] if name else [],
            'links': {'self': None, 'previous': None, 'next': None}}


def project(req, ctx, version, project_id):
    return {'project': _project(project_id)}


def _catalog(base_url):
    def entry(service_type, name, url):
        return {'id': service_type, 'type': service_type, 'name': name,
                'endpoints': [
                    {'id': '%s-%s' % (service_type, interface),
                     'interface': interface, 'region': 'RegionOne',
                     'region_id': 'RegionOne', 'url': url}
                    for interface in ('public', 'internal', 'admin')]}
    catalog = [entry('compute', 'nova', base_url + '/v2.1'),
               entry('placement', 'placement', base_url + '/placement'),
               entry('identity', 'keystone', base_url + '/identity')]
    # Clients look for images where the boots read them.
    if images.served():
        catalog.insert(2, entry('image', 'glance', base_url + '/image'))
    elif CONF.glance.api_servers:
        catalog.insert(2, entry('image', 'glance',
                                CONF.glance.api_servers[0]))
    return catalog


def _login(auth):
    """(user, project) of a v3 login body, or a 400/401 naming why."""
    identity = auth.get('identity') or {}
    methods = identity.get('methods') or []
    user = None
    if 'token' in methods:
        token = (identity.get('token') or {}).get('id') or ''
        user, _, project = token.partition(':')
        project = project or user
    elif 'password' in methods:
        entry = (identity.get('password') or {}).get('user') or {}
        user = entry.get('name') or entry.get('id')
        project = None
    else:
        raise errors.bad_request('Only the token and password methods are '
                                 'served: %s' % methods)
    if not user:
        raise errors.HTTPError(401, 'The request you have made requires '
                                    'authentication.')
    scope = (auth.get('scope') or {}).get('project') or {}
    project = scope.get('id') or scope.get('name') or project or user
    return user, project


def tokens(req, ctx, version):
    """``POST /identity/v3/auth/tokens`` under ``noauth2``: a token for
    ``user:project``, with the catalog of this API's services (mounted
    only where :func:`served` says)."""
    body = req.json_body_or_error()
    if not isinstance(body, dict) or not isinstance(body.get('auth'), dict):
        raise errors.bad_request("Expecting to find auth in request body.")
    user, project = _login(body['auth'])
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0)
    roles = ['reader', 'member'] + (['admin'] if user == 'admin' else [])
    domain = {'id': 'default', 'name': 'Default'}
    token = {
        'methods': body['auth']['identity']['methods'],
        'user': {'id': user, 'name': user, 'domain': domain,
                 'password_expires_at': None},
        'project': {'id': project, 'name': project, 'domain': domain},
        'roles': [{'id': r, 'name': r} for r in roles],
        'issued_at': now.isoformat().replace('+00:00', '.000000Z'),
        'expires_at': (now + datetime.timedelta(days=1)).isoformat().replace(
            '+00:00', '.000000Z'),
        'catalog': _catalog(req.application_url),
    }
    response = webob.Response(status=201, content_type='application/json',
                              charset='UTF-8')
    response.headers['X-Subject-Token'] = '%s:%s' % (user, project)
    response.text = json.dumps({'token': token})
    return response


def served(auth_strategy):
    """Whether an API authenticating with ``auth_strategy`` serves this
    identity: only without authentication, so that behind Keystone no
    client is offered a second place to log in."""
    return auth_strategy == 'noauth2'


# What the API mounts beside the compute API when it serves this identity,
# and which of it answers without authentication.
ROUTES = {
    '/identity': {'GET': versions},
    '/identity/': {'GET': versions},
    '/identity/v3': {'GET': v3},
    '/identity/v3/': {'GET': v3},
    '/identity/v3/auth/tokens': {'POST': tokens},
    '/identity/v3/projects': {'GET': projects},
    '/identity/v3/projects/{project_id}': {'GET': project},
}
PUBLIC = {'/identity', '/identity/', '/identity/v3', '/identity/v3/',
          '/identity/v3/auth/tokens'}
