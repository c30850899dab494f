"""What the scheduler knows about every host of every cell, in memory.

Loaded from the scheduler database at start and every
``host_state_refresh_interval`` seconds, and kept current in between by
the reports computes send and by this scheduler's own claims and releases.
Memory only steers the choice; the claim in the database decides.

The operator's status of hosts (os-services: disabled, forced down) is
written to the database by whichever scheduler the API's call reached.
Every scheduler process sees it on its next select: ``host_states``
re-reads the status of the hosts that have one (disabled or forced down,
plus those this process still holds as such), one small query, whatever
the refresh interval. Claims read it in their transaction anyway.
"""

import logging
import threading
import time

import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.db import models
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class HostState:
    """One compute node as the filters and weighers see it."""

    def __init__(self, uuid, host, nodename, cell_uuid):
        self.uuid = uuid
        self.host = host
        self.nodename = nodename
        self.cell_uuid = cell_uuid
        # The effective zone: its aggregates', else what it reports.
        self.availability_zone = None
        self.reported_availability_zone = None
        # The aggregates the host is in (scheduler.aggregates.Aggregate).
        self.aggregates = []
        # Whether builds may not come here: the compute's own report or
        # the operator's status (os-services).
        self.disabled = False
        self.reported_disabled = False
        self.service_disabled = False
        self.disabled_reason = None
        self.forced_down = False
        self.last_report_at = None
        # What the compute reports of its hypervisor (the contract of
        # ImagePropertiesFilter, among others).
        self.host_ip = None
        self.hypervisor_type = None
        self.hypervisor_version = None
        self.cpu_arch = None
        self.cpu_info = None
        # {resource class: (total, reserved, allocation_ratio)}
        self.inventory = {}
        # {resource class: amount allocated}
        self.used = {}
        # The consumers (instances) holding allocations here, for the
        # same_host and different_host hints.
        self.instances = set()
        # What the compute counts of its builds: failures in a row, and
        # builds in flight (plus those claimed here since its report).
        self.failed_builds = 0
        self.num_io_ops = 0

    @property
    def num_instances(self):
        return len(self.instances)

    def __repr__(self):
        return '<HostState %s/%s cell=%s>' % (self.host, self.nodename,
                                              self.cell_uuid)

    def capacity(self, rc):
        inv = self.inventory.get(rc)
        return claims.capacity(*inv) if inv else 0

    def free(self, rc):
        return self.capacity(rc) - self.used.get(rc, 0)

    def fits(self, resources):
        return all(self.free(rc) >= amount
                   for rc, amount in resources.items() if amount)

    def consume(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = self.used.get(rc, 0) + amount

    def give_back(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = max(0, self.used.get(rc, 0) - amount)

    def set_aggregates(self, aggregates):
        self.aggregates = aggregates
        self.availability_zone = aggregates_mod.zone_of(
            aggregates, self.reported_availability_zone)

    def set_status(self, service_disabled, disabled_reason, forced_down):
        self.service_disabled = bool(service_disabled)
        self.disabled_reason = disabled_reason
        self.forced_down = bool(forced_down)
        self.disabled = self.reported_disabled or self.service_disabled

    def is_up(self, now=None):
        if self.forced_down or self.last_report_at is None:
            return False
        now = now or obj_base.naive_utc(obj_base.utcnow())
        return (now - self.last_report_at).total_seconds() <= \
            CONF.service_down_time


# What a compute reports of its hypervisor, kept as it says.
HYPERVISOR_FIELDS = ('host_ip', 'hypervisor_type', 'hypervisor_version',
                     'cpu_arch', 'cpu_info')
# The counts of its builds a compute reports.
BUILD_COUNTS = ('failed_builds', 'num_io_ops')


def _status_time(value):
    """The time of a status reading (ISO 8601 text), naive UTC."""
    if not value:
        return None
    return obj_base.naive_utc(timeutils.parse_isotime(value))


def _apply_status(row, status, updated_at):
    """Write a reading of the operator's status onto a provider row
    unless the row already holds a newer reading; True if written."""
    if updated_at is None:
        return False
    if row.status_updated_at is not None and \
            updated_at < row.status_updated_at:
        return False
    row.service_disabled = bool(status.get('disabled'))
    row.disabled_reason = status.get('disabled_reason')
    row.forced_down = bool(status.get('forced_down'))
    row.status_updated_at = updated_at
    return True


class HostManager:

    def __init__(self, db_url=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self._hosts = {}
        self._loaded_at = None
        self._lock = threading.RLock()
        # {host: [Aggregate]} and the signature it was read at.
        self._aggregates = {}
        self._aggregates_seen = None

    # --- reading ------------------------------------------------------------

    def host_states(self):
        """Every known host, reloaded from the database when stale."""
        with self._lock:
            if (self._loaded_at is None or
                    time.monotonic() - self._loaded_at >
                    CONF.filter_scheduler.host_state_refresh_interval):
                self._load_all()
            else:
                self._refresh_status()
                self._refresh_aggregates()
            return list(self._hosts.values())

    def _refresh_aggregates(self, force=False):
        """Reload the aggregates if any changed (one small query), and
        give every host its own."""
        seen = aggregates_mod.signature(self.db_url)
        if not force and seen == self._aggregates_seen:
            return
        self._aggregates = aggregates_mod.by_host(self.db_url)
        self._aggregates_seen = seen
        for state in self._hosts.values():
            state.set_aggregates(self._aggregates.get(state.host, []))

    def aggregates_changed(self):
        """This process changed an aggregate: apply it now."""
        with self._lock:
            self._refresh_aggregates(force=True)

    def _refresh_status(self):
        """Apply the operator's status another scheduler may have
        written since the last load."""
        rp = models.ResourceProvider
        held = [uuid for uuid, state in self._hosts.items()
                if state.service_disabled or state.forced_down]
        condition = sa.or_(rp.service_disabled.is_(True),
                           rp.forced_down.is_(True))
        if held:
            condition = sa.or_(condition, rp.uuid.in_(held))
        with engines.reader(self.db_url) as session:
            rows = session.execute(sa.select(
                rp.uuid, rp.service_disabled, rp.disabled_reason,
                rp.forced_down).where(condition)).all()
        for row in rows:
            state = self._hosts.get(row.uuid)
            if state is not None:
                state.set_status(row.service_disabled, row.disabled_reason,
                                 row.forced_down)
        missing = set(held) - {row.uuid for row in rows}
        for uuid in missing:
            # Deleted meanwhile.
            self._hosts.pop(uuid, None)

    def _load_all(self):
        hosts = self._read_states()
        self._hosts = hosts
        self._loaded_at = time.monotonic()
        self._refresh_aggregates(force=True)
        LOG.debug('Loaded %d host states', len(hosts))

    def _read_states(self, uuid=None):
        """``{uuid: HostState}`` from the database: every provider, or
        only ``uuid``."""
        rp, inv_t = models.ResourceProvider, models.Inventory
        alloc = models.Allocation
        inventories = sa.select(inv_t)
        usage = sa.select(alloc.resource_provider_id, alloc.resource_class,
                          sa.func.sum(alloc.used)).group_by(
            alloc.resource_provider_id, alloc.resource_class)
        providers = sa.select(rp)
        consumers = sa.select(alloc.resource_provider_id,
                              alloc.consumer_id).distinct()
        with engines.reader(self.db_url) as session:
            if uuid is not None:
                providers = providers.where(rp.uuid == uuid)
            by_id = {row.id: self._state_from_row(row)
                     for row in session.scalars(providers)}
            if uuid is not None:
                if not by_id:
                    return {}
                inventories = inventories.where(
                    inv_t.resource_provider_id.in_(list(by_id)))
                usage = usage.where(
                    alloc.resource_provider_id.in_(list(by_id)))
                consumers = consumers.where(
                    alloc.resource_provider_id.in_(list(by_id)))
            for inv in session.scalars(inventories):
                state = by_id.get(inv.resource_provider_id)
                if state is not None:
                    state.inventory[inv.resource_class] = (
                        inv.total, inv.reserved, inv.allocation_ratio)
            for rp_id, rc, used in session.execute(usage):
                state = by_id.get(rp_id)
                if state is not None:
                    state.used[rc] = int(used)
            for rp_id, consumer in session.execute(consumers):
                state = by_id.get(rp_id)
                if state is not None:
                    state.instances.add(consumer)
        return {state.uuid: state for state in by_id.values()}

    @staticmethod
    def _state_from_row(row):
        state = HostState(row.uuid, row.host, row.name, row.cell_uuid)
        state.reported_availability_zone = row.availability_zone
        state.availability_zone = row.availability_zone
        state.reported_disabled = row.disabled
        state.set_status(row.service_disabled, row.disabled_reason,
                         row.forced_down)
        state.last_report_at = row.last_report_at
        for name in HYPERVISOR_FIELDS + BUILD_COUNTS:
            setattr(state, name, getattr(row, name))
        return state

    def refresh_host(self, uuid):
        """Reload one host after the database disagreed with memory."""
        state = self._read_states(uuid).get(uuid)
        if state is None:
            with self._lock:
                self._hosts.pop(uuid, None)
            return None
        with self._lock:
            state.set_aggregates(self._aggregates.get(state.host, []))
            existing = self._hosts.get(uuid)
            if existing is None:
                self._hosts[uuid] = state
                return state
            # Update in place: a request in flight holds this object.
            existing.__dict__.update(state.__dict__)
            return existing

    def known_hosts(self):
        """The hosts whose compute has reported, from the database."""
        rp = models.ResourceProvider
        with engines.reader(self.db_url) as session:
            return set(session.scalars(sa.select(rp.host).distinct()))

    def zones(self):
        """``{zone: [host state, ...]}`` of every known host."""
        result = {}
        for state in self.host_states():
            for zone in (state.availability_zone or '').split(','):
                if zone:
                    result.setdefault(zone, []).append(state)
        return result

    def get(self, uuid):
        with self._lock:
            return self._hosts.get(uuid)

    # --- writing ------------------------------------------------------------

    def note_claim(self, uuid, resources, consumer=None):
        with self._lock:
            state = self._hosts.get(uuid)
            if state is not None:
                state.consume(resources)
                if consumer is not None:
                    state.instances.add(consumer)
                # A build is on its way there, until the compute's next
                # report counts it.
                state.num_io_ops += 1

    def note_release(self, released, consumer=None):
        """Apply ``{provider_uuid: resources}`` given back by a release
        of ``consumer``."""
        with self._lock:
            for uuid, resources in released.items():
                state = self._hosts.get(uuid)
                if state is not None:
                    state.give_back(resources)
                    state.instances.discard(consumer)

    def locate_consumers(self, consumers):
        """Make the host states know where ``consumers`` hold
        allocations now, whoever claimed them (another scheduler process
        too): one small query, for the same_host/different_host hints."""
        alloc, rp = models.Allocation, models.ResourceProvider
        with engines.reader(self.db_url) as session:
            rows = session.execute(
                sa.select(rp.uuid, alloc.consumer_id).distinct()
                .join(rp, rp.id == alloc.resource_provider_id)
                .where(alloc.consumer_id.in_(list(consumers)))).all()
        with self._lock:
            for state in self._hosts.values():
                state.instances.difference_update(consumers)
            for uuid, consumer in rows:
                state = self._hosts.get(uuid)
                if state is not None:
                    state.instances.add(consumer)

    def update_from_stats(self, cell_uuid, host, nodename, stats):
        """Record a compute's report: capacity, zone, enabled, liveness.

        Creates the compute node's resource provider on its first report.
        Usage is not taken from the compute: allocations are the truth.
        """
        now = obj_base.naive_utc(obj_base.utcnow())
        inventory = {
            'VCPU': (stats['vcpus'], stats.get('reserved_vcpus', 0),
                     stats.get('cpu_allocation_ratio', 1.0)),
            'MEMORY_MB': (stats['memory_mb'],
                          stats.get('reserved_memory_mb', 0),
                          stats.get('ram_allocation_ratio', 1.0)),
            'DISK_GB': (stats['local_gb'], stats.get('reserved_disk_gb', 0),
                        stats.get('disk_allocation_ratio', 1.0)),
        }
        rp = models.ResourceProvider
        with engines.writer(self.db_url) as session:
            row = session.scalars(sa.select(rp).where(
                rp.host == host, rp.name == nodename)).first()
            if row is None:
                row = rp(uuid=stats.get('uuid') or
                         uuidutils.generate_uuid(), host=host, name=nodename,
                         generation=0)
                session.add(row)
            row.cell_uuid = cell_uuid or row.cell_uuid
            row.availability_zone = stats.get('availability_zone')
            row.disabled = bool(stats.get('disabled', False))
            row.last_report_at = now
            for name in HYPERVISOR_FIELDS + BUILD_COUNTS:
                if name in stats:
                    setattr(row, name, stats[name])
            status = stats.get('service_status')
            if status:
                # The compute's cell record as its conductor last
                # answered: applied only if newer than what the API told.
                _apply_status(row, status,
                              _status_time(status.get('updated_at')))
            session.flush()
            fresh = self._state_from_row(row)
            current = {inv.resource_class: inv for inv in session.scalars(
                sa.select(models.Inventory).where(
                    models.Inventory.resource_provider_id == row.id))}
            changed = False
            for rc, (total, reserved, ratio) in inventory.items():
                inv = current.get(rc)
                if inv is None:
                    session.add(models.Inventory(
                        resource_provider_id=row.id, resource_class=rc,
                        total=total, reserved=reserved,
                        allocation_ratio=ratio))
                    changed = True
                elif (inv.total, inv.reserved, inv.allocation_ratio) != (
                        total, reserved, ratio):
                    inv.total, inv.reserved = total, reserved
                    inv.allocation_ratio = ratio
                    changed = True
            uuid = row.uuid
            if changed:
                # An inventory change must fail claims that read the old
                # one; the bump is computed by the database so that a
                # concurrent claim's bump is never lost.
                session.flush()
                session.execute(sa.update(rp).where(rp.id == row.id).values(
                    generation=rp.generation + 1))
        with self._lock:
            state = self._hosts.get(uuid)
            if state is None:
                state = self._hosts[uuid] = HostState(uuid, host, nodename,
                                                      cell_uuid)
            state.cell_uuid = cell_uuid or state.cell_uuid
            state.reported_availability_zone = stats.get(
                'availability_zone')
            state.set_aggregates(self._aggregates.get(host, []))
            state.reported_disabled = fresh.reported_disabled
            state.set_status(fresh.service_disabled, fresh.disabled_reason,
                             fresh.forced_down)
            if fresh.failed_builds != state.failed_builds:
                LOG.log(logging.WARNING if fresh.failed_builds else
                        logging.INFO, 'Host %s (%s) reports %d failed '
                        'builds in a row', host, nodename,
                        fresh.failed_builds)
            for name in HYPERVISOR_FIELDS + BUILD_COUNTS:
                setattr(state, name, getattr(fresh, name))
            state.last_report_at = now
            state.inventory = inventory
        return uuid

    def update_status(self, host, status, updated_at):
        """Record the operator's status of ``host``'s compute service
        (``{disabled, disabled_reason, forced_down}``, read from its cell
        record of time ``updated_at``); the uuids of its providers."""
        rp = models.ResourceProvider
        updated_at = _status_time(updated_at) or obj_base.naive_utc(
            obj_base.utcnow())
        with engines.writer(self.db_url) as session:
            rows = list(session.scalars(sa.select(rp).where(rp.host == host)))
            for row in rows:
                _apply_status(row, status, updated_at)
            session.flush()
            states = {row.uuid: (row.service_disabled, row.disabled_reason,
                                 row.forced_down) for row in rows}
        with self._lock:
            for uuid, values in states.items():
                state = self._hosts.get(uuid)
                if state is not None:
                    state.set_status(*values)
        return sorted(states)

    def delete_host(self, host):
        """Forget ``host``'s compute nodes; refused (``Conflict``) while
        any consumer holds an allocation on them. The uuids deleted."""
        rp = models.ResourceProvider
        with engines.writer(self.db_url) as session:
            ids = dict(session.execute(sa.select(rp.id, rp.uuid).where(
                rp.host == host)).all())
            if not ids:
                return []
            held = session.scalar(sa.select(sa.func.count()).where(
                models.Allocation.resource_provider_id.in_(list(ids))))
            if held:
                raise exception.Conflict(
                    reason='host %s still holds %d allocations' % (host,
                                                                   held))
            session.execute(sa.delete(models.Inventory).where(
                models.Inventory.resource_provider_id.in_(list(ids))))
            session.execute(sa.delete(rp).where(rp.id.in_(list(ids))))
        with self._lock:
            for uuid in ids.values():
                self._hosts.pop(uuid, None)
        return sorted(ids.values())

    def compute_nodes(self):
        """Every compute node as os-hypervisors shows it: a list of
        plain dicts (what the scheduler's RPC answers with)."""
        rp, alloc = models.ResourceProvider, models.Allocation
        states = self._read_states()
        with self._lock:
            self._refresh_aggregates()
            for state in states.values():
                state.set_aggregates(self._aggregates.get(state.host, []))
        with engines.reader(self.db_url) as session:
            rows = {row.uuid: row for row in session.scalars(sa.select(rp))}
            running = dict(session.execute(
                sa.select(rp.uuid, sa.func.count(sa.distinct(
                    alloc.consumer_id)))
                .join(alloc, alloc.resource_provider_id == rp.id)
                .group_by(rp.uuid)).all())
        nodes = []
        for uuid, state in states.items():
            row = rows.get(uuid)
            if row is None:
                continue
            node = {
                'id': row.id, 'uuid': uuid, 'host': state.host,
                'hypervisor_hostname': state.nodename,
                'cell_uuid': state.cell_uuid,
                'availability_zone': state.availability_zone,
                'reported_disabled': state.reported_disabled,
                'service_disabled': state.service_disabled,
                'disabled_reason': state.disabled_reason,
                'forced_down': state.forced_down,
                'last_report_at': (row.last_report_at.isoformat()
                                   if row.last_report_at else None),
                'up': state.is_up(),
                'running_vms': running.get(uuid, 0),
                'inventory': {rc: list(inv)
                              for rc, inv in state.inventory.items()},
                'used': dict(state.used),
            }
            for name in HYPERVISOR_FIELDS:
                node[name] = getattr(state, name)
            nodes.append(node)
        return sorted(nodes, key=lambda n: n['id'])
