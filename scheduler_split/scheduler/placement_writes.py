"""What the Placement API writes into the scheduler database, through
the scheduler (scheduler RPC 1.10): the trait catalog, the traits of a
provider and the custom resource classes.

A provider's write is guarded by its generation, as every claim is: it
names the generation it read, and the write bumps it with ``... WHERE
generation = :seen``; a provider another writer changed meanwhile (a
claim, a report, another operator) answers
``ResourceProviderConcurrentUpdate`` and nothing is written. The traits
an operator sets stay across the compute's reports, which replace only
the traits the compute itself reports (:func:`traits.store_reported`).
"""

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.objects import base as obj_base
from scheduler_split import provider_model
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import traits as traits_mod

_RP = scheduler_models.ResourceProvider.__table__
_TRAIT = scheduler_models.Trait.__table__
_RPT = scheduler_models.ResourceProviderTrait.__table__
_RC = scheduler_models.ResourceClass.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__


def list_traits(url, names=None, prefix=None, associated=None):
    """The names of the traits: every standard one and each custom one
    made, narrowed to ``names``, to those starting with ``prefix``, and
    to those some provider has (``associated`` True) or none has
    (False)."""
    with engines.reader(url) as session:
        known = set(session.scalars(sa.select(_TRAIT.c.name)))
        used = set(session.scalars(sa.select(_TRAIT.c.name).join(
            _RPT, _RPT.c.trait_id == _TRAIT.c.id).distinct()))
    found = known | provider_model.STANDARD_TRAITS
    if names is not None:
        found &= set(names)
    if prefix:
        found = {name for name in found if name.startswith(prefix)}
    if associated is True:
        found &= used
    elif associated is False:
        found -= used
    return sorted(found)


def create_trait(url, name):
    """Make the custom trait ``name``: True if it is new, False if it
    was there already (a standard trait always is)."""
    provider_model.check_trait(name)
    if not provider_model.is_custom(name):
        return False
    with engines.writer(url) as session:
        conn = session.connection()
        before = traits_mod.ids_of(conn, [name], create=False)
        if before:
            return False
        traits_mod.ids_of(conn, [name])
    return True


def delete_trait(url, name):
    """Remove the custom trait ``name``, which no provider may have."""
    if name in provider_model.STANDARD_TRAITS:
        raise exception.TraitCannotDeleteStandard(name=name)
    with engines.writer(url) as session:
        conn = session.connection()
        trait_id = conn.execute(sa.select(_TRAIT.c.id).where(
            _TRAIT.c.name == name)).scalar()
        if trait_id is None:
            raise exception.TraitNotFound(names=name)
        if conn.execute(sa.select(_RPT.c.trait_id).where(
                _RPT.c.trait_id == trait_id).limit(1)).first():
            raise exception.TraitInUse(name=name)
        conn.execute(_TRAIT.delete().where(_TRAIT.c.id == trait_id))


def _provider(conn, uuid):
    row = conn.execute(sa.select(_RP.c.id, _RP.c.generation).where(
        _RP.c.uuid == uuid)).first()
    if row is None:
        raise exception.ResourceProviderNotFound(uuid=uuid)
    return row


def bump(conn, uuid, provider_id, seen, stamp=None):
    """The guarded generation bump of a provider's write: the new
    generation, or ``ResourceProviderConcurrentUpdate``."""
    now = obj_base.naive_utc(obj_base.utcnow())
    result = conn.execute(sa.update(_RP).where(
        _RP.c.id == provider_id, _RP.c.generation == seen).values(
        generation=seen + 1, changed_by=claims.CHANGED_BY, changed_at=now,
        updated_at=now), stamp or claims.NO_STAMP)
    if result.rowcount != 1:
        raise exception.ResourceProviderConcurrentUpdate(uuid=uuid,
                                                         generation=seen)
    return seen + 1


def set_provider_traits(url, uuid, names, generation, stamp):
    """Make ``names`` the traits of the provider ``uuid``, read at
    ``generation`` (None: whatever it is now, as a DELETE of every
    trait of a provider is): ``(traits, new generation)``. Every name
    must be a trait that exists (a standard one, or a custom one made);
    those the compute reports and the provider keeps stay its
    compute's."""
    names = set(names)
    with engines.writer(url) as session:
        conn = session.connection()
        provider = _provider(conn, uuid)
        if generation is None:
            generation = provider.generation
        if provider.generation != generation:
            raise exception.ResourceProviderConcurrentUpdate(
                uuid=uuid, generation=generation)
        known = traits_mod.ids_of(conn, names, create=False)
        missing = sorted(name for name in names - set(known)
                         if name not in provider_model.STANDARD_TRAITS)
        if missing:
            raise exception.TraitsUnknown(names=', '.join(missing))
        ids = traits_mod.ids_of(conn, names)
        have = traits_mod.of_providers(
            conn, lambda column: column == provider.id).get(provider.id, {})
        gone = [name for name in have if name not in names]
        if gone:
            gone_ids = list(traits_mod.ids_of(conn, gone,
                                              create=False).values())
            conn.execute(_RPT.delete().where(
                _RPT.c.resource_provider_id == provider.id,
                _RPT.c.trait_id.in_(gone_ids)))
        new = sorted(names - set(have))
        if new:
            now = obj_base.naive_utc(obj_base.utcnow())
            conn.execute(_RPT.insert(), [
                {'resource_provider_id': provider.id, 'trait_id': ids[name],
                 'reported': False, 'created_at': now} for name in new])
        generation = bump(conn, uuid, provider.id, generation, stamp)
    return sorted(names), generation


def list_resource_classes(url):
    """Every standard resource class, then the custom ones made, by
    name, and those a provider's inventory has (a compute reported)."""
    with engines.reader(url) as session:
        custom = set(session.scalars(sa.select(_RC.c.name)))
        custom |= set(session.scalars(sa.select(
            _INV.c.resource_class).distinct()))
    custom -= set(provider_model.STANDARD_RESOURCE_CLASSES)
    return list(provider_model.STANDARD_RESOURCE_CLASSES) + sorted(custom)


def create_resource_class(url, name, exists_ok=True):
    """Make the custom class ``name``: True if it is new. Unless
    ``exists_ok``, one that exists is ``ResourceClassExists``."""
    provider_model.check_resource_class(name)
    if name in list_resource_classes(url):
        if exists_ok:
            return False
        raise exception.ResourceClassExists(name=name)
    now = obj_base.naive_utc(obj_base.utcnow())
    try:
        with engines.writer(url) as session:
            session.connection().execute(_RC.insert(), {
                'name': name, 'created_at': now})
    except sa.exc.IntegrityError:
        if not exists_ok:
            raise exception.ResourceClassExists(name=name)
        return False
    return True


def delete_resource_class(url, name):
    """Remove the custom class ``name``, which no inventory and no
    allocation may use."""
    if name in provider_model.STANDARD_RESOURCE_CLASSES:
        raise exception.ResourceClassCannotDeleteStandard(name=name)
    with engines.writer(url) as session:
        conn = session.connection()
        for table in (_INV, _ALLOC):
            if conn.execute(sa.select(table.c.id).where(
                    table.c.resource_class == name).limit(1)).first():
                raise exception.ResourceClassInUse(name=name)
        if conn.execute(_RC.delete().where(
                _RC.c.name == name)).rowcount != 1:
            raise exception.ResourceClassNotFound(name=name)


def rename_resource_class(url, name, new_name, stamp=None):
    """Rename the custom class ``name`` (Placement's PUT before 1.7),
    in the inventories and allocations that use it too; every provider
    that has it is read again by every scheduler."""
    provider_model.check_resource_class(new_name)
    if name in provider_model.STANDARD_RESOURCE_CLASSES:
        raise exception.ResourceClassCannotUpdateStandard(name=name)
    if name not in list_resource_classes(url):
        raise exception.ResourceClassNotFound(name=name)
    if new_name == name:
        return
    if new_name in list_resource_classes(url):
        raise exception.ResourceClassExists(name=new_name)
    now = obj_base.naive_utc(obj_base.utcnow())
    with engines.writer(url) as session:
        conn = session.connection()
        if conn.execute(sa.update(_RC).where(_RC.c.name == name).values(
                name=new_name, updated_at=now)).rowcount != 1:
            conn.execute(_RC.insert(), {'name': new_name, 'created_at': now})
        ids = set(conn.execute(sa.select(_INV.c.resource_provider_id).where(
            _INV.c.resource_class == name)).scalars())
        for table in (_INV, _ALLOC):
            conn.execute(sa.update(table).where(
                table.c.resource_class == name).values(
                resource_class=new_name))
        if ids:
            conn.execute(sa.update(_RP).where(
                _RP.c.id.in_(sorted(ids))).values(
                changed_by=claims.CHANGED_BY, changed_at=now),
                stamp or claims.NO_STAMP)
