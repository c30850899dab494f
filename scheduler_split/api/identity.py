"""Identity version discovery and project lookup, for clients with auth
type none.

``openstack server list`` builds an Identity v3 client before it sends a
single compute request, and fails when no identity endpoint answers
version discovery; ``openstack quota show PROJECT`` looks the project up
by name or id. The all-in-one has no identity service: without
authentication a project is whatever a token names, so it serves the two
discovery documents under ``/identity`` and answers a project lookup with
the project of that id (and name), nothing else.
"""

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
