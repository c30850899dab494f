"""The test guest (:mod:`.guest`) as images of the built-in catalog.

Three public images, as a cloud publishes a kernel-booted image: its
kernel (``aki``), its ramdisk (``ari``) and its disk (``qcow2``) whose
``kernel_id`` and ``ramdisk_id`` name the other two, so that a server
booted from the disk image starts by direct kernel boot. Registered
once: a catalog that has them already keeps them.
"""

import logging
import os

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.image import catalog
from scheduler_split.image import guest

CONF = conf.CONF
LOG = logging.getLogger(__name__)

NAME = 'scheduler-split-guest'


def _find(ctx, name):
    for image in catalog.get_images(
            ctx, conditions=[('name', 'eq', name)], visibility='all'):
        if image['status'] == 'active' and image['visibility'] == 'public':
            return image
    return None


def _upload(ctx, name, path, disk_format, container_format,
            properties=None):
    image = catalog.create_image(ctx, {
        'name': name, 'disk_format': disk_format,
        'container_format': container_format, 'visibility': 'public',
        'properties': dict(properties or {})})
    with open(path, 'rb') as f:
        return catalog.upload_image(ctx, image['id'], f)


def register_builtin(build_dir, name=NAME):
    """The guest's disk image in the built-in catalog, built into
    ``build_dir`` and registered with its kernel and ramdisk unless the
    catalog has it already; the image as the catalog holds it."""
    ctx = ss_context.get_admin_context()
    found = _find(ctx, name)
    if found is not None:
        return found
    if not CONF.glance.builtin_store_dir:
        raise guest.GuestImageError(
            'the built-in catalog keeps no image data: set [glance] '
            'builtin_store_dir')
    paths = guest.build(build_dir)
    LOG.info('Built the guest image from %s into %s', guest.describe(),
             build_dir)
    kernel = _upload(ctx, name + '-kernel', paths['kernel'], 'aki', 'aki')
    ramdisk = _upload(ctx, name + '-ramdisk', paths['ramdisk'], 'ari',
                      'ari')
    disk = _upload(ctx, name, paths['disk'], 'qcow2', 'bare', {
        'kernel_id': kernel['id'], 'ramdisk_id': ramdisk['id'],
        'os_type': 'linux', 'hw_disk_bus': 'virtio',
        'hypervisor_type': 'qemu'})
    LOG.info('Registered image %s (%s), kernel %s, ramdisk %s', name,
             disk['id'], kernel['id'], ramdisk['id'])
    for path in paths.values():
        # The catalog holds the data now.
        os.unlink(path)
    return disk


def upload_commands(paths, name=NAME):
    """The openstack commands that upload the guest built at ``paths``
    to an Image service (Glance), its disk naming its kernel and
    ramdisk."""
    return [
        'KERNEL=$(openstack image create --public --disk-format aki '
        '--container-format aki --file %s -f value -c id %s-kernel)'
        % (paths['kernel'], name),
        'RAMDISK=$(openstack image create --public --disk-format ari '
        '--container-format ari --file %s -f value -c id %s-ramdisk)'
        % (paths['ramdisk'], name),
        'openstack image create --public --disk-format qcow2 '
        '--container-format bare --file %s --property kernel_id=$KERNEL '
        '--property ramdisk_id=$RAMDISK --property hypervisor_type=qemu %s'
        % (paths['disk'], name)]
