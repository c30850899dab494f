"""The host-state cache: what the scheduler knows about every host of
every cell, in memory. :class:`HostManager` holds the states, answers
the selects' reads of them and applies what this process changes: its
claims and releases, the reports computes send (written by
:mod:`reports`) and what operators change (written by :mod:`admin`).
How the states are loaded and kept current with the database (the first
load a page at a time, the incremental reloads, the status and
aggregates each select re-reads) is in :mod:`host_loads`; the indexes of
the hosts by name, by child provider and by what they have of the
Placement model are in :mod:`host_index`.

Between reloads, the reports computes send and this scheduler's own
claims and releases keep the states current. Memory only steers the
choice; the claim in the database decides.
"""

import logging
import threading
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import host_index
from scheduler_split.scheduler import host_loads
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import reports as reports_mod
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class HostManager(host_loads.HostLoads):
    """The host states of one scheduler process, and what changes them.
    """

    def __init__(self, db_url=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self._hosts = {}
        # The states as a list, shared by the selects until a host comes
        # or goes (None: to be made again).
        self._listed = None
        self._lock = threading.RLock()
        # Notified when a page of the first load, a load of new hosts or
        # a reload ends.
        self._progress = threading.Condition(self._lock)
        # The first load: started, the highest provider id it read so
        # far, the pages read, and whether it read them all.
        self._load_started = False
        self._load_after = 0
        self._pages = 0
        self._complete = False
        # When the first load started, and when the last reload started
        # (in the wall clock of the database's timestamps) and ended
        # (monotonic).
        self._load_started_at = None
        self._reload_started_at = None
        self._reloaded_at = None
        self._reloading = False
        # Whether a periodic task of the service reloads the states; then
        # a select reloads them only when that task is a whole interval
        # late.
        self._reloaded_in_background = False
        # Every provider up to this id is in memory (or was deleted).
        self._newest = 0
        self._loading_new = False
        # {host: [Aggregate]} and the signature it was read at.
        self._aggregates = {}
        self._aggregates_seen = None
        # The uuids of the hosts this process holds as disabled by the
        # operator or forced down: with those the database flags, the
        # hosts whose status each select re-reads.
        self._held = set()
        # The hosts in memory by name, by child provider and by what
        # they have of the Placement model.
        self._index = host_index.HostIndex(self._lock)
        # What this scheduler writes to the providers' changed_by: its
        # reloads skip those changes, which its memory holds already.
        self.writer_id = uuidutils.generate_uuid()
        # The hosts this process changed in memory while a read of the
        # database is under way, one set per read: what the read brings
        # back of them is older than memory.
        self._watches = []
        self._load_clock = None
        self._load_error = None
        # How many hosts were in memory when the garbage collector last
        # set them apart.
        self._frozen = 0
        # Writes the reports of computes, then hands them back here.
        self.reports = reports_mod.ReportWriter(self.db_url, self)

    # --- reading ------------------------------------------------------------

    def host_states(self, complete=False):
        """Every known host, kept current with the database. The list is
        shared: read it, never change it.

        While the first load reads the providers, those read so far;
        with ``complete``, every host once that load ended (waiting for
        it). In a scheduler service the periodic task :meth:`reload`
        reads what changed, so that no select pays for it; without one,
        a select past the interval does.
        """
        self._wait_for_a_page()
        if complete:
            self.wait_loaded()
        newest = self._refresh()
        with self._lock:
            loaded = self._complete
            stale = False
            if loaded:
                interval = CONF.filter_scheduler.host_state_refresh_interval
                if self._reloaded_in_background:
                    interval *= 2
                stale = time.monotonic() - self._reloaded_at > interval
        if stale:
            self._reload()
        elif loaded and newest > self._newest:
            # A host another scheduler registered is chosen by every
            # scheduler at once, not after the next periodic reload: this
            # select waits until a load holds it, its own or one under
            # way, rather than go on without it.
            self._load_new(newest)
        return self._listing()

    def _listing(self):
        with self._lock:
            if self._listed is None:
                self._listed = list(self._hosts.values())
            return self._listed

    def having(self, classes, traits):
        """The hosts (a tuple) some provider of whose tree has room for
        each of ``classes`` (beyond VCPU, MEMORY_MB and DISK_GB) and
        whose tree has every trait of ``traits``; None when neither is
        asked (every host)."""
        return self._index.having(classes, traits)

    def _forget(self, uuid):
        """Drop a host deleted from the database (under the lock)."""
        state = self._hosts.pop(uuid, None)
        if state is not None:
            self._index.forget(uuid, state)
            self._listed = None
        self._held.discard(uuid)

    def _note_status(self, state):
        if state.service_disabled or state.forced_down:
            self._held.add(state.uuid)
        else:
            self._held.discard(state.uuid)

    def states_in_memory(self):
        """The host states as they are, never reloaded (for a scrape)."""
        return self._listing()

    def known_hosts(self):
        """The hosts whose compute has reported, from the database."""
        rp = scheduler_models.ResourceProvider
        with engines.reader(self.db_url) as session:
            return set(session.scalars(sa.select(rp.host).where(
                rp.host.is_not(None)).distinct()))

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

    # --- writing ------------------------------------------------------------

    def note_claim(self, uuid, allocation, consumer=None):
        """Count a claim of ``allocation`` (``{provider uuid:
        resources}``, over the tree of the host ``uuid``)."""
        with self._lock:
            state = self._hosts.get(uuid)
            self._touch(uuid)
            if state is not None:
                state.consume_allocation(allocation)
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
                state, provider = self._provider(uuid)
                if state is not None:
                    provider.give_back(resources)
                    state.drop_instances((consumer,))

    def note_move(self, moved, dropped, from_consumer, to_consumer):
        """Apply a move of ``from_consumer``'s allocations (``moved``) to
        ``to_consumer``, which gave up ``dropped``."""
        with self._lock:
            for uuid, resources in dropped.items():
                state, provider = self._provider(uuid)
                if state is not None:
                    provider.give_back(resources)
                    state.drop_instances((to_consumer,))
            for uuid in moved:
                state, _ = self._provider(uuid)
                if state is not None:
                    state.drop_instances((from_consumer,))
                    state.add_instance(to_consumer)

    def _provider(self, uuid):
        """``(host state, provider state)`` of a provider of some host's
        tree (the host's own, or a child's), marked as changed here;
        ``(None, None)`` if memory has no such host (under the lock)."""
        host_uuid = self._index.root_of(uuid)
        self._touch(host_uuid)
        state = self._hosts.get(host_uuid)
        if state is None:
            return None, None
        provider = state if host_uuid == uuid else state.child(uuid)
        return (state, provider) if provider is not None else (None, None)

    def locate_consumers(self, consumers):
        """Make the host states know where ``consumers`` hold
        allocations now, whoever claimed them (another scheduler process
        too): one small query, for the same_host/different_host hints."""
        alloc = scheduler_models.Allocation
        rp = scheduler_models.ResourceProvider
        with engines.reader(self.db_url) as session:
            rows = session.execute(
                sa.select(rp.uuid, alloc.consumer_id).distinct()
                .join(rp, rp.id == alloc.resource_provider_id)
                .where(alloc.consumer_id.in_(list(consumers)))).all()
        with self._lock:
            for state in self._hosts.values():
                if state.instances and \
                        not state.instances.isdisjoint(consumers):
                    state.drop_instances(consumers)
            for uuid, consumer in rows:
                state = self._hosts.get(self._index.root_of(uuid))
                if state is not None:
                    state.add_instance(consumer)

    # --- compute reports (written by reports.ReportWriter) -----------------

    def update_from_stats(self, cell_uuid, host, nodename, stats,
                          wait=True):
        """Record a compute's report (``ReportWriter.record``); the uuid
        of its compute node (with ``wait``)."""
        return self.reports.record(cell_uuid, host, nodename, stats,
                                   wait=wait)

    def uuid_of(self, name):
        """The uuid of the compute node ``(host, node)``, if known."""
        with self._lock:
            return self._index.uuid_of(name)

    def note_repeated_report(self, name, digest, status, stats, now):
        """Take a report of ``name`` at ``now`` that repeats the last one
        written (its ``digest``, the operator's ``status`` it carries):
        only its time and counts change. The node's uuid, or None if the
        report says something new and is to be written."""
        with self._lock:
            uuid = self._index.uuid_of(name)
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

    def apply_reports(self, written):
        """Bring memory in line with the reports just written
        (``reports.Written``, one per compute node)."""
        new_ids = []
        with self._lock:
            for report in written:
                host, nodename = report.name
                stats = report.stats
                state = self._hosts.get(report.uuid)
                if state is None:
                    state = self._hosts[report.uuid] = host_state.HostState(
                        report.uuid, host, nodename, None)
                    self._listed = None
                    new_ids.append(report.id)
                self._index.name(report.uuid, host, nodename)
                self._touch(report.uuid)
                state.set_reported(
                    report.cell_uuid, stats.get('availability_zone'),
                    stats.get('hypervisor_type', state.hypervisor_type),
                    stats.get('hypervisor_version', state.hypervisor_version),
                    stats.get('cpu_arch', state.cpu_arch),
                    stats.get('cpu_info', state.cpu_info))
                state.set_aggregates(self._aggregates.get(host, ()))
                state.reported_disabled = bool(stats.get('disabled', False))
                state.set_status(*report.status)
                self._note_status(state)
                failed = stats.get('failed_builds', state.failed_builds)
                if failed != state.failed_builds:
                    LOG.log(logging.WARNING if failed else logging.INFO,
                            'Host %s (%s) reports %d failed builds in a row',
                            host, nodename, failed)
                state.failed_builds = failed
                state.num_io_ops = stats.get('num_io_ops', state.num_io_ops)
                state.host_ip = stats.get('host_ip', state.host_ip)
                state.last_report_at = report.time
                state.inventory = report.inventory
                state.report_traits(reports_mod.traits_of(stats))
                if report.children is not None:
                    # The usage of each child is memory's: claims and
                    # releases keep it.
                    used = {child.uuid: child.used
                            for child in state.children}
                    for child in report.children:
                        child.set_usage(used.get(child.uuid))
                    self._index.set_children(state, report.children)
                else:
                    self._index.reindex(state)
                state.report_digest = report.digest
            if new_ids and self._complete:
                # Registered here: no select needs to load them, unless
                # another scheduler registered hosts in between.
                new_ids.sort()
                if new_ids[0] == self._newest + 1 and \
                        new_ids[-1] - new_ids[0] == len(new_ids) - 1:
                    self._newest = new_ids[-1]

    # --- what operators changed (written by admin.SchedulerAdmin) ----------

    def apply_status(self, statuses):
        """The operator's status just written, ``{uuid: (disabled,
        reason, forced down)}``."""
        with self._lock:
            for uuid, values in statuses.items():
                state = self._hosts.get(uuid)
                self._touch(uuid)
                if state is not None:
                    state.set_status(*values)
                    self._note_status(state)

    def forget(self, uuids):
        """Drop hosts just deleted from the database."""
        with self._lock:
            for uuid in uuids:
                self._forget(uuid)
