"""Version documents: ``GET /``, ``GET /v2.1`` and ``GET /v2``.

As Nova, the list names the legacy v2.0 (``SUPPORTED``, no microversions)
before v2.1 (``CURRENT``). Only v2.1's resources are served; ``/v2`` has
its version document and nothing else.
"""

from scheduler_split.api import microversion

_DESCRIBEDBY = {'rel': 'describedby', 'type': 'text/html',
                'href': 'https://docs.openstack.org/'}

VERSIONS = {
    'v2.0': {
        'id': 'v2.0', 'status': 'SUPPORTED', 'version': '',
        'min_version': '', 'updated': '2011-01-21T11:33:21Z',
        'path': '/v2/',
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.compute+json;version=2'}],
    },
    'v2.1': {
        'id': 'v2.1', 'status': 'CURRENT',
        'version': microversion.to_str(microversion.MAX_VERSION),
        'min_version': microversion.to_str(microversion.MIN_VERSION),
        'updated': '2013-07-23T11:33:21Z',
        'path': '/v2.1/',
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.compute+json;version=2.1'}],
    },
}

_LISTED = ('id', 'status', 'version', 'min_version', 'updated')


def _self_link(base_url, version_id):
    return {'rel': 'self', 'href': base_url + VERSIONS[version_id]['path']}


def root(req, ctx, version):
    """The list: each version with its self link only, as Nova's."""
    versions = []
    for version_id in sorted(VERSIONS):
        entry = {k: VERSIONS[version_id][k] for k in _LISTED}
        entry['links'] = [_self_link(req.application_url, version_id)]
        versions.append(entry)
    return {'versions': versions}


def _document(req, version_id):
    entry = {k: VERSIONS[version_id][k]
             for k in _LISTED + ('media-types',)}
    entry['links'] = [_self_link(req.application_url, version_id),
                      dict(_DESCRIBEDBY)]
    return {'version': entry}


def v21(req, ctx, version):
    return _document(req, 'v2.1')


def v20(req, ctx, version):
    return _document(req, 'v2.0')
