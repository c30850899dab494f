"""What the Placement API writes of resource providers (scheduler RPC
1.11): providers themselves (made, renamed, re-parented, deleted), their
inventories and their aggregates.

A provider made here has no compute host: it is a provider other
services write to (a sharing storage pool, a bandwidth provider, a
device pool), or a child in the tree of a compute node. The scheduler
places servers on compute nodes only (``host_reads.HOSTS``), so what is
made here changes no placement of a server until it is part of a compute
node's own provider.

Every write of a provider is guarded by its generation, as a claim is
(``placement_writes.bump``): one that read an older generation answers
``ResourceProviderConcurrentUpdate`` and writes nothing. The write also
marks the provider changed for every scheduler, whose next reload reads
it again.
"""

import uuid as uuidlib

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.objects import base as obj_base
from scheduler_split import provider_model
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import placement_writes

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__
_RPT = scheduler_models.ResourceProviderTrait.__table__
_RPA = scheduler_models.ResourceProviderAggregate.__table__
_RC = scheduler_models.ResourceClass.__table__

# Placement's largest integer, what max_unit is when left out.
MAX_INT = 0x7FFFFFFF
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio')
# Leave the parent as it is (``update_provider``).
UNCHANGED = object()


def _now():
    return obj_base.naive_utc(obj_base.utcnow())


def _row(conn, uuid):
    row = conn.execute(sa.select(
        _RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation, _RP.c.host,
        _RP.c.parent_provider_id, _RP.c.root_provider_id).where(
        _RP.c.uuid == uuid)).first()
    if row is None:
        raise exception.ResourceProviderNotFound(uuid=uuid)
    return row


def _at(row, generation):
    """The generation a write of the provider ``row`` names (None: the
    one it has); ``ResourceProviderConcurrentUpdate`` if it changed."""
    seen = row.generation if generation is None else generation
    if row.generation != seen:
        raise exception.ResourceProviderConcurrentUpdate(
            uuid=row.uuid, generation=seen)
    return seen


def _root_id(row):
    return row.root_provider_id or row.id


def _name_taken(conn, name, but=None):
    query = sa.select(_RP.c.id).where(_RP.c.name == name)
    if but is not None:
        query = query.where(_RP.c.id != but)
    return conn.execute(query.limit(1)).first() is not None


def create_provider(url, name, uuid=None, parent_uuid=None):
    """Make the provider ``name`` (of ``uuid``, else a new one), a root
    or the child of ``parent_uuid``: its uuid."""
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    with engines.writer(url) as session:
        conn = session.connection()
        taken = []
        if conn.execute(sa.select(_RP.c.id).where(
                _RP.c.uuid == uuid)).first() is not None:
            taken.append('uuid: %s' % uuid)
        if _name_taken(conn, name):
            taken.append('name: %s' % name)
        if taken:
            raise exception.ResourceProviderExists(what=', '.join(taken))
        parent_id = root_id = None
        if parent_uuid is not None:
            if parent_uuid == uuid:
                raise exception.ResourceProviderInvalid(
                    detail='Unable to create resource provider "%s", %s: '
                    'parent provider UUID cannot be same as UUID. Please '
                    'set parent provider UUID to None if there is no '
                    'parent.' % (name, uuid))
            try:
                parent = _row(conn, parent_uuid)
            except exception.ResourceProviderNotFound:
                raise exception.ResourceProviderInvalid(
                    detail='Unable to create resource provider "%s", %s: '
                    'parent provider UUID does not exist.' % (name, uuid))
            parent_id, root_id = parent.id, _root_id(parent)
        now = _now()
        conn.execute(_RP.insert(), {
            'uuid': uuid, 'name': name, 'host': None, 'generation': 0,
            'parent_provider_id': parent_id, 'root_provider_id': root_id,
            'created_at': now, 'updated_at': now, 'changed_at': now})
    return uuid


def _subtree(conn, provider_id):
    """The ids of the provider and every provider below it."""
    found = [provider_id]
    level = [provider_id]
    while level:
        level = list(conn.execute(sa.select(_RP.c.id).where(
            _RP.c.parent_provider_id.in_(level))).scalars())
        found += level
    return found


def update_provider(url, uuid, name, parent_uuid=UNCHANGED,
                    allow_reparenting=False, stamp=None):
    """Rename the provider ``uuid`` and, unless ``UNCHANGED``, give it
    the parent ``parent_uuid`` (None: make it a root). Moving a child to
    another parent, or making it a root, needs ``allow_reparenting``
    (Placement's 1.37); a provider never goes below itself."""
    def refused(reason):
        return exception.ResourceProviderInvalid(
            detail='Unable to save resource provider %s: %s' % (uuid,
                                                                reason))
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        if name != row.name and _name_taken(conn, name, but=row.id):
            raise exception.ResourceProviderExists(what=name)
        values = {'name': name}
        new_root = None
        if parent_uuid is not UNCHANGED:
            if parent_uuid is not None and row.host is not None:
                # Servers are placed on roots with a host: a compute node
                # moved under another provider would stop taking them.
                raise refused('a compute node is the root of its tree.')
            if parent_uuid is not None:
                try:
                    parent = _row(conn, parent_uuid)
                except exception.ResourceProviderNotFound:
                    raise refused('parent provider UUID does not exist.')
                if (row.parent_provider_id is not None and
                        row.parent_provider_id != parent.id and
                        not allow_reparenting):
                    raise refused('re-parenting a provider is not '
                                  'currently allowed.')
                if parent.id != row.parent_provider_id:
                    subtree = _subtree(conn, row.id)
                    if parent.id in subtree:
                        raise refused('creating loop in the provider tree '
                                      'is not allowed.')
                    values['parent_provider_id'] = parent.id
                    new_root = _root_id(parent)
            elif row.parent_provider_id is not None:
                if not allow_reparenting:
                    raise refused('un-parenting a provider is not '
                                  'currently allowed.')
                values['parent_provider_id'] = None
                new_root = row.id
        # Its name and tree are no part of what claims guard: as in
        # Placement, the generation stays; every scheduler reads the
        # provider again.
        now = _now()
        conn.execute(sa.update(_RP).where(_RP.c.id == row.id).values(
            changed_by=claims.CHANGED_BY, changed_at=now, updated_at=now,
            **values), stamp or claims.NO_STAMP)
        if new_root is not None:
            ids = _subtree(conn, row.id)
            conn.execute(sa.update(_RP).where(_RP.c.id.in_(ids)).values(
                root_provider_id=new_root))
            # A root is its own root: NULL, as every root made by a
            # report has it.
            conn.execute(sa.update(_RP).where(
                _RP.c.id == new_root, _RP.c.parent_provider_id.is_(None)
            ).values(root_provider_id=None))


def delete_provider(url, uuid):
    """Delete the provider ``uuid``, which no consumer holds anything of
    and which has no child; its inventories, traits and aggregates go
    with it."""
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        if conn.execute(sa.select(_RP.c.id).where(
                _RP.c.parent_provider_id == row.id).limit(1)).first():
            raise exception.ResourceProviderHasChildren(uuid=uuid)
        if conn.execute(sa.select(_ALLOC.c.id).where(
                _ALLOC.c.resource_provider_id == row.id).limit(1)).first():
            raise exception.ResourceProviderInUse(uuid=uuid)
        delete_rows(conn, [row.id])


def delete_rows(conn, ids):
    """Delete the providers ``ids`` and what hangs on them but
    allocations (the caller made sure there are none)."""
    for table in (_INV, _RPT, _RPA):
        conn.execute(table.delete().where(
            table.c.resource_provider_id.in_(ids)))
    conn.execute(_RP.delete().where(_RP.c.id.in_(ids)))


# --- inventories ------------------------------------------------------------

def known_classes(conn, classes):
    """``InventoryClassUnknown`` for a class of ``classes`` that is
    neither standard nor a custom one made (or that an inventory has)."""
    custom = [name for name in classes
              if name not in provider_model.STANDARD_RESOURCE_CLASSES]
    if not custom:
        return
    made = set(conn.execute(sa.select(_RC.c.name).where(
        _RC.c.name.in_(custom))).scalars())
    made |= set(conn.execute(sa.select(_INV.c.resource_class).where(
        _INV.c.resource_class.in_(custom)).distinct()).scalars())
    missing = sorted(set(custom) - made)
    if missing:
        raise exception.InventoryClassUnknown(name=missing[0])


def _held(conn, provider_id, classes):
    """The classes of ``classes`` some consumer holds of the provider."""
    if not classes:
        return []
    return class_order(conn.execute(sa.select(_ALLOC.c.resource_class).where(
        _ALLOC.c.resource_provider_id == provider_id,
        _ALLOC.c.resource_class.in_(sorted(classes)))).scalars())


def class_order(names):
    """``names`` in Placement's order: the standard classes as
    os-resource-classes lists them, then the custom ones by name."""
    standard = provider_model.STANDARD_RESOURCE_CLASSES
    return sorted(set(names), key=lambda name: (
        (0, standard.index(name), '') if name in standard else
        (1, 0, name)))


def _record(values):
    record = dict(provider_model.INVENTORY_DEFAULTS)
    record['max_unit'] = MAX_INT
    record.update({key: value for key, value in values.items()
                   if key in INVENTORY_FIELDS})
    return record


def write_inventories(conn, row, inventories, replace=True):
    """Write ``{class: fields}`` on the provider ``row``; with
    ``replace``, drop the classes it leaves out."""
    current = set(conn.execute(sa.select(_INV.c.resource_class).where(
        _INV.c.resource_provider_id == row.id)).scalars())
    known_classes(conn, inventories)
    if replace:
        gone = current - set(inventories)
        held = _held(conn, row.id, gone)
        if held:
            raise exception.InventoryInUse(classes=', '.join(held),
                                           uuid=row.uuid)
        if gone:
            conn.execute(_INV.delete().where(
                _INV.c.resource_provider_id == row.id,
                _INV.c.resource_class.in_(sorted(gone))))
    now = _now()
    for name, values in sorted(inventories.items()):
        record = _record(values)
        if name in current:
            conn.execute(sa.update(_INV).where(
                _INV.c.resource_provider_id == row.id,
                _INV.c.resource_class == name).values(updated_at=now,
                                                      **record))
        else:
            conn.execute(_INV.insert(), dict(
                record, resource_provider_id=row.id, resource_class=name,
                created_at=now))


def set_inventories(url, uuid, inventories, generation, stamp=None):
    """Make ``inventories`` (``{class: fields}``, None for every one:
    delete them all) the provider's whole inventory, if it is still at
    ``generation`` (None: whatever it is). The new generation."""
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        seen = _at(row, generation)
        write_inventories(conn, row, inventories or {}, replace=True)
        return placement_writes.bump(conn, uuid, row.id, seen, stamp)


def put_inventory(url, uuid, resource_class, fields, generation,
                  create=False, stamp=None):
    """Write one class of the provider's inventory: a new one with
    ``create`` (POST; ``InventoryExists`` if it is there), else one that
    is there (PUT; ``InventoryNotFound`` otherwise). The new
    generation."""
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        seen = _at(row, generation)
        there = conn.execute(sa.select(_INV.c.id).where(
            _INV.c.resource_provider_id == row.id,
            _INV.c.resource_class == resource_class)).first() is not None
        if create and there:
            raise exception.InventoryExists(name=resource_class, uuid=uuid)
        if not create and not there:
            raise exception.InventoryNotFound(name=resource_class,
                                              uuid=uuid)
        write_inventories(conn, row, {resource_class: fields},
                          replace=False)
        return placement_writes.bump(conn, uuid, row.id, seen, stamp)


def delete_inventory(url, uuid, resource_class, stamp=None):
    """Delete one class of the provider's inventory, which no consumer
    may hold."""
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        if _held(conn, row.id, [resource_class]):
            raise exception.InventoryInUse(classes=resource_class,
                                           uuid=uuid)
        if conn.execute(_INV.delete().where(
                _INV.c.resource_provider_id == row.id,
                _INV.c.resource_class == resource_class)).rowcount != 1:
            raise exception.InventoryNotFound(name=resource_class,
                                              uuid=uuid)
        return placement_writes.bump(conn, uuid, row.id, row.generation,
                                     stamp)


# --- aggregates -------------------------------------------------------------

def set_aggregates(url, uuid, aggregates, generation, stamp=None):
    """Make ``aggregates`` the aggregates the provider was put in through
    the Placement API, if it is still at ``generation`` (None: whatever
    it is): the new generation. Its host's host aggregates stay; they
    are written through os-aggregates."""
    aggregates = {str(uuidlib.UUID(value)) for value in aggregates}
    with engines.writer(url) as session:
        conn = session.connection()
        row = _row(conn, uuid)
        seen = _at(row, generation)
        have = set(conn.execute(sa.select(_RPA.c.aggregate_uuid).where(
            _RPA.c.resource_provider_id == row.id)).scalars())
        gone = have - aggregates
        if gone:
            conn.execute(_RPA.delete().where(
                _RPA.c.resource_provider_id == row.id,
                _RPA.c.aggregate_uuid.in_(sorted(gone))))
        new = sorted(aggregates - have)
        if new:
            now = _now()
            conn.execute(_RPA.insert(), [
                {'resource_provider_id': row.id, 'aggregate_uuid': value,
                 'created_at': now} for value in new])
        return placement_writes.bump(conn, uuid, row.id, seen, stamp)
