"""What the cell conductor's periodic sweeps look for among the
instances of the targeted cell: builds nothing will finish, tasks whose
message was lost, soft-deleted servers to reclaim, shelved servers to
offload, and the uuids of the instances in some vm states. Each read is
one query of the cell database, the instances without their faults or
tags.
"""

import datetime

import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.objects import base
from scheduler_split.objects import instance as instance_obj
from scheduler_split import servicegroup

# Why get_unhandled_builds() found a build.
LOST_NO_HOST = 'no-host'
LOST_HOST_DOWN = 'host-down'

_PLANS = cell_models.BuildPlan.__table__


def get_unhandled_builds(ctx, seconds, compute_binary, down_seconds):
    """Builds nothing will finish, as ``(instance, why)`` pairs.

    ``why`` is :data:`LOST_NO_HOST`: a build without a host (waiting
    for a compute, or between two hosts of a reschedule) that nothing
    touched for ``seconds``; or :data:`LOST_HOST_DOWN`: a build on a
    host whose ``compute_binary`` service has not been seen for
    ``down_seconds`` (or has no record), and that nothing touched
    for ``seconds`` either (a heartbeat late under load does not end
    a build that is moving). A delete in progress is the delete's to
    finish.
    """
    now = base.naive_utc(base.utcnow())
    touched = sa.func.coalesce(cell_models.Instance.updated_at,
                               cell_models.Instance.created_at)
    alive = sa.select(cell_models.Service.host).where(
        cell_models.Service.binary == compute_binary,
        servicegroup.recent(cell_models.Service.last_seen_up,
                            servicegroup.up_since(now, down_seconds)))
    live_build = sa.and_(
        cell_models.Instance.deleted.is_(False),
        cell_models.Instance.vm_state == instance_obj.BUILDING,
        sa.or_(cell_models.Instance.task_state.is_(None),
               cell_models.Instance.task_state != instance_obj.DELETING))
    with engines.reader(instance_obj.cell_db(ctx)) as session:
        # One with a build plan is the plan's to go on with.
        no_host = session.scalars(sa.select(cell_models.Instance).where(
            live_build, cell_models.Instance.host.is_(None),
            ~sa.exists().where(
                _PLANS.c.instance_uuid == cell_models.Instance.uuid),
            touched < now - datetime.timedelta(seconds=seconds)))
        found = [(instance_obj.Instance.from_row(row), LOST_NO_HOST)
                 for row in no_host]
        host_down = session.scalars(sa.select(cell_models.Instance).where(
            live_build, cell_models.Instance.host.is_not(None),
            cell_models.Instance.host.not_in(alive),
            touched < now - datetime.timedelta(
                seconds=max(seconds, down_seconds))))
        found += [(instance_obj.Instance.from_row(row), LOST_HOST_DOWN)
                  for row in host_down]
        return found


def get_stalled_tasks(ctx, task_states, seconds, move_statuses):
    """Live instances in one of ``task_states`` that nothing touched
    for ``seconds`` and that no move holds (one with a migration in
    one of ``move_statuses``: the move's sweep settles it): tasks
    whose message was lost with a crashed process."""
    now = base.naive_utc(base.utcnow())
    touched = sa.func.coalesce(cell_models.Instance.updated_at,
                               cell_models.Instance.created_at)
    migrations = cell_models.Migration.__table__
    with engines.reader(instance_obj.cell_db(ctx)) as session:
        rows = session.scalars(sa.select(cell_models.Instance).where(
            cell_models.Instance.deleted.is_(False),
            cell_models.Instance.task_state.in_(list(task_states)),
            touched < now - datetime.timedelta(seconds=seconds),
            ~sa.exists().where(
                migrations.c.instance_uuid == cell_models.Instance.uuid,
                migrations.c.status.in_(list(move_statuses)))))
        return [instance_obj.Instance.from_row(row) for row in rows]


def get_soft_deleted(ctx, seconds):
    """SOFT_DELETED instances with no task, soft-deleted more than
    ``seconds`` ago: those to reclaim."""
    cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
        seconds=seconds)
    since = sa.func.coalesce(cell_models.Instance.deleted_at,
                             cell_models.Instance.updated_at)
    with engines.reader(instance_obj.cell_db(ctx)) as session:
        rows = session.scalars(sa.select(cell_models.Instance).where(
            cell_models.Instance.deleted.is_(False),
            cell_models.Instance.vm_state == instance_obj.SOFT_DELETED,
            cell_models.Instance.task_state.is_(None),
            since < cutoff))
        return [instance_obj.Instance.from_row(row) for row in rows]


def get_shelved(ctx, seconds):
    """SHELVED instances with no task, shelved more than ``seconds``
    ago: those to offload."""
    cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
        seconds=seconds)
    with engines.reader(instance_obj.cell_db(ctx)) as session:
        rows = session.scalars(sa.select(cell_models.Instance).where(
            cell_models.Instance.deleted.is_(False),
            cell_models.Instance.vm_state == instance_obj.SHELVED,
            cell_models.Instance.task_state.is_(None),
            cell_models.Instance.updated_at < cutoff))
        return [instance_obj.Instance.from_row(row) for row in rows]


def uuids_in_vm_states(ctx, vm_states):
    """The uuids of the targeted cell's live instances in one of
    ``vm_states``, oldest first: for sweeps that look at a few of
    many, without reading them all."""
    table = cell_models.Instance.__table__
    with engines.connection(instance_obj.cell_db(ctx)) as conn:
        return list(conn.execute(sa.select(table.c.uuid).where(
            table.c.deleted.is_(False),
            table.c.vm_state.in_(list(vm_states))).order_by(
            table.c.created_at, table.c.id)).scalars())
