"""A read-only image catalog in the Image API v2 shapes.

The fake driver boots nothing real, but clients resolve ``--image NAME``
through the Image service, so the all-in-one serves these few named
images under ``/image`` (``ROUTES``; a deployment has an Image service of
its own), and with ``[glance] source = builtin`` (the default) the API
checks ``imageRef`` against them (see
:mod:`scheduler_split.api.image_client`).
"""

import json

import webob

from scheduler_split.api import errors

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


def _render(req, image_id, name, size, min_disk, min_ram, properties):
    # As Glance does, the properties are top-level keys of the image.
    body = dict(properties)
    body.update({
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
    })
    return body


def describe(entry):
    """A catalog entry as the image client answers for an image."""
    image_id, name, _size, min_disk, min_ram, properties = entry
    return {'id': image_id, 'name': name, 'status': 'active',
            'min_ram': min_ram, 'min_disk': min_disk,
            'properties': dict(properties)}


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


# What the all-in-one mounts beside the compute API, and which of it
# answers without authentication.
ROUTES = {
    '/image': {'GET': versions},
    '/image/': {'GET': versions},
    '/image/v2/images': {'GET': list_images},
    '/image/v2/images/{image_id}': {'GET': show_image},
}
PUBLIC = {'/image', '/image/'}
