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
import sys
import threading
import time

import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.db import models
from scheduler_split.objects import base as obj_base
from scheduler_split import servicegroup
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims

CONF = conf.CONF
LOG = logging.getLogger(__name__)


_NO_INSTANCES = frozenset()
# {inventory as a sorted tuple: (inventory, capacities)}: the inventories
# hosts share. Bounded: past the limit it starts again, which only costs
# copies.
_INVENTORIES = {}
_INVENTORIES_LIMIT = 4096


def _shared_inventory(inventory):
    key = tuple(sorted(inventory.items()))
    shared = _INVENTORIES.get(key)
    if shared is None:
        if len(_INVENTORIES) >= _INVENTORIES_LIMIT:
            _INVENTORIES.clear()
        shared = _INVENTORIES[key] = (
            dict(inventory), {rc: claims.capacity(*inv)
                              for rc, inv in inventory.items()})
    return shared


def _shared(value):
    """One copy of a text many hosts report alike (a cell, a zone, a
    hypervisor type)."""
    return sys.intern(value) if type(value) is str else value


class HostState:
    """One compute node as the filters and weighers see it.

    Slotted: a scheduler holds one per compute node, tens of thousands of
    them at the largest sizes.
    """

    __slots__ = (
        'uuid', 'host', 'nodename', 'cell_uuid', 'availability_zone',
        'reported_availability_zone', 'aggregates', 'disabled',
        'reported_disabled', 'service_disabled', 'disabled_reason',
        'forced_down', 'last_report_at', 'host_ip', 'hypervisor_type',
        'hypervisor_version', 'cpu_arch', 'cpu_info', '_inventory',
        '_capacity', 'used', 'instances', 'failed_builds', 'num_io_ops',
        'report_digest', '__weakref__')

    def __init__(self, uuid, host, nodename, cell_uuid):
        self.uuid = uuid
        self.host = host
        self.nodename = nodename
        self.cell_uuid = cell_uuid
        # The effective zone: its aggregates', else what it reports.
        self.availability_zone = None
        self.reported_availability_zone = None
        # The aggregates the host is in (scheduler.aggregates.Aggregate).
        self.aggregates = ()
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
        self._inventory = {}
        self._capacity = {}
        # {resource class: amount allocated}
        self.used = {}
        # The consumers (instances) holding allocations here, for the
        # same_host and different_host hints; shared and empty until the
        # first one comes.
        self.instances = _NO_INSTANCES
        # What the compute counts of its builds: failures in a row, and
        # builds in flight (plus those claimed here since its report).
        self.failed_builds = 0
        self.num_io_ops = 0
        # A digest of the last report written for this node: a report
        # that carries nothing new is not written again (see
        # HostManager.update_from_stats).
        self.report_digest = None

    @property
    def inventory(self):
        return self._inventory

    @inventory.setter
    def inventory(self, inventory):
        # Capacities are read for every host a request considers; they
        # change only with the inventory. Hosts of one kind share one
        # copy of both (neither is changed in place).
        self._inventory, self._capacity = _shared_inventory(inventory)

    def add_instance(self, consumer):
        if self.instances is _NO_INSTANCES:
            self.instances = set()
        self.instances.add(consumer)

    def drop_instances(self, consumers):
        if self.instances is not _NO_INSTANCES:
            self.instances.difference_update(consumers)

    @property
    def num_instances(self):
        return len(self.instances)

    def __repr__(self):
        return '<HostState %s/%s cell=%s>' % (self.host, self.nodename,
                                              self.cell_uuid)

    def capacity(self, rc):
        return self._capacity.get(rc, 0)

    def free(self, rc):
        return self._capacity.get(rc, 0) - self.used.get(rc, 0)

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

    def is_up(self, since=None):
        """Whether the compute reports in time and is not forced down
        (:func:`scheduler_split.servicegroup.is_up`)."""
        return servicegroup.is_up(self.last_report_at, self.forced_down,
                                  since)

    def status(self):
        """The operator's status: (disabled, reason, forced down)."""
        return (self.service_disabled, self.disabled_reason,
                self.forced_down)

    def takes_builds(self, since=None):
        """Whether builds may come here: enabled, and up. ``since`` is
        :func:`scheduler_split.servicegroup.up_since`, worked out once
        for the many hosts of a request."""
        return not self.disabled and servicegroup.is_up(
            self.last_report_at, self.forced_down, since)

    def copy_from(self, other):
        """Take every value of ``other`` (a fresh reading of this host)
        in place: a request in flight holds this object."""
        for name in self.__slots__:
            if name != '__weakref__':
                setattr(self, name, getattr(other, name))


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


def _inventory(stats):
    """``{resource class: (total, reserved, allocation_ratio)}`` of a
    report."""
    return {
        'VCPU': (stats['vcpus'], stats.get('reserved_vcpus', 0),
                 stats.get('cpu_allocation_ratio', 1.0)),
        'MEMORY_MB': (stats['memory_mb'], stats.get('reserved_memory_mb', 0),
                      stats.get('ram_allocation_ratio', 1.0)),
        'DISK_GB': (stats['local_gb'], stats.get('reserved_disk_gb', 0),
                    stats.get('disk_allocation_ratio', 1.0)),
    }


def _report_digest(cell_uuid, stats):
    """What a report says, but for the operator's status (compared with
    memory instead, see ``_status_of``), as one hashable value; None if
    some value does not hash (the report is then always written)."""
    try:
        return hash((cell_uuid,) + tuple(sorted(
            (key, value) for key, value in stats.items()
            if key != 'service_status')))
    except TypeError:
        return None


def _status_of(stats):
    """The operator's status a report carries, as ``HostState.status``
    gives it; None if it carries none."""
    status = stats.get('service_status')
    if not status:
        return None
    return (bool(status.get('disabled')), status.get('disabled_reason'),
            bool(status.get('forced_down')))


def _reported(state):
    """What a host's reports set, as its state holds it."""
    return ((state.cell_uuid, state.reported_availability_zone,
             state.reported_disabled, state.inventory) +
            tuple(getattr(state, name)
                  for name in HYPERVISOR_FIELDS + BUILD_COUNTS))


def _carry_over(old, fresh):
    """Keep in ``fresh`` (read from the database) the digest of the last
    report written from here, if the database still holds that report:
    one that repeats it then has nothing to write but its time."""
    if old.report_digest is not None and _reported(old) == _reported(fresh):
        fresh.report_digest = old.report_digest


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
        self._reloading = False
        # Whether a periodic task of the service reloads the states; then
        # a select reloads them only when that task is a whole interval
        # late.
        self._reloaded_in_background = False
        # The highest provider id of the last full load.
        self._newest_loaded = 0
        self._lock = threading.RLock()
        # Notified when a reload ends.
        self._reloaded = threading.Condition(self._lock)
        # {host: [Aggregate]} and the signature it was read at.
        self._aggregates = {}
        self._aggregates_seen = None
        # The uuids of the hosts this process holds as disabled by the
        # operator or forced down: with those the database flags, the
        # hosts whose status each select re-reads.
        self._held = set()
        # {(host, node): uuid} of every host in memory.
        self._names = {}
        # Reports waiting for their group commit, and its bookkeeping.
        self._reports = threading.Condition(threading.Lock())
        self._pending = {}
        self._writing = False
        self._next_batch = 1
        self._batches_done = 0
        # {batch number: {(host, node): exception}} of recent batches
        # whose reports could not be written.
        self._failures = {}
        # {uuid: time} of reports that said nothing new, for the next
        # group commit.
        self._heartbeats = {}

    # --- reading ------------------------------------------------------------

    def host_states(self):
        """Every known host, reloaded from the database when stale.

        In a scheduler service the periodic task :meth:`reload` keeps the
        states fresh, so that no select pays for reading every host. A
        reload reads the database outside the lock, so that selects go
        on with the states they have meanwhile; only the first load makes
        them wait.
        """
        interval = CONF.filter_scheduler.host_state_refresh_interval
        with self._lock:
            if self._loaded_at is None:
                self._load_all()
                return list(self._hosts.values())
            if self._reloaded_in_background:
                interval *= 2
            stale = time.monotonic() - self._loaded_at > interval
        if stale:
            self._reload()
        else:
            # A host another scheduler registered is chosen by every
            # scheduler at once, not after the next periodic reload: this
            # select waits until a load holds it, its own or one under
            # way, rather than go on without it.
            newest = self._refresh()
            if newest > self._newest_loaded:
                self._reload(until=newest)
        with self._lock:
            return list(self._hosts.values())

    def reload(self):
        """The periodic reload of every host state (the scheduler
        service runs it every ``host_state_refresh_interval``)."""
        self._reloaded_in_background = True
        self._reload()

    def _reload(self, until=None):
        """Reload every host, unless another thread is doing it: then the
        states this one has meanwhile serve, or, with ``until`` (a
        provider id), it waits for that load and loads again itself if
        that one did not hold the provider."""
        with self._lock:
            while self._reloading:
                if until is None:
                    return
                self._reloaded.wait()
            if until is not None and self._newest_loaded >= until:
                return
            self._reloading = True
        try:
            self._load_all()
        finally:
            with self._lock:
                self._reloading = False
                self._reloaded.notify_all()

    def _refresh(self):
        """Apply what another scheduler may have changed since the last
        load: the operator's status of hosts and the aggregates, read in
        one small transaction. Returns the highest provider id in the
        database: above ``_newest_loaded``, it holds hosts the last load
        did not (the ids are the providers' primary key)."""
        rp = models.ResourceProvider.__table__
        with self._lock:
            held = list(self._held)
        condition = sa.or_(rp.c.service_disabled.is_(True),
                           rp.c.forced_down.is_(True))
        if held:
            condition = sa.or_(condition, rp.c.uuid.in_(held))
        with engines.connection(self.db_url) as conn:
            rows = conn.execute(sa.select(
                rp.c.uuid, rp.c.service_disabled, rp.c.disabled_reason,
                rp.c.forced_down).where(condition)).all()
            seen = aggregates_mod.signature(conn)
            newest = conn.execute(sa.select(sa.func.max(rp.c.id))).scalar()
        with self._lock:
            for row in rows:
                state = self._hosts.get(row.uuid)
                if state is not None:
                    state.set_status(row.service_disabled,
                                     row.disabled_reason, row.forced_down)
                    self._note_status(state)
            missing = set(held) - {row.uuid for row in rows}
            for uuid in missing:
                # Deleted meanwhile.
                self._forget(uuid)
        if seen != self._aggregates_seen:
            self._refresh_aggregates()
        return newest or 0

    def _forget(self, uuid):
        """Drop a host deleted from the database (under the lock)."""
        state = self._hosts.pop(uuid, None)
        if state is not None:
            self._names.pop((state.host, state.nodename), None)
        self._held.discard(uuid)

    def _note_status(self, state):
        if state.service_disabled or state.forced_down:
            self._held.add(state.uuid)
        else:
            self._held.discard(state.uuid)

    def _refresh_aggregates(self):
        """Reload the aggregates and give every host its own."""
        with engines.connection(self.db_url) as conn:
            seen = aggregates_mod.signature(conn)
        by_host = aggregates_mod.by_host(self.db_url)
        with self._lock:
            self._aggregates = by_host
            self._aggregates_seen = seen
            for state in self._hosts.values():
                state.set_aggregates(self._aggregates.get(state.host, ()))

    def aggregates_changed(self):
        """This process changed an aggregate: apply it now."""
        self._refresh_aggregates()

    def states_in_memory(self):
        """The host states as they are, never reloaded (for a scrape)."""
        with self._lock:
            return list(self._hosts.values())

    def _load_all(self):
        started = time.monotonic()
        hosts, newest = self._read_states()
        with self._lock:
            self._newest_loaded = newest
            for uuid, state in hosts.items():
                old = self._hosts.get(uuid)
                if old is not None:
                    _carry_over(old, state)
            self._hosts = hosts
            self._names = {(state.host, state.nodename): uuid
                           for uuid, state in hosts.items()}
            self._held = {uuid for uuid, state in hosts.items()
                          if state.service_disabled or state.forced_down}
            self._loaded_at = time.monotonic()
        self._refresh_aggregates()
        metrics.HOST_STATE_LOAD_SECONDS.observe(time.monotonic() - started)
        LOG.debug('Loaded %d host states', len(hosts))

    def _read_states(self, uuid=None):
        """``({uuid: HostState}, the highest provider id read)`` from the
        database: every provider, or only ``uuid``."""
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
            newest = max(by_id, default=0)
            if uuid is not None:
                if not by_id:
                    return {}, newest
                inventories = inventories.where(
                    inv_t.resource_provider_id.in_(list(by_id)))
                usage = usage.where(
                    alloc.resource_provider_id.in_(list(by_id)))
                consumers = consumers.where(
                    alloc.resource_provider_id.in_(list(by_id)))
            inventory = {}
            for inv in session.scalars(inventories):
                inventory.setdefault(inv.resource_provider_id, {})[
                    inv.resource_class] = (inv.total, inv.reserved,
                                           inv.allocation_ratio)
            for rp_id, values in inventory.items():
                state = by_id.get(rp_id)
                if state is not None:
                    state.inventory = values
            for rp_id, rc, used in session.execute(usage):
                state = by_id.get(rp_id)
                if state is not None:
                    state.used[rc] = int(used)
            for rp_id, consumer in session.execute(consumers):
                state = by_id.get(rp_id)
                if state is not None:
                    state.add_instance(consumer)
        return {state.uuid: state for state in by_id.values()}, newest

    @staticmethod
    def _state_from_row(row):
        state = HostState(row.uuid, row.host, row.name,
                          _shared(row.cell_uuid))
        state.reported_availability_zone = _shared(row.availability_zone)
        state.availability_zone = state.reported_availability_zone
        state.reported_disabled = row.disabled
        state.set_status(row.service_disabled, row.disabled_reason,
                         row.forced_down)
        state.last_report_at = row.last_report_at
        for name in HYPERVISOR_FIELDS + BUILD_COUNTS:
            setattr(state, name, _shared(getattr(row, name)))
        return state

    def refresh_host(self, uuid):
        """Reload one host after the database disagreed with memory."""
        state = self._read_states(uuid)[0].get(uuid)
        if state is None:
            with self._lock:
                self._forget(uuid)
            return None
        with self._lock:
            state.set_aggregates(self._aggregates.get(state.host, ()))
            self._note_status(state)
            existing = self._hosts.get(uuid)
            if existing is None:
                self._hosts[uuid] = state
                self._names[(state.host, state.nodename)] = uuid
                return state
            existing.copy_from(state)
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
                    state.add_instance(consumer)
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
                    state.drop_instances((consumer,))

    def note_move(self, moved, dropped, from_consumer, to_consumer):
        """Apply a move of ``from_consumer``'s allocations (``moved``) to
        ``to_consumer``, which gave up ``dropped``."""
        with self._lock:
            for uuid, resources in dropped.items():
                state = self._hosts.get(uuid)
                if state is not None:
                    state.give_back(resources)
                    state.drop_instances((to_consumer,))
            for uuid in moved:
                state = self._hosts.get(uuid)
                if state is not None:
                    state.drop_instances((from_consumer,))
                    state.add_instance(to_consumer)

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
                state.drop_instances(consumers)
            for uuid, consumer in rows:
                state = self._hosts.get(uuid)
                if state is not None:
                    state.add_instance(consumer)

    # --- compute reports ----------------------------------------------------
    #
    # Every compute reports every ``report_interval`` seconds, and nearly
    # every report says what the last one said. Such a report only moves
    # the host's liveness (and its counts): its time is one row of one
    # UPDATE. Every report is written before the cast returns, in a
    # group commit: the reports that arrive while one transaction writes
    # go together into the next one, so a burst costs a few transactions,
    # not one each, and no report waits for a pool connection. The time
    # is in the database at once, for the other schedulers' reloads.

    def update_from_stats(self, cell_uuid, host, nodename, stats):
        """Record a compute's report: capacity, zone, enabled, liveness.

        Creates the compute node's resource provider on its first report.
        Usage is not taken from the compute: allocations are the truth.
        Returns the provider's uuid.
        """
        now = obj_base.naive_utc(obj_base.utcnow())
        digest = _report_digest(cell_uuid, stats)
        name = (host, nodename)
        with self._lock:
            uuid = self._names.get(name)
            state = self._hosts.get(uuid) if uuid else None
            unchanged = (state is not None and digest is not None and
                         digest == state.report_digest and
                         _status_of(stats) in (None, state.status()))
            if unchanged:
                # Nothing new but liveness and counts.
                self._apply_counts(state, stats)
                state.last_report_at = now
        if unchanged:
            metrics.REPORT_UNCHANGED.inc()
            self._write_report(heartbeat=(uuid, now))
            return uuid
        try:
            uuid = self._write_report(name, (cell_uuid, stats, now, digest))
        except Exception:
            metrics.REPORT_DROPPED.inc()
            raise
        metrics.REPORT_ABSORBED.inc()
        return uuid

    def _write_report(self, name=None, report=None, heartbeat=None):
        """Write a report of the node ``name`` in the next group commit
        and wait for it; the provider's uuid. Or only the time of one
        that said nothing new (``heartbeat``: its provider's uuid and
        time): that one waits only if no transaction is under way, since
        the writer drains whatever is queued before it stops."""
        with self._reports:
            batch = self._next_batch
            if name is not None:
                # A newer report of the same node replaces the older one.
                self._pending[name] = report
            if heartbeat is not None:
                self._heartbeats[heartbeat[0]] = heartbeat[1]
                if self._writing:
                    return None
            while self._batches_done < batch:
                if self._writing:
                    self._reports.wait()
                    continue
                self._writing = True
                try:
                    while self._pending or self._heartbeats:
                        self._write_next_batch()
                finally:
                    self._writing = False
                    self._reports.notify_all()
            if name is None:
                return None
            failed = self._failures.get(batch, {})
            if name in failed:
                raise failed[name]
            return self._names.get(name)

    def _write_next_batch(self):
        """Write what is queued (the caller holds ``_reports`` and is the
        writer); record the reports that failed, by batch."""
        reports, self._pending = self._pending, {}
        heartbeats, self._heartbeats = self._heartbeats, {}
        number, self._next_batch = self._next_batch, self._next_batch + 1
        self._reports.release()
        failed = None
        try:
            failed = self._write_batch(reports, heartbeats)
        finally:
            self._reports.acquire()
            if failed is None:
                failed = dict.fromkeys(reports, exception.Invalid(
                    'the report could not be recorded'))
            if failed:
                self._failures[number] = failed
            for old in [n for n in self._failures if n < number - 1000]:
                del self._failures[old]
            self._batches_done = number
            self._reports.notify_all()

    def _write_batch(self, reports, heartbeats):
        """One transaction for ``reports`` and ``heartbeats``; if it
        fails, each report alone, so that one bad report spoils none of
        the others. ``{(host, node): exception}`` of those that failed.
        """
        try:
            written = self._store(reports, heartbeats)
        except Exception as exc:
            if len(reports) <= 1:
                LOG.warning('Could not record the report of %s: %s',
                            ', '.join('%s/%s' % name for name in reports)
                            or 'no compute', exception.describe(exc))
                return dict.fromkeys(reports, exc)
            failed = {}
            written = {}
            for name, report in reports.items():
                try:
                    written.update(self._store({name: report}, {}))
                except Exception as exc:
                    LOG.warning('Could not record the report of %s/%s: %s',
                                name[0], name[1], exception.describe(exc))
                    failed[name] = exc
            self._apply_reports(reports, written)
            return failed
        self._apply_reports(reports, written)
        return {}

    def _store(self, reports, heartbeats):
        """Write reports and liveness in one transaction; the provider
        rows written, by name."""
        rp, inv_t = models.ResourceProvider, models.Inventory
        written = {}
        with engines.writer(self.db_url) as session:
            if heartbeats:
                table = rp.__table__
                session.connection().execute(
                    sa.update(table).where(
                        table.c.uuid == sa.bindparam('node_uuid'))
                    .values(last_report_at=sa.bindparam('seen')),
                    [{'node_uuid': uuid, 'seen': seen}
                     for uuid, seen in heartbeats.items()])
            if not reports:
                return written
            hosts = sorted({host for host, _ in reports})
            rows = {}
            for start in range(0, len(hosts), 500):
                for row in session.scalars(sa.select(rp).where(
                        rp.host.in_(hosts[start:start + 500]))):
                    rows[(row.host, row.name)] = row
            for (host, nodename), report in reports.items():
                cell_uuid, stats, now, _ = report
                row = rows.get((host, nodename))
                if row is None:
                    row = rows[(host, nodename)] = rp(
                        uuid=stats.get('uuid') or uuidutils.generate_uuid(),
                        host=host, name=nodename, generation=0)
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
                    # answered: applied only if newer than what the API
                    # told.
                    _apply_status(row, status,
                                  _status_time(status.get('updated_at')))
                written[(host, nodename)] = row
            session.flush()
            ids = [row.id for row in written.values()]
            current = {}
            for start in range(0, len(ids), 500):
                for inv in session.scalars(sa.select(inv_t).where(
                        inv_t.resource_provider_id.in_(
                            ids[start:start + 500]))):
                    current[(inv.resource_provider_id,
                             inv.resource_class)] = inv
            changed = []
            for name, row in written.items():
                for rc, values in _inventory(reports[name][1]).items():
                    inv = current.get((row.id, rc))
                    if inv is None:
                        session.add(inv_t(
                            resource_provider_id=row.id, resource_class=rc,
                            total=values[0], reserved=values[1],
                            allocation_ratio=values[2]))
                    elif (inv.total, inv.reserved,
                          inv.allocation_ratio) != values:
                        inv.total, inv.reserved, inv.allocation_ratio = \
                            values
                    else:
                        continue
                    if row.id not in changed:
                        changed.append(row.id)
            if changed:
                # An inventory change must fail claims that read the old
                # one; the bump is computed by the database so that a
                # concurrent claim's bump is never lost.
                session.flush()
                session.execute(sa.update(rp).where(rp.id.in_(changed))
                                .values(generation=rp.generation + 1))
        return written

    def _apply_reports(self, reports, written):
        """Bring memory in line with the reports just written."""
        with self._lock:
            for name, row in written.items():
                cell_uuid, stats, now, digest = reports[name]
                fresh = self._state_from_row(row)
                host, nodename = name
                self._names[name] = row.uuid
                state = self._hosts.get(row.uuid)
                if state is None:
                    state = self._hosts[row.uuid] = HostState(
                        row.uuid, host, nodename, cell_uuid)
                state.cell_uuid = _shared(cell_uuid) or state.cell_uuid
                state.reported_availability_zone = _shared(stats.get(
                    'availability_zone'))
                state.set_aggregates(self._aggregates.get(host, ()))
                state.reported_disabled = fresh.reported_disabled
                state.set_status(fresh.service_disabled,
                                 fresh.disabled_reason, fresh.forced_down)
                self._note_status(state)
                if fresh.failed_builds != state.failed_builds:
                    LOG.log(logging.WARNING if fresh.failed_builds else
                            logging.INFO, 'Host %s (%s) reports %d failed '
                            'builds in a row', host, nodename,
                            fresh.failed_builds)
                for field in HYPERVISOR_FIELDS + BUILD_COUNTS:
                    setattr(state, field, getattr(fresh, field))
                state.last_report_at = now
                state.inventory = _inventory(stats)
                state.report_digest = digest

    @staticmethod
    def _apply_counts(state, stats):
        # The same counts as the last report written; memory may have
        # counted claims since, which the compute's count now includes.
        for field in BUILD_COUNTS:
            if field in stats:
                setattr(state, field, stats[field])

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
                    self._note_status(state)
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
                self._forget(uuid)
        return sorted(ids.values())

    def compute_nodes(self):
        """Every compute node as os-hypervisors shows it: a list of
        plain dicts (what the scheduler's RPC answers with)."""
        rp, alloc = models.ResourceProvider, models.Allocation
        states = self._read_states()[0]
        with engines.connection(self.db_url) as conn:
            if aggregates_mod.signature(conn) != self._aggregates_seen:
                self._refresh_aggregates()
        with self._lock:
            for state in states.values():
                state.set_aggregates(self._aggregates.get(state.host, ()))
        with engines.reader(self.db_url) as session:
            rows = {row.uuid: row for row in session.scalars(sa.select(rp))}
            running = dict(session.execute(
                sa.select(rp.uuid, sa.func.count(sa.distinct(
                    alloc.consumer_id)))
                .join(alloc, alloc.resource_provider_id == rp.id)
                .group_by(rp.uuid)).all())
        since = servicegroup.up_since()
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
                'last_report_at': (state.last_report_at.isoformat()
                                   if state.last_report_at else None),
                'up': state.is_up(since),
                'running_vms': running.get(uuid, 0),
                'inventory': {rc: list(inv)
                              for rc, inv in state.inventory.items()},
                'used': dict(state.used),
            }
            for name in HYPERVISOR_FIELDS:
                node[name] = getattr(state, name)
            nodes.append(node)
        return sorted(nodes, key=lambda n: n['id'])
