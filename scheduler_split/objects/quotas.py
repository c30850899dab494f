"""The limits an operator sets (``/os-quota-sets``,
``/os-quota-class-sets``), in the API database.

Reading limits and counting usage is ``scheduler_split.quota``'s; here a
project's limits are written in the project's quota turn, so that a limit
checked against what the project uses cannot miss a boot counted at the
same time.
"""

import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import quota

CONF = conf.CONF


def _api_db():
    return CONF.api_database.connection


def _set(session, model, owner, resource, limit):
    """Insert or update the limit of ``resource`` in the row of
    ``owner`` (a ``{column: value}`` naming the project or class)."""
    [(column, value)] = owner.items()
    row = session.scalars(sa.select(model).where(
        getattr(model, column) == value,
        model.resource == resource)).first()
    if row is None:
        session.add(model(resource=resource, hard_limit=limit, **owner))
    else:
        row.hard_limit = limit


def update_project_limits(ctx, project_id, limits, force=False):
    """Set the project's ``limits`` (resource -> limit). Unless
    ``force``, a limit below what the project uses now (its key pairs
    counted for ``ctx``'s user) is refused with ``QuotaBelowUsage`` and
    nothing is written. Returns the project's limits after."""
    with engines.writer(_api_db()) as session:
        quota.lock_project(session, project_id)
        used = quota.usage(project_id, user_id=ctx.user_id, session=session)
        for resource, limit in limits.items():
            minimum = used.get(resource, 0)
            if not force and limit != -1 and limit < minimum:
                raise exception.QuotaBelowUsage(limit=limit,
                                                resource=resource,
                                                used=minimum)
            _set(session, api_models.Quota, {'project_id': project_id},
                 resource, limit)
        session.flush()
        return quota.limits(project_id, session)


def destroy_project_limits(ctx, project_id):
    """The project goes back to its class's limits."""
    with engines.writer(_api_db()) as session:
        session.execute(sa.delete(api_models.Quota).where(
            api_models.Quota.project_id == project_id))


def update_class_limits(ctx, class_name, limits):
    """Set the quota class's ``limits`` (resource -> limit)."""
    with engines.writer(_api_db()) as session:
        for resource, limit in limits.items():
            _set(session, api_models.QuotaClass, {'class_name': class_name},
                 resource, limit)
