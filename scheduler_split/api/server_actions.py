"""``POST /v2.1/servers/{server_id}/action``: the lifecycle actions.

``os-stop``, ``os-start``, ``reboot``, ``pause``, ``unpause``,
``suspend``, ``resume`` are checked here (policy, lock, state, as Nova
checks them) and cast to the server's compute, and so are ``restore`` and
``forceDelete`` of a soft-deleted server and ``shelve``,
``shelveOffload`` and ``unshelve`` (which goes through the
super-conductor, and the scheduler for an offloaded server); ``rebuild`` is
``server_rebuild``'s, the moves' are here too; ``lock``, ``unlock`` and
the admins' ``os-resetState`` are the API's alone, and so are
``createImage`` and ``createBackup``, whose image the API makes itself
(``snapshots``). Any other action is a 400, as in Nova.
"""

import webob

from scheduler_split.api import availability_zones
from scheduler_split.api import errors
from scheduler_split.api import image_proxy
from scheduler_split.api import schemas
from scheduler_split.api import server_metadata
from scheduler_split.api import server_rebuild
from scheduler_split.api import snapshots
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split import policy

CONF = conf.CONF

_REBOOT_TYPES = ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']
reboot_schema = {
    'type': 'object',
    'properties': {
        'reboot': {
            'type': 'object',
            'properties': {'type': {'type': 'string',
                                    'enum': _REBOOT_TYPES}},
            'required': ['type'],
            'additionalProperties': False,
        },
    },
    'required': ['reboot'],
    'additionalProperties': False,
}
lock_schema_v273 = {
    'type': 'object',
    'properties': {
        'lock': {
            'type': ['object', 'null'],
            'properties': {'locked_reason': {'type': 'string',
                                             'minLength': 1,
                                             'maxLength': 255}},
            'additionalProperties': False,
        },
    },
    'required': ['lock'],
    'additionalProperties': False,
}
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

_ANY_STATE_BUT_BUSY = [None]
_HARD_REBOOT_VM_STATES = [instance_obj.ACTIVE, instance_obj.STOPPED,
                          instance_obj.PAUSED, instance_obj.SUSPENDED,
                          instance_obj.ERROR]
_HARD_REBOOT_TASK_STATES = [None, instance_obj.REBOOTING,
                            instance_obj.REBOOTING_HARD,
                            instance_obj.RESUMING, instance_obj.UNPAUSING,
                            instance_obj.PAUSING, instance_obj.SUSPENDING]

# body key -> (policy rule, instance action, task state, vm states the
#              server may be in, compute cast)
_CASTS = {
    'os-stop': ('os_compute_api:servers:stop', 'stop',
                instance_obj.POWERING_OFF,
                [instance_obj.ACTIVE, instance_obj.ERROR], 'stop_instance'),
    'os-start': ('os_compute_api:servers:start', 'start',
                 instance_obj.POWERING_ON, [instance_obj.STOPPED],
                 'start_instance'),
    'pause': ('os_compute_api:os-pause-server:pause', 'pause',
              instance_obj.PAUSING, [instance_obj.ACTIVE], 'pause_instance'),
    'unpause': ('os_compute_api:os-pause-server:unpause', 'unpause',
                instance_obj.UNPAUSING, [instance_obj.PAUSED],
                'unpause_instance'),
    'suspend': ('os_compute_api:os-suspend-server:suspend', 'suspend',
                instance_obj.SUSPENDING, [instance_obj.ACTIVE],
                'suspend_instance'),
    'resume': ('os_compute_api:os-suspend-server:resume', 'resume',
               instance_obj.RESUMING, [instance_obj.SUSPENDED],
               'resume_instance'),
}


def _get(req, ctx, server_id):
    try:
        return req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())


def _target(instance):
    return {'project_id': instance.project_id, 'user_id': instance.user_id}


def action(req, ctx, version, server_id):
    body = req.json_body_or_error()
    if len(body) != 1:
        raise errors.bad_request('Malformed request body: exactly one '
                                 'action is expected')
    name = next(iter(body))
    handler = _HANDLERS.get(name)
    if handler is None:
        raise errors.bad_request('There is no such action: %s' % name)
    instance = _get(req, ctx, server_id)
    try:
        return handler(req, ctx, version, instance, body)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())


def _null_body(name, body):
    """400, in Nova's words, unless the action's value is null or an
    object (whose content these actions ignore, as Nova does: Tempest
    sends ``{}``)."""
    if body[name] is not None and not isinstance(body[name], dict):
        raise errors.bad_request(
            "Invalid input for field/attribute %s. Value: %s. %r is not of "
            "type 'null'" % (name, body[name], body[name]))


def _cast(name):
    rule, action_name, task_state, vm_states, method = _CASTS[name]

    def handler(req, ctx, version, instance, body):
        _null_body(name, body)
        policy.authorize(ctx, rule, _target(instance))
        req.compute_api.cast_action(ctx, instance.uuid, action_name,
                                    task_state, vm_states,
                                    _ANY_STATE_BUT_BUSY, method)
        return 202, None
    return handler


def _reboot(req, ctx, version, instance, body):
    schemas.validate(body, reboot_schema)
    policy.authorize(ctx, 'os_compute_api:servers:reboot',
                     _target(instance))
    reboot_type = body['reboot']['type'].upper()
    if reboot_type == 'SOFT':
        req.compute_api.cast_action(
            ctx, instance.uuid, 'reboot', instance_obj.REBOOTING,
            [instance_obj.ACTIVE], [None], 'reboot_instance',
            reboot_type='SOFT')
    else:
        req.compute_api.cast_action(
            ctx, instance.uuid, 'reboot', instance_obj.REBOOTING_HARD,
            _HARD_REBOOT_VM_STATES, _HARD_REBOOT_TASK_STATES,
            'reboot_instance', reboot_type='HARD')
    return 202, None


def _save_lock(req, ctx, instance, action_name, changes):
    """Write the lock fields and record the API's event, as Nova's
    ``api_lock``/``api_unlock``."""
    _, cell = req.compute_api.locate(ctx, instance.uuid)
    instance = req.compute_api.update(ctx, instance, changes)
    if cell is not None:
        instance_action.record_event(
            ss_context.target_cell(ctx, cell), instance.uuid,
            'api_%s' % action_name, host=CONF.host, action=action_name)
    notifications.instance_event(ctx, notifications.api_publisher(),
                                 instance, 'instance.%s' % action_name)


def _lock(req, ctx, version, instance, body):
    reason = None
    if version >= (2, 73):
        schemas.validate(body, lock_schema_v273)
        reason = (body['lock'] or {}).get('locked_reason')
    policy.authorize(ctx, 'os_compute_api:os-lock-server:lock',
                     _target(instance))
    is_owner = instance.project_id == ctx.project_id
    if instance.get('locked', False) and is_owner:
        # As Nova: locking a locked server again changes nothing.
        return 202, None
    _save_lock(req, ctx, instance, 'lock',
               {'locked': True,
                'locked_by': 'owner' if is_owner else 'admin',
                'locked_reason': reason})
    return 202, None


def _unlock(req, ctx, version, instance, body):
    target = _target(instance)
    policy.authorize(ctx, 'os_compute_api:os-lock-server:unlock', target)
    expected = ('owner' if instance.project_id == ctx.project_id
                else 'admin')
    locked_by = instance.get('locked_by')
    if locked_by and locked_by != expected:
        policy.authorize(
            ctx, 'os_compute_api:os-lock-server:unlock:unlock_override',
            target)
    _save_lock(req, ctx, instance, 'unlock',
               {'locked': False, 'locked_by': None, 'locked_reason': None})
    return 202, None


reset_state_schema = {
    'type': 'object',
    'properties': {
        'os-resetState': {
            'type': 'object',
            'properties': {'state': {'type': 'string',
                                     'enum': ['active', 'error']}},
            'required': ['state'],
            'additionalProperties': False,
        },
    },
    'required': ['os-resetState'],
    'additionalProperties': False,
}


def _reset_state(req, ctx, version, instance, body):
    """An admin's repair: the server's state is set to ACTIVE or ERROR and
    whatever task it was in is forgotten. Nothing on its host changes."""
    schemas.validate(body, reset_state_schema)
    policy.authorize(ctx, 'os_compute_api:os-admin-actions:reset_state',
                     _target(instance))
    state = body['os-resetState']['state']
    instance = req.compute_api.update(ctx, instance, {
        'vm_state': (instance_obj.ACTIVE if state == 'active'
                     else instance_obj.ERROR),
        'task_state': None})
    notifications.instance_event(ctx, notifications.api_publisher(),
                                 instance, 'instance.update')
    return 202, None


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
        image = snapshots.create(ctx, instance, name, image_type, metadata)
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


def _create_image(req, ctx, version, instance, body):
    """A snapshot of the server: an ``active`` image, ``image_type``
    snapshot."""
    schemas.validate(body, create_image_schema)
    policy.authorize(ctx, 'os_compute_api:servers:create_image',
                     _target(instance))
    args = body['createImage']
    image = _image_of(req, ctx, version, instance, 'createImage',
                      args['name'], 'snapshot', args.get('metadata', {}))
    return _image_answer(version, image['id'], image_client.image_url(
        ctx, image['id'], req.application_url))


def _create_backup(req, ctx, version, instance, body):
    """A backup of the server (``image_type`` backup, its
    ``backup_type``); then only the newest ``rotation`` backups of that
    server and type are kept: with 0, none, not even this one (Nova's
    rotation, which also leaves out the Location header then)."""
    schemas.validate(body, create_backup_schema)
    policy.authorize(ctx, 'os_compute_api:os-create-backup',
                     _target(instance))
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


resize_schema = {
    'type': 'object',
    'properties': {
        'resize': {
            'type': 'object',
            'properties': {
                'flavorRef': {'type': ['string', 'integer'],
                              'minLength': 1},
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
            },
            'required': ['flavorRef'],
            'additionalProperties': False,
        },
    },
    'required': ['resize'],
    'additionalProperties': False,
}
migrate_schema_v256 = {
    'type': 'object',
    'properties': {
        'migrate': {
            'type': ['object', 'null'],
            'properties': {'host': {'type': ['string', 'null'],
                                    'minLength': 1, 'maxLength': 255}},
            'additionalProperties': False,
        },
    },
    'required': ['migrate'],
    'additionalProperties': False,
}


def _no_valid_host(exc):
    """The scheduler found no host: 400, as Nova words it."""
    return errors.bad_request(exc.format_message())


def _resize(req, ctx, version, instance, body):
    schemas.validate(body, resize_schema)
    policy.authorize(ctx, 'os_compute_api:servers:resize',
                     _target(instance))
    flavor_ref = str(body['resize']['flavorRef'])
    try:
        flavor = objects.Flavor.get_by_flavor_id(
            ctx, flavor_ref.rstrip('/').rsplit('/', 1)[-1],
            project_id=None if ctx.is_admin
            else ctx.project_id)
    except exception.FlavorNotFound:
        raise errors.bad_request('Unable to locate requested flavor.')
    if flavor.disabled:
        raise errors.bad_request('Flavor is disabled.')
    if flavor.flavorid == instance.flavor.flavorid:
        raise errors.bad_request('When resizing, instances must change '
                                 'flavor!')
    if flavor.root_gb and flavor.root_gb < instance.flavor.root_gb:
        raise errors.bad_request('Resize error: Unable to resize disk '
                                 'down.')
    try:
        req.compute_api.resize(ctx, instance.uuid, flavor=flavor)
    except exception.NoValidHost as exc:
        raise _no_valid_host(exc)
    return 202, None


def _migrate(req, ctx, version, instance, body):
    host = None
    if version >= (2, 56):
        schemas.validate(body, migrate_schema_v256)
        host = (body['migrate'] or {}).get('host')
    else:
        _null_body('migrate', body)
    policy.authorize(ctx, 'os_compute_api:os-migrate-server:migrate',
                     _target(instance))
    if host is not None:
        policy.authorize(ctx,
                         'os_compute_api:os-migrate-server:migrate:host',
                         _target(instance))
        _known_host(ctx, host)
    try:
        req.compute_api.resize(ctx, instance.uuid, host=host)
    except exception.NoValidHost as exc:
        raise _no_valid_host(exc)
    return 202, None


def _finish_move(name, rule, method, status):
    """``confirmResize`` / ``revertResize``: a null body."""
    def handler(req, ctx, version, instance, body):
        _null_body(name, body)
        policy.authorize(ctx, rule, _target(instance))
        getattr(req.compute_api, method)(ctx, instance.uuid)
        return status, None
    return handler


_confirm_resize = _finish_move('confirmResize',
                               'os_compute_api:servers:confirm_resize',
                               'confirm_resize', 204)
_revert_resize = _finish_move('revertResize',
                              'os_compute_api:servers:revert_resize',
                              'revert_resize', 202)


_BOOLEAN = {'type': ['boolean', 'string'],
            'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
                     'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false',
                     '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']}
_HOST = {'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255,
         'pattern': '^[a-zA-Z0-9-._]*$'}


def _action_schema(name, properties, required):
    return {
        'type': 'object',
        'properties': {name: {'type': 'object', 'properties': properties,
                              'required': required,
                              'additionalProperties': False}},
        'required': [name],
        'additionalProperties': False,
    }


def _live_schema(version):
    """os-migrateLive as each microversion takes it: disk_over_commit
    until 2.24, block_migration ``auto`` from 2.25, force from 2.30 to
    2.67."""
    if version < (2, 25):
        return _action_schema(
            'os-migrateLive',
            {'host': _HOST, 'block_migration': _BOOLEAN,
             'disk_over_commit': _BOOLEAN},
            ['host', 'block_migration', 'disk_over_commit'])
    properties = {'host': _HOST,
                  'block_migration': {'oneOf': [_BOOLEAN,
                                                {'enum': ['auto']}]}}
    if (2, 30) <= version < (2, 68):
        properties['force'] = _BOOLEAN
    return _action_schema('os-migrateLive', properties,
                          ['host', 'block_migration'])


def _evacuate_schema(version):
    """evacuate as each microversion takes it: onSharedStorage until
    2.13, force from 2.29 to 2.67."""
    properties = {'host': _HOST,
                  'adminPass': {'type': 'string', 'maxLength': 255}}
    required = []
    if version < (2, 14):
        properties['onSharedStorage'] = _BOOLEAN
        required = ['onSharedStorage']
    if (2, 29) <= version < (2, 68):
        properties['force'] = _BOOLEAN
    return _action_schema('evacuate', properties, required)


def _known_host(ctx, host):
    try:
        objects.HostMapping.get_by_host(ctx, host)
    except exception.NotFound:
        raise errors.bad_request('Compute host %s could not be found.'
                                 % host)


def _migrate_live(req, ctx, version, instance, body):
    """Accepted at once (as Nova does from 2.34): the scheduling and the
    destination's checks happen behind the bus, and a failure shows in
    the server's instance action, the server running where it was."""
    schemas.validate(body, _live_schema(version))
    policy.authorize(ctx, 'os_compute_api:os-migrate-server:migrate_live',
                     _target(instance))
    args = body['os-migrateLive']
    host = args.get('host')
    if host is not None:
        _known_host(ctx, host)
    req.compute_api.live_migrate(ctx, instance.uuid, host=host,
                                 block_migration=args['block_migration'])
    return 202, None


def _evacuate(req, ctx, version, instance, body):
    schemas.validate(body, _evacuate_schema(version))
    policy.authorize(ctx, 'os_compute_api:os-evacuate', _target(instance))
    args = body['evacuate']
    host = args.get('host')
    if host is not None:
        _known_host(ctx, host)
    # From 2.95 an evacuated server is left stopped on its new host, as
    # Nova leaves it; before, in the state it was.
    req.compute_api.evacuate(ctx, instance.uuid, host=host,
                             stopped=version >= (2, 95))
    if version < (2, 14):
        # As Nova answers then, with the password the server would have
        # (the fake driver sets none).
        return 200, {'adminPass': args.get('adminPass') or ''}
    return 200, None


def _restore(req, ctx, version, instance, body):
    """A SOFT_DELETED server back (``[DEFAULT] reclaim_instance_interval``):
    403 if its project's quota no longer takes it."""
    _null_body('restore', body)
    policy.authorize(ctx, 'os_compute_api:os-deferred-delete:restore',
                     _target(instance))
    req.compute_api.restore(ctx, instance.uuid)
    return 202, None


def _force_delete(req, ctx, version, instance, body):
    """Delete at once, whatever the reclaim interval: a SOFT_DELETED
    server is not kept until its reclaim."""
    _null_body('forceDelete', body)
    policy.authorize(ctx, 'os_compute_api:os-deferred-delete:force',
                     _target(instance))
    req.compute_api.check_lock(ctx, instance)
    req.compute_api.delete(ctx, instance.uuid, force=True)
    return 202, None


def _shelve(req, ctx, version, instance, body):
    """Shelve: 202; the server ends SHELVED (or SHELVED_OFFLOADED with
    ``[DEFAULT] shelved_offload_time`` 0), its image ``<name>-shelved``."""
    _null_body('shelve', body)
    policy.authorize(ctx, 'os_compute_api:os-shelve:shelve',
                     _target(instance))
    req.compute_api.shelve(ctx, instance.uuid)
    return 202, None


def _shelve_offload(req, ctx, version, instance, body):
    _null_body('shelveOffload', body)
    policy.authorize(ctx, 'os_compute_api:os-shelve:shelve_offload',
                     _target(instance))
    req.compute_api.shelve_offload(ctx, instance.uuid)
    return 202, None


unshelve_schema_v277 = {
    'type': 'object',
    'properties': {
        'unshelve': {
            'type': ['object', 'null'],
            'properties': {'availability_zone': schemas.name},
            'required': ['availability_zone'],
            'additionalProperties': False,
        },
    },
    'required': ['unshelve'],
    'additionalProperties': False,
}
unshelve_schema_v291 = {
    'type': 'object',
    'properties': {
        'unshelve': {
            'type': ['object', 'null'],
            'properties': {
                'availability_zone': {
                    'oneOf': [{'type': 'null'}, schemas.name]},
                'host': dict(_HOST, type='string'),
            },
            'minProperties': 1,
            'maxProperties': 2,
            'additionalProperties': False,
        },
    },
    'required': ['unshelve'],
    'additionalProperties': False,
}


def _unshelve(req, ctx, version, instance, body):
    """Unshelve; from 2.77 into an availability zone, from 2.91 also to a
    host (admins) or with the zone unpinned (null). A zone or a host is
    only for an offloaded server: 409 otherwise, as in Nova."""
    if version < (2, 77):
        _null_body('unshelve', body)
        args = {}
    else:
        schemas.validate(body, unshelve_schema_v291 if version >= (2, 91)
                         else unshelve_schema_v277)
        args = body['unshelve'] or {}
    policy.authorize(ctx, 'os_compute_api:os-shelve:unshelve',
                     _target(instance))
    host = args.get('host')
    if host is not None:
        policy.authorize(ctx, 'os_compute_api:os-shelve:unshelve_to_host',
                         _target(instance))
        _known_host(ctx, host)
    spec_changes = None
    if 'availability_zone' in args:
        zone = args['availability_zone']
        if zone is not None:
            availability_zones.check_requested_zone(req, ctx, zone)
        spec_changes = {'availability_zone': zone}
    req.compute_api.unshelve(ctx, instance.uuid, spec_changes=spec_changes,
                             host=host)
    return 202, None


console_output_schema = {
    'type': 'object',
    'properties': {
        'os-getConsoleOutput': {
            'type': 'object',
            'properties': {'length': {
                'type': ['integer', 'string', 'null'],
                'pattern': '^-?[0-9]+$', 'minimum': -1}},
            'additionalProperties': False,
        },
    },
    'required': ['os-getConsoleOutput'],
    'additionalProperties': False,
}


def _console_output(req, ctx, version, instance, body):
    """The server's console, from its compute: its last ``length``
    lines (all of them without one, or with -1)."""
    schemas.validate(body, console_output_schema)
    policy.authorize(ctx, 'os_compute_api:os-console-output',
                     _target(instance))
    length = body['os-getConsoleOutput'].get('length')
    if length is not None:
        length = int(length)
        if length < -1:
            raise errors.bad_request(
                "Invalid input for field/attribute length. Value: %d. %d "
                "is less than the minimum of -1" % (length, length))
        if length == -1:
            length = None
    output = req.compute_api.inspect(ctx, instance.uuid,
                                     'os-getConsoleOutput',
                                     'get_console_output',
                                     tail_length=length)
    return 200, {'output': output}


_HANDLERS = {name: _cast(name) for name in _CASTS}
_HANDLERS.update({
    'reboot': _reboot,
    'lock': _lock,
    'unlock': _unlock,
    'os-resetState': _reset_state,
    'createImage': _create_image,
    'createBackup': _create_backup,
    'resize': _resize,
    'migrate': _migrate,
    'confirmResize': _confirm_resize,
    'revertResize': _revert_resize,
    'os-migrateLive': _migrate_live,
    'evacuate': _evacuate,
    'rebuild': server_rebuild.rebuild,
    'restore': _restore,
    'forceDelete': _force_delete,
    'shelve': _shelve,
    'shelveOffload': _shelve_offload,
    'unshelve': _unshelve,
    'os-getConsoleOutput': _console_output,
})
