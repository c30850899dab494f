"""Compute reports, written to the scheduler database in group commits.

Every compute reports every ``report_interval`` seconds, and nearly every
report says what the last one said. Such a report only moves the host's
liveness (and its counts): its time is one row of one UPDATE. Every
report is written in a group commit: the reports that arrive while one
transaction writes go together into the next one (at most ``MAX_BATCH``),
so a burst costs a few transactions, not one each. The thread that finds
no transaction under way writes, until nothing is left to write; the
others leave their report with it and go on. A compute's report is a
cast, so the RPC server's thread waits for nothing; a caller in the
process may wait for its report to be written (``record(wait=True)``).
The time is in the database within a transaction, for the other
schedulers' reloads.

A batch is a handful of SQLAlchemy Core statements, whatever its size:
the rows of the reported nodes read at once, each kind of write run once
over all of them (an executemany), the inventories compared in memory.
What a report writes besides the node's row (its inventory, and the
providers below it) is written by :mod:`report_trees`.

What a written report changes in memory is the host-state cache's to
apply (``HostManager.apply_reports``).
"""

import collections
import itertools
import logging
import threading

from oslo_utils import timeutils
from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import report_trees
from scheduler_split.scheduler import traits as traits_mod

LOG = logging.getLogger(__name__)

# The most reports one transaction writes: a burst of first reports is
# written in transactions of bounded length, which a claim waits for at
# most one of (see engines.WriteLock).
MAX_BATCH = 250

_RP = scheduler_models.ResourceProvider.__table__

# A report's time alone, and who wrote it: what changed_at and changed_by
# say (the last change of anything else) stays.
_HEARTBEAT = sa.update(_RP).where(
    _RP.c.uuid == sa.bindparam('node_uuid')).values(
    last_report_at=sa.bindparam('seen'), updated_at=sa.bindparam('seen'),
    reported_by=sa.bindparam('writer'), changed_at=_RP.c.changed_at,
    changed_by=_RP.c.changed_by)
_ROWS = sa.select(
    _RP.c.id, _RP.c.uuid, _RP.c.host, _RP.c.name, _RP.c.cell_uuid,
    _RP.c.service_disabled, _RP.c.disabled_reason, _RP.c.forced_down,
    _RP.c.status_updated_at).where(
    _RP.c.host.in_(sa.bindparam('hosts', expanding=True)))
# Sets the columns each parameter set names besides (executemany).
_UPDATE_PROVIDER = sa.update(_RP).where(
    _RP.c.id == sa.bindparam('p_id')).values(changed_by=claims.CHANGED_BY)

# What the cache applies of one report written: the node's ``name``
# (host, node), its provider's ``uuid`` and ``id``, the ``cell_uuid`` the
# row holds, the report's ``stats``, ``time`` and ``digest``, and the
# operator's ``status`` the row holds after it.
Written = collections.namedtuple(
    'Written',
    'name uuid id cell_uuid stats time digest status children inventory')


def status_time(value):
    """The time of a status reading (ISO 8601 text), naive UTC."""
    if not value:
        return None
    return obj_base.naive_utc(timeutils.parse_isotime(value))


def traits_of(stats):
    """The traits a report says its node has."""
    return frozenset(stats.get('traits') or ())


def _frozen(value):
    """A hashable copy of a report's value (its traits are a list, its
    other resources a dict)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _report_digest(cell_uuid, stats):
    """What a report says, but for the operator's status (compared with
    memory instead, see ``_status_of``), as one hashable value; None if
    some value does not hash (the report is then always written)."""
    try:
        return hash((cell_uuid,) + tuple(sorted(
            (key, _frozen(value)) for key, value in stats.items()
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


def status_values(held_at, status, updated_at):
    """The columns a reading of the operator's status (``status``, of
    time ``updated_at``) writes on a provider whose reading is of time
    ``held_at``; None if that one is newer."""
    if updated_at is None:
        return None
    if held_at is not None and updated_at < held_at:
        return None
    return {'service_disabled': bool(status.get('disabled')),
            'disabled_reason': status.get('disabled_reason'),
            'forced_down': bool(status.get('forced_down')),
            'status_updated_at': updated_at}


def _grouped(rows):
    """``rows`` (parameter dicts) by the keys they name: one
    executemany each."""
    groups = {}
    for row in rows:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    return groups.values()


class _Waiter:
    """A caller waiting for its report to be written."""

    __slots__ = ('done', 'error')

    def __init__(self):
        self.done = False
        self.error = None


class ReportWriter:
    """The group commit of the reports of one scheduler process, into
    its host-state cache (``host_manager.HostManager``)."""

    def __init__(self, db_url, cache):
        self.db_url = db_url
        self.cache = cache
        self._reports = threading.Condition(threading.Lock())
        # {(host, node): (cell, stats, time, digest, [_Waiter])} of the
        # reports waiting for their group commit: a newer report of a
        # node replaces the older one (and takes over its waiters).
        self._pending = {}
        # Those of the transaction under way.
        self._in_flight = {}
        # {uuid: time} of reports that said nothing new, for the next
        # group commit.
        self._heartbeats = {}
        self._writing = False

    def record(self, cell_uuid, host, nodename, stats, wait=True):
        """Record a compute's report: capacity, zone, enabled, liveness.

        Creates the compute node's resource provider on its first report.
        Usage is not taken from the compute: allocations are the truth.
        With ``wait``, returns once the report is written: the provider's
        uuid (or raises what kept it from being written); without, the
        uuid if the node is known.
        """
        now = obj_base.naive_utc(obj_base.utcnow())
        digest = _report_digest(cell_uuid, stats)
        name = (host, nodename)
        waiter = _Waiter() if wait else None
        with self._reports:
            uuid = None
            if name not in self._pending and name not in self._in_flight:
                # Nothing of this node waits to be written: a report that
                # repeats the last one written only moves its time.
                uuid = self.cache.note_repeated_report(
                    name, digest, _status_of(stats), stats, now)
            if uuid is not None:
                metrics.REPORT_UNCHANGED.inc()
                self._heartbeats[uuid] = now
                waiter = None
            else:
                older = self._pending.get(name)
                waiters = older[4] if older is not None else []
                if older is not None:
                    metrics.REPORT_SUPERSEDED.inc()
                if waiter is not None:
                    waiters.append(waiter)
                self._pending[name] = (cell_uuid, stats, now, digest,
                                       waiters)
            if not self._writing:
                self._writing = True
                try:
                    while self._pending or self._heartbeats:
                        self._write_next_batch()
                finally:
                    self._writing = False
                    self._reports.notify_all()
            while waiter is not None and not waiter.done:
                self._reports.wait()
        if waiter is not None:
            if waiter.error is not None:
                raise waiter.error
            return self.cache.uuid_of(name)
        return uuid

    def _write_next_batch(self):
        """Write what is queued, up to ``MAX_BATCH`` reports (the caller
        holds ``_reports`` and is the writer); wake those waiting for
        them."""
        if len(self._pending) <= MAX_BATCH:
            reports, self._pending = self._pending, {}
        else:
            reports = {name: self._pending.pop(name) for name in
                       list(itertools.islice(self._pending, MAX_BATCH))}
        heartbeats, self._heartbeats = self._heartbeats, {}
        self._in_flight = reports
        self._reports.release()
        failed = None
        try:
            failed = self._write_batch(reports, heartbeats)
        finally:
            self._reports.acquire()
            self._in_flight = {}
            if failed is None:
                failed = dict.fromkeys(reports, exception.Invalid(
                    'the report could not be recorded'))
            for name, report in reports.items():
                for waiter in report[4]:
                    waiter.done = True
                    waiter.error = failed.get(name)
            self._reports.notify_all()
        metrics.REPORT_ABSORBED.inc(len(reports) - len(failed))
        if failed:
            metrics.REPORT_DROPPED.inc(len(failed))

    def _write_batch(self, reports, heartbeats):
        """One transaction for ``reports`` and ``heartbeats``; if it
        fails, the times alone, then each report alone, so that one bad
        report spoils none of the others. ``{(host, node): exception}``
        of those that failed.
        """
        try:
            written = outage.retry_races(self._store, reports, heartbeats)
        except Exception as exc:
            if len(reports) <= 1:
                outage.report(LOG, exc, 'Could not record the report of '
                              '%s: %s', ', '.join('%s/%s' % name
                                                  for name in reports)
                              or 'no compute', outage.reason(exc))
                return dict.fromkeys(reports, exc)
            if heartbeats:
                try:
                    outage.retry_races(self._store, {}, heartbeats)
                except Exception as exc:
                    outage.report(LOG, exc, 'Could not record the time of '
                                  '%d reports: %s', len(heartbeats),
                                  outage.reason(exc))
            failed = {}
            written = []
            for name, report in reports.items():
                try:
                    written += outage.retry_races(self._store,
                                                  {name: report}, {})
                except Exception as exc:
                    outage.report(LOG, exc, 'Could not record the report '
                                  'of %s/%s: %s', name[0], name[1],
                                  outage.reason(exc))
                    failed[name] = exc
            self.cache.apply_reports(written)
            return failed
        self.cache.apply_reports(written)
        return {}

    def _store(self, reports, heartbeats):
        """Write reports and liveness in one transaction; what was
        written (``Written``, one per report)."""
        with engines.writer(self.db_url, bulk=True) as session:
            conn = session.connection()
            if heartbeats:
                writer = self.cache.writer_id
                conn.execute(_HEARTBEAT, [
                    {'node_uuid': uuid, 'seen': seen, 'writer': writer}
                    for uuid, seen in heartbeats.items()])
            if not reports:
                return []
            return self._store_reports(conn, reports)

    def _store_reports(self, conn, reports):
        stamp = self.cache.stamp()
        # When the rows change: one time for the batch, rather than the
        # columns' defaults worked out row by row.
        changed_at = obj_base.naive_utc(obj_base.utcnow())
        rows = {}
        for hosts in report_trees.chunks(
                sorted({host for host, _ in reports})):
            for row in conn.execute(_ROWS, {'hosts': hosts}):
                rows[(row.host, row.name)] = row
        updates, inserts, results = [], [], {}
        for name, (cell_uuid, stats, now, digest, _) in reports.items():
            row = rows.get(name)
            values = {
                'cell_uuid': cell_uuid or (row.cell_uuid if row else None),
                'availability_zone': stats.get('availability_zone'),
                'disabled': bool(stats.get('disabled', False)),
                'last_report_at': now,
                'reported_by': self.cache.writer_id,
                'changed_at': changed_at,
                'updated_at': changed_at,
            }
            for field in host_state.REPORTED_FIELDS:
                if field in stats:
                    values[field] = stats[field]
            status = (row.service_disabled, row.disabled_reason,
                      row.forced_down) if row is not None else (
                False, None, False)
            reading = stats.get('service_status')
            if reading:
                # The compute's cell record as its conductor last
                # answered: applied only if newer than what the API told.
                written = status_values(
                    row.status_updated_at if row is not None else None,
                    reading, status_time(reading.get('updated_at')))
                if written is not None:
                    values.update(written)
                    status = (written['service_disabled'],
                              written['disabled_reason'],
                              written['forced_down'])
            if row is None:
                uuid = stats.get('uuid') or uuidutils.generate_uuid()
                values.update(uuid=uuid, host=name[0], name=name[1],
                              generation=0, changed_by=stamp['w_me'],
                              created_at=changed_at)
                inserts.append(values)
                results[name] = [uuid, None, values['cell_uuid'], status]
            else:
                values.update(stamp, p_id=row.id)
                updates.append(values)
                results[name] = [row.uuid, row.id, values['cell_uuid'],
                                 status]
        # In id order, as every writer of several providers: two
        # transactions never wait for each other's rows in a circle.
        updates.sort(key=lambda values: values['p_id'])
        for group in _grouped(updates):
            conn.execute(_UPDATE_PROVIDER, group)
        for group in _grouped(inserts):
            conn.execute(_RP.insert(), group)
        if inserts:
            ids = {}
            for uuids in report_trees.chunks(
                    values['uuid'] for values in inserts):
                ids.update(conn.execute(report_trees.IDS,
                                        {'uuids': uuids}).all())
            for result in results.values():
                if result[1] is None:
                    result[1] = ids[result[0]]
        kept, inventories = report_trees.store_inventories(
            conn, reports, results, {values['p_id'] for values in updates},
            stamp)
        traits_mod.store_reported(conn, {
            result[1]: traits_of(reports[name][1])
            for name, result in results.items()})
        trees, kept_children = report_trees.store_children(
            conn, {name: (result[1], reports[name][1])
                   for name, result in results.items()}, stamp, changed_at)
        kept |= kept_children
        # A provider that keeps an inventory its report left out (still
        # in use) has its next report written again, digest or not.
        return [Written(name, uuid, provider_id, cell_uuid,
                        reports[name][1], reports[name][2],
                        None if provider_id in kept else reports[name][3],
                        status, trees.get(name), inventories[name])
                for name, (uuid, provider_id, cell_uuid, status)
                in results.items()]
