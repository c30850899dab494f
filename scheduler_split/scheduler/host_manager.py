"""The host-state cache: what the scheduler knows about every host of
every cell, in memory.

Loaded from the scheduler database at start and every
``host_state_refresh_interval`` seconds, and kept current in between by
the reports computes send (written by :mod:`reports`) and by this
scheduler's own claims and releases. Memory only steers the choice; the
claim in the database decides.

The operator's status of hosts (os-services: disabled, forced down) is
written to the database by whichever scheduler the API's call reached
(:mod:`admin`). Every scheduler process sees it on its next select:
``host_states`` re-reads the status of the hosts that have one (disabled
or forced down, plus those this process still holds as such), one small
query, whatever the refresh interval. Claims read it in their
transaction anyway.
"""

import logging
import threading
import time

import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import metrics
from scheduler_split.db import models
from scheduler_split import servicegroup
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import reports as reports_mod

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _reported(state):
    """What a host's reports set, as its state holds it."""
    return ((state.cell_uuid, state.reported_availability_zone,
             state.reported_disabled, state.inventory) +
            tuple(getattr(state, name)
                  for name in host_state.REPORTED_FIELDS))


def _carry_over(old, fresh):
    """Keep in ``fresh`` (read from the database) the digest of the last
    report written from here, if the database still holds that report:
    one that repeats it then has nothing to write but its time."""
    if old.report_digest is not None and _reported(old) == _reported(fresh):
        fresh.report_digest = old.report_digest


class HostManager:
    """The host states of one scheduler process, and what changes them.
    """

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
        # Writes the reports of computes, then hands them back here.
        self.reports = reports_mod.ReportWriter(self.db_url, self)

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
        state = host_state.HostState(row.uuid, row.host, row.name,
                                     host_state.shared(row.cell_uuid))
        state.reported_availability_zone = host_state.shared(
            row.availability_zone)
        state.availability_zone = state.reported_availability_zone
        state.reported_disabled = row.disabled
        state.set_status(row.service_disabled, row.disabled_reason,
                         row.forced_down)
        state.last_report_at = row.last_report_at
        for name in host_state.REPORTED_FIELDS:
            setattr(state, name, host_state.shared(getattr(row, name)))
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

    def hosts_by_cell(self):
        """``{cell uuid: {host uuid: takes builds}}`` of the hosts in
        memory, for a scrape of the metrics: no database is read."""
        since = servicegroup.up_since()
        result = {}
        for state in self.states_in_memory():
            result.setdefault(state.cell_uuid, {})[state.uuid] = \
                state.takes_builds(since)
        return result

    def read_states(self):
        """Every host as the database holds it now, with its aggregates,
        apart from the states selects use (for os-hypervisors)."""
        states = self._read_states()[0]
        with engines.connection(self.db_url) as conn:
            if aggregates_mod.signature(conn) != self._aggregates_seen:
                self._refresh_aggregates()
        with self._lock:
            for state in states.values():
                state.set_aggregates(self._aggregates.get(state.host, ()))
        return states

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

    # --- compute reports (written by reports.ReportWriter) -----------------

    def update_from_stats(self, cell_uuid, host, nodename, stats):
        """Record a compute's report (``ReportWriter.record``); the uuid
        of its compute node."""
        return self.reports.record(cell_uuid, host, nodename, stats)

    def uuid_of(self, name):
        """The uuid of the compute node ``(host, node)``, if known."""
        with self._lock:
            return self._names.get(name)

    def note_repeated_report(self, name, digest, status, stats, now):
        """Take a report of ``name`` at ``now`` that repeats the last one
        written (its ``digest``, the operator's ``status`` it carries):
        only its time and counts change. The node's uuid, or None if the
        report says something new and is to be written."""
        with self._lock:
            uuid = self._names.get(name)
            state = self._hosts.get(uuid) if uuid else None
            if state is None or digest is None or \
                    digest != state.report_digest or \
                    status not in (None, state.status()):
                return None
            # The same counts as the last report written; memory may have
            # counted claims since, which the compute's count now
            # includes.
            for field in host_state.BUILD_COUNTS:
                if field in stats:
                    setattr(state, field, stats[field])
            state.last_report_at = now
            return uuid

    def apply_reports(self, reports, written):
        """Bring memory in line with the reports just written
        (``{(host, node): (cell, stats, time, digest)}``, and the
        provider rows written for them)."""
        with self._lock:
            for name, row in written.items():
                cell_uuid, stats, now, digest = reports[name]
                fresh = self._state_from_row(row)
                host, nodename = name
                self._names[name] = row.uuid
                state = self._hosts.get(row.uuid)
                if state is None:
                    state = self._hosts[row.uuid] = host_state.HostState(
                        row.uuid, host, nodename, cell_uuid)
                state.cell_uuid = (host_state.shared(cell_uuid) or
                                   state.cell_uuid)
                state.reported_availability_zone = host_state.shared(
                    stats.get('availability_zone'))
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
                for field in host_state.REPORTED_FIELDS:
                    setattr(state, field, getattr(fresh, field))
                state.last_report_at = now
                state.inventory = reports_mod.inventory_of(stats)
                state.report_digest = digest

    # --- what operators changed (written by admin.SchedulerAdmin) ----------

    def apply_status(self, statuses):
        """The operator's status just written, ``{uuid: (disabled,
        reason, forced down)}``."""
        with self._lock:
            for uuid, values in statuses.items():
                state = self._hosts.get(uuid)
                if state is not None:
                    state.set_status(*values)
                    self._note_status(state)

    def forget(self, uuids):
        """Drop hosts just deleted from the database."""
        with self._lock:
            for uuid in uuids:
                self._forget(uuid)
