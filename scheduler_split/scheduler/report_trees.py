"""What a compute report writes of its provider tree besides the compute
node's own row: the node's inventory, and the providers below it.

The inventory of a report (:func:`inventory_of`) is compared with the
database's and only what differs is written; a class the report no
longer carries goes unless something is allocated of it, and a changed
inventory bumps the provider's generation (:func:`store_inventories`).
The providers a report names below its node (``providers``) are created,
re-parented, given their inventories and reported traits, and deleted
once no report names them and nothing uses them
(:func:`store_children`). Both run inside the transaction of a group
commit of :class:`reports.ReportWriter`, over all of its reports at
once.
"""

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import traits as traits_mod

# Values per IN list.
_CHUNK = 500

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__

# The ids of providers, by uuid.
IDS = sa.select(_RP.c.uuid, _RP.c.id).where(
    _RP.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
_INVENTORIES = sa.select(
    _INV.c.resource_provider_id, _INV.c.resource_class, _INV.c.total,
    _INV.c.reserved, _INV.c.allocation_ratio).where(
    _INV.c.resource_provider_id.in_(sa.bindparam('ids', expanding=True)))
_UPDATE_INVENTORY = sa.update(_INV).where(
    _INV.c.resource_provider_id == sa.bindparam('p_id'),
    _INV.c.resource_class == sa.bindparam('p_rc'))
# A provider below a compute node: ``(id, uuid, name, parent id)``.
_CHILDREN = sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name,
                      _RP.c.parent_provider_id, _RP.c.root_provider_id)


def chunks(values):
    """``values`` in lists of at most ``_CHUNK``: one IN list each."""
    values = list(values)
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]


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


def store_inventories(conn, reports, results, known, stamp):
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
        for ids in chunks(sorted(changed)):
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
    for chunk in chunks(sorted(ids)):
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


def store_children(conn, trees, stamp, changed_at):
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
    for ids in chunks(sorted(by_root)):
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
                child_id = conn.execute(IDS, {'uuids': [uuid]}).one()[1]
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
        for ids in chunks(sorted(changed)):
            conn.execute(sa.update(_RP).where(_RP.c.id.in_(ids)).values(
                generation=_RP.c.generation + 1, changed_at=changed_at,
                changed_by=claims.CHANGED_BY), stamp)
    # What memory takes of each tree: every child the database holds
    # below the root (those kept too), with its traits.
    states = {}
    roots = [root_id for root_id, _, _ in trees_out.values()]
    rows_by_root = {}
    for ids in chunks(sorted(roots)):
        for row in conn.execute(_CHILDREN.where(
                _RP.c.root_provider_id.in_(ids)).order_by(_RP.c.id)):
            rows_by_root.setdefault(row.root_provider_id, []).append(row)
    child_ids = [row.id for rows in rows_by_root.values() for row in rows]
    traits, inventory = {}, {}
    for ids in chunks(child_ids):
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
