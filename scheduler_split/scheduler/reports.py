"""Compute reports, written to the scheduler database in group commits.

Every compute reports every ``report_interval`` seconds, and nearly every
report says what the last one said. Such a report only moves the host's
liveness (and its counts): its time is one row of one UPDATE. Every
report is written before the cast returns, in a group commit: the
reports that arrive while one transaction writes go together into the
next one, so a burst costs a few transactions, not one each, and no
report waits for a pool connection. The time is in the database at once,
for the other schedulers' reloads.

What a written report changes in memory is the host-state cache's to
apply (``HostManager.apply_reports``).
"""

import logging
import threading

import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.db import models
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import host_state

LOG = logging.getLogger(__name__)


def status_time(value):
    """The time of a status reading (ISO 8601 text), naive UTC."""
    if not value:
        return None
    return obj_base.naive_utc(timeutils.parse_isotime(value))


def inventory_of(stats):
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


def apply_status(row, status, updated_at):
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


class ReportWriter:
    """The group commit of the reports of one scheduler process, into
    its host-state cache (``host_manager.HostManager``)."""

    def __init__(self, db_url, cache):
        self.db_url = db_url
        self.cache = cache
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

    def record(self, cell_uuid, host, nodename, stats):
        """Record a compute's report: capacity, zone, enabled, liveness.

        Creates the compute node's resource provider on its first report.
        Usage is not taken from the compute: allocations are the truth.
        Returns the provider's uuid.
        """
        now = obj_base.naive_utc(obj_base.utcnow())
        digest = _report_digest(cell_uuid, stats)
        name = (host, nodename)
        uuid = self.cache.note_repeated_report(name, digest,
                                               _status_of(stats), stats, now)
        if uuid is not None:
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
            return self.cache.uuid_of(name)

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
            self.cache.apply_reports(reports, written)
            return failed
        self.cache.apply_reports(reports, written)
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
                for name in host_state.REPORTED_FIELDS:
                    if name in stats:
                        setattr(row, name, stats[name])
                status = stats.get('service_status')
                if status:
                    # The compute's cell record as its conductor last
                    # answered: applied only if newer than what the API
                    # told.
                    apply_status(row, status,
                                 status_time(status.get('updated_at')))
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
                for rc, values in inventory_of(reports[name][1]).items():
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
