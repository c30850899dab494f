"""The built-in image catalog, and the Image API v2 that serves it.

The fake driver boots nothing real, but clients resolve ``--image NAME``
through the Image service and upload and snapshot images, so with
``[glance] source = builtin`` (the default) the API reads and writes its
images here (see :mod:`scheduler_split.api.image_client`) and serves
this catalog under ``/image`` (``ROUTES``, :func:`served`), the
all-in-one and a deployment's API processes alike; with ``source =
glance`` the Image service serves it.

The catalog holds the three built-in images (``IMAGES``: public, nobody
may change or delete them) and the images users create, upload, patch,
tag and delete, and those the compute API makes of servers (snapshots,
backups): records in the API database (``objects/image.py``), so that
every API process of a deployment serves the same catalog. An upload
stores its size and checksums, not its data, which nothing here reads;
an image's file always answers 204, as Glance answers for an image
without data.

The handlers answer as Glance does: its statuses and its error bodies
(webob's, in the format the request accepts).
"""

import copy
import hashlib
import json
import re
import urllib.parse

import jsonschema
from oslo_utils import timeutils
from oslo_utils import uuidutils
import webob
import webob.exc

from scheduler_split.api import errors
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.objects import image as image_obj

CONF = conf.CONF

_CREATED = '2026-01-01T00:00:00Z'

# What a Glance image of each carries beyond its core fields. No
# ``architecture``: the fake hosts report the machine's own, and these
# images boot on any of them.
_CIRROS_PROPERTIES = {'os_distro': 'cirros', 'os_type': 'linux',
                      'hypervisor_type': 'fake', 'hw_disk_bus': 'virtio',
                      'hw_vif_model': 'virtio'}
_UBUNTU_PROPERTIES = {'os_distro': 'ubuntu', 'os_version': '24.04',
                      'os_type': 'linux', 'hypervisor_type': 'fake',
                      'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
                      'hw_qemu_guest_agent': 'yes'}
_FEDORA_PROPERTIES = {'os_distro': 'fedora', 'os_version': '41',
                      'os_type': 'linux', 'hypervisor_type': 'fake',
                      'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
                      'hw_qemu_guest_agent': 'yes'}

IMAGES = [
    # id, name, size (bytes), min_disk, min_ram, properties
    ('a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01', 'cirros', 21430272, 0, 0,
     _CIRROS_PROPERTIES),
    # Tempest's image_ref_alt, which it boots with m1.tiny (512 MiB, 1 GiB
    # root disk): no min_disk, as an uploaded cloud image has by default.
    ('b1d4f3b7-1a5f-4d9b-8e2f-4d2c9a3b8f02', 'ubuntu-24.04', 617611264, 0,
     512, _UBUNTU_PROPERTIES),
    ('c2e5a4c8-2b6a-4eac-9f3a-5e3d0b4c9a03', 'fedora-41', 524288000, 5,
     1024, _FEDORA_PROPERTIES),
]


def served():
    """Whether the API serves this catalog under ``/image``: when its
    boots read it, which is when no Image service serves the images."""
    return CONF.glance.source == 'builtin'


# --- the built-in images ----------------------------------------------------

def find(image_ref):
    """The built-in entry of an image id or name, or None."""
    for entry in IMAGES:
        if image_ref in (entry[0], entry[1]):
            return entry
    return None


def _builtin(entry):
    """A built-in entry as an image of the catalog."""
    image_id, name, size, min_disk, min_ram, properties = entry
    created = timeutils.normalize_time(timeutils.parse_isotime(_CREATED))
    return {'id': image_id, 'name': name, 'status': image_obj.ACTIVE,
            'visibility': 'public', 'protected': False, 'os_hidden': False,
            'owner': None, 'disk_format': 'qcow2',
            'container_format': 'bare', 'size': size, 'checksum': None,
            'os_hash_algo': None, 'os_hash_value': None,
            'min_disk': min_disk, 'min_ram': min_ram,
            'properties': dict(properties), 'tags': [],
            'created_at': created, 'updated_at': created}


_BUILTIN = [_builtin(entry) for entry in IMAGES]
_BUILTIN_IDS = {entry[0] for entry in IMAGES}


# --- the catalog: what the handlers and the image client call ---------------

def _read_only(image_id):
    return exception.ImageNotAuthorized(
        'Image %s is a built-in image: it cannot be changed or deleted.'
        % image_id, image_id=image_id)


def _check_owner(ctx, image):
    """An image changes at the hands of its project or of an admin; the
    built-in images at nobody's."""
    if image['id'] in _BUILTIN_IDS:
        raise _read_only(image['id'])
    if not (ctx.is_admin or (ctx.project_id is not None and
                             image['owner'] == ctx.project_id)):
        raise exception.ImageNotAuthorized(image_id=image['id'])


def _check_visibility(ctx, visibility):
    # Glance's publicize_image rule: only an admin makes an image public.
    if visibility == 'public' and not ctx.is_admin:
        raise exception.NotAuthorized(
            'You are not authorized to complete publicize_image action.')


def get_image(ctx, image_id):
    """The image ``image_id`` (built-in or not) if ``ctx`` may see it;
    ``ImageNotFound`` otherwise."""
    if image_id in _BUILTIN_IDS:
        return copy.deepcopy(next(i for i in _BUILTIN
                                  if i['id'] == image_id))
    return image_obj.get(ctx, image_id)


def get_images(ctx, **query):
    """A page of the images ``ctx`` may see, the built-in ones among
    them; ``query`` as :func:`objects.image.get_all` takes it."""
    return image_obj.get_all(ctx, builtin=_BUILTIN, **query)


def create_image(ctx, fields):
    """Record a new image, ``queued`` unless ``fields`` say otherwise:
    ``fields`` are Glance's (``properties`` the custom ones), checked
    against the schema by the caller. The owner is the caller's project
    unless an admin names another."""
    fields = dict(fields)
    owner = fields.setdefault('owner', ctx.project_id)
    if owner != ctx.project_id and not ctx.is_admin:
        raise exception.NotAuthorized(
            "You are not permitted to create images owned by '%s'." % owner)
    _check_visibility(ctx, fields.get('visibility'))
    fields.setdefault('id', uuidutils.generate_uuid())
    if fields['id'] in _BUILTIN_IDS:
        raise exception.ImageExists(image_id=fields['id'])
    for name, default in (('status', image_obj.QUEUED),
                          ('visibility', 'shared'), ('protected', False),
                          ('os_hidden', False), ('min_disk', 0),
                          ('min_ram', 0), ('properties', {}),
                          ('tags', [])):
        fields.setdefault(name, default)
    return image_obj.create(ctx, fields)


def update_image(ctx, image_id, change):
    """Apply ``change`` (the image -> the fields to write) to an image
    of the caller's project (any, for an admin); the image after it."""
    if image_id in _BUILTIN_IDS:
        raise _read_only(image_id)

    def checked(image):
        _check_owner(ctx, image)
        fields = change(image)
        if 'visibility' in fields:
            _check_visibility(ctx, fields['visibility'])
        if fields.get('owner', image['owner']) != image['owner'] and \
                not ctx.is_admin:
            raise exception.NotAuthorized(
                "Owner can't be updated by non admin.")
        return fields
    return image_obj.update(ctx, image_id, checked)


def delete_image(ctx, image_id):
    """Delete an image of the caller's project (any, for an admin);
    ``ImageNotFound`` if it is gone already, ``ImageProtected`` while it
    is protected."""
    if image_id in _BUILTIN_IDS:
        raise _read_only(image_id)
    image_obj.destroy(ctx, image_id,
                      check=lambda image: _check_owner(ctx, image))


def upload_image(ctx, image_id, stream):
    """Read a queued image's data from ``stream`` and make it active with
    its size and checksums (md5, and sha512 as Glance's default
    ``os_hash_algo``); the data itself is not kept."""
    _check_owner(ctx, get_image(ctx, image_id))
    md5 = hashlib.md5(usedforsecurity=False)
    sha512 = hashlib.sha512()
    size = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        md5.update(chunk)
        sha512.update(chunk)
        size += len(chunk)
    return image_obj.upload(ctx, image_id, size, md5.hexdigest(), 'sha512',
                            sha512.hexdigest())


# --- the Image API v2 -------------------------------------------------------

def _isotime(value):
    return value.strftime('%Y-%m-%dT%H:%M:%SZ') if value else None


def render(image):
    """An image in the Image API v2 shape: its custom properties are
    top-level keys, as Glance shows them."""
    body = dict(image['properties'])
    image_id = image['id']
    body.update({
        'id': image_id, 'name': image['name'], 'status': image['status'],
        'visibility': image['visibility'], 'protected': image['protected'],
        'os_hidden': image['os_hidden'],
        'disk_format': image['disk_format'],
        'container_format': image['container_format'],
        'size': image['size'], 'virtual_size': None,
        'min_disk': image['min_disk'], 'min_ram': image['min_ram'],
        'checksum': image['checksum'],
        'os_hash_algo': image['os_hash_algo'],
        'os_hash_value': image['os_hash_value'],
        'owner': image['owner'], 'tags': list(image['tags']),
        'created_at': _isotime(image['created_at']),
        'updated_at': _isotime(image['updated_at']),
        'self': '/v2/images/%s' % image_id,
        'file': '/v2/images/%s/file' % image_id,
        'schema': '/v2/schemas/image',
    })
    return body


_CONTAINER_FORMATS = ['ami', 'ari', 'aki', 'bare', 'ovf', 'ova', 'docker',
                      'compressed']
_DISK_FORMATS = ['ami', 'ari', 'aki', 'vhd', 'vhdx', 'vmdk', 'raw', 'qcow2',
                 'vdi', 'iso', 'ploop']
_READ_ONLY = {'type': 'string', 'readOnly': True}
# Glance's image schema (GET /v2/schemas/image), which a create and each
# change of a patch are checked against.
IMAGE_SCHEMA = {
    'name': 'image',
    'properties': {
        'id': {'type': 'string',
               'pattern': ('^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-'
                           '([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-'
                           '([0-9a-fA-F]){12}$')},
        'name': {'type': ['null', 'string'], 'maxLength': 255},
        'status': dict(_READ_ONLY, enum=[
            'queued', 'saving', 'active', 'killed', 'deleted', 'uploading',
            'importing', 'pending_delete', 'deactivated']),
        'visibility': {'type': 'string',
                       'enum': ['community', 'public', 'private',
                                'shared']},
        'protected': {'type': 'boolean'},
        'os_hidden': {'type': 'boolean'},
        'checksum': {'type': ['null', 'string'], 'readOnly': True,
                     'maxLength': 32},
        'os_hash_algo': {'type': ['null', 'string'], 'readOnly': True,
                         'maxLength': 64},
        'os_hash_value': {'type': ['null', 'string'], 'readOnly': True,
                          'maxLength': 128},
        'owner': {'type': ['null', 'string'], 'maxLength': 255},
        'size': {'type': ['null', 'integer'], 'readOnly': True},
        'virtual_size': {'type': ['null', 'integer'], 'readOnly': True},
        'container_format': {'type': ['null', 'string'],
                             'enum': [None] + _CONTAINER_FORMATS},
        'disk_format': {'type': ['null', 'string'],
                        'enum': [None] + _DISK_FORMATS},
        'created_at': _READ_ONLY,
        'updated_at': _READ_ONLY,
        'tags': {'type': 'array',
                 'items': {'type': 'string', 'maxLength': 255}},
        'direct_url': _READ_ONLY,
        'min_ram': {'type': 'integer', 'minimum': 0,
                    'maximum': 2 ** 31 - 1},
        'min_disk': {'type': 'integer', 'minimum': 0,
                     'maximum': 2 ** 31 - 1},
        'self': _READ_ONLY,
        'file': _READ_ONLY,
        'stores': _READ_ONLY,
        'schema': _READ_ONLY,
    },
    'additionalProperties': {'type': 'string'},
    'links': [{'rel': 'self', 'href': '{self}'},
              {'rel': 'enclosure', 'href': '{file}'},
              {'rel': 'describedby', 'href': '{schema}'}],
}
IMAGES_SCHEMA = {
    'name': 'images',
    'properties': {
        'images': {'type': 'array', 'items': IMAGE_SCHEMA},
        'schema': {'type': 'string'},
        'first': {'type': 'string'},
        'next': {'type': 'string'},
    },
    'links': [{'rel': 'first', 'href': '{first}'},
              {'rel': 'next', 'href': '{next}'},
              {'rel': 'describedby', 'href': '{schema}'}],
}
_CORE = frozenset(IMAGE_SCHEMA['properties'])
# What a create or a patch may not set (Glance's lists).
_DISALLOWED = ('direct_url', 'self', 'file', 'schema', 'stores')
_READ_ONLY_FIELDS = ('created_at', 'updated_at', 'status', 'checksum',
                     'size', 'virtual_size', 'direct_url', 'self', 'file',
                     'schema', 'id', 'os_hash_algo', 'os_hash_value')
_RESERVED = ('location', 'deleted', 'deleted_at')
_RESERVED_NAMESPACE = 'os_glance'
# Fields of the record a create or a patch writes as they are given.
_WRITABLE = ('name', 'visibility', 'protected', 'os_hidden', 'owner',
             'container_format', 'disk_format', 'min_ram', 'min_disk',
             'tags')
PATCH_TYPES = {'application/openstack-images-v2.0-json-patch': 4,
               'application/openstack-images-v2.1-json-patch': 10}
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000


def _glance_api(handler):
    """The handler, answering failures as Glance does: webob's errors,
    which render in the format the request accepts."""
    def answer(req, ctx, version, **kwargs):
        try:
            return handler(req, ctx, version, **kwargs)
        except webob.exc.HTTPException as exc:
            return exc
        except errors.HTTPError as exc:
            return webob.exc.status_map[exc.status](explanation=exc.message)
        except exception.ImageNotFound as exc:
            return webob.exc.HTTPNotFound(explanation='No image found with '
                                          'ID %s' % exc.kwargs['image_id'])
        except exception.NotAuthorized as exc:
            return webob.exc.HTTPForbidden(explanation=exc.format_message())
        except (exception.ImageExists, exception.ImageStatusConflict) as exc:
            return webob.exc.HTTPConflict(explanation=exc.format_message())
        except exception.Invalid as exc:
            return webob.exc.HTTPBadRequest(explanation=exc.format_message())
    answer.__name__ = handler.__name__
    answer.__doc__ = handler.__doc__
    return answer


def _json(body, status=200, headers=None):
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _no_content():
    response = webob.Response(status=204)
    response.content_type = None
    return response


def _validate(body):
    try:
        jsonschema.Draft4Validator(IMAGE_SCHEMA).validate(body)
    except jsonschema.ValidationError as exc:
        raise webob.exc.HTTPBadRequest(
            explanation="Provided object does not match schema 'image': %s"
                        % exc.message)


def _check_settable(key, read_only=()):
    if key in _DISALLOWED or key in read_only:
        raise webob.exc.HTTPForbidden(
            explanation="Attribute '%s' is read-only." % key)
    if key in _RESERVED or key.startswith(_RESERVED_NAMESPACE):
        raise webob.exc.HTTPForbidden(
            explanation="Attribute '%s' is reserved." % key)


def versions(req, ctx, version):
    base = req.application_url + '/image'
    return _json({'versions': [
        {'id': 'v2.16', 'status': 'CURRENT',
         'links': [{'rel': 'self', 'href': base + '/v2/'}]},
    ]})


def _split_op(expression):
    """Glance's ``op:value`` of a filter (``eq`` without one); a value
    that is a time with a colon is a value."""
    op, sep, value = expression.partition(':')
    if not sep or re.match(r'^\d{4}-', expression):
        return 'eq', expression
    return op, value


def _parse_time(field, expression):
    op, value = _split_op(expression)
    if op not in ('eq', 'neq', 'gt', 'gte', 'lt', 'lte'):
        raise exception.Invalid(
            "Unable to filter by unknown operator '%s'." % op)
    try:
        return op, timeutils.normalize_time(timeutils.parse_isotime(value))
    except ValueError:
        raise exception.Invalid('Bad "%s" query filter format. Use ISO '
                                '8601 DateTime notation.' % field)


def _integer(name, value, minimum=None):
    try:
        number = int(value)
    except ValueError:
        raise exception.Invalid('%s param must be an integer' % name)
    if minimum is not None and number < minimum:
        raise exception.Invalid('%s param must be positive' % name)
    return number


def _boolean(name, value):
    if value not in ('true', 'false'):
        raise exception.Invalid("Invalid value '%s' for '%s' filter. Valid "
                                "values are 'true' or 'false'."
                                % (value, name))
    return value == 'true'


def _sorting(params):
    """``[(key, dir)]`` from ``sort=k:dir,...`` or ``sort_key``/
    ``sort_dir`` (each may repeat)."""
    def key_of(key):
        if key not in image_obj.SORT_KEYS:
            raise exception.Invalid(
                'Invalid sort key: %s. It must be one of the following: %s.'
                % (key, ', '.join(image_obj.SORT_KEYS)))
        return key

    def dir_of(direction):
        if direction not in ('asc', 'desc'):
            raise exception.Invalid('Invalid sort direction: %s'
                                    % direction)
        return direction
    keys = [key_of(k.strip()) for k in params.getall('sort_key')]
    dirs = [dir_of(d.strip()) for d in params.getall('sort_dir')]
    if 'sort' in params:
        if keys or dirs:
            raise exception.Invalid('Old and new sorting syntax cannot be '
                                    'combined')
        for item in params['sort'].split(','):
            key, _, direction = item.partition(':')
            keys.append(key_of(key.strip()))
            dirs.append(dir_of(direction.strip() or 'desc'))
    if len(dirs) > 1 and len(dirs) != len(keys):
        raise exception.Invalid('Number of sort dirs does not match the '
                                'number of sort keys')
    keys = keys or ['created_at']
    if len(dirs) <= 1:
        dirs = (dirs or ['desc']) * len(keys)
    return list(zip(keys, dirs))


def query_images(ctx, params):
    """The images a ``GET /v2/images`` with query ``params`` (a webob
    MultiDict) lists, and the marker of the next page (None when this
    one is the last): Glance's filters, paging and sorting."""
    params = params.copy()
    limit = DEFAULT_LIMIT
    if 'limit' in params:
        limit = min(MAX_LIMIT, _integer('limit', params.pop('limit'), 0))
    marker = params.pop('marker', None)
    member_status = params.pop('member_status', 'accepted')
    if member_status not in ('pending', 'accepted', 'rejected', 'all'):
        raise exception.Invalid('Invalid status: %s' % member_status)
    sort = _sorting(params)
    for name in ('sort', 'sort_key', 'sort_dir'):
        params.pop(name, None)
    tags = [tag.strip() for tag in params.getall('tag')]
    params.pop('tag', None)
    visibility = params.pop('visibility', None)
    if visibility not in (None, 'community', 'public', 'private', 'shared',
                          'all'):
        raise exception.Invalid('Invalid visibility value: %s' % visibility)
    if 'changes-since' in params:
        raise exception.Invalid('The "changes-since" filter is no longer '
                                'available on v2.')
    conditions = [('os_hidden', 'eq',
                   _boolean('os_hidden', params.pop('os_hidden', 'false')))]
    properties = {}
    for key, value in params.items():
        if key in ('name', 'id', 'status', 'container_format',
                   'disk_format'):
            op, value = _split_op(value)
            if op == 'in':
                conditions.append((key, 'in', [
                    v.strip().strip('"') for v in value.split(',')]))
            elif op == 'eq':
                conditions.append((key, 'eq', value))
            else:
                raise exception.Invalid(
                    "Unable to filter by unknown operator '%s'." % op)
        elif key in ('created_at', 'updated_at'):
            conditions.append((key,) + _parse_time(key, value))
        elif key in ('size_min', 'size_max'):
            conditions.append(('size', 'gte' if key == 'size_min' else
                               'lte', _integer(key, value)))
        elif key in ('min_ram', 'min_disk'):
            conditions.append((key, 'eq', _integer(key, value)))
        elif key == 'protected':
            conditions.append((key, 'eq', _boolean(key, value)))
        elif key in ('owner', 'checksum', 'os_hash_value'):
            conditions.append((key, 'eq', value))
        else:
            properties[key] = value
    images = get_images(ctx, conditions=conditions, properties=properties,
                        tags=tags, visibility=visibility, marker=marker,
                        limit=limit, sort=sort)
    next_marker = images[-1]['id'] if images and len(images) == limit \
        else None
    return images, next_marker


@_glance_api
def index(req, ctx, version):
    images, next_marker = query_images(ctx, req.GET)
    params = [(k, v) for k, v in req.GET.items() if k != 'marker']
    body = {'images': [render(i) for i in images],
            'first': '/v2/images', 'schema': '/v2/schemas/images'}
    if params:
        body['first'] += '?' + urllib.parse.urlencode(params)
    if next_marker is not None:
        body['next'] = '/v2/images?' + urllib.parse.urlencode(
            params + [('marker', next_marker)])
    return _json(body)


@_glance_api
def show(req, ctx, version, image_id):
    return _json(render(get_image(ctx, image_id)))


@_glance_api
def create(req, ctx, version):
    """``queued``, until its data is uploaded."""
    body = req.json_body_or_error()
    for key in body:
        # An image's id is the one read-only field a create may give.
        _check_settable(key, read_only=[f for f in _READ_ONLY_FIELDS
                                        if f != 'id'])
        if key not in _CORE and len(key) > 255:
            raise webob.exc.HTTPBadRequest(
                explanation='Custom property should not be greater than '
                            '255 characters.')
    _validate(body)
    fields = {k: v for k, v in body.items() if k in _CORE}
    fields['properties'] = {k: v for k, v in body.items()
                            if k not in _CORE}
    image = create_image(ctx, fields)
    return _json(render(image), status=201,
                 headers={'Location': '/v2/images/%s' % image['id']})


def _pointer(path):
    """The one field a JSON pointer of a patch names."""
    if not isinstance(path, str) or not path.startswith('/'):
        raise webob.exc.HTTPBadRequest(
            explanation='Pointer `%s` does not start with "/".' % path)
    if re.search('~[^01]', path) or path.endswith('~'):
        raise webob.exc.HTTPBadRequest(
            explanation='Pointer `%s` contains "~" not part of a recognized '
                        'escape sequence.' % path)
    parts = [p.replace('~1', '/').replace('~0', '~').strip()
             for p in path[1:].split('/')]
    if len(parts) != 1 or not parts[0]:
        raise webob.exc.HTTPBadRequest(
            explanation="Invalid JSON pointer for this resource: '%s'" % path)
    return parts[0]


def _patch_changes(req):
    """``[(op, field, value)]`` of a JSON patch (drafts 4 and 10 of the
    image schema's media types), each checked as Glance checks it."""
    draft = PATCH_TYPES.get(req.content_type)
    if draft is None:
        raise webob.exc.HTTPUnsupportedMediaType(
            headers={'Accept-Patch': ', '.join(sorted(PATCH_TYPES))},
            detail='Image PATCH expects Content-Type one of: %s'
                   % ', '.join(sorted(PATCH_TYPES)))
    try:
        body = json.loads(req.body or b'null')
    except (ValueError, RecursionError):
        raise webob.exc.HTTPBadRequest(
            explanation='Malformed JSON in request body.')
    if not isinstance(body, list):
        raise webob.exc.HTTPBadRequest(
            explanation='Request body must be a JSON array of operation '
                        'objects.')
    from scheduler_split.api import wsgi
    wsgi._check_strings(body)
    changes = []
    for raw in body:
        if not isinstance(raw, dict):
            raise webob.exc.HTTPBadRequest(
                explanation='Operations must be JSON objects.')
        if draft == 10:
            op, path = raw.get('op'), raw.get('path')
            if op not in ('add', 'remove', 'replace'):
                raise webob.exc.HTTPBadRequest(
                    explanation='Invalid operation: `%s`. It must be one of '
                                'the following: add, remove, replace.' % op)
        else:
            ops = [o for o in ('add', 'remove', 'replace') if o in raw]
            if len(ops) != 1:
                raise webob.exc.HTTPBadRequest(
                    explanation='Operation objects must contain exactly one '
                                'member named "add", "remove", or '
                                '"replace".')
            op, path = ops[0], raw[ops[0]]
        field = _pointer(path)
        _check_settable(field, read_only=_READ_ONLY_FIELDS)
        value = None
        if op != 'remove':
            if 'value' not in raw:
                raise webob.exc.HTTPBadRequest(
                    explanation='Operation "%s" requires a member named '
                                '"value".' % op)
            value = raw['value']
            _validate({field: value})
        changes.append((op, field, value, draft))
    return changes


def _apply(changes):
    """The change of an image (image -> fields to write) a patch makes."""
    def change(image):
        fields = {name: image[name] for name in _WRITABLE}
        properties = dict(image['properties'])
        for op, field, value, draft in changes:
            exists = field in _CORE or field in properties
            if op == 'add' and draft == 4 and exists:
                raise webob.exc.HTTPConflict(
                    explanation='Property %s already present.' % field)
            if op == 'remove' and field in _CORE:
                raise webob.exc.HTTPForbidden(
                    explanation='Property %s may not be removed.' % field)
            if op != 'add' and not exists:
                raise webob.exc.HTTPConflict(
                    explanation='Property %s does not exist.' % field)
            if op == 'remove':
                del properties[field]
            elif field in _CORE:
                fields[field] = value
            else:
                properties[field] = value
        fields['properties'] = properties
        return {name: value for name, value in fields.items()
                if value != image[name]}
    return change


@_glance_api
def update(req, ctx, version, image_id):
    changes = _patch_changes(req)
    return _json(render(update_image(ctx, image_id, _apply(changes))))


@_glance_api
def delete(req, ctx, version, image_id):
    delete_image(ctx, image_id)
    return _no_content()


@_glance_api
def upload(req, ctx, version, image_id):
    """The image's data: its size and checksums are kept, not the data
    (nothing boots from it), and the image becomes active."""
    if req.content_type != 'application/octet-stream':
        raise webob.exc.HTTPUnsupportedMediaType(
            explanation='Content-Type must be application/octet-stream')
    upload_image(ctx, image_id, req.body_file)
    return _no_content()


@_glance_api
def download(req, ctx, version, image_id):
    """204: no image's data is kept, and Glance answers 204 for an image
    without data."""
    get_image(ctx, image_id)
    return _no_content()


@_glance_api
def tasks(req, ctx, version, image_id):
    """An image's import tasks: none, nothing here imports."""
    get_image(ctx, image_id)
    return _json({'tasks': []})


def _tags_change(add=None, remove=None):
    def change(image):
        tags = list(image['tags'])
        if remove is not None:
            if remove not in tags:
                raise webob.exc.HTTPNotFound(
                    explanation='Tag %s not found' % remove)
            tags.remove(remove)
        if add is not None and add not in tags:
            tags.append(add)
        return {'tags': tags} if tags != image['tags'] else {}
    return change


@_glance_api
def tag_add(req, ctx, version, image_id, tag):
    _validate({'tags': [tag]})
    update_image(ctx, image_id, _tags_change(add=tag))
    return _no_content()


@_glance_api
def tag_delete(req, ctx, version, image_id, tag):
    update_image(ctx, image_id, _tags_change(remove=tag))
    return _no_content()


def image_schema(req, ctx, version):
    return _json(IMAGE_SCHEMA)


def images_schema(req, ctx, version):
    return _json(IMAGES_SCHEMA)


# What the API mounts beside the compute API when it serves this catalog,
# and which of it answers without authentication.
ROUTES = {
    '/image': {'GET': versions},
    '/image/': {'GET': versions},
    '/image/v2/images': {'GET': index, 'POST': create},
    '/image/v2/images/{image_id}': {'GET': show, 'PATCH': update,
                                    'DELETE': delete},
    '/image/v2/images/{image_id}/file': {'GET': download, 'PUT': upload},
    '/image/v2/images/{image_id}/tasks': {'GET': tasks},
    '/image/v2/images/{image_id}/tags/{tag}': {'PUT': tag_add,
                                               'DELETE': tag_delete},
    '/image/v2/schemas/image': {'GET': image_schema},
    '/image/v2/schemas/images': {'GET': images_schema},
}
PUBLIC = {'/image', '/image/'}
