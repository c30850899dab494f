"""A read-only image catalog in the Image API v2 shapes.

The fake driver boots nothing real, but clients resolve ``--image NAME``
through the Image service, so the API serves these few named images under
``/image`` and checks ``imageRef`` against them.
"""

import json

import webob

from scheduler_split.api import errors

_CREATED = '2026-01-01T00:00:00Z'

IMAGES = [
    # id, name, size (bytes), min_disk, min_ram
    ('a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01', 'cirros', 21430272, 0, 0),
    ('b1d4f3b7-1a5f-4d9b-8e2f-4d2c9a3b8f02', 'ubuntu-24.04', 617611264, 3,
     512),
    ('c2e5a4c8-2b6a-4eac-9f3a-5e3d0b4c9a03', 'fedora-41', 524288000, 5,
     1024),
]


def _render(req, image_id, name, size, min_disk, min_ram):
    return {
        'id': image_id, 'name': name, 'status': 'active',
        'visibility': 'public', 'protected': False, 'os_hidden': False,
        'disk_format': 'qcow2', 'container_format': 'bare', 'size': size,
        'virtual_size': None, 'min_disk': min_disk, 'min_ram': min_ram,
        'checksum': None, 'os_hash_algo': None, 'os_hash_value': None,
        'owner': None, 'tags': [], 'created_at': _CREATED,
        'updated_at': _CREATED,
        'self': '/v2/images/%s' % image_id,
        'file': '/v2/images/%s/file' % image_id,
        'schema': '/v2/schemas/image',
    }


def find(image_ref):
    """The catalog entry of an image id or name, or None."""
    for entry in IMAGES:
        if image_ref in (entry[0], entry[1]):
            return entry
    return None


def _json(body, status=200):
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    return response


def versions(req, ctx, version):
    base = req.application_url + '/image'
    return _json({'versions': [
        {'id': 'v2.16', 'status': 'CURRENT',
         'links': [{'rel': 'self', 'href': base + '/v2/'}]},
    ]})


def list_images(req, ctx, version):
    entries = IMAGES
    name = req.GET.get('name')
    if name is not None:
        entries = [e for e in entries if e[1] == name]
    return _json({'images': [_render(req, *e) for e in entries],
                  'first': '/v2/images', 'schema': '/v2/schemas/images'})


def show_image(req, ctx, version, image_id):
    entry = next((e for e in IMAGES if e[0] == image_id), None)
    if entry is None:
        raise errors.HTTPError(404, 'No image found with ID %s' % image_id)
    return _json(_render(req, *entry))
