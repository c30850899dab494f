"""The built-in image catalog: the images the API boots, lists and
snapshots when no Image service serves them (``[glance] source =
builtin``, the default).

It holds the three built-in images (``IMAGES``: public, nobody may
change or delete them) and the images users create, upload, patch, tag
and delete, and those the compute API makes of servers (snapshots,
backups): records in the API database (``objects/image.py``), so that
every API process of a deployment serves the same catalog. An upload
records its size and checksums; its data is kept as Glance's filesystem
store keeps it, one file per image id in ``[glance] builtin_store_dir``
(unset, the data is not kept). The image client
(:mod:`scheduler_split.image.client`) reads and writes it; the stand-in
Image API v2 (:mod:`scheduler_split.image.api`) serves it under
``/image``.
"""

import contextlib
import copy
import hashlib
import os
import re
import tempfile

from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.objects import image as image_obj

CONF = conf.CONF

# The page of a list, unless its query asks for another, and the most
# it may ask for (Glance's api_limit_max).
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
# Bytes of an upload read at a time.
_CHUNK = 65536

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
    _remove_data(image_id)


# --- the data of the images -------------------------------------------------

def _data_file(image_id):
    """The file that holds (or would hold) an image's data, or None when
    the catalog keeps no data of it (no ``builtin_store_dir``, or a
    built-in image)."""
    store = CONF.glance.builtin_store_dir
    # Ids are UUIDs (the schema's pattern, or made here), so that one
    # never names a file outside the store.
    if (not store or image_id in _BUILTIN_IDS or
            not uuidutils.is_uuid_like(image_id)):
        return None
    return os.path.join(store, image_id)


def _remove_data(image_id):
    path = _data_file(image_id)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def image_data_path(ctx, image_id):
    """The file that holds the data of image ``image_id``, or None if it
    has none (a built-in image, one not uploaded yet, or one uploaded
    while ``builtin_store_dir`` was unset); ``ImageNotFound`` if ``ctx``
    may not see the image, as :func:`get_image`. The image may be
    deleted, and its file with it, by the time the caller opens it."""
    get_image(ctx, image_id)
    path = _data_file(image_id)
    return path if path is not None and os.path.isfile(path) else None


def _read_data(stream, target=None):
    """``(size, md5, sha512)`` of the data ``stream`` reads, written to
    ``target`` as well if given."""
    md5 = hashlib.md5(usedforsecurity=False)
    sha512 = hashlib.sha512()
    size = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        md5.update(chunk)
        sha512.update(chunk)
        size += len(chunk)
        if target is not None:
            target.write(chunk)
    return size, md5.hexdigest(), sha512.hexdigest()


def upload_image(ctx, image_id, stream):
    """Read a queued image's data from ``stream`` and make it active with
    its size and checksums (md5, and sha512 as Glance's default
    ``os_hash_algo``), keeping the data in ``builtin_store_dir`` if set.

    The data is written to a temporary file of the store and renamed to
    the image's id once the image is recorded active: of two concurrent
    uploads only the one the record took names the data, the id never
    names half an upload, and a failed upload leaves no file behind.
    """
    _check_owner(ctx, get_image(ctx, image_id))
    path = _data_file(image_id)
    if path is None:
        size, md5, sha512 = _read_data(stream)
        return image_obj.upload(ctx, image_id, size, md5, 'sha512', sha512)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Dotted, so that it never looks like an image's data.
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(path),
                                   prefix='.%s.' % image_id,
                                   suffix='.part')
    try:
        with os.fdopen(fd, 'wb') as target:
            size, md5, sha512 = _read_data(stream, target)
            target.flush()
            # On disk before the record says active: a crash never
            # leaves an active image with a short file.
            os.fsync(target.fileno())
        image_obj.upload(ctx, image_id, size, md5, 'sha512', sha512)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
    try:
        # A delete between the record and the rename found no file to
        # remove: the upload removes it, as Glance's does in this race.
        return get_image(ctx, image_id)
    except exception.ImageNotFound:
        _remove_data(image_id)
        raise


# --- the Image API v2 shape and its queries ---------------------------------

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
