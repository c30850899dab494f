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
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import traits as traits_mod

LOG = logging.getLogger(__name__)

# The most reports one transaction writes: a burst of first reports is
# written in transactions of bounded length, which a claim waits for at
# most one of (see engines.WriteLock).
MAX_BATCH = 250
# Values per IN list.
_CHUNK = 500

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__

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
_IDS = sa.select(_RP.c.uuid, _RP.c.id).where(
    _RP.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
# Sets the columns each parameter set names besides (executemany).
_UPDATE_PROVIDER = sa.update(_RP).where(
    _RP.c.id == sa.bindparam('p_id')).values(changed_by=claims.CHANGED_BY)
_INVENTORIES = sa.select(
    _INV.c.resource_provider_id, _INV.c.resource_class, _INV.c.total,
    _INV.c.reserved, _INV.c.allocation_ratio).where(
    _INV.c.resource_provider_id.in_(sa.bindparam('ids', expanding=True)))
_UPDATE_INVENTORY = sa.update(_INV).where(
    _INV.c.resource_provider_id == sa.bindparam('p_id'),
    _INV.c.resource_class == sa.bindparam('p_rc'))

# What the cache applies of one report written: the node's ``name``
# (host, node), its provider's ``uuid`` and ``id``, the ``cell_uuid`` the
# row holds, the report's ``stats``, ``time`` and ``digest``, and the
# operator's ``status`` the row holds after it.
Written = collections.namedtuple(
    'Written',
    'name uuid id cell_uuid stats time digest status children inventory')
# A provider below a compute node: ``(id, uuid, name, parent id)``.
_CHILDREN = sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name,
                      _RP.c.parent_provider_id, _RP.c.root_provider_id)


def status_time(value):
    """The time of a status reading (ISO 8601 text), naive UTC."""
    if not value:
        return None
    return obj_base.naive_utc(timeutils.parse_isotime(value))


def inventory_of(stats, current=None):
    """``{resource class: (total, reserved, allocation_ratio)}`` of a
    report: VCPU, MEMORY_MB and DISK_GB, and the other classes its
    ``resources`` name (``{class: total}``), given the provider's
    ``current`` inventory (same shape; None for a new one).

    The compute owns what it reports: the totals, and the reserved
    amounts and ratios of VCPU, MEMORY_MB and DISK_GB that its
    configuration sets. A ratio its configuration leaves unset, and the
    reserved amount and ratio of its other classes, stay as the
    provider has them (an operator may have set them through the
    Placement API); a new provider starts with the report's initial
    ratios (1.0 for the other classes)."""
    current = current or {}
    initial = stats.get('initial_allocation_ratios') or {}

    def kept(rc, total, reserved=None, ratio=None):
        held = current.get(rc)
        if reserved is None:
            reserved = held[1] if held else 0
        if ratio is None:
            ratio = held[2] if held else initial.get(rc, 1.0)
        return (total, reserved, ratio)

    inventory = {rc: kept(rc, total)
                 for rc, total in (stats.get('resources') or {}).items()}
    inventory.update({
        'VCPU': kept('VCPU', stats['vcpus'], stats.get('reserved_vcpus', 0),
                     stats.get('cpu_allocation_ratio')),
        'MEMORY_MB': kept('MEMORY_MB', stats['memory_mb'],
                          stats.get('reserved_memory_mb', 0),
                          stats.get('ram_allocation_ratio')),
        'DISK_GB': kept('DISK_GB', stats['local_gb'],
                        stats.get('reserved_disk_gb', 0),
                        stats.get('disk_allocation_ratio')),
    })
    return inventory


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


def _unused(conn, pairs):
    """Of ``[(provider id, resource class)]``, those nothing is allocated
    of: an inventory still in use stays until its consumers go."""
    if not pairs:
        return []
    alloc = scheduler_models.Allocation.__table__
    used = set()
    for rp_id in {rp_id for rp_id, _ in pairs}:
        used.update((rp_id, rc) for (rc,) in conn.execute(
            sa.select(alloc.c.resource_class).where(
                alloc.c.resource_provider_id == rp_id).distinct()))
    return [pair for pair in pairs if pair not in used]


def _chunks(values):
    values = list(values)
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]


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
            written = self._store(reports, heartbeats)
        except Exception as exc:
            if len(reports) <= 1:
                LOG.warning('Could not record the report of %s: %s',
                            ', '.join('%s/%s' % name for name in reports)
                            or 'no compute', exception.describe(exc))
                return dict.fromkeys(reports, exc)
            if heartbeats:
                try:
                    self._store({}, heartbeats)
                except Exception as exc:
                    LOG.warning('Could not record the time of %d reports: '
                                '%s', len(heartbeats),
                                exception.describe(exc))
            failed = {}
            written = []
            for name, report in reports.items():
                try:
                    written += self._store({name: report}, {})
                except Exception as exc:
                    LOG.warning('Could not record the report of %s/%s: %s',
                                name[0], name[1], exception.describe(exc))
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
        for hosts in _chunks(sorted({host for host, _ in reports})):
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
            for uuids in _chunks(values['uuid'] for values in inserts):
                ids.update(conn.execute(_IDS, {'uuids': uuids}).all())
            for result in results.values():
                if result[1] is None:
                    result[1] = ids[result[0]]
        kept, inventories = self._store_inventories(
            conn, reports, results, {values['p_id'] for values in updates},
            stamp)
        traits_mod.store_reported(conn, {
            result[1]: traits_of(reports[name][1])
            for name, result in results.items()})
        trees, kept_children = _store_children(
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

    def _store_inventories(self, conn, reports, results, known, stamp):
        """Write the inventories the reports carry where they differ
        from the database's, and drop those they no longer carry that
        nothing is allocated of; bump the generation of the providers
        whose inventory changed. Returns the ids of the providers that
        keep an inventory their report left out, as it is in use, and
        ``{name: inventory}`` each report's node has now (see
        :func:`inventory_of`)."""
        current = _read_inventories(conn, known)
        held = {}
        for (rp_id, rc), values in current.items():
            held.setdefault(rp_id, {})[rc] = values
        written = {name: inventory_of(reports[name][1], held.get(result[1]))
                   for name, result in results.items()}
        changed, kept = _write_inventories(conn, current, {
            result[1]: written[name] for name, result in results.items()})
        # A provider this batch created has its first generation still.
        changed &= known
        if changed:
            # An inventory change must fail claims that read the old
            # one; the bump is computed by the database so that a
            # concurrent claim's bump is never lost.
            for ids in _chunks(sorted(changed)):
                conn.execute(sa.update(_RP).where(_RP.c.id.in_(ids)).values(
                    generation=_RP.c.generation + 1,
                    changed_by=claims.CHANGED_BY), stamp)
        for name, result in results.items():
            if result[1] in kept:
                # Memory holds what the database keeps: the classes in
                # use the report left out too.
                written[name] = dict(written[name])
                for (rp_id, rc), values in current.items():
                    if rp_id == result[1] and rc not in written[name]:
                        written[name][rc] = values
        return kept, written


def _read_inventories(conn, ids):
    """``{(provider id, class): (total, reserved, allocation_ratio)}``
    of the providers ``ids``."""
    current = {}
    for chunk in _chunks(sorted(ids)):
        for rp_id, rc, total, reserved, ratio in conn.execute(
                _INVENTORIES, {'ids': chunk}):
            current[(rp_id, rc)] = (total, reserved, ratio)
    return current


def _write_inventories(conn, current, wanted):
    """Make ``wanted`` (``{provider id: {class: (total, reserved,
    allocation_ratio)}}``) the inventories of those providers, given
    what the database holds of them (``current``, as
    :func:`_read_inventories` reads it): a class a provider no longer
    has goes, unless something is allocated of it. Returns ``(the ids
    of the providers whose inventory changed, the ids of those that keep
    a class in use)``."""
    inserts, updates, changed = [], [], set()
    for rp_id, inventory in wanted.items():
        for rc, values in inventory.items():
            old = current.get((rp_id, rc))
            if old == values:
                continue
            total, reserved, ratio = values
            if old is None:
                inserts.append({
                    'resource_provider_id': rp_id, 'resource_class': rc,
                    'total': total, 'reserved': reserved,
                    'allocation_ratio': ratio})
            else:
                updates.append({
                    'p_id': rp_id, 'p_rc': rc, 'total': total,
                    'reserved': reserved, 'allocation_ratio': ratio})
            changed.add(rp_id)
    gone = [(rp_id, rc) for (rp_id, rc) in current
            if rp_id in wanted and rc not in wanted[rp_id]]
    unused = _unused(conn, gone)
    for rp_id, rc in unused:
        conn.execute(_INV.delete().where(
            _INV.c.resource_provider_id == rp_id,
            _INV.c.resource_class == rc))
        changed.add(rp_id)
    if updates:
        conn.execute(_UPDATE_INVENTORY, updates)
    if inserts:
        conn.execute(_INV.insert(), inserts)
    return changed, {rp_id for rp_id, _ in set(gone) - set(unused)}


def _child_inventory(child):
    """``{class: total}`` a report gives a provider below its compute
    node (the reserved amounts and ratios are the provider's)."""
    return dict(child.get('resources') or {})


def _store_children(conn, trees, stamp, changed_at):
    """Make the providers below each reported compute node those its
    report names (``trees``: ``{name: (root id, stats)}``); a report
    without ``providers`` (an older compute's) leaves them as they are.

    Each is found by its name: created below its parent the first time,
    given the inventory and the reported traits the report says (the
    traits an operator set stay), and deleted once its report no longer
    names it and nothing is allocated of it. Returns ``({name:
    [ChildState]}`` of the trees reported, the ids of the roots that keep
    a child or an inventory their report left out)``; the children's
    usage is memory's to carry over."""
    wanted = {name: (root_id, stats['providers'])
              for name, (root_id, stats) in trees.items()
              if stats.get('providers') is not None}
    if not wanted:
        return {}, set()
    by_root = {root_id: name for name, (root_id, _) in wanted.items()}
    existing = {}
    for ids in _chunks(sorted(by_root)):
        for row in conn.execute(_CHILDREN.where(
                _RP.c.root_provider_id.in_(ids)).order_by(_RP.c.id)):
            existing.setdefault(row.root_provider_id, {})[row.name] = row
    changed, kept, gone = set(), set(), []
    trees_out = {}
    reported_traits = {}
    inventories = {}
    for name, (root_id, children) in wanted.items():
        have = existing.get(root_id, {})
        ids = {None: root_id}
        uuids = {root_id: None}
        for child in children:
            row = have.get(child['name'])
            parent_id = ids.get(child['parent'], root_id)
            if row is None:
                uuid = uuidutils.generate_uuid()
                conn.execute(_RP.insert(), {
                    'uuid': uuid, 'name': child['name'], 'host': None,
                    'parent_provider_id': parent_id,
                    'root_provider_id': root_id, 'generation': 0,
                    'disabled': False, 'changed_at': changed_at,
                    'changed_by': stamp['w_me'], 'created_at': changed_at,
                    'updated_at': changed_at})
                child_id = conn.execute(_IDS, {'uuids': [uuid]}).one()[1]
            else:
                uuid, child_id = row.uuid, row.id
                if row.parent_provider_id != parent_id:
                    conn.execute(sa.update(_RP).where(
                        _RP.c.id == child_id).values(
                        parent_provider_id=parent_id))
                    changed.add(child_id)
            ids[child['name']] = child_id
            uuids[child_id] = uuid
            reported_traits[child_id] = frozenset(child.get('traits') or ())
            inventories[child_id] = _child_inventory(child)
        named = {child['name'] for child in children}
        gone += [row for child_name, row in have.items()
                 if child_name not in named]
        trees_out[name] = (root_id, [(ids[child['name']], child)
                                     for child in children], uuids)
    changed |= _write_child_inventories(conn, inventories)
    changed |= traits_mod.store_reported(conn, reported_traits)
    # Those no longer named, deepest first: deleted if nothing is
    # allocated of them and nothing hangs below them any more.
    alloc = scheduler_models.Allocation.__table__
    for row in sorted(gone, key=lambda row: -row.id):
        in_use = conn.execute(sa.select(alloc.c.id).where(
            alloc.c.resource_provider_id == row.id).limit(1)).first()
        below = conn.execute(sa.select(_RP.c.id).where(
            _RP.c.parent_provider_id == row.id).limit(1)).first()
        if in_use is not None or below is not None:
            kept.add(row.root_provider_id)
            continue
        conn.execute(_INV.delete().where(
            _INV.c.resource_provider_id == row.id))
        conn.execute(traits_mod.PROVIDER_TRAITS_TABLE.delete().where(
            traits_mod.PROVIDER_TRAITS_TABLE.c.resource_provider_id ==
            row.id))
        aggregates = scheduler_models.ResourceProviderAggregate.__table__
        conn.execute(aggregates.delete()
                     .where(aggregates.c.resource_provider_id == row.id))
        conn.execute(_RP.delete().where(_RP.c.id == row.id))
        changed.add(row.root_provider_id)
    if changed:
        for ids in _chunks(sorted(changed)):
            conn.execute(sa.update(_RP).where(_RP.c.id.in_(ids)).values(
                generation=_RP.c.generation + 1, changed_at=changed_at,
                changed_by=claims.CHANGED_BY), stamp)
    # What memory takes of each tree: every child the database holds
    # below the root (those kept too), with its traits.
    states = {}
    roots = [root_id for root_id, _, _ in trees_out.values()]
    rows_by_root = {}
    for ids in _chunks(sorted(roots)):
        for row in conn.execute(_CHILDREN.where(
                _RP.c.root_provider_id.in_(ids)).order_by(_RP.c.id)):
            rows_by_root.setdefault(row.root_provider_id, []).append(row)
    child_ids = [row.id for rows in rows_by_root.values() for row in rows]
    traits, inventory = {}, {}
    for ids in _chunks(child_ids):
        traits.update(traits_mod.of_providers(
            conn, lambda column: column.in_(ids)))
        for rp_id, rc, total, reserved, ratio in conn.execute(
                _INVENTORIES, {'ids': ids}):
            inventory.setdefault(rp_id, {})[rc] = (total, reserved, ratio)
    for name, (root_id, _, _) in trees_out.items():
        rows = rows_by_root.get(root_id, [])
        uuid_of = {row.id: row.uuid for row in rows}
        tree = []
        for row in rows:
            child = host_state.ChildState(
                row.uuid, row.name, uuid_of.get(row.parent_provider_id))
            child.inventory = inventory.get(row.id, {})
            child.set_traits(traits.get(row.id, ()))
            tree.append(child)
        states[name] = tree
    return states, kept


def _write_child_inventories(conn, totals):
    """Make ``{provider id: {class: total}}`` the inventories of those
    providers, but for a class still allocated that a report left out;
    a class's reserved amount and ratio stay as they are (0 and 1.0 for
    a new one). The ids of those changed."""
    current = _read_inventories(conn, totals)
    wanted = {}
    for rp_id, reported in totals.items():
        wanted[rp_id] = {}
        for rc, total in reported.items():
            held = current.get((rp_id, rc))
            wanted[rp_id][rc] = (total,) + (held[1:] if held else (0, 1.0))
    return _write_inventories(conn, current, wanted)[0]
