"""Traits in the scheduler database: the ``traits`` table, recorded on
first use, and which providers have which (``resource_provider_traits``).
"""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler_split.db import scheduler_models
from scheduler_split.objects import base as obj_base

_TRAIT = scheduler_models.Trait.__table__
_RPT = scheduler_models.ResourceProviderTrait.__table__
PROVIDER_TRAITS_TABLE = _RPT
_CHUNK = 500

# (provider id, trait name, reported) of some providers.
PROVIDER_TRAITS = sa.select(
    _RPT.c.resource_provider_id, _TRAIT.c.name, _RPT.c.reported).join(
    _TRAIT, _TRAIT.c.id == _RPT.c.trait_id)


def _chunks(values):
    values = list(values)
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]


def ids_of(conn, names, create=True):
    """``{name: id}`` of the traits ``names``, recorded first where
    ``create`` and not yet known. A concurrent writer recording the same
    one is no error."""
    ids = {}
    for chunk in _chunks(sorted(names)):
        ids.update(conn.execute(sa.select(_TRAIT.c.name, _TRAIT.c.id).where(
            _TRAIT.c.name.in_(chunk))).all())
    missing = sorted(set(names) - set(ids))
    if create and missing:
        now = obj_base.naive_utc(obj_base.utcnow())
        for name in missing:
            try:
                with conn.begin_nested():
                    conn.execute(_TRAIT.insert(),
                                 {'name': name, 'created_at': now})
            except sa_exc.IntegrityError:
                pass
        ids.update(conn.execute(sa.select(_TRAIT.c.name, _TRAIT.c.id).where(
            _TRAIT.c.name.in_(missing))).all())
    return ids


def of_providers(conn, condition):
    """``{provider id: {name: reported}}`` of the providers a condition
    on a ``resource_provider_id`` column selects."""
    found = {}
    for rp_id, name, reported in conn.execute(PROVIDER_TRAITS.where(
            condition(_RPT.c.resource_provider_id))):
        found.setdefault(rp_id, {})[name] = bool(reported)
    return found


def store_reported(conn, reported):
    """Make ``reported`` (``{provider id: {trait, ...}}``) the traits
    each provider's compute reports: add those it has not, drop the
    reported ones it no longer names. Those an operator set stay,
    whether the compute names them or not. Returns the ids of the
    providers whose traits changed."""
    if not reported:
        return set()
    current = {}
    for chunk in _chunks(sorted(reported)):
        current.update(of_providers(conn, lambda column: column.in_(chunk)))
    ids = ids_of(conn, set().union(*reported.values()))
    now = obj_base.naive_utc(obj_base.utcnow())
    inserts, deletes = [], []
    for rp_id, names in reported.items():
        have = current.get(rp_id, {})
        inserts += [
            {'resource_provider_id': rp_id, 'trait_id': ids[name],
             'reported': True, 'created_at': now}
            for name in sorted(names - set(have))]
        deletes += [(rp_id, name) for name, was_reported in have.items()
                    if was_reported and name not in names]
    if inserts:
        conn.execute(_RPT.insert(), inserts)
    if deletes:
        gone = ids_of(conn, {name for _, name in deletes}, create=False)
        for rp_id, name in deletes:
            conn.execute(_RPT.delete().where(
                _RPT.c.resource_provider_id == rp_id,
                _RPT.c.trait_id == gone[name]))
    return {row['resource_provider_id'] for row in inserts} | {
        rp_id for rp_id, _ in deletes}
