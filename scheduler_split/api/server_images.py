"""``createImage`` and ``createBackup`` of ``POST
/v2.1/servers/{server_id}/action``: the API makes the image of the
server itself (``snapshots``), recorded as the server's instance action,
in the states Nova images a server in; a backup then rotates the older
backups of the server out. The answer carries the image's id (from
2.45) or its URL.
"""

import webob

from scheduler_split.api import action_checks
from scheduler_split.api import image_proxy
from scheduler_split.api import schemas
from scheduler_split.api import server_metadata
from scheduler_split.api import snapshots
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split import policy

CONF = conf.CONF

# An image's metadata as a server's (Nova's parameter_types.metadata).
_IMAGE_METADATA = server_metadata.metadata_schema['properties']['metadata']
create_image_schema = {
    'type': 'object',
    'properties': {
        'createImage': {
            'type': 'object',
            'properties': {'name': schemas.name,
                           'metadata': _IMAGE_METADATA},
            'required': ['name'],
            'additionalProperties': False,
        },
    },
    'required': ['createImage'],
    'additionalProperties': False,
}
create_backup_schema = {
    'type': 'object',
    'properties': {
        'createBackup': {
            'type': 'object',
            'properties': {
                'name': schemas.name,
                'backup_type': {'type': 'string'},
                'rotation': {'type': ['integer', 'string'],
                             'pattern': '^[0-9]+$', 'minimum': 0},
                'metadata': _IMAGE_METADATA,
            },
            'required': ['name', 'backup_type', 'rotation'],
            'additionalProperties': False,
        },
    },
    'required': ['createBackup'],
    'additionalProperties': False,
}

# The states a server may be imaged in, as Nova's. Nova does not check
# the lock either: a lock keeps a server from being changed, and an image
# of it changes nothing.
_IMAGEABLE = [instance_obj.ACTIVE, instance_obj.STOPPED,
              instance_obj.PAUSED, instance_obj.SUSPENDED]


def _image_of(req, ctx, version, instance, action_name, name, image_type,
              metadata):
    """The image of ``instance`` a createImage or a createBackup makes
    (``snapshots.create``), recorded as the server's instance action;
    409 unless the server is in one of ``_IMAGEABLE`` with no task."""
    if version < (2, 39):
        # Nova stopped counting the metadata against the quota in 2.39.
        image_proxy.check_metadata_quota(metadata)
    req.compute_api.check_state(instance, action_name, _IMAGEABLE, [None])
    _, cell = req.compute_api.locate(ctx, instance.uuid)
    if cell is None or cell.is_cell0:
        raise exception.InstanceNotReady(instance_id=instance.uuid)
    cctx = ss_context.target_cell(ctx, cell)
    instance_action.start_action(cctx, instance.uuid, action_name)
    event = 'api_%s_instance' % image_type
    try:
        image = req.compute_api.snapshot(
            ctx, instance, cell, action_name,
            lambda queued: snapshots.create(ctx, instance, name, image_type,
                                            metadata, queued=queued))
    except exception.SchedulerSplitException as exc:
        instance_action.record_event(
            cctx, instance.uuid, event, host=CONF.host,
            result=instance_action.ERROR, details=exc.format_message(),
            action=action_name)
        raise
    instance_action.record_event(cctx, instance.uuid, event, host=CONF.host,
                                 action=action_name)
    return image


def _image_answer(version, image_id, location):
    """202: from 2.45 with the image's id in the body, before with its
    URL in ``Location`` (if any), as Nova answers."""
    if version >= (2, 45):
        return 202, {'image_id': image_id}
    response = webob.Response(status=202)
    response.content_type = None
    if location is not None:
        response.headers['Location'] = location
    return response


def create_image(req, ctx, version, instance, body):
    """A snapshot of the server: an ``active`` image, ``image_type``
    snapshot."""
    schemas.validate(body, create_image_schema)
    policy.authorize(ctx, 'os_compute_api:servers:create_image',
                     action_checks.target(instance))
    args = body['createImage']
    image = _image_of(req, ctx, version, instance, 'createImage',
                      args['name'], 'snapshot', args.get('metadata', {}))
    return _image_answer(version, image['id'], image_client.image_url(
        ctx, image['id'], req.application_url))


def create_backup(req, ctx, version, instance, body):
    """A backup of the server (``image_type`` backup, its
    ``backup_type``); then only the newest ``rotation`` backups of that
    server and type are kept: with 0, none, not even this one (Nova's
    rotation, which also leaves out the Location header then)."""
    schemas.validate(body, create_backup_schema)
    policy.authorize(ctx, 'os_compute_api:os-create-backup',
                     action_checks.target(instance))
    args = body['createBackup']
    rotation = int(args['rotation'])
    metadata = dict(args.get('metadata', {}))
    image = _image_of(req, ctx, version, instance, 'createBackup',
                      args['name'], 'backup',
                      dict(metadata, backup_type=args['backup_type']))
    snapshots.rotate(ctx, instance, args['backup_type'], rotation)
    location = None
    if rotation > 0:
        location = '%s/v2.1/images/%s' % (req.application_url, image['id'])
    return _image_answer(version, image['id'], location)
