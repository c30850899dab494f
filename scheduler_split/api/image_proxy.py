"""``/v2.1/images`` and ``/v2.1/images/{image_id}/metadata``: the compute
API's proxy of the image service, as Nova's.

Nova deprecated it: ``/images`` answers 404 from microversion 2.36 and
its ``/metadata`` from 2.39. It reads and writes through
:mod:`scheduler_split.image.client`, so over whichever catalog the
API uses (``[glance] source``), and, as Nova's, checks no policy beyond
authentication: the image service decides what the user may see and
change.
"""

from oslo_utils import strutils
from oslo_utils import timeutils

from scheduler_split.api import errors
from scheduler_split.api import paging
from scheduler_split.api import schemas
from scheduler_split.api import server_metadata
from scheduler_split.api import server_views
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import client as image_client

CONF = conf.CONF

# The last microversions that have the proxy and its metadata.
LAST_VERSION = (2, 35)
LAST_METADATA_VERSION = (2, 38)

# Nova's query parameters -> the Image API's filters.
_FILTERS = {
    'name': 'name',
    'status': 'status',
    'server': 'instance_uuid',
    'type': 'image_type',
    'minRam': 'min_ram',
    'minDisk': 'min_disk',
}
# The image service's statuses as Nova shows them, and its progress.
_STATUS = {'active': 'ACTIVE', 'queued': 'SAVING', 'saving': 'SAVING',
           'deleted': 'DELETED', 'pending_delete': 'DELETED',
           'killed': 'ERROR'}
_PROGRESS = {'queued': 25, 'saving': 50, 'active': 100}


def _check_version(version, last=LAST_VERSION):
    if version > last:
        raise errors.not_found('The resource could not be found.')


def _get(ctx, image_id):
    try:
        return image_client.get(ctx, image_id)
    except exception.ImageNotFound:
        raise errors.not_found('Image not found.')


# --- views ------------------------------------------------------------------

def _time(value):
    if not value:
        return None
    return timeutils.normalize_time(timeutils.parse_isotime(
        value)).strftime('%Y-%m-%dT%H:%M:%SZ')


def _links(req, ctx, image_id):
    return [{'rel': 'self',
             'href': '%s/v2.1/images/%s' % (req.application_url, image_id)},
            {'rel': 'bookmark',
             'href': '%s/images/%s' % (req.application_url, image_id)},
            {'rel': 'alternate', 'type': 'application/vnd.openstack.image',
             'href': image_client.image_url(ctx, image_id,
                                            req.application_url)}]


def render_summary(req, ctx, image):
    return {'id': image['id'], 'name': image['name'],
            'links': _links(req, ctx, image['id'])}


def render(req, ctx, image):
    """An image as Nova's proxy shows it; a snapshot links its server."""
    properties = image['properties']
    body = {
        'id': image['id'], 'name': image['name'],
        'minRam': image['min_ram'], 'minDisk': image['min_disk'],
        'metadata': dict(properties),
        'created': _time(image.get('created_at')),
        'updated': _time(image.get('updated_at')),
        'status': _STATUS.get(image['status'], 'UNKNOWN'),
        'progress': _PROGRESS.get(image['status'], 0),
        'OS-EXT-IMG-SIZE:size': image.get('size'),
        'links': _links(req, ctx, image['id']),
    }
    server = properties.get('instance_uuid')
    if server is not None:
        body['server'] = {'id': server,
                          'links': server_views.links(req, server)}
    if properties.get('auto_disk_config') is not None:
        body['OS-DCF:diskConfig'] = (
            'AUTO' if strutils.bool_from_string(
                properties['auto_disk_config']) else 'MANUAL')
    return body


# --- /images ----------------------------------------------------------------

def _filters(req):
    """The Image API's filters of a listing's query, as Nova maps them."""
    filters = {}
    for name, value in req.GET.items():
        if name in _FILTERS:
            filters[_FILTERS[name]] = value
        elif name.startswith('property-'):
            filters[name[len('property-'):]] = value
        elif name == 'changes-since':
            filters['updated_at'] = 'gte:' + value
    if 'instance_uuid' in filters:
        # A server's link names it too.
        filters['instance_uuid'] = filters['instance_uuid'].rsplit('/')[-1]
    if 'status' in filters:
        filters['status'] = filters['status'].lower()
    return filters


def _list(req, ctx, version, render_one):
    _check_version(version)
    limit = req.GET.get('limit')
    if limit is not None:
        try:
            limit = int(limit)
        except ValueError:
            raise errors.bad_request('limit param must be an integer')
        if limit < 0:
            raise errors.bad_request('limit param must be positive')
    # Nova lists every image without a limit; here at most [api]
    # max_limit, with a next link when there may be more.
    limit = min(CONF.api.max_limit,
                CONF.api.max_limit if limit is None else limit)
    try:
        images = image_client.get_all(ctx, filters=_filters(req),
                                      limit=limit,
                                      marker=req.GET.get('marker') or None)
    except exception.Invalid as exc:
        raise errors.bad_request(exc.format_message())
    body = {'images': [render_one(req, ctx, i) for i in images]}
    if images and len(images) == limit:
        body['images_links'] = paging.next_links(req, images[-1]['id'])
    return body


def index(req, ctx, version):
    return _list(req, ctx, version, render_summary)


def detail(req, ctx, version):
    return _list(req, ctx, version, render)


def show(req, ctx, version, image_id):
    _check_version(version)
    return {'image': render(req, ctx, _get(ctx, image_id))}


def delete(req, ctx, version, image_id):
    _check_version(version)
    try:
        image_client.delete_image(ctx, image_id)
    except exception.ImageNotFound:
        raise errors.not_found('Image not found.')
    except exception.NotAuthorized:
        raise errors.HTTPError(403, 'You are not allowed to delete the '
                                    'image.')
    return 204, None


# --- /images/{image_id}/metadata --------------------------------------------

def check_metadata_quota(metadata):
    """403 past ``[quota] metadata_items``, in Nova's words."""
    allowed = CONF.quota.metadata_items
    if metadata and 0 <= allowed < len(metadata):
        raise errors.HTTPError(403, 'Image metadata limit exceeded')


def _change(ctx, image_id, change):
    """The image's properties after ``change`` (properties -> new
    properties)."""
    def checked(properties):
        properties = change(properties)
        check_metadata_quota(properties)
        return properties
    try:
        return image_client.update_properties(ctx, image_id,
                                              checked)['properties']
    except exception.ImageNotFound:
        raise errors.not_found('Image not found.')
    except exception.NotAuthorized as exc:
        raise errors.HTTPError(403, exc.format_message())


def metadata_index(req, ctx, version, image_id):
    _check_version(version, LAST_METADATA_VERSION)
    return {'metadata': _get(ctx, image_id)['properties']}


def metadata_show(req, ctx, version, image_id, key):
    _check_version(version, LAST_METADATA_VERSION)
    properties = _get(ctx, image_id)['properties']
    if key not in properties:
        raise errors.not_found('The resource could not be found.')
    return {'meta': {key: properties[key]}}


def metadata_create(req, ctx, version, image_id):
    """POST: the given items are merged into the image's properties."""
    _check_version(version, LAST_METADATA_VERSION)
    body = req.json_body_or_error()
    schemas.validate(body, server_metadata.metadata_schema)
    return {'metadata': _change(
        ctx, image_id, lambda current: dict(current, **body['metadata']))}


def metadata_update_all(req, ctx, version, image_id):
    """PUT: the image's properties become the given items."""
    _check_version(version, LAST_METADATA_VERSION)
    body = req.json_body_or_error()
    schemas.validate(body, server_metadata.metadata_schema)
    _change(ctx, image_id, lambda current: dict(body['metadata']))
    return {'metadata': body['metadata']}


def metadata_update(req, ctx, version, image_id, key):
    _check_version(version, LAST_METADATA_VERSION)
    body = req.json_body_or_error()
    schemas.validate(body, server_metadata.metadata_item_schema)
    if key not in body['meta']:
        raise errors.bad_request('Request body and URI mismatch')
    _change(ctx, image_id, lambda current: dict(current, **body['meta']))
    return {'meta': body['meta']}


def metadata_delete(req, ctx, version, image_id, key):
    _check_version(version, LAST_METADATA_VERSION)

    def remove(current):
        if key not in current:
            raise errors.not_found('Invalid metadata key')
        del current[key]
        return current
    _change(ctx, image_id, remove)
    return 204, None
