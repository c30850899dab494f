"""Allocations written through the Placement API (scheduler RPC 1.11):
what a consumer that is not one of the scheduler's servers holds (a
Neutron port's bandwidth, an Ironic node, an operator's reservation),
written, replaced and deleted as Placement does.

Every write is one transaction that checks each amount against the
provider's inventory (the class there, ``min_unit`` to ``max_unit`` in
steps of ``step_size``, room left beside every other consumer's
allocations, a server's claims included) and bumps the generation of
every provider whose allocations it changes with the same guarded
update as a claim (``... WHERE generation = :read``): a claim or another
write that changed a provider meanwhile makes this one start again (up
to ``RETRIES`` times), so no unit is ever handed out twice. The
consumer's own generation, which the caller names from Placement's
microversion 1.28, is checked and bumped in the same transaction.

What is written here is honoured by every claim (a claim counts every
allocation of a provider) and is never taken back by the claims'
reconciliation, which releases only consumers without a record here.
"""

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import placement_providers

RETRIES = 10

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__
_CONSUMER = scheduler_models.Consumer.__table__
# Left out of a write: its consumer's generation is not checked.
UNCHECKED = 'unchecked'


class _Raced(Exception):
    """A provider or the consumer changed while the write read them."""


def _now():
    return obj_base.naive_utc(obj_base.utcnow())


def reshape(url, inventories, consumers, stamp=None):
    """Placement's reshaper: make ``inventories`` (``{provider uuid:
    {'generation': g, 'inventories': {class: fields}}}``) the whole
    inventory of each provider named, and ``consumers`` (as
    :func:`write` takes them) what each consumer named holds, in one
    transaction: what moves from a provider to its new child is never
    seen half moved, and an inventory taken away is in use only if what
    is left after the move still holds it."""
    for _ in range(RETRIES):
        try:
            return _write(url, consumers, stamp, inventories)
        except _Raced:
            continue
    raise exception.AllocationsRaced()


def write(url, consumers, stamp=None):
    """Make ``consumers`` (``{consumer uuid: {'allocations': {provider
    uuid: {class: amount}}, 'project_id', 'user_id', 'consumer_type',
    'generation'}}``, ``generation`` the consumer's as the caller read
    it, None for a new one, absent when not checked) hold exactly those
    allocations, every consumer or none. Empty allocations delete the
    consumer's. Returns the uuids of the providers whose allocations
    changed."""
    for _ in range(RETRIES):
        try:
            return _write(url, consumers, stamp)
        except _Raced:
            continue
    raise exception.AllocationsRaced()


def _providers(conn, uuids):
    rows = {}
    uuids = sorted(uuids)
    for start in range(0, len(uuids), 500):
        for row in conn.execute(sa.select(
                _RP.c.id, _RP.c.uuid, _RP.c.generation).where(
                _RP.c.uuid.in_(uuids[start:start + 500]))):
            rows[row.uuid] = row
    return rows


def _check_consumer(row, spec, uuid):
    if 'generation' not in spec:
        return
    sent = spec['generation']
    have = row.generation if row is not None else None
    if sent != have:
        # Placement's words: what it has, then what it was sent.
        raise exception.ConsumerGenerationConflict(
            expected='null' if have is None else have,
            got='null' if sent is None else sent, uuid=uuid)


def _check_amount(conn, provider, rc, amount, consumers):
    inventory = conn.execute(sa.select(
        _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
        _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size).where(
        _INV.c.resource_provider_id == provider.id,
        _INV.c.resource_class == rc)).first()
    if inventory is None:
        raise exception.AllocationNoInventory(rc=rc, uuid=provider.uuid)
    max_unit = inventory.max_unit
    if (amount < inventory.min_unit or
            (max_unit is not None and amount > max_unit) or
            amount % inventory.step_size):
        raise exception.AllocationConstraintsViolated(rc=rc,
                                                      uuid=provider.uuid)
    used = conn.execute(sa.select(sa.func.coalesce(
        sa.func.sum(_ALLOC.c.used), 0)).where(
        _ALLOC.c.resource_provider_id == provider.id,
        _ALLOC.c.resource_class == rc,
        _ALLOC.c.consumer_id.not_in(consumers))).scalar()
    capacity = claims.capacity(inventory.total, inventory.reserved,
                               inventory.allocation_ratio)
    if int(used) + amount > capacity:
        raise exception.AllocationCapacityExceeded(rc=rc,
                                                   uuid=provider.uuid)


def _write(url, consumers, stamp, inventories=None):
    inventories = inventories or {}
    named = set()
    for spec in consumers.values():
        named.update(spec['allocations'])
    touched = {}
    with engines.writer(url) as session:
        conn = session.connection()
        providers = _providers(conn, named | set(inventories))
        for uuid in sorted(set(inventories) - set(providers)):
            raise exception.ResourceProviderNotFound(uuid=uuid)
        # As Placement counts a reshape: one bump for the inventory
        # written, one for the allocations.
        bumps = dict.fromkeys(inventories, 1)
        for uuid, wanted in sorted(inventories.items()):
            if providers[uuid].generation != wanted['generation']:
                raise exception.ReshapeGenerationConflict(
                    uuid=uuid, actual=providers[uuid].generation,
                    given=wanted['generation'])
            touched[uuid] = (providers[uuid].id, providers[uuid].generation)
        for uuid in sorted(named - set(providers)):
            raise exception.AllocationProviderNotFound(uuid=uuid)
        placement_providers.known_classes(conn, {
            rc for spec in consumers.values()
            for resources in spec['allocations'].values()
            for rc in resources})
        uuids = sorted(consumers)
        rows = {row.uuid: row for row in conn.execute(sa.select(
            _CONSUMER).where(_CONSUMER.c.uuid.in_(uuids)))}
        for consumer, rp_id, rp_uuid, rp_generation in conn.execute(
                sa.select(_ALLOC.c.consumer_id, _RP.c.id, _RP.c.uuid,
                          _RP.c.generation).join(
                    _RP, _RP.c.id == _ALLOC.c.resource_provider_id).where(
                    _ALLOC.c.consumer_id.in_(uuids))):
            touched[rp_uuid] = (rp_id, rp_generation)
        for uuid in uuids:
            _check_consumer(rows.get(uuid), consumers[uuid], uuid)
        if inventories:
            conn.execute(_ALLOC.delete().where(
                _ALLOC.c.consumer_id.in_(uuids)))
            for uuid, wanted in sorted(inventories.items()):
                placement_providers.write_inventories(
                    conn, providers[uuid], wanted['inventories'])
        for uuid in uuids:
            for rp_uuid, resources in sorted(
                    consumers[uuid]['allocations'].items()):
                provider = providers[rp_uuid]
                touched[rp_uuid] = (provider.id, provider.generation)
                for rc, amount in sorted(resources.items()):
                    _check_amount(conn, provider, rc, amount, uuids)
        now = _now()
        conn.execute(_ALLOC.delete().where(_ALLOC.c.consumer_id.in_(uuids)))
        inserts = [
            {'resource_provider_id': providers[rp_uuid].id,
             'consumer_id': uuid, 'resource_class': rc, 'used': amount,
             'created_at': now}
            for uuid in uuids
            for rp_uuid, resources in consumers[uuid]['allocations'].items()
            for rc, amount in resources.items()]
        if inserts:
            conn.execute(_ALLOC.insert(), inserts)
        # As Placement counts them: one bump of a provider per consumer
        # given an allocation of it. A provider that only gave back is
        # not bumped (nothing can be taken twice from it) but read again.
        for uuid in uuids:
            for rp_uuid in consumers[uuid]['allocations']:
                bumps[rp_uuid] = bumps.get(rp_uuid, 0) + 1
        for rp_uuid, (rp_id, generation) in sorted(touched.items()):
            where = [_RP.c.id == rp_id]
            values = {'changed_by': claims.CHANGED_BY, 'changed_at': now}
            if bumps.get(rp_uuid):
                where.append(_RP.c.generation == generation)
                values['generation'] = generation + bumps[rp_uuid]
            result = conn.execute(sa.update(_RP).where(*where).values(
                **values), stamp or claims.NO_STAMP)
            if result.rowcount != 1:
                raise _Raced()
        for uuid in uuids:
            _save_consumer(conn, rows.get(uuid), uuid, consumers[uuid], now)
    return sorted(touched)


def _save_consumer(conn, row, uuid, spec, now):
    if not spec['allocations']:
        if row is not None:
            conn.execute(_CONSUMER.delete().where(_CONSUMER.c.id == row.id))
        return
    values = {'project_id': spec['project_id'], 'user_id': spec['user_id'],
              'consumer_type': spec.get('consumer_type') or (
                  row.consumer_type if row is not None else None)}
    if row is None:
        try:
            with conn.begin_nested():
                conn.execute(_CONSUMER.insert(), dict(
                    values, uuid=uuid, generation=1, created_at=now))
        except sa.exc.IntegrityError:
            raise _Raced()
        return
    result = conn.execute(sa.update(_CONSUMER).where(
        _CONSUMER.c.id == row.id,
        _CONSUMER.c.generation == row.generation).values(
        generation=row.generation + 1, updated_at=now, **values))
    if result.rowcount != 1:
        raise _Raced()


def delete(url, consumer_uuid, stamp=None):
    """Delete every allocation of ``consumer_uuid`` and its record: the
    uuids of the providers it held (``ConsumerAllocationsNotFound`` if
    none)."""
    return _delete(url, consumer_uuid, stamp)


def _delete(url, consumer_uuid, stamp):
    with engines.writer(url) as session:
        conn = session.connection()
        rows = conn.execute(sa.select(_RP.c.id, _RP.c.uuid).join(
            _ALLOC, _ALLOC.c.resource_provider_id == _RP.c.id).where(
            _ALLOC.c.consumer_id == consumer_uuid).distinct()).all()
        if not rows:
            raise exception.ConsumerAllocationsNotFound(uuid=consumer_uuid)
        conn.execute(_ALLOC.delete().where(
            _ALLOC.c.consumer_id == consumer_uuid))
        conn.execute(_CONSUMER.delete().where(
            _CONSUMER.c.uuid == consumer_uuid))
        # What is given back makes no claim take too much: as in
        # Placement, the generations stay, and every scheduler reads the
        # providers again.
        conn.execute(sa.update(_RP).where(
            _RP.c.id.in_([row.id for row in rows])).values(
            changed_by=claims.CHANGED_BY, changed_at=_now()),
            stamp or claims.NO_STAMP)
    return sorted(row.uuid for row in rows)


def consumer(url, consumer_uuid):
    """``{'project_id', 'user_id', 'consumer_type', 'generation'}`` of
    a consumer written through the Placement API, or None."""
    with engines.reader(url) as session:
        row = session.execute(sa.select(
            _CONSUMER.c.project_id, _CONSUMER.c.user_id,
            _CONSUMER.c.consumer_type, _CONSUMER.c.generation).where(
            _CONSUMER.c.uuid == consumer_uuid)).first()
    return dict(row._mapping) if row is not None else None


def of_project(url, project_id, user_id=None):
    """``{consumer type: [uuid, ...]}`` of the consumers written through
    the Placement API for a project (and user); those of no type under
    ``unknown``."""
    query = sa.select(_CONSUMER.c.uuid, _CONSUMER.c.consumer_type).where(
        _CONSUMER.c.project_id == project_id)
    if user_id is not None:
        query = query.where(_CONSUMER.c.user_id == user_id)
    found = {}
    with engines.reader(url) as session:
        for uuid, kind in session.execute(query):
            found.setdefault(kind or 'unknown', []).append(uuid)
    return found
