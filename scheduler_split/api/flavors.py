"""``/v2.1/flavors``."""

import urllib.parse

from oslo_utils import strutils
from oslo_utils import uuidutils

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy

MAX_INT = 2147483647

_WHOLE = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$'}
_DESCRIPTION = {'type': ['string', 'null'], 'maxLength': 65535,
                'pattern': r'^[^\x00-\x1f\x7f]*$'}

_CREATE_FLAVOR = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                 'pattern': r'^\S(.*\S)?$'},
        'id': {'type': ['string', 'integer', 'null'], 'minLength': 1,
               'maxLength': 255, 'pattern': r'^(?! )[a-zA-Z0-9. _-]+(?<! )$'},
        'ram': _WHOLE, 'vcpus': _WHOLE, 'disk': _WHOLE,
        'OS-FLV-EXT-DATA:ephemeral': _WHOLE,
        'swap': {'type': ['integer', 'string'], 'pattern': '^[0-9]*$'},
        'rxtx_factor': {'type': ['number', 'string'],
                        'pattern': r'^[0-9]+(\.[0-9]+)?$'},
        'os-flavor-access:is_public': {
            'type': ['boolean', 'string'],
            'enum': [True, False, 'true', 'false', 'True', 'False', '1',
                     '0', 'yes', 'no', 'on', 'off']},
    },
    'required': ['name', 'ram', 'vcpus', 'disk'],
    'additionalProperties': False,
}


def _create_schema(version):
    flavor = dict(_CREATE_FLAVOR, properties=dict(
        _CREATE_FLAVOR['properties']))
    if version >= (2, 55):
        flavor['properties']['description'] = _DESCRIPTION
    return {'type': 'object', 'properties': {'flavor': flavor},
            'required': ['flavor'], 'additionalProperties': False}


UPDATE = {
    'type': 'object',
    'properties': {'flavor': {
        'type': 'object', 'properties': {'description': _DESCRIPTION},
        'required': ['description'], 'additionalProperties': False}},
    'required': ['flavor'], 'additionalProperties': False}


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


_SORT_KEYS = ('created_at', 'description', 'disabled', 'ephemeral_gb',
              'flavorid', 'id', 'is_public', 'memory_mb', 'name', 'root_gb',
              'rxtx_factor', 'swap', 'updated_at', 'vcpus')


def _is_public(req):
    raw = req.GET.get('is_public')
    if raw is None:
        return True
    if raw.lower() == 'none':
        return None
    try:
        return strutils.bool_from_string(raw, strict=True)
    except ValueError:
        raise errors.bad_request('Invalid is_public filter [%s]' % raw)


def _visible(req, ctx):
    is_public = True
    # As in Nova, whoever passes context_is_admin may list non-public
    # flavors; there is no rule of its own for it. Anyone sees, beside
    # the public ones, the private flavors their project has access to.
    admin = ctx.is_admin
    if admin:
        is_public = _is_public(req)
    sort_key = req.GET.get('sort_key') or 'flavorid'
    sort_dir = req.GET.get('sort_dir') or 'asc'
    if sort_key not in _SORT_KEYS:
        raise errors.bad_request('Invalid sort_key %s' % sort_key)
    if sort_dir not in ('asc', 'desc'):
        raise errors.bad_request('Invalid sort_dir %s' % sort_dir)
    flavors = objects.Flavor.get_all(
        ctx, is_public=is_public, project_id=ctx.project_id,
        sort_key=sort_key, sort_dir=sort_dir)
    if not admin:
        flavors = [f for f in flavors if not f.disabled]
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


def get(ctx, flavor_id):
    """The flavor, if the caller may see it: admins see every flavor,
    others the public ones and those their project was given."""
    project_id = None if ctx.is_admin else ctx.project_id
    try:
        return objects.Flavor.get_by_flavor_id(ctx, flavor_id,
                                               project_id=project_id)
    except exception.FlavorNotFound as exc:
        raise errors.not_found(exc.format_message())


def show(req, ctx, version, flavor_id):
    flavor = get(ctx, flavor_id)
    return {'flavor': render(req, flavor, version,
                             extra_specs=_extra_specs_shown(ctx))}


def _whole(values, key, minimum, default=None):
    raw = values.get(key, default)
    if raw == '' and key == 'swap':
        raw = 0
    number = int(raw)
    if not minimum <= number <= MAX_INT:
        raise errors.bad_request(
            'Invalid input for field/attribute %s. Value: %s. %s must be '
            'an integer between %d and %d.'
            % (key, raw, key, minimum, MAX_INT))
    return number


def create(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-flavor-manage:create',
                     target={})
    body = req.json_body_or_error()
    schemas.validate(body, _create_schema(version))
    values = body['flavor']
    flavorid = values.get('id')
    if flavorid is None or flavorid == 'auto':
        flavorid = uuidutils.generate_uuid()
    rxtx = float(values.get('rxtx_factor', 1.0))
    if not 0 < rxtx <= 3.40282e+38:
        raise errors.bad_request(
            'Invalid input for field/attribute rxtx_factor. Value: %s. '
            'rxtx_factor must be a number greater than 0.'
            % values['rxtx_factor'])
    is_public = values.get('os-flavor-access:is_public', True)
    if not isinstance(is_public, bool):
        is_public = strutils.bool_from_string(is_public, strict=True)
    flavor = objects.Flavor(
        flavorid=str(flavorid), name=values['name'],
        memory_mb=_whole(values, 'ram', 1),
        vcpus=_whole(values, 'vcpus', 1),
        root_gb=_whole(values, 'disk', 0),
        ephemeral_gb=_whole(values, 'OS-FLV-EXT-DATA:ephemeral', 0, 0),
        swap=_whole(values, 'swap', 0, 0), rxtx_factor=rxtx,
        is_public=is_public, disabled=False,
        description=values.get('description'), extra_specs={})
    flavor.create(ctx)
    return {'flavor': render(req, flavor, version,
                             extra_specs=_extra_specs_shown(ctx))}


def update(req, ctx, version, flavor_id):
    """2.55: change a flavor's description (nothing else of a flavor
    changes once servers may have been built from it)."""
    if version < (2, 55):
        raise errors.not_found('The resource could not be found.')
    policy.authorize(ctx, 'os_compute_api:os-flavor-manage:update',
                     target={})
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE)
    flavor = get(ctx, flavor_id)
    flavor.save_description(ctx, body['flavor']['description'])
    return {'flavor': render(req, flavor, version,
                             extra_specs=_extra_specs_shown(ctx))}


def delete(req, ctx, version, flavor_id):
    """Servers built from the flavor keep their copy of it."""
    policy.authorize(ctx, 'os_compute_api:os-flavor-manage:delete',
                     target={})
    get(ctx, flavor_id).destroy(ctx)
    return 202, None
