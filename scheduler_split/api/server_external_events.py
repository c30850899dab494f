"""``POST /os-server-external-events``: other services tell the compute
API what happened to servers (Neutron that a port was plugged, Cinder
that a volume was extended, Ironic that a node's power changed, Cyborg
that an accelerator was bound).

Each event is answered on its own, in Nova's words: ``code`` 200 (and
``status`` ``completed``) when it was accepted, 404 for a server that
does not exist (or is deleted), 400 for an event that needs a ``tag``
and has none, 422 for a server that is on no host yet (still being
scheduled, or failed to build). The whole answer is 200 when every event
was accepted and 207 when any was not, as Nova answers since it dropped
its 404 for "no event accepted" (bug 1855752).

An accepted event is logged and recorded as Nova's API records it: a
``volume-extended`` starts the server's ``extend_volume`` action, a
``power-update`` its ``start`` (tag ``POWER_ON``) or ``stop``
(``POWER_OFF``) action. Nothing is cast to the server's compute, because
nothing there could act on it: the fake driver plugs no ports and
attaches no volumes or accelerators, and its power state is the one its
compute sets (Ironic, which sends ``power-update``, is not a driver
here). Servers are found across cells through their instance mappings:
one query of the API database, then one per cell that holds any.
"""

import logging

from scheduler_split.api import schemas
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance_action
from scheduler_split import policy

LOG = logging.getLogger(__name__)

# The event names each microversion takes, oldest first.
_NAMES = [
    ((2, 1), ['network-changed', 'network-vif-plugged',
              'network-vif-unplugged', 'network-vif-deleted']),
    ((2, 51), ['volume-extended']),
    ((2, 76), ['power-update']),
    ((2, 82), ['accelerator-request-bound']),
    ((2, 93), ['volume-reimaged']),
]
STATUSES = ['failed', 'completed', 'in-progress']
# Events whose tag says what they are about (a volume, a power state, an
# accelerator request); without one they are refused.
TAG_REQUIRED = ('volume-extended', 'power-update',
                'accelerator-request-bound')
# The instance action Nova's API starts for an accepted event.
_POWER_ACTIONS = {'POWER_ON': 'start', 'POWER_OFF': 'stop'}


def _schema(names):
    return {
        'type': 'object',
        'properties': {
            'events': {
                'type': 'array',
                'minItems': 1,
                'items': {
                    'type': 'object',
                    'properties': {
                        'name': {'type': 'string', 'enum': names},
                        'server_uuid': {'type': 'string', 'format': 'uuid'},
                        'status': {'type': 'string', 'enum': STATUSES},
                        'tag': {'type': 'string', 'maxLength': 255},
                    },
                    'required': ['name', 'server_uuid'],
                    'additionalProperties': False,
                },
            },
        },
        'required': ['events'],
        'additionalProperties': False,
    }


def _schemas():
    found, names = [], []
    for since, added in _NAMES:
        names = names + added
        found.append((since, _schema(names)))
    return found


# (first microversion, schema), oldest first.
SCHEMAS = _schemas()


def _schema_of(version):
    return [schema for since, schema in SCHEMAS if version >= since][-1]


def _servers(ctx, uuids):
    """``{uuid: (instance or None, cell mapping or None)}`` for those of
    ``uuids`` that exist: ``(None, None)`` for a server still being
    scheduled (a build request)."""
    cell_ids = objects.InstanceMapping.get_cell_ids(ctx, uuids)
    found = {}
    by_cell = {}
    for uuid, cell_id in cell_ids.items():
        if cell_id is None:
            try:
                objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
            except exception.BuildRequestNotFound:
                continue
            found[uuid] = (None, None)
        else:
            by_cell.setdefault(cell_id, []).append(uuid)
    if by_cell:
        for cell in objects.CellMapping.get_all(ctx):
            if cell.id not in by_cell:
                continue
            cctx = ss_context.target_cell(ctx, cell)
            for instance in objects.Instance.get_all(
                    cctx, uuids=by_cell[cell.id]):
                found[instance.uuid] = (instance, cell)
    return found


def _action(event):
    """The instance action Nova's API starts for an accepted event, or
    None."""
    if event['name'] == 'volume-extended':
        return 'extend_volume'
    if event['name'] == 'power-update':
        return _POWER_ACTIONS.get(event.get('tag'))
    return None


def create(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-server-external-events:create',
                     target={})
    body = req.json_body_or_error()
    schemas.validate(body, _schema_of(version))
    events = body['events']
    servers = _servers(ctx, {event['server_uuid'] for event in events})
    status = 200
    for event in events:
        uuid = event['server_uuid']
        instance, cell = servers.get(uuid, (None, None))
        if uuid not in servers:
            code = 404
        elif event['name'] in TAG_REQUIRED and 'tag' not in event:
            code = 400
        elif instance is None or cell.is_cell0 or not instance.host:
            code = 422
        else:
            code = 200
        event['code'] = code
        event['status'] = 'completed' if code == 200 else 'failed'
        if code != 200:
            LOG.debug('Event %s:%s of server %s dropped (%d)',
                      event['name'], event.get('tag'), uuid, code,
                      extra={'instance_uuid': uuid})
            status = 207
            continue
        LOG.info('Event %s:%s of server %s on %s accepted', event['name'],
                 event.get('tag'), uuid, instance.host,
                 extra={'instance_uuid': uuid})
        action = _action(event)
        if action is not None:
            instance_action.start_action(
                ss_context.target_cell(ctx, cell), uuid, action)
        elif event['name'] == 'power-update':
            LOG.warning('Event power-update of server %s has an unknown '
                        'power state %s; no action recorded', uuid,
                        event.get('tag'), extra={'instance_uuid': uuid})
    return status, {'events': events}
