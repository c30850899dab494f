"""A server's snapshot and backup images (``createImage``,
``createBackup``).

The image is the record Nova's ``compute_utils.create_image`` makes: the
server's image's properties it may inherit, its ``min_ram``, its
``min_disk`` (at least the flavor's root disk), ``image_type``,
``instance_uuid``, ``base_image_ref`` and ``user_id``, then the user's
metadata over them; private to the requester's project, or shared with
an ``instance_owner`` when that is not the server's. It is made
``queued``, and the server's compute uploads its data (compute RPC
1.8); for computes before that, ``active`` at once with no data.
"""

import logging

from scheduler_split import exception
from scheduler_split.image import client as image_client

LOG = logging.getLogger(__name__)

# Properties of the server's image a snapshot never takes (Nova's).
NON_INHERITABLE = frozenset([
    'cinder_encryption_key_id', 'cinder_encryption_key_deletion_policy',
    'img_signature', 'img_signature_hash_method', 'img_signature_key_type',
    'img_signature_certificate_uuid', 'cache_in_nova', 'bittorrent'])
NON_INHERITABLE_NAMESPACES = ('os_glance',)


def _base_image(ctx, instance):
    """The server's image, if the user can still read it."""
    if not instance.image_ref:
        return None
    try:
        return image_client.get(ctx, instance.image_ref)
    except exception.ImageNotFound:
        return None


def create(ctx, instance, name, image_type, extra_properties=None,
           queued=False):
    """The image of a snapshot (``image_type`` ``snapshot``) or a
    backup (``backup``, with ``backup_type`` among ``extra_properties``)
    of ``instance``: ``queued`` for its compute to upload (a qcow2 of its
    disk), else ``active`` at once."""
    base = _base_image(ctx, instance) or {}
    properties = {
        key: value for key, value in base.get('properties', {}).items()
        if key not in NON_INHERITABLE and
        not key.startswith(NON_INHERITABLE_NAMESPACES)}
    properties.update({'instance_uuid': instance.uuid,
                       'user_id': str(ctx.user_id),
                       'image_type': image_type,
                       'base_image_ref': instance.image_ref or ''})
    visibility = 'private'
    if ctx.project_id != instance.project_id:
        visibility = 'shared'
        properties['instance_owner'] = instance.project_id
    properties.update(extra_properties or {})
    return image_client.create_image(
        ctx, name, properties=properties,
        min_disk=max(base.get('min_disk') or 0, instance.flavor.root_gb),
        min_ram=base.get('min_ram') or 0,
        disk_format='qcow2' if queued else (
            base.get('disk_format') or 'qcow2'),
        container_format='bare' if queued else (
            base.get('container_format') or 'bare'),
        visibility=visibility, queued=queued)


def rotate(ctx, instance, backup_type, rotation):
    """Delete the oldest backups of ``instance`` of ``backup_type``
    beyond the newest ``rotation`` (all of them with 0), as Nova's
    compute does once a backup is uploaded. The backup is made by then:
    a backup the image service does not let go (a protected one) or an
    image service that does not answer is logged, not raised."""
    extra = {'instance_uuid': instance.uuid}
    try:
        backups = image_client.get_all(
            ctx, filters={'image_type': 'backup',
                          'backup_type': backup_type,
                          'instance_uuid': instance.uuid},
            sort_key='created_at', sort_dir='desc')
    except exception.SchedulerSplitException as exc:
        LOG.warning('Could not list the %s backups of instance %s to '
                    'rotate them: %s', backup_type, instance.uuid,
                    exc.format_message(), extra=extra)
        return
    for image in backups[rotation:]:
        LOG.info('Deleting backup %s of instance %s (rotation %d)',
                 image['id'], instance.uuid, rotation, extra=extra)
        try:
            image_client.delete_image(ctx, image['id'])
        except exception.ImageNotFound:
            pass
        except exception.SchedulerSplitException as exc:
            LOG.warning('Could not delete backup %s of instance %s: %s',
                        image['id'], instance.uuid, exc.format_message(),
                        extra=extra)
