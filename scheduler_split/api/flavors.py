"""``/v2.1/flavors``."""

import urllib.parse

from scheduler_split.api import errors
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy


def _links(req, flavorid):
    return [{'rel': 'self',
             'href': '%s/v2.1/flavors/%s' % (req.application_url, flavorid)},
            {'rel': 'bookmark',
             'href': '%s/flavors/%s' % (req.application_url, flavorid)}]


def render(req, flavor, version, detail=True, extra_specs=False):
    body = {'id': flavor.flavorid, 'name': flavor.name,
            'links': _links(req, flavor.flavorid)}
    if not detail:
        if version >= (2, 55):
            body['description'] = flavor.description
        return body
    body.update({
        'ram': flavor.memory_mb, 'vcpus': flavor.vcpus,
        'disk': flavor.root_gb, 'OS-FLV-EXT-DATA:ephemeral':
        flavor.ephemeral_gb,
        # Before 2.75 a flavor without swap said "".
        'swap': flavor.swap if version >= (2, 75) else (flavor.swap or ''),
        'rxtx_factor': flavor.rxtx_factor,
        'os-flavor-access:is_public': flavor.is_public,
        'OS-FLV-DISABLED:disabled': flavor.disabled,
    })
    if version >= (2, 55):
        body['description'] = flavor.description
    if version >= (2, 61) and extra_specs:
        body['extra_specs'] = dict(flavor.extra_specs)
    return body


def _visible(req, ctx):
    is_public = True
    # As in Nova, whoever passes context_is_admin may list non-public
    # flavors; there is no rule of its own for it.
    if policy.check_is_admin(ctx):
        raw = req.GET.get('is_public', 'true').lower()
        is_public = {'none': None, 'false': False, 'f': False, '0': False,
                     'no': False}.get(raw, True)
    flavors = objects.Flavor.get_all(ctx, is_public=is_public)
    for param, attr in (('minRam', 'memory_mb'), ('minDisk', 'root_gb')):
        if param in req.GET:
            try:
                minimum = int(req.GET[param])
            except ValueError:
                raise errors.bad_request('Invalid %s filter [%s]'
                                         % (param, req.GET[param]))
            flavors = [f for f in flavors if getattr(f, attr) >= minimum]
    return flavors


def _page(req, flavors):
    """Nova's pagination: the flavors after ``marker`` (a flavor id), at
    most ``limit`` of them, and a ``next`` link when the page is full."""
    marker = req.GET.get('marker')
    if marker is not None:
        ids = [f.flavorid for f in flavors]
        if marker not in ids:
            raise errors.bad_request('marker [%s] not found' % marker)
        flavors = flavors[ids.index(marker) + 1:]
    limit = req.GET.get('limit')
    if limit is None:
        return flavors, []
    try:
        limit = int(limit)
        if limit < 0:
            raise ValueError
    except ValueError:
        raise errors.bad_request('limit must be a non-negative integer')
    flavors = flavors[:limit]
    links = []
    if flavors and len(flavors) == limit:
        query = dict(req.GET, limit=limit, marker=flavors[-1].flavorid)
        links = [{'rel': 'next', 'href': '%s?%s' % (
            req.path_url, urllib.parse.urlencode(sorted(query.items())))}]
    return flavors, links


def _listing(req, ctx, version, detail):
    flavors, links = _page(req, _visible(req, ctx))
    extra_specs = detail and _extra_specs_shown(ctx)
    body = {'flavors': [render(req, f, version, detail=detail,
                               extra_specs=extra_specs)
                        for f in flavors]}
    if links:
        body['flavors_links'] = links
    return body


def index(req, ctx, version):
    return _listing(req, ctx, version, detail=False)


def _extra_specs_shown(ctx):
    return policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:index', fatal=False)


def detail(req, ctx, version):
    return _listing(req, ctx, version, detail=True)


def show(req, ctx, version, flavor_id):
    try:
        flavor = objects.Flavor.get_by_flavor_id(ctx, flavor_id)
    except exception.FlavorNotFound as exc:
        raise errors.not_found(exc.format_message())
    return {'flavor': render(req, flavor, version,
                             extra_specs=_extra_specs_shown(ctx))}
