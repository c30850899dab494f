"""Identity version discovery only, for clients with auth type none.

``openstack server list`` builds an Identity v3 client before it sends a
single compute request, and fails when no identity endpoint answers
version discovery. The all-in-one has no identity service; it serves the
two discovery documents under ``/identity`` and nothing else.
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
