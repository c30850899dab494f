"""The host-state cache: what the scheduler knows about every host of
every cell, in memory.

**The first load** reads the providers from the scheduler database a
page at a time, in id order, the first page in the thread that asks
first (or, in the scheduler service, in a thread of its own as soon as
the service starts) and the rest in a background thread. Each page joins
the cache as soon as it is read, so a restarted scheduler answers selects
from the hosts it has read so far; a request that finds no host among
them waits for the end of the load and is filtered again over every host
before it fails (``host_states(complete=True)``).

**Reloads are incremental.** Every write of what memory holds of a
provider, but its liveness, stamps the provider's ``changed_at``: reports
that say something new, claims and releases, the operator's status. The
periodic reload (every ``host_state_refresh_interval`` seconds, in a
thread of the scheduler service) reads, from one snapshot of the
database, the providers changed since shortly before the last reload
(``CHANGE_OVERLAP``), their inventories and allocations, and applies them
to the states selects hold, a chunk at a time under the lock: selects go
on with the states they have meanwhile. A report that only says a host is
alive moves ``last_report_at`` alone, with ``reported_by``: the reload
reads the times other schedulers wrote since. Hosts deleted meanwhile
show as a count that differs from memory's, which only then reads the
providers' uuids.

Between reloads, the reports computes send (written by :mod:`reports`)
and this scheduler's own claims and releases keep the states current.
Memory only steers the choice; the claim in the database decides.

The operator's status of hosts (os-services: disabled, forced down) is
written to the database by whichever scheduler the API's call reached
(:mod:`admin`). Every scheduler process sees it on its next select:
``host_states`` re-reads the status of the hosts that have one (disabled
or forced down, plus those this process still holds as such), with the
highest provider id (a host another scheduler registered is loaded before
the select goes on) and the aggregates' signature, in one small
transaction whatever the refresh interval. Claims read the status in
their transaction anyway.
"""

import contextlib
import datetime
import gc
import logging
import threading
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_reads
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import reports as reports_mod
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The providers of the first page of the first load, which the first
# select of a restarted scheduler waits for, and of each later page.
FIRST_PAGE = 2000
PAGE = 10000
# How long before the start of a reload the next one reads changes from:
# a change is stamped when its statement runs but seen only once its
# transaction commits, and the clocks of the scheduler hosts differ a
# little. Reading a change twice costs only the reading.
CHANGE_OVERLAP = datetime.timedelta(seconds=30)
# How many states a reload applies per hold of the lock.
APPLY_CHUNK = 1000
# How long a request that found no host among those read so far waits
# for the end of the first load.
LOAD_WAIT = 120
# Seconds between two tries of a page of the first load that failed.
LOAD_RETRY = 1.0
# Values per IN list.
_CHUNK = 500
# From this many hosts on, the states of the hosts (and everything else
# alive then) are set apart from the garbage collector's full
# collections once they are loaded, and again when their number grew by
# FREEZE_GROWTH since: each full collection would otherwise go over every
# one of them, and stop every thread for a tenth of a second at a
# hundred thousand hosts.
FREEZE_FROM = 1000
FREEZE_GROWTH = 0.1

_RP = scheduler_models.ResourceProvider.__table__

# What each select reads first, in one statement: the highest provider
# id, the aggregates' signature, and whether any host is disabled by the
# operator or forced down (each through its index).
_LATEST = sa.select(
    sa.select(sa.func.max(_RP.c.id)).scalar_subquery(),
    aggregates_mod.SIGNATURE_COUNT, aggregates_mod.SIGNATURE_SUM,
    sa.exists().where(_RP.c.service_disabled.is_(True)),
    sa.exists().where(_RP.c.forced_down.is_(True)))


def _now():
    return obj_base.naive_utc(obj_base.utcnow())


def _name_key(host, nodename):
    """The key of a compute node in ``HostManager._names``: its host
    alone when the node is named as its host (most are), else both."""
    return host if nodename == host else (host, nodename)


def _reported(state):
    """What a host's reports set, as its state holds it."""
    return (state._profile, state.reported_disabled, state._resources,
            state.host_ip, state.failed_builds, state.num_io_ops,
            tuple(child.key() for child in state.children))


_BASE = frozenset(('VCPU', 'MEMORY_MB', 'DISK_GB'))


def _model_keys(state):
    """The keys of ``HostManager._by_key`` a host is under."""
    keys = {('trait', name) for name in state.tree_traits()}
    keys.update(('rc', rc) for rc in state.tree_classes() if rc not in _BASE)
    return frozenset(keys)


class HostManager:
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
        # {_name_key(host, node): uuid} of every host in memory.
        self._names = {}
        # {child provider uuid: its compute node's uuid}.
        self._child_roots = {}
        # What the hosts have of the Placement model beyond what every
        # host has: {('rc', class) or ('trait', name): {host state,
        # ...}} of the classes beyond VCPU, MEMORY_MB and DISK_GB that
        # some provider of the tree has room for, and the traits of the
        # tree; and {uuid: those keys} of the hosts that have any. A
        # request asking for them starts from the hosts that have them
        # all, not from every host.
        self._by_key = {}
        self._keys = {}
        # {keys asked: hosts having them all} of the requests since the
        # index last changed: device requests ask the same keys again
        # and again, and the index changes only with what hosts have.
        self._having = {}
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

    @property
    def loaded(self):
        """Whether the first load has read every provider."""
        return self._complete

    def start_loading(self):
        """Start the first load in a thread of its own (the scheduler
        service, as it starts): the first select waits only for its
        first page."""
        with self._lock:
            if self._load_started:
                return
            self._load_started = True
        threading.Thread(target=self._load_pages, name='scheduler-load',
                         daemon=True).start()

    def wait_loaded(self, timeout=LOAD_WAIT):
        """Wait for the end of the first load; whether it ended."""
        self._wait_for_a_page()
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._complete:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._progress.wait(left)
        return True

    def _wait_for_a_page(self):
        """Make sure the first load began and read a page; the first
        caller reads it itself."""
        with self._lock:
            if self._pages or self._complete:
                return
            if self._load_started:
                while not (self._pages or self._complete):
                    if self._load_error is not None:
                        raise self._load_error
                    self._progress.wait()
                return
            self._load_started = True
        try:
            more = self._load_page(FIRST_PAGE)
        except Exception:
            with self._lock:
                self._load_started = False
                self._progress.notify_all()
            raise
        if more:
            threading.Thread(target=self._load_pages, name='scheduler-load',
                             daemon=True).start()

    def _load_pages(self):
        """The first load, a page at a time, until it read them all."""
        page = FIRST_PAGE if not self._pages else PAGE
        while True:
            try:
                if not self._load_page(page):
                    return
            except Exception as exc:
                LOG.warning('Could not read host states (%s); trying again',
                            exception.describe(exc))
                with self._lock:
                    self._load_error = exc
                    self._progress.notify_all()
                time.sleep(LOAD_RETRY)
                continue
            page = PAGE

    def _load_page(self, size):
        """Read the next page of the first load into memory; whether
        there are more to read."""
        if self._pages == 0:
            self._load_started_at = _now()
            self._load_clock = time.monotonic()
            self._refresh_aggregates()
        after = self._load_after
        with self._watching() as touched:
            with engines.connection(self.db_url) as conn:
                states, last = self._read_states(
                    conn, _RP.c.id > after, host_reads.page_after(after),
                    page=size)
            self._take(states, touched)
        more = len(states) >= size
        with self._lock:
            self._load_error = None
            self._load_after = max(after, last)
            self._pages += 1
            if not more:
                self._complete = True
                self._newest = max(self._newest, self._load_after)
                self._reload_started_at = self._load_started_at
                self._reloaded_at = time.monotonic()
            self._progress.notify_all()
        if not more:
            metrics.HOST_STATE_LOAD_SECONDS.observe(
                time.monotonic() - self._load_clock)
            LOG.info('Loaded %d host states', len(self._hosts))
            self._set_apart()
        return more

    def _set_apart(self):
        """Keep the garbage collector's full collections off the host
        states once there are many more of them (see FREEZE_FROM): the
        states live as long as their hosts, and what lives now (modules,
        the service's objects) as long as the process."""
        count = len(self._hosts)
        if count < FREEZE_FROM or count < self._frozen * (1 + FREEZE_GROWTH):
            return
        self._frozen = count
        gc.collect()
        gc.freeze()

    def _read_states(self, conn, providers, related, page=None):
        """:func:`read_states` (a method, so that one process can slow
        it down in tests)."""
        return host_reads.read_states(conn, providers, related, page)

    def stamp(self):
        """Who writes, for the ``changed_by`` of the providers this
        process writes (``claims.CHANGED_BY``): this host manager, and the
        oldest change its next reload reads; no one before the first load
        ended."""
        with self._lock:
            since = self._reload_started_at
        if since is None:
            return dict(claims.NO_STAMP)
        return {'w_me': self.writer_id, 'w_floor': since - CHANGE_OVERLAP}

    @contextlib.contextmanager
    def _watching(self):
        """The set of the hosts this process changes in memory while the
        caller reads the database."""
        touched = set()
        with self._lock:
            self._watches.append(touched)
        try:
            yield touched
        finally:
            with self._lock:
                self._watches.remove(touched)

    def _touch(self, uuid):
        """This process changed ``uuid`` in memory (under the lock)."""
        for touched in self._watches:
            touched.add(uuid)

    def _take(self, states, touched=()):
        """Put ``states`` (``{uuid: HostState}``, just read from the
        database) in memory: new hosts join, known ones take the values
        read in place, a chunk at a time under the lock; but those this
        process changed in memory since the read began (``touched``)."""
        items = list(states.items())
        for start in range(0, len(items), APPLY_CHUNK):
            with self._lock:
                for uuid, fresh in items[start:start + APPLY_CHUNK]:
                    if uuid in touched:
                        continue
                    fresh.set_aggregates(self._aggregates.get(fresh.host, ()))
                    state = self._hosts.get(uuid)
                    if state is None:
                        state = self._hosts[uuid] = fresh
                        self._names[_name_key(fresh.host,
                                              fresh.nodename)] = uuid
                        self._listed = None
                        self._set_children(state, fresh.children)
                    else:
                        # Keep the digest of the last report written from
                        # here if the database still holds that report:
                        # one that repeats it then has nothing to write
                        # but its time.
                        if _reported(state) == _reported(fresh):
                            fresh.report_digest = state.report_digest
                        children = fresh.children
                        fresh.children = state.children
                        state.copy_from(fresh)
                        self._set_children(state, children)
                    self._note_status(state)

    def reload(self):
        """The periodic reload of what changed (the scheduler service
        runs it every ``host_state_refresh_interval``)."""
        self._reloaded_in_background = True
        self._reload()

    def _reload(self):
        """Read what changed since the last reload, unless the first load
        has not ended or another thread reloads: then the states this one
        has meanwhile serve."""
        with self._lock:
            if self._reloading or not self._complete:
                return
            self._reloading = True
            since = self._reload_started_at
        started = time.monotonic()
        try:
            self._reload_changes(since)
        finally:
            with self._lock:
                self._reloading = False
                self._reloaded_at = time.monotonic()
                self._progress.notify_all()
        metrics.HOST_STATE_RELOAD_SECONDS.observe(time.monotonic() - started)

    def _reload_changes(self, since):
        started_at = _now()
        changed = sa.and_(_RP.c.changed_at >= since - CHANGE_OVERLAP,
                          sa.or_(_RP.c.changed_by.is_(None),
                                 _RP.c.changed_by != self.writer_id))
        # The time of the reports that said nothing new to another
        # scheduler, which wrote that time alone.
        times = sa.select(_RP.c.uuid, _RP.c.last_report_at).where(
            _RP.c.last_report_at >= since - CHANGE_OVERLAP,
            sa.or_(_RP.c.reported_by.is_(None),
                   _RP.c.reported_by != self.writer_id))
        changed = host_reads.with_roots(changed)
        with self._watching() as touched:
            with engines.snapshot(self.db_url) as conn:
                states, _ = self._read_states(conn, changed,
                                              host_reads.those(changed))
                count, newest = conn.execute(sa.select(
                    sa.func.coalesce(sa.func.sum(
                        sa.case((host_reads.HOSTS, 1), else_=0)), 0),
                    sa.func.max(_RP.c.id))).one()
                seen = conn.execute(times).all()
                signature = aggregates_mod.signature(conn)
            if signature != self._aggregates_seen:
                self._refresh_aggregates()
            self._take(states, touched)
            skipped = [uuid for uuid in touched if uuid in states]
        if skipped:
            # Changed here while read: read again what the database holds
            # of them now, with this process's change and any other's.
            self._read_again(skipped)
        with self._lock:
            for uuid, last_report_at in seen:
                state = self._hosts.get(uuid)
                if state is not None and last_report_at is not None and (
                        state.last_report_at is None or
                        last_report_at > state.last_report_at):
                    state.last_report_at = last_report_at
            self._newest = max(self._newest, newest or 0)
            self._reload_started_at = started_at
            known = len(self._hosts)
        if count != known:
            self._reconcile()
        self._set_apart()
        LOG.debug('Reloaded %d changed host states', len(states))

    def _read_again(self, uuids):
        """Read ``uuids`` again and take what no change of this process
        overtook meanwhile."""
        with self._watching() as touched:
            states = {}
            for start in range(0, len(uuids), _CHUNK):
                where = _RP.c.uuid.in_(uuids[start:start + _CHUNK])
                with engines.connection(self.db_url) as conn:
                    states.update(self._read_states(
                        conn, where, host_reads.those(where))[0])
            self._take(states, touched)

    def _reconcile(self):
        """Memory holds another number of hosts than the database: forget
        those deleted, load those missing."""
        with engines.connection(self.db_url) as conn:
            present = set(conn.execute(sa.select(_RP.c.uuid).where(
                host_reads.HOSTS)).scalars())
        with self._lock:
            gone = [uuid for uuid in self._hosts if uuid not in present]
            missing = [uuid for uuid in present if uuid not in self._hosts]
        for start in range(0, len(gone), _CHUNK):
            chunk = gone[start:start + _CHUNK]
            with engines.connection(self.db_url) as conn:
                # Those written since the read above are not gone.
                back = set(conn.execute(sa.select(_RP.c.uuid).where(
                    _RP.c.uuid.in_(chunk), host_reads.HOSTS)).scalars())
            with self._lock:
                for uuid in chunk:
                    if uuid not in back:
                        self._forget(uuid)
        for start in range(0, len(missing), _CHUNK):
            where = _RP.c.uuid.in_(missing[start:start + _CHUNK])
            with engines.connection(self.db_url) as conn:
                states, _ = self._read_states(conn, where,
                                              host_reads.those(where))
            self._take(states)

    def _load_new(self, until):
        """Load the providers above ``_newest`` (registered by another
        scheduler), or wait for the thread doing it; ``until`` is the
        highest provider id the database holds."""
        with self._lock:
            while self._loading_new:
                self._progress.wait()
            if self._newest >= until:
                return
            self._loading_new = True
            after = self._newest
        try:
            with self._watching() as touched:
                with engines.connection(self.db_url) as conn:
                    states, last = self._read_states(
                        conn, _RP.c.id > after,
                        lambda column: column > after)
                self._take(states, touched)
            with self._lock:
                self._newest = max(self._newest, until, last)
        finally:
            with self._lock:
                self._loading_new = False
                self._progress.notify_all()

    def _refresh(self):
        """Apply what another scheduler may have changed since the last
        load: the operator's status of hosts and the aggregates, read in
        one small transaction. Returns the highest provider id in the
        database: above ``_newest``, it holds hosts memory does not (the
        ids are the providers' primary key)."""
        rp = _RP
        with self._lock:
            held = list(self._held)
        condition = sa.or_(rp.c.service_disabled.is_(True),
                           rp.c.forced_down.is_(True))
        if held:
            condition = sa.or_(condition, rp.c.uuid.in_(held))
        with engines.connection(self.db_url) as conn:
            newest, count, total, disabled, forced = conn.execute(
                _LATEST).one()
            rows = conn.execute(sa.select(
                rp.c.uuid, rp.c.service_disabled, rp.c.disabled_reason,
                rp.c.forced_down).where(condition)).all() \
                if held or disabled or forced else []
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
        if (int(count), int(total)) != self._aggregates_seen:
            self._refresh_aggregates()
        return newest or 0

    def _set_children(self, state, children):
        """Give ``state`` the providers below it (under the lock), and
        index what it has."""
        for child in state.children:
            self._child_roots.pop(child.uuid, None)
        state.children = tuple(children)
        for child in state.children:
            self._child_roots[child.uuid] = state.uuid
        self._index(state)

    def _index(self, state):
        """File the host under what it has of the model (under the
        lock)."""
        keys = _model_keys(state)
        old = self._keys.get(state.uuid, frozenset())
        if keys == old:
            return
        self._unindex(state, old - keys)
        for key in keys - old:
            self._by_key.setdefault(key, set()).add(state)
        self._having.clear()
        if keys:
            self._keys[state.uuid] = keys
        else:
            self._keys.pop(state.uuid, None)

    def _unindex(self, state, keys):
        if keys:
            self._having.clear()
        for key in keys:
            hosts = self._by_key.get(key)
            if hosts is not None:
                hosts.discard(state)
                if not hosts:
                    del self._by_key[key]

    def having(self, classes, traits):
        """The hosts (a tuple) some provider of whose tree has room for
        each of ``classes`` (beyond VCPU, MEMORY_MB and DISK_GB) and
        whose tree has every trait of ``traits``; None when neither is
        asked (every host)."""
        keys = [('rc', rc) for rc in classes if rc not in _BASE]
        keys += [('trait', name) for name in traits]
        if not keys:
            return None
        keys = frozenset(keys)
        with self._lock:
            found = self._having.get(keys)
            if found is None:
                sets = [self._by_key.get(key, set()) for key in keys]
                sets.sort(key=len)
                found = tuple(sets[0].intersection(*sets[1:]))
                if len(self._having) >= 64:
                    self._having.clear()
                self._having[keys] = found
            return found

    def _forget(self, uuid):
        """Drop a host deleted from the database (under the lock)."""
        state = self._hosts.pop(uuid, None)
        if state is not None:
            for child in state.children:
                self._child_roots.pop(child.uuid, None)
            self._unindex(state, self._keys.pop(uuid, ()))
            key = _name_key(state.host, state.nodename)
            if self._names.get(key) == uuid:
                del self._names[key]
            self._listed = None
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
        return self._listing()

    def refresh_host(self, uuid):
        """Reload one host after the database disagreed with memory."""
        where = _RP.c.uuid == uuid
        with engines.connection(self.db_url) as conn:
            states, _ = self._read_states(conn, where,
                                          host_reads.those(where))
        if uuid not in states:
            with self._lock:
                self._forget(uuid)
            return None
        self._take(states)
        return self.get(uuid)

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

    def read_states(self):
        """Every host as the database holds it now, with its aggregates,
        apart from the states selects use (for os-hypervisors)."""
        states = {}
        after = 0
        while True:
            with engines.connection(self.db_url) as conn:
                page, last = host_reads.read_states(
                    conn, _RP.c.id > after, host_reads.page_after(after),
                    page=PAGE)
            states.update(page)
            if len(page) < PAGE:
                break
            after = last
        with engines.connection(self.db_url) as conn:
            if aggregates_mod.signature(conn) != self._aggregates_seen:
                self._refresh_aggregates()
        with self._lock:
            for state in states.values():
                state.set_aggregates(self._aggregates.get(state.host, ()))
        return states

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
        host_uuid = self._child_roots.get(uuid, uuid)
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
                state = self._hosts.get(self._child_roots.get(uuid, uuid))
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
            return self._names.get(_name_key(*name))

    def note_repeated_report(self, name, digest, status, stats, now):
        """Take a report of ``name`` at ``now`` that repeats the last one
        written (its ``digest``, the operator's ``status`` it carries):
        only its time and counts change. The node's uuid, or None if the
        report says something new and is to be written."""
        with self._lock:
            uuid = self._names.get(_name_key(*name))
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
                self._names[_name_key(host, nodename)] = report.uuid
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
                    self._set_children(state, report.children)
                else:
                    self._index(state)
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
