"""``POST /v2.1/servers/{server_id}/action``: the lifecycle actions.

``os-stop``, ``os-start``, ``reboot``, ``pause``, ``unpause``,
``suspend``, ``resume`` are checked here (policy, lock, state, as Nova
checks them) and cast to the server's compute, and so are ``restore`` and
``forceDelete`` of a soft-deleted server and ``shelve``,
``shelveOffload`` and ``unshelve`` (which goes through the
super-conductor, and the scheduler for an offloaded server); ``lock``,
``unlock`` and the admins' ``os-resetState`` are the API's alone. This
module dispatches every action: ``rebuild`` is ``server_rebuild``'s, the
moves are ``server_moves``', and ``createImage`` and ``createBackup``,
whose image the API makes itself (``snapshots``), are
``server_images``'; the checks they share are ``action_checks``'. Any
other action is a 400, as in Nova.
"""

from scheduler_split.api import action_checks
from scheduler_split.api import availability_zones
from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split.api import server_images
from scheduler_split.api import server_moves
from scheduler_split.api import server_rebuild
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import notifications
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


def _cast(name):
    rule, action_name, task_state, vm_states, method = _CASTS[name]

    def handler(req, ctx, version, instance, body):
        action_checks.null_body(name, body)
        policy.authorize(ctx, rule, action_checks.target(instance))
        req.compute_api.cast_action(ctx, instance.uuid, action_name,
                                    task_state, vm_states,
                                    _ANY_STATE_BUT_BUSY, method)
        return 202, None
    return handler


def _reboot(req, ctx, version, instance, body):
    schemas.validate(body, reboot_schema)
    policy.authorize(ctx, 'os_compute_api:servers:reboot',
                     action_checks.target(instance))
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
                     action_checks.target(instance))
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
    target = action_checks.target(instance)
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
                     action_checks.target(instance))
    state = body['os-resetState']['state']
    instance = req.compute_api.update(ctx, instance, {
        'vm_state': (instance_obj.ACTIVE if state == 'active'
                     else instance_obj.ERROR),
        'task_state': None})
    notifications.instance_event(ctx, notifications.api_publisher(),
                                 instance, 'instance.update')
    return 202, None


def _restore(req, ctx, version, instance, body):
    """A SOFT_DELETED server back (``[DEFAULT] reclaim_instance_interval``):
    403 if its project's quota no longer takes it."""
    action_checks.null_body('restore', body)
    policy.authorize(ctx, 'os_compute_api:os-deferred-delete:restore',
                     action_checks.target(instance))
    req.compute_api.restore(ctx, instance.uuid)
    return 202, None


def _force_delete(req, ctx, version, instance, body):
    """Delete at once, whatever the reclaim interval: a SOFT_DELETED
    server is not kept until its reclaim."""
    action_checks.null_body('forceDelete', body)
    policy.authorize(ctx, 'os_compute_api:os-deferred-delete:force',
                     action_checks.target(instance))
    req.compute_api.check_lock(ctx, instance)
    req.compute_api.delete(ctx, instance.uuid, force=True)
    return 202, None


def _shelve(req, ctx, version, instance, body):
    """Shelve: 202; the server ends SHELVED (or SHELVED_OFFLOADED with
    ``[DEFAULT] shelved_offload_time`` 0), its image ``<name>-shelved``."""
    action_checks.null_body('shelve', body)
    policy.authorize(ctx, 'os_compute_api:os-shelve:shelve',
                     action_checks.target(instance))
    req.compute_api.shelve(ctx, instance.uuid)
    return 202, None


def _shelve_offload(req, ctx, version, instance, body):
    action_checks.null_body('shelveOffload', body)
    policy.authorize(ctx, 'os_compute_api:os-shelve:shelve_offload',
                     action_checks.target(instance))
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
                'host': dict(action_checks.HOST, type='string'),
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
        action_checks.null_body('unshelve', body)
        args = {}
    else:
        schemas.validate(body, unshelve_schema_v291 if version >= (2, 91)
                         else unshelve_schema_v277)
        args = body['unshelve'] or {}
    policy.authorize(ctx, 'os_compute_api:os-shelve:unshelve',
                     action_checks.target(instance))
    host = args.get('host')
    if host is not None:
        policy.authorize(ctx, 'os_compute_api:os-shelve:unshelve_to_host',
                         action_checks.target(instance))
        action_checks.known_host(ctx, host)
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
                     action_checks.target(instance))
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
    'createImage': server_images.create_image,
    'createBackup': server_images.create_backup,
    'resize': server_moves.resize,
    'migrate': server_moves.migrate,
    'confirmResize': server_moves.confirm_resize,
    'revertResize': server_moves.revert_resize,
    'os-migrateLive': server_moves.migrate_live,
    'evacuate': server_moves.evacuate,
    'rebuild': server_rebuild.rebuild,
    'restore': _restore,
    'forceDelete': _force_delete,
    'shelve': _shelve,
    'shelveOffload': _shelve_offload,
    'unshelve': _unshelve,
    'os-getConsoleOutput': _console_output,
})
