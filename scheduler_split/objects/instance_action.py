"""Instance actions: what happened to an instance, step by step.

An action is one user request (``create``, ``delete``) identified by its
request id,
which travels with the context over every RPC hop; its events are the
steps services took for it, each with the host it ran on, its result,
when it began (``start_time``: what its caller says, when the step
began) and when it ended (``finish_time``: when it is recorded). They
live in the instance's cell database.

An action never starts after any of its events: it starts when the API
records it or when its first recorded step began, whichever is earlier,
and a step recorded as beginning before its action (the conductor's
scheduling, which begins before the instance and its create action
exist; a host whose clock is behind) moves the action's start back to
it.
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split.objects import base

LOG = logging.getLogger(__name__)

SUCCESS = 'Success'
ERROR = 'Error'


# The statements of every boot, built once: the values go as parameters,
# so each is compiled once and found in the cache by identity.
_IA = cell_models.InstanceAction.__table__
_FIND_ACTION = sa.select(_IA.c.id, _IA.c.start_time).where(
    _IA.c.instance_uuid == sa.bindparam('b_uuid'),
    _IA.c.request_id == sa.bindparam('b_request_id'))
_INSERT_ACTION = _IA.insert()
_INSERT_EVENT = cell_models.InstanceActionEvent.__table__.insert()
_MARK_ERROR = _IA.update().where(_IA.c.id == sa.bindparam('b_id')).values(
    message=ERROR)
# Guarded by the start it moves back from: of two events that move it
# concurrently, the earlier start is kept.
_MOVE_START = _IA.update().where(
    _IA.c.id == sa.bindparam('b_id'),
    _IA.c.start_time > sa.bindparam('b_start')).values(
    start_time=sa.bindparam('b_start'))


def as_time(value):
    """``value`` (a datetime, or the ISO 8601 string a datetime becomes
    on the bus) as the databases store times: naive UTC; None stays
    None."""
    if isinstance(value, str):
        value = timeutils.parse_isotime(value)
    return base.naive_utc(value)


def _action_id(session, ctx, instance_uuid, action, new=False,
               start_time=None):
    """The id of the action of ``ctx``'s request, created if needed;
    ``new``: the instance was created in this transaction, so the action
    cannot exist yet and is not looked for. ``start_time`` (naive UTC):
    when the step being recorded began, which the action does not start
    after (now, by default)."""
    now = base.naive_utc(base.utcnow())
    start = now if start_time is None else min(start_time, now)
    conn = session.connection()
    if not new:
        found = conn.execute(_FIND_ACTION, dict(
            b_uuid=instance_uuid, b_request_id=ctx.request_id)).first()
        if found is not None:
            if found.start_time > start:
                conn.execute(_MOVE_START, dict(b_id=found.id,
                                               b_start=start))
            return found.id
    result = conn.execute(_INSERT_ACTION, dict(
        instance_uuid=instance_uuid, request_id=ctx.request_id,
        action=action, project_id=ctx.project_id, user_id=ctx.user_id,
        start_time=start))
    return result.inserted_primary_key[0]


def start_action(ctx, instance_uuid, action):
    """Record that ``ctx``'s request started ``action`` on the instance
    (an audit trail: a failure is logged, never raised)."""
    try:
        with engines.writer(ctx.cell_db) as session:
            _action_id(session, ctx, instance_uuid, action)
    except Exception:
        LOG.exception('Could not record action %s of instance %s', action,
                      instance_uuid, extra={'instance_uuid': instance_uuid})


def record_event(ctx, instance_uuid, event, host=None, result=SUCCESS,
                 details=None, action='create', start_time=None):
    """Record a finished step of the action of ``ctx``'s request, which
    began at ``start_time`` (now, by default) and ends now.

    The record is an audit trail: failing to write it is logged and never
    fails the step itself.
    """
    try:
        outage.run(_record_event, ctx, instance_uuid, event, host, result,
                   details, action, start_time,
                   what='Recording event %s of instance %s'
                   % (event, instance_uuid))
    except exception.DatabaseUnavailable:
        pass
    except Exception:
        LOG.exception('Could not record event %s of instance %s', event,
                      instance_uuid, extra={'instance_uuid': instance_uuid})


def _record_event(ctx, instance_uuid, event, host, result, details, action,
                  start_time):
    with engines.writer(ctx.cell_db) as session:
        add_event(session, ctx, instance_uuid, event, host=host,
                  result=result, details=details, action=action,
                  start_time=start_time)


def add_event(session, ctx, instance_uuid, event, host=None,
              result=SUCCESS, details=None, action='create', new=False,
              start_time=None):
    """Record a finished step of the action of ``ctx``'s request in the
    caller's transaction (``session``), with the write it records; with
    ``new`` the instance is created in that transaction too. The step
    began at ``start_time`` (a datetime or its ISO 8601 string; now by
    default, and never later than now: another host's clock may be
    ahead) and ends now."""
    now = base.naive_utc(base.utcnow())
    start = now if start_time is None else min(as_time(start_time), now)
    action_id = _action_id(session, ctx, instance_uuid, action, new=new,
                           start_time=start)
    conn = session.connection()
    conn.execute(_INSERT_EVENT, dict(
        action_id=action_id, event=event, start_time=start, finish_time=now,
        result=result, host=host, details=details))
    if result == ERROR:
        conn.execute(_MARK_ERROR, dict(b_id=action_id))


def get_actions(ctx, instance_uuid):
    with engines.reader(ctx.cell_db) as session:
        rows = session.scalars(sa.select(cell_models.InstanceAction).where(
            cell_models.InstanceAction.instance_uuid ==
            instance_uuid).order_by(
            cell_models.InstanceAction.start_time.desc(),
            cell_models.InstanceAction.id.desc()))
        return [_action(row) for row in rows]


def get_action(ctx, instance_uuid, request_id):
    """The action with its events (oldest first), or None."""
    with engines.reader(ctx.cell_db) as session:
        row = session.scalars(sa.select(cell_models.InstanceAction).where(
            cell_models.InstanceAction.instance_uuid == instance_uuid,
            cell_models.InstanceAction.request_id == request_id)).first()
        if row is None:
            return None
        action = _action(row)
        action['events'] = [
            {'event': e.event, 'start_time': e.start_time,
             'finish_time': e.finish_time, 'result': e.result,
             'host': e.host, 'details': e.details}
            for e in session.scalars(
                sa.select(cell_models.InstanceActionEvent).where(
                    cell_models.InstanceActionEvent.action_id == row.id)
                .order_by(cell_models.InstanceActionEvent.id))]
        return action


def _action(row):
    return {'action': row.action, 'instance_uuid': row.instance_uuid,
            'request_id': row.request_id, 'user_id': row.user_id,
            'project_id': row.project_id, 'start_time': row.start_time,
            'updated_at': row.updated_at or row.created_at,
            'message': row.message}
