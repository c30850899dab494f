"""What operators steer and see through the scheduler (scheduler RPC 1.2
and 1.3): the status of compute hosts and their deletion, os-hypervisors,
the schedulers' own service records, host aggregates and availability
zones.

Writes go to the scheduler database first, then into this process's
host-state cache; other scheduler processes see them on their next
select (see :mod:`host_manager`). Reads take reader sessions.
"""

import logging

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import service as service_obj
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import placement_providers
from scheduler_split.scheduler import reports
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _iso(value):
    return value.isoformat() if value is not None else None


class SchedulerAdmin:
    """The operator's side of one scheduler process, around its
    host-state cache."""

    def __init__(self, db_url, host_manager):
        self.db_url = db_url
        self.host_manager = host_manager

    # --- compute hosts (1.2) -------------------------------------------------

    def update_host_status(self, ctx, host, status, updated_at=None):
        """The operator's status of ``host``'s compute service
        (``{disabled, disabled_reason, forced_down}``, read from its cell
        record of time ``updated_at``); the uuids of its compute nodes
        (empty if it never reported)."""
        rp = scheduler_models.ResourceProvider.__table__
        updated_at = reports.status_time(updated_at) or obj_base.naive_utc(
            obj_base.utcnow())
        stamp = self.host_manager.stamp()
        statuses = {}
        with engines.writer(self.db_url) as session:
            conn = session.connection()
            for row in conn.execute(sa.select(
                    rp.c.id, rp.c.uuid, rp.c.service_disabled,
                    rp.c.disabled_reason, rp.c.forced_down,
                    rp.c.status_updated_at).where(rp.c.host == host)):
                values = reports.status_values(row.status_updated_at,
                                               status, updated_at)
                if values is None:
                    statuses[row.uuid] = (row.service_disabled,
                                          row.disabled_reason,
                                          row.forced_down)
                    continue
                conn.execute(sa.update(rp).where(rp.c.id == row.id).values(
                    changed_by=claims.CHANGED_BY, **values), stamp)
                statuses[row.uuid] = (values['service_disabled'],
                                      values['disabled_reason'],
                                      values['forced_down'])
        self.host_manager.apply_status(statuses)
        uuids = sorted(statuses)
        LOG.info('Host %s is now %s%s (compute nodes %s)', host,
                 'disabled' if status.get('disabled') else 'enabled',
                 ', forced down' if status.get('forced_down') else '',
                 uuids)
        return uuids

    def delete_host(self, ctx, host):
        """Forget ``host``'s compute nodes; refused (``Conflict``) while
        any consumer holds an allocation on them. The uuids deleted."""
        rp = scheduler_models.ResourceProvider
        with engines.writer(self.db_url) as session:
            ids = dict(session.execute(sa.select(rp.id, rp.uuid).where(
                rp.host == host)).all())
            # The providers below them go with them (a GPU, a NIC).
            parents = dict(session.execute(sa.select(
                rp.id, rp.parent_provider_id).where(
                rp.root_provider_id.in_(list(ids)))).all()) if ids else {}
            below = list(parents)
            if ids:
                held = session.scalar(sa.select(sa.func.count()).where(
                    scheduler_models.Allocation.resource_provider_id.in_(
                        list(ids) + below)))
                if held:
                    raise exception.Conflict(
                        reason='host %s still holds %d allocations' % (
                            host, held))
                # Leaves first: no row outlives its parent.
                while parents:
                    leaves = set(parents) - set(parents.values())
                    placement_providers.delete_rows(session.connection(),
                                                    sorted(leaves))
                    for leaf in leaves:
                        del parents[leaf]
                placement_providers.delete_rows(session.connection(),
                                                list(ids))
        uuids = sorted(ids.values())
        self.host_manager.forget(uuids)
        LOG.info('Deleted the compute nodes %s of host %s', uuids, host)
        return uuids

    def get_compute_nodes(self, ctx):
        """Every compute node as os-hypervisors shows it: a list of
        plain dicts (what the scheduler's RPC answers with)."""
        rp = scheduler_models.ResourceProvider
        alloc = scheduler_models.Allocation
        states = self.host_manager.read_states()
        with engines.reader(self.db_url) as session:
            ids = dict(session.execute(sa.select(rp.uuid, rp.id)).all())
            running = dict(session.execute(
                sa.select(rp.uuid, sa.func.count(sa.distinct(
                    alloc.consumer_id)))
                .join(alloc, alloc.resource_provider_id == rp.id)
                .group_by(rp.uuid)).all())
        since = servicegroup.up_since()
        nodes = []
        for uuid, state in states.items():
            if uuid not in ids:
                continue
            node = {
                'id': ids[uuid], 'uuid': uuid, 'host': state.host,
                'hypervisor_hostname': state.nodename,
                'cell_uuid': state.cell_uuid,
                'availability_zone': state.availability_zone,
                'reported_disabled': state.reported_disabled,
                'service_disabled': state.service_disabled,
                'disabled_reason': state.disabled_reason,
                'forced_down': state.forced_down,
                'last_report_at': _iso(state.last_report_at),
                'up': state.is_up(since),
                'running_vms': running.get(uuid, 0),
                'inventory': {rc: list(inv)
                              for rc, inv in state.inventory.items()},
                'used': dict(state.used),
            }
            for name in host_state.HYPERVISOR_FIELDS:
                node[name] = getattr(state, name)
            nodes.append(node)
        return sorted(nodes, key=lambda n: n['id'])

    # --- the schedulers' own records (1.2) -----------------------------------

    def get_services(self, ctx):
        """The records of the scheduler services, as plain dicts."""
        svc = scheduler_models.SchedulerService
        with engines.reader(self.db_url) as session:
            rows = session.scalars(sa.select(svc).order_by(svc.id))
            return [{'id': row.id, 'uuid': row.uuid, 'host': row.host,
                     'binary': row.binary, 'topic': row.topic,
                     'version': row.version,
                     'last_seen_up': _iso(row.last_seen_up),
                     'created_at': _iso(row.created_at),
                     'updated_at': _iso(row.updated_at)} for row in rows]

    def delete_service(self, ctx, service_uuid):
        """Forget a scheduler's record; False if there is none."""
        svc = scheduler_models.SchedulerService
        with engines.writer(self.db_url) as session:
            return session.execute(sa.delete(svc).where(
                svc.uuid == service_uuid)).rowcount == 1

    def report_service(self):
        """Periodic: heartbeat this scheduler's record, with its service
        version, in the scheduler database. Records that schedulers of a
        release before service uuids write get their uuid here, so that
        listing the services only reads."""
        svc = scheduler_models.SchedulerService
        with engines.writer(self.db_url) as session:
            service_obj.heartbeat_row(session, svc, CONF.host,
                                      service_obj.SCHEDULER, 'scheduler')
            for row in session.scalars(sa.select(svc).where(
                    svc.uuid.is_(None))):
                row.uuid = uuidutils.generate_uuid()

    def get_minimum_service_version(self, ctx):
        """The lowest service version of the running schedulers (this
        one included, recorded or not)."""
        with engines.reader(self.db_url) as session:
            minimum = service_obj.minimum_version(
                session, scheduler_models.SchedulerService,
                service_obj.SCHEDULER)
        if minimum is None:
            return service_obj.SERVICE_VERSION
        return min(minimum, service_obj.SERVICE_VERSION)

    # --- host aggregates and availability zones (1.3) ------------------------

    def aggregate_list(self, ctx):
        return aggregates.list_all(self.db_url)

    def aggregate_get(self, ctx, aggregate_id):
        return aggregates.get(self.db_url, aggregate_id)

    def _aggregate_write(self, write, *args, **kwargs):
        try:
            return write(self.db_url, *args, **kwargs)
        finally:
            self.host_manager.aggregates_changed()

    def aggregate_create(self, ctx, name, availability_zone=None):
        return self._aggregate_write(aggregates.create, name,
                                     availability_zone)

    def aggregate_update(self, ctx, aggregate_id, values):
        return self._aggregate_write(
            aggregates.update, aggregate_id, name=values.get('name'),
            availability_zone=values.get('availability_zone'),
            set_zone='availability_zone' in values)

    def aggregate_delete(self, ctx, aggregate_id):
        return self._aggregate_write(aggregates.delete, aggregate_id)

    def aggregate_add_host(self, ctx, aggregate_id, host):
        return self._aggregate_write(aggregates.add_host, aggregate_id, host,
                                     self.host_manager.known_hosts())

    def aggregate_remove_host(self, ctx, aggregate_id, host):
        return self._aggregate_write(aggregates.remove_host, aggregate_id,
                                     host)

    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        return self._aggregate_write(aggregates.set_metadata, aggregate_id,
                                     metadata)

    def get_availability_zones(self, ctx):
        """``{zone: {host: {available, active, updated_at}}}``: the
        zones of the known compute hosts; a host is available when its
        compute is enabled and active when it is up."""
        since = servicegroup.up_since()
        result = {}
        for zone, states in self.host_manager.zones().items():
            hosts = result.setdefault(zone, {})
            for state in states:
                entry = hosts.setdefault(state.host, {
                    'available': False, 'active': False,
                    'updated_at': None})
                entry['available'] |= not state.disabled
                entry['active'] |= state.is_up(since)
                seen = _iso(state.last_report_at)
                if seen and (entry['updated_at'] or '') < seen:
                    entry['updated_at'] = seen
        return result
