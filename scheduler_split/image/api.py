"""The stand-in Image API v2 that serves the built-in catalog under
``/image`` (``ROUTES``, :func:`~scheduler_split.image.catalog.served`),
in the all-in-one and a deployment's API processes alike, so that
clients resolve ``--image NAME``, upload and snapshot images without an
Image service. With ``[glance] source = glance`` the Image service
serves them instead.

The handlers answer as Glance does: its statuses and its error bodies
(webob's, in the format the request accepts); an image's file is its
data, streamed from ``[glance] builtin_store_dir``, or 204 for an image
without data, as Glance answers.
"""

import json
import os
import re
import urllib.parse

import jsonschema
import webob
import webob.exc

from scheduler_split.api import bodies
from scheduler_split.api import errors
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import catalog

CONF = conf.CONF

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
# Bytes of an image's file sent at a time.
_CHUNK = 65536


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


@_glance_api
def index(req, ctx, version):
    images, next_marker = catalog.query_images(ctx, req.GET)
    params = [(k, v) for k, v in req.GET.items() if k != 'marker']
    body = {'images': [catalog.render(i) for i in images],
            'first': '/v2/images', 'schema': '/v2/schemas/images'}
    if params:
        body['first'] += '?' + urllib.parse.urlencode(params)
    if next_marker is not None:
        body['next'] = '/v2/images?' + urllib.parse.urlencode(
            params + [('marker', next_marker)])
    return _json(body)


@_glance_api
def show(req, ctx, version, image_id):
    return _json(catalog.render(catalog.get_image(ctx, image_id)))


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
    image = catalog.create_image(ctx, fields)
    return _json(catalog.render(image), status=201,
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
    try:
        bodies.check(body)
    except bodies.BadBody as exc:
        raise webob.exc.HTTPBadRequest(explanation=str(exc))
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
    return _json(catalog.render(catalog.update_image(ctx, image_id,
                                                     _apply(changes))))


@_glance_api
def delete(req, ctx, version, image_id):
    catalog.delete_image(ctx, image_id)
    return _no_content()


@_glance_api
def upload(req, ctx, version, image_id):
    """The image's data: its size and checksums are recorded, the data
    kept in ``builtin_store_dir`` if set, and the image becomes active."""
    if req.content_type != 'application/octet-stream':
        raise webob.exc.HTTPUnsupportedMediaType(
            explanation='Content-Type must be application/octet-stream')
    catalog.upload_image(ctx, image_id, req.body_file)
    return _no_content()


class _FileBody:
    """An open file as a response body, sent a chunk at a time and
    closed when the server is done with the response, whether it sent
    all of it or not."""

    def __init__(self, file):
        self.file = file

    def __iter__(self):
        while True:
            chunk = self.file.read(_CHUNK)
            if not chunk:
                return
            yield chunk

    def close(self):
        self.file.close()


@_glance_api
def download(req, ctx, version, image_id):
    """The image's data with Glance's headers (its md5 checksum, hex, as
    Content-MD5); 204 for an image without data, as Glance answers."""
    image = catalog.get_image(ctx, image_id)
    path = catalog.image_data_path(ctx, image_id)
    if path is None:
        return _no_content()
    try:
        data = open(path, 'rb')
    except FileNotFoundError:
        # Deleted since it was looked up.
        raise exception.ImageNotFound(image_id=image_id)
    response = webob.Response(status=200,
                              content_type='application/octet-stream',
                              app_iter=_FileBody(data))
    # The file's length, not the record's: it frames the body sent.
    response.headers['Content-Length'] = str(os.fstat(data.fileno()).st_size)
    if image['checksum']:
        response.headers['Content-MD5'] = image['checksum']
    return response


@_glance_api
def tasks(req, ctx, version, image_id):
    """An image's import tasks: none, nothing here imports."""
    catalog.get_image(ctx, image_id)
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
    catalog.update_image(ctx, image_id, _tags_change(add=tag))
    return _no_content()


@_glance_api
def tag_delete(req, ctx, version, image_id, tag):
    catalog.update_image(ctx, image_id, _tags_change(remove=tag))
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
