"""Loading and reloading the host-state cache (:mod:`host_manager`)
from the scheduler database: the first load, the periodic reloads of
what changed, the small read each select makes of what other schedulers
changed, and the reads of single hosts. :class:`HostLoads` is the part
of ``HostManager`` that does them; it works on the state
``HostManager.__init__`` sets up and describes.

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

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split.db import scheduler_models
from scheduler_split import metrics
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_reads

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


def _reported(state):
    """What a host's reports set, as its state holds it."""
    return (state._profile, state.reported_disabled, state._resources,
            state.host_ip, state.failed_builds, state.num_io_ops,
            tuple(child.key() for child in state.children))


class HostLoads:
    """The loading and reloading part of ``HostManager`` (a mixin): it
    works on the states, the lock and the index ``HostManager`` holds,
    and drops and notes hosts through its ``_forget`` and
    ``_note_status``."""

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
                outage.report(LOG, exc, 'Could not read host states (%s); '
                              'trying again', outage.reason(exc))
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
                        self._index.name(uuid, fresh.host, fresh.nodename)
                        self._listed = None
                        self._index.set_children(state, fresh.children)
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
                        self._index.set_children(state, children)
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
