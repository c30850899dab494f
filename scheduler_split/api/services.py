"""``/os-services``: the compute, conductor and scheduler services.

Computes and conductors are read from (and written to) every cell
database; the schedulers' records are the scheduler's, asked for through
its client library. Binaries are Nova's (``nova-compute``, ...), since
clients filter on them. Conductors share a binary and often a host (the
super-conductor and one conductor per cell on one controller), so a
conductor's host is shown with the cell it serves: ``<host>@super`` for
the super-conductor (its record lives in cell0), ``<host>@<cell name>``
for a cell's conductor. ``?host=`` matches either form.

Disabling, enabling or forcing down a compute writes its cell record
first, then tells the schedulers through their library (a call). If no
scheduler answers, the request fails with 503 and the cell record stays
written: the compute's next report carries the record's status to the
scheduler (the conductor answers every heartbeat with it), so the change
lands within a report interval anyway.
"""

import logging

import oslo_messaging as messaging
from oslo_utils import strutils
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import service as service_obj
from scheduler_split import policy
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Our binaries as the compute API names them.
NOVA_BINARIES = {
    service_obj.COMPUTE: 'nova-compute',
    service_obj.CONDUCTOR: 'nova-conductor',
    service_obj.SCHEDULER: 'nova-scheduler',
}
COMPUTE = 'nova-compute'
# What a super-conductor's host is shown with (see conductor_host).
SUPER = 'super'
INTERNAL_ZONE = 'internal'

_TIME_FORMAT = '%Y-%m-%dT%H:%M:%S.%f'

_BOOLEAN = {'type': ['boolean', 'string'],
            'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
                     'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false',
                     '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']}
_HOST = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': '^[a-zA-Z0-9-._]*$'}
_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}

UPDATE_V21 = {
    'type': 'object',
    'properties': {'host': _HOST, 'binary': _NAME, 'disabled_reason': _NAME},
    'required': ['host', 'binary'],
    'additionalProperties': False,
}
UPDATE_V211 = {
    'type': 'object',
    'properties': dict(UPDATE_V21['properties'], forced_down=_BOOLEAN),
    'required': ['host', 'binary'],
    'additionalProperties': False,
}
UPDATE_V253 = {
    'type': 'object',
    'properties': {'status': {'type': 'string',
                              'enum': ['enabled', 'disabled']},
                   'disabled_reason': _NAME, 'forced_down': _BOOLEAN},
    'additionalProperties': False,
}


class _Service:
    """One row of the listing, wherever it was read from."""

    def __init__(self, **kwargs):
        self.cell = None
        self.recorded_host = kwargs.get('host')
        self.disabled = False
        self.disabled_reason = None
        self.forced_down = False
        self.__dict__.update(kwargs)

    @property
    def is_up(self):
        return servicegroup.is_up(self.last_seen_up, self.forced_down)


def iso_time(value):
    if value is None:
        return None
    return obj_base.naive_utc(value).strftime(_TIME_FORMAT)


def conductor_host(host, cell):
    """How the listing names the conductor of ``host`` whose record
    lives in ``cell``: the super-conductor's record is in cell0."""
    return '%s@%s' % (host, SUPER if cell.is_cell0 else cell.name)


def _from_cell(service, cell):
    shown = service.host
    if service.binary == service_obj.CONDUCTOR:
        shown = conductor_host(service.host, cell)
    return _Service(id=service.id, uuid=service.uuid, host=shown,
                    recorded_host=service.host,
                    binary=NOVA_BINARIES.get(service.binary, service.binary),
                    disabled=service.disabled,
                    disabled_reason=service.disabled_reason,
                    forced_down=service.forced_down,
                    last_seen_up=service.last_seen_up,
                    updated_at=service.updated_at, cell=cell)


def zones_of_hosts(req, ctx):
    """``{host: availability zone}`` of the computes, as the scheduler
    knows them; empty if no scheduler answers."""
    try:
        nodes = req.compute_api.scheduler.get_compute_nodes(ctx)
    except messaging.MessagingException as exc:
        LOG.warning('No scheduler answered for the compute nodes (%s); '
                    'listing computes in the default zone', exc)
        return {}
    return {node['host']: node['availability_zone'] for node in nodes
            if node.get('availability_zone')}


def cell_services(ctx, cells=None, down=None):
    """The services of every cell (or of ``cells``). A cell whose
    database cannot be reached raises, unless ``down`` is a list: then the
    cell is appended to it and skipped."""
    found = []
    for cell in cells or objects.CellMapping.get_all(ctx):
        cctx = ss_context.target_cell(ctx, cell)
        try:
            services = objects.Service.get_all(cctx)
        except outage.DATABASE_UNAVAILABLE as exc:
            if down is None:
                raise
            outage.report(LOG, exc, 'Cell %s cannot be reached (%s); its '
                          'services are not listed', cell.name, exc)
            down.append(cell)
            continue
        found.extend(_from_cell(service, cell) for service in services)
    return found


def _down_cell_computes(ctx, down):
    """What 2.69 shows of the computes of cells that cannot be reached:
    their host mappings, status UNKNOWN."""
    uuids = {cell.uuid for cell in down}
    return [{'binary': COMPUTE, 'host': mapping.host, 'status': 'UNKNOWN'}
            for mapping in objects.HostMapping.get_all(ctx)
            if mapping.cell_mapping.uuid in uuids]


def scheduler_services(req, ctx):
    try:
        records = req.compute_api.scheduler.get_services(ctx)
    except messaging.MessagingException as exc:
        LOG.warning('No scheduler answered for its services (%s)', exc)
        return []
    return [_Service(id=r['id'], uuid=r['uuid'], host=r['host'],
                     binary=NOVA_BINARIES.get(r['binary'], r['binary']),
                     last_seen_up=_parse(r['last_seen_up']),
                     updated_at=_parse(r['updated_at']))
            for r in records]


def _parse(value):
    if not value:
        return None
    return obj_base.naive_utc(timeutils.parse_isotime(value))


def _render(service, version, zones):
    if service.binary == COMPUTE:
        zone = zones.get(service.host) or CONF.compute.availability_zone
    else:
        zone = INTERNAL_ZONE
    body = {
        'id': service.uuid if version >= (2, 53) else service.id,
        'binary': service.binary,
        'host': service.host,
        'zone': zone,
        'status': 'disabled' if service.disabled else 'enabled',
        'state': 'up' if service.is_up else 'down',
        'updated_at': iso_time(service.last_seen_up or service.updated_at),
        'disabled_reason': service.disabled_reason,
    }
    if version >= (2, 11):
        body['forced_down'] = service.forced_down
    return body


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-services:list', target={})
    if version >= (2, 75):
        schemas.refuse_unknown_query(req, {'host', 'binary'})
    host = req.GET.get('host')
    binary = req.GET.get('binary')
    down = []
    services = (cell_services(ctx, down=down) +
                scheduler_services(req, ctx))
    if host:
        services = [s for s in services
                    if host in (s.host, s.recorded_host)]
    if binary:
        services = [s for s in services if s.binary == binary]
    zones = zones_of_hosts(req, ctx) if any(
        s.binary == COMPUTE for s in services) else {}
    listed = [_render(s, version, zones) for s in services]
    if down and version >= (2, 69):
        # As Nova: the computes of a cell that cannot be reached are
        # listed from their host mappings; before 2.69 they are left out.
        listed += [s for s in _down_cell_computes(ctx, down)
                   if (not host or s['host'] == host) and
                   (not binary or s['binary'] == binary)]
    return {'services': listed}


# --- update -----------------------------------------------------------------

def find_compute(ctx, host, binary):
    """The cell service of ``host`` and ``binary``, or 404."""
    if binary != COMPUTE:
        raise errors.bad_request(
            'Updating a %s service is not supported. Only nova-compute '
            'services can be updated.' % binary)
    mapping = {m.host: m.cell_mapping for m in
               objects.HostMapping.get_all(ctx)}.get(host)
    cells = [mapping] if mapping is not None else None
    for service in cell_services(ctx, cells):
        if service.host == host and service.binary == binary:
            return service
    if mapping is None:
        raise errors.not_found("Host '%s' is not mapped to any cell" % host)
    raise errors.not_found('Could not find binary %s on host %s.'
                           % (binary, host))


def apply_change(req, ctx, service, **changes):
    """Write the cell record, then tell the schedulers; the record."""
    cctx = ss_context.target_cell(ctx, service.cell)
    written = objects.Service.update_status(cctx, service.id, **changes)
    if written is None:
        raise errors.not_found('Service %s could not be found.'
                               % service.id)
    try:
        req.compute_api.scheduler.update_host_status(
            ctx, written.host, written.disabled, written.disabled_reason,
            written.forced_down, updated_at=written.updated_at.isoformat())
    except messaging.MessagingException as exc:
        LOG.error('The service of host %s was updated but no scheduler '
                  'heard it (%s); its next report carries it there',
                  written.host, exc)
        raise exception.ServiceUnavailable(
            reason='the service record of host %s was updated but the '
                   'scheduler could not be told; it learns it from the '
                   "host's next report" % written.host)
    return _from_cell(written, service.cell)


def update(req, ctx, version, service_id):
    if version >= (2, 53):
        return _update_v253(req, ctx, version, service_id)
    policy.authorize(ctx, 'os_compute_api:os-services:update', target={})
    actions = {'enable', 'disable', 'disable-log-reason'}
    if version >= (2, 11):
        actions.add('force-down')
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE_V211 if version >= (2, 11) else UPDATE_V21)
    if service_id not in actions:
        raise errors.not_found('Unknown action')
    host, binary = body['host'], body['binary']
    if service_id == 'force-down':
        if 'forced_down' not in body:
            raise errors.bad_request('Missing forced_down field')
        forced_down = strutils.bool_from_string(body['forced_down'])
        service = find_compute(ctx, host, binary)
        apply_change(req, ctx, service, forced_down=forced_down)
        return {'service': {'host': host, 'binary': binary,
                            'forced_down': forced_down}}
    if service_id == 'enable':
        changes = {'disabled': False, 'disabled_reason': None}
    else:
        reason = None
        if service_id == 'disable-log-reason':
            if 'disabled_reason' not in body:
                raise errors.bad_request('Missing disabled reason field')
            reason = body['disabled_reason']
        changes = {'disabled': True, 'disabled_reason': reason}
    service = find_compute(ctx, host, binary)
    apply_change(req, ctx, service, **changes)
    result = {'host': host, 'binary': binary,
              'status': 'disabled' if changes['disabled'] else 'enabled'}
    if changes['disabled_reason']:
        result['disabled_reason'] = changes['disabled_reason']
    return {'service': result}


def _find_by_uuid(req, ctx, service_uuid):
    for service in cell_services(ctx) + scheduler_services(req, ctx):
        if service.uuid == service_uuid:
            return service
    raise errors.not_found('Service %s could not be found.' % service_uuid)


def _update_v253(req, ctx, version, service_id):
    if not uuidutils.is_uuid_like(service_id):
        raise errors.bad_request('Invalid uuid %s' % service_id)
    policy.authorize(ctx, 'os_compute_api:os-services:update', target={})
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE_V253)
    service = _find_by_uuid(req, ctx, service_id)
    if service.binary != COMPUTE:
        raise errors.bad_request(
            'Updating a %s service is not supported. Only nova-compute '
            'services can be updated.' % service.binary)
    changes = {}
    if 'status' in body:
        if body['status'] == 'enabled':
            if body.get('disabled_reason'):
                raise errors.bad_request(
                    "Specifying 'disabled_reason' with status 'enabled' is "
                    "invalid.")
            changes.update(disabled=False, disabled_reason=None)
        else:
            changes.update(disabled=True,
                           disabled_reason=body.get('disabled_reason'))
    if 'forced_down' in body:
        changes['forced_down'] = strutils.bool_from_string(
            body['forced_down'], strict=True)
    if not changes:
        raise errors.bad_request(
            "No updates were requested. Fields 'status' or 'forced_down' "
            "should be specified.")
    written = apply_change(req, ctx, service, **changes)
    return {'service': _render(written, version, zones_of_hosts(req, ctx))}


# --- delete -----------------------------------------------------------------

def delete(req, ctx, version, service_id):
    policy.authorize(ctx, 'os_compute_api:os-services:delete', target={})
    if version >= (2, 53):
        if not uuidutils.is_uuid_like(service_id):
            raise errors.bad_request('Invalid uuid %s' % service_id)
        matches = [s for s in cell_services(ctx) +
                   scheduler_services(req, ctx) if s.uuid == service_id]
    else:
        try:
            wanted = int(service_id)
        except ValueError:
            raise errors.bad_request('id must be an integer')
        matches = [s for s in cell_services(ctx) +
                   scheduler_services(req, ctx) if s.id == wanted]
    if not matches:
        raise errors.not_found('Service %s not found.' % service_id)
    if len(matches) > 1:
        raise errors.bad_request('Service id %s refers to multiple '
                                 'services.' % service_id)
    service = matches[0]
    scheduler = req.compute_api.scheduler
    if service.cell is None:
        # A scheduler's record: the scheduler's own to forget.
        if not scheduler.delete_service(ctx, service.uuid):
            raise errors.not_found('Service %s not found.' % service_id)
        return 204, None
    cctx = ss_context.target_cell(ctx, service.cell)
    if service.binary == COMPUTE:
        if objects.Instance.get_all(cctx, host=service.host, limit=1):
            raise errors.HTTPError(
                409, 'Unable to delete compute service that is hosting '
                     'instances. Migrate or delete the instances first.')
        try:
            scheduler.delete_host(ctx, service.host)
        except exception.Conflict:
            # A server being built there holds a claim already.
            raise errors.HTTPError(
                409, 'Unable to delete compute service that is hosting '
                     'instances. Migrate or delete the instances first.')
        except messaging.MessagingException as exc:
            raise exception.ServiceUnavailable(
                reason='the scheduler could not be told to forget host %s '
                       '(%s); nothing was deleted' % (service.host, exc))
        objects.HostMapping.destroy_by_host(ctx, service.host)
    objects.Service.destroy(cctx, service.id)
    return 204, None
