"""``/v2.1/servers/{server_id}/os-instance-actions``."""

from scheduler_split.api import errors
from scheduler_split.api import server_views
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split.objects import instance_action
from scheduler_split import policy


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%S.%f') if value else None


def _server_and_cell_context(req, ctx, version, server_id, rule):
    """The server and the context targeting its cell, or None before it
    has one (a build request has no actions yet), once ``rule`` allows
    the caller to read the server's actions. From 2.21 the actions of a
    deleted server can be read too."""
    read_deleted = version >= (2, 21)
    try:
        instance = req.compute_api.get(ctx, server_id,
                                       read_deleted=read_deleted)
        policy.authorize(ctx, rule,
                         {'project_id': instance.project_id})
        _, cell = req.compute_api.locate(ctx, server_id,
                                         read_deleted=read_deleted)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    return instance, ss_context.target_cell(ctx, cell) if cell else None


def _render(action, version):
    body = {'action': action['action'],
            'instance_uuid': action['instance_uuid'],
            'request_id': action['request_id'],
            'user_id': action['user_id'],
            'project_id': action['project_id'],
            'start_time': _time(action['start_time']),
            'message': action['message']}
    if version >= (2, 58):
        body['updated_at'] = _time(action['updated_at'])
    return body


def index(req, ctx, version, server_id):
    _, cctx = _server_and_cell_context(
        req, ctx, version, server_id,
        'os_compute_api:os-instance-actions:list')
    actions = instance_action.get_actions(cctx, server_id) if cctx else []
    return {'instanceActions': [_render(a, version) for a in actions]}


def show(req, ctx, version, server_id, request_id):
    instance, cctx = _server_and_cell_context(
        req, ctx, version, server_id,
        'os_compute_api:os-instance-actions:show')
    action = cctx and instance_action.get_action(cctx, server_id,
                                                 request_id)
    if not action:
        raise errors.not_found('Action %s not found' % request_id)
    body = _render(action, version)
    target = {'project_id': instance.project_id}
    everything = policy.authorize(
        ctx, 'os_compute_api:os-instance-actions:events', target,
        fatal=False)
    # As Nova's: an event's details exist from 2.84 only, whoever asks
    # (a client of an older microversion refuses unknown keys).
    details = version >= (2, 84) and policy.authorize(
        ctx, 'os_compute_api:os-instance-actions:events:details', target,
        fatal=False)
    if everything or version >= (2, 51):
        events = []
        for event in action['events']:
            shown = {'event': event['event'],
                     'start_time': _time(event['start_time']),
                     'finish_time': _time(event['finish_time']),
                     'result': event['result']}
            if everything:
                shown['traceback'] = None
            if version >= (2, 62):
                shown['hostId'] = server_views.host_id(instance.project_id,
                                                       event['host'])
                if everything:
                    shown['host'] = event['host']
            if details:
                shown['details'] = event['details']
            events.append(shown)
        body['events'] = events
    return {'instanceAction': body}
