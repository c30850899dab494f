"""``POST /v2.1/servers/{server_id}/action``: the lifecycle actions.

``os-stop``, ``os-start``, ``reboot``, ``pause``, ``unpause``,
``suspend``, ``resume`` are checked here (policy, lock, state, as Nova
checks them) and cast to the server's compute, and so are ``restore`` and
``forceDelete`` of a soft-deleted server; ``rebuild`` is
``server_rebuild``'s, the moves' are here too; ``lock``, ``unlock`` and
the admins' ``os-resetState`` are the API's alone. ``createImage`` and
``createBackup`` need an image service that takes uploads, which the
built-in catalog is not: they get a 409. Any other action is a 400, as in Nova.
"""

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split.api import server_rebuild
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
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
create_image_schema = {
    'type': 'object',
    'properties': {
        'createImage': {
            'type': 'object',
            'properties': {'name': schemas.name,
                           'metadata': {'type': 'object'}},
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
                'metadata': {'type': 'object'},
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


def _no_uploads(action_name, schema, rule):
    def handler(req, ctx, version, instance, body):
        schemas.validate(body, schema)
        policy.authorize(ctx, rule, _target(instance))
        req.compute_api.check_lock(ctx, instance)
        raise errors.HTTPError(
            409, "Cannot '%s' instance %s: the image service does not "
                 "accept uploads" % (action_name, instance.uuid))
    return handler


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
    'createImage': _no_uploads('createImage', create_image_schema,
                               'os_compute_api:servers:create_image'),
    'createBackup': _no_uploads('createBackup', create_backup_schema,
                                'os_compute_api:os-create-backup'),
    'resize': _resize,
    'migrate': _migrate,
    'confirmResize': _confirm_resize,
    'revertResize': _revert_resize,
    'os-migrateLive': _migrate_live,
    'evacuate': _evacuate,
    'rebuild': server_rebuild.rebuild,
    'restore': _restore,
    'forceDelete': _force_delete,
    'os-getConsoleOutput': _console_output,
})
