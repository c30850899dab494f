"""Version documents: ``GET /`` and ``GET /v2.1``."""

from scheduler_split.api import microversion

_UPDATED = '2013-07-23T11:33:21Z'


def _version(base_url):
    return {
        'id': 'v2.1', 'status': 'CURRENT',
        'version': microversion.to_str(microversion.MAX_VERSION),
        'min_version': microversion.to_str(microversion.MIN_VERSION),
        'updated': _UPDATED,
        'links': [{'rel': 'self', 'href': base_url + '/v2.1/'},
                  {'rel': 'describedby', 'type': 'text/html',
                   'href': 'https://docs.openstack.org/'}],
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.compute+json;version=2.1'}],
    }


def root(req, ctx, version):
    return {'versions': [_version(req.application_url)]}


def v21(req, ctx, version):
    return {'version': _version(req.application_url)}
