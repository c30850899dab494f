"""What the Placement API reads of the scheduler database (scheduler RPC
1.9): resource providers with their inventories, usages and aggregates,
the allocations held on a provider or by a consumer, and what a set of
consumers uses.

In Placement's terms, every compute node is a resource provider, the
root of its tree, with the inventory its compute reports; a provider
made through the Placement API (``placement_providers``) is a root or a
child in a tree. A provider's aggregates are those written through the
Placement API and the host aggregates of its host (same uuids), as Nova
mirrors its aggregates into Placement. Nothing here writes.

Each read is one read-only transaction of a few statements. A list of
providers is filtered, ordered by provider id and paged by the database,
at most ``MAX_PAGE`` providers a call, so that no call reads every
provider of a large cloud at once; the caller asks for the next page
after the ``next`` marker an answer carries.
"""

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import rpcapi
from scheduler_split.scheduler import traits as traits_mod

# The most providers one call answers with; also the size of every IN
# list (databases bound it).
MAX_PAGE = rpcapi.MAX_PAGE

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__
_AGG = scheduler_models.Aggregate.__table__
_AGG_HOST = scheduler_models.AggregateHost.__table__
_RPA = scheduler_models.ResourceProviderAggregate.__table__
_PARENT = _RP.alias('parent')
_ROOT = _RP.alias('root')
# A provider's root: itself when it has none recorded.
ROOT_ID = sa.func.coalesce(_RP.c.root_provider_id, _RP.c.id)

PROVIDERS = sa.select(
    _RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.host, _RP.c.generation,
    _RP.c.created_at, _RP.c.updated_at,
    _PARENT.c.uuid.label('parent_uuid'),
    _ROOT.c.uuid.label('root_uuid')).select_from(
    _RP.outerjoin(_PARENT, _PARENT.c.id == _RP.c.parent_provider_id)
    .outerjoin(_ROOT, _ROOT.c.id == _RP.c.root_provider_id)).order_by(
    _RP.c.id)
# What the other consumers use of the inventory row of the enclosing
# query (correlated).
_USED = sa.select(sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0)).where(
    _ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
    _ALLOC.c.resource_class == _INV.c.resource_class).scalar_subquery()


def _iso(value):
    return value.isoformat() if value is not None else None


def inventory_record(total, reserved, allocation_ratio, min_unit=1,
                     max_unit=None, step_size=1):
    """An inventory as Placement shows it. One a compute reported
    without a ``max_unit`` takes up to its whole capacity in one
    allocation (at least 1, Placement's smallest)."""
    if max_unit is None:
        max_unit = max(1, claims.capacity(total, reserved,
                                          allocation_ratio))
    return {'total': total, 'reserved': reserved,
            'allocation_ratio': allocation_ratio, 'min_unit': min_unit,
            'max_unit': max_unit, 'step_size': step_size}


def _has_room(resource_class, amount):
    """The provider of the enclosing query has ``amount`` of
    ``resource_class`` free ((total - reserved) * allocation_ratio less
    what is allocated, as a claim counts it, ``claims.capacity``), and
    one allocation of ``amount`` fits its units: at least ``min_unit``,
    at most ``max_unit``, a multiple of ``step_size``."""
    return sa.exists().where(
        _INV.c.resource_provider_id == _RP.c.id,
        _INV.c.resource_class == resource_class,
        (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio >=
        _USED + amount,
        _INV.c.min_unit <= amount,
        sa.or_(_INV.c.max_unit.is_(None), _INV.c.max_unit >= amount),
        sa.literal(amount) % _INV.c.step_size == 0)


def _hosts_in(aggregate_uuids):
    """The hosts of the live aggregates of these uuids."""
    return sa.select(_AGG_HOST.c.host).join(
        _AGG, _AGG.c.id == _AGG_HOST.c.aggregate_id).where(
        _AGG.c.uuid.in_(sorted(aggregate_uuids)), _AGG.c.deleted == 0)


def _in_aggregates(uuids):
    """The provider of the enclosing query is in one of the aggregates
    ``uuids``: put there through the Placement API, or its host in the
    host aggregate."""
    return sa.or_(
        _RP.c.host.in_(_hosts_in(uuids)),
        _RP.c.id.in_(sa.select(_RPA.c.resource_provider_id).where(
            _RPA.c.aggregate_uuid.in_(sorted(uuids)))))


def _conditions(filters):
    """The WHERE clauses of ``filters`` (see :func:`providers`)."""
    found = []
    if filters.get('uuid') is not None:
        found.append(_RP.c.uuid == filters['uuid'])
    if filters.get('name') is not None:
        found.append(_RP.c.name == filters['name'])
    for member in filters.get('in_tree') or ():
        other = _RP.alias('tree')
        found.append(ROOT_ID == sa.select(sa.func.coalesce(
            other.c.root_provider_id, other.c.id)).where(
            other.c.uuid == member).scalar_subquery())
    for any_of in filters.get('member_of') or ():
        found.append(_in_aggregates(any_of))
    if filters.get('forbidden_aggregates'):
        found.append(sa.not_(_in_aggregates(
            filters['forbidden_aggregates'])))
    for rc, amount in sorted((filters.get('resources') or {}).items()):
        found.append(_has_room(rc, amount))
    for name in filters.get('required') or ():
        found.append(_has_trait([name]))
    for name in filters.get('forbidden') or ():
        found.append(sa.not_(_has_trait([name])))
    for names in filters.get('any_of') or ():
        found.append(_has_trait(names))
    return found


def _has_trait(names):
    """The provider of the enclosing query has one of the traits
    ``names``."""
    rpt = scheduler_models.ResourceProviderTrait.__table__
    trait = scheduler_models.Trait.__table__
    return sa.exists().where(
        rpt.c.resource_provider_id == _RP.c.id,
        rpt.c.trait_id == trait.c.id, trait.c.name.in_(sorted(names)))


def details(conn, rows):
    """``{provider id: {inventories, capacity, usages, aggregates,
    traits}}`` of the providers ``rows``."""
    ids = [row.id for row in rows]
    found = {row.id: {'inventories': {}, 'capacity': {}, 'usages': {},
                      'aggregates': [], 'traits': []} for row in rows}
    for rp_id, names in traits_mod.of_providers(
            conn, lambda column: column.in_(ids)).items():
        found[rp_id]['traits'] = sorted(names)
    for (rp_id, rc, total, reserved, ratio, min_unit, max_unit,
         step_size) in conn.execute(
            sa.select(_INV.c.resource_provider_id, _INV.c.resource_class,
                      _INV.c.total, _INV.c.reserved,
                      _INV.c.allocation_ratio, _INV.c.min_unit,
                      _INV.c.max_unit, _INV.c.step_size).where(
                _INV.c.resource_provider_id.in_(ids))):
        found[rp_id]['inventories'][rc] = inventory_record(
            total, reserved, ratio, min_unit, max_unit, step_size)
        found[rp_id]['capacity'][rc] = claims.capacity(total, reserved,
                                                       ratio)
        # As Placement counts them: every class of the inventory, used
        # or not.
        found[rp_id]['usages'][rc] = 0
    for rp_id, rc, used in conn.execute(
            sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class,
                      sa.func.sum(_ALLOC.c.used)).where(
                _ALLOC.c.resource_provider_id.in_(ids)).group_by(
                _ALLOC.c.resource_provider_id, _ALLOC.c.resource_class)):
        found[rp_id]['usages'][rc] = int(used)
    by_host = {}
    for row in rows:
        if row.host is not None:
            by_host.setdefault(row.host, []).append(row.id)
    for host, uuid in conn.execute(
            sa.select(_AGG_HOST.c.host, _AGG.c.uuid).join(
                _AGG, _AGG.c.id == _AGG_HOST.c.aggregate_id).where(
                _AGG_HOST.c.host.in_(sorted(by_host)),
                _AGG.c.deleted == 0)):
        for rp_id in by_host[host]:
            found[rp_id]['aggregates'].append(uuid)
    for rp_id, uuid in conn.execute(sa.select(
            _RPA.c.resource_provider_id, _RPA.c.aggregate_uuid).where(
            _RPA.c.resource_provider_id.in_(ids))):
        found[rp_id]['aggregates'].append(uuid)
    for details in found.values():
        details['aggregates'] = sorted(set(details['aggregates']))
    return found


def providers(url, filters=None, marker=None, limit=MAX_PAGE,
              detail=False):
    """A page of the resource providers ``filters`` selects, in id order.

    ``filters`` (each optional): ``uuid``, ``name``; ``in_tree``, a list
    of provider uuids whose trees the provider must be in;
    ``member_of``, a list of lists of aggregate uuids (in one of each
    list); ``forbidden_aggregates``, uuids of aggregates it must be in
    none of; ``resources``, ``{resource class: amount}`` it must have
    free. ``marker`` is the ``next`` of the page before.

    Returns ``{'providers': [...], 'next': marker or None}``: at most
    ``limit`` (and ``MAX_PAGE``) providers, each ``id``, ``uuid``,
    ``name``, ``generation`` and ``updated_at``, and with ``detail``
    also ``inventories`` (``{rc: inventory_record}``), ``capacity``
    (``{rc: amount}``), ``usages`` (``{rc: amount}``, every class of the
    inventory) and ``aggregates`` (uuids); ``next`` is None once no
    provider is left.
    """
    limit = max(1, min(limit or MAX_PAGE, MAX_PAGE))
    query = PROVIDERS.where(*_conditions(filters or {})).limit(limit + 1)
    if marker is not None:
        query = query.where(_RP.c.id > marker)
    with engines.snapshot(url) as conn:
        rows = conn.execute(query).all()
        more = len(rows) > limit
        rows = rows[:limit]
        extra = details(conn, rows) if detail and rows else {}
    found = []
    for row in rows:
        provider = {'id': row.id, 'uuid': row.uuid, 'name': row.name,
                    'generation': row.generation,
                    'parent_provider_uuid': row.parent_uuid,
                    'root_provider_uuid': row.root_uuid or row.uuid,
                    'updated_at': _iso(row.updated_at or row.created_at)}
        provider.update(extra.get(row.id, {}))
        found.append(provider)
    return {'providers': found, 'next': rows[-1].id if more else None}


def provider_allocations(url, provider_uuid):
    """``{'generation': g, 'allocations': {consumer: {rc: used}}}`` of
    the provider, or None if there is no such provider."""
    with engines.snapshot(url) as conn:
        row = conn.execute(sa.select(_RP.c.id, _RP.c.generation).where(
            _RP.c.uuid == provider_uuid)).first()
        if row is None:
            return None
        allocations = {}
        for consumer, rc, used in conn.execute(
                sa.select(_ALLOC.c.consumer_id, _ALLOC.c.resource_class,
                          _ALLOC.c.used).where(
                    _ALLOC.c.resource_provider_id == row.id).order_by(
                    _ALLOC.c.consumer_id)):
            allocations.setdefault(consumer, {})[rc] = used
    return {'generation': row.generation, 'allocations': allocations}


def consumer_allocations(url, consumer_id):
    """``{provider uuid: {'generation': g, 'resources': {rc: used}}}``
    of what ``consumer_id`` holds (empty if nothing)."""
    result = {}
    with engines.connection(url) as conn:
        for uuid, generation, rc, used in conn.execute(
                sa.select(_RP.c.uuid, _RP.c.generation,
                          _ALLOC.c.resource_class, _ALLOC.c.used).join(
                    _RP, _RP.c.id == _ALLOC.c.resource_provider_id).where(
                    _ALLOC.c.consumer_id == consumer_id)):
            entry = result.setdefault(uuid, {'generation': generation,
                                             'resources': {}})
            entry['resources'][rc] = used
    return result


def usages(url, consumer_ids):
    """``{'usages': {rc: amount}, 'consumer_count': n}``: what the
    consumers ``consumer_ids`` hold, summed over every provider, and how
    many of them hold anything."""
    consumers = sorted(set(consumer_ids))
    total = {}
    holding = 0
    with engines.snapshot(url) as conn:
        for start in range(0, len(consumers), MAX_PAGE):
            chunk = consumers[start:start + MAX_PAGE]
            for rc, used in conn.execute(
                    sa.select(_ALLOC.c.resource_class,
                              sa.func.sum(_ALLOC.c.used)).where(
                        _ALLOC.c.consumer_id.in_(chunk)).group_by(
                        _ALLOC.c.resource_class)):
                total[rc] = total.get(rc, 0) + int(used)
            holding += conn.execute(sa.select(sa.func.count(sa.distinct(
                _ALLOC.c.consumer_id))).where(
                _ALLOC.c.consumer_id.in_(chunk))).scalar()
    return {'usages': total, 'consumer_count': holding}
