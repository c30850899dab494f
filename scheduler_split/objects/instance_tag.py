"""A server's tags (2.26), in its cell database.

Tags are not part of the instance row: each change here is its own
transaction on ``instance_tags``, and the instance's ``tags`` field is
read from it with the instance.
"""

import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base

# Nova's limits.
MAX_TAGS = 50
MAX_TAG_LENGTH = 60


class TooManyTags(exception.SchedulerSplitException):
    msg_fmt = 'The number of tags exceeded the per-server limit %(limit)d'
    code = 400


def _db(ctx):
    if not ctx.cell_db:
        raise exception.CellsNotConfigured(
            reason='no cell database targeted for this request')
    return ctx.cell_db


def tags_of(session, uuids):
    """``{uuid: [tag, ...]}`` (sorted) of the instances ``uuids``."""
    found = {uuid: [] for uuid in uuids}
    if not found:
        return found
    rows = session.execute(
        sa.select(cell_models.InstanceTag.resource_id,
                  cell_models.InstanceTag.tag)
        .where(cell_models.InstanceTag.resource_id.in_(list(found)))
        .order_by(cell_models.InstanceTag.tag))
    for uuid, tag in rows:
        found[uuid].append(tag)
    return found


def get_all(ctx, uuid):
    with engines.reader(_db(ctx)) as session:
        return tags_of(session, [uuid])[uuid]


def _lock_instance(session, uuid):
    """Take the instance row for this transaction, so that concurrent
    changes of one server's tags are counted one after the other (SQLite's
    writing transactions are serial already: BEGIN IMMEDIATE).

    The row is written too (its ``updated_at``): on Galera a lock holds
    on its own node only, and of two changes made through two nodes the
    second to commit is refused (and run again) only if both wrote a
    row in common."""
    row = session.scalars(sa.select(cell_models.Instance).where(
        cell_models.Instance.uuid == uuid,
        cell_models.Instance.deleted.is_(False)).with_for_update()).first()
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    row.updated_at = base.naive_utc(base.utcnow())


def replace(ctx, uuid, tags):
    """The server's tags become ``tags``; returns them sorted."""
    tags = sorted(set(tags))
    if len(tags) > MAX_TAGS:
        raise TooManyTags(limit=MAX_TAGS)
    with engines.writer(_db(ctx)) as session:
        _lock_instance(session, uuid)
        session.execute(sa.delete(cell_models.InstanceTag).where(
            cell_models.InstanceTag.resource_id == uuid))
        for tag in tags:
            session.add(cell_models.InstanceTag(resource_id=uuid, tag=tag))
    return tags


def add(ctx, uuid, tag):
    """Add ``tag``; True if it is new, False if the server had it."""
    with engines.writer(_db(ctx)) as session:
        _lock_instance(session, uuid)
        current = tags_of(session, [uuid])[uuid]
        if tag in current:
            return False
        if len(current) >= MAX_TAGS:
            raise TooManyTags(limit=MAX_TAGS)
        session.add(cell_models.InstanceTag(resource_id=uuid, tag=tag))
    return True


def delete(ctx, uuid, tag):
    """Remove ``tag``; False if the server did not have it."""
    with engines.writer(_db(ctx)) as session:
        result = session.execute(sa.delete(cell_models.InstanceTag).where(
            cell_models.InstanceTag.resource_id == uuid,
            cell_models.InstanceTag.tag == tag))
        return result.rowcount > 0


def delete_all(ctx, uuid):
    with engines.writer(_db(ctx)) as session:
        session.execute(sa.delete(cell_models.InstanceTag).where(
            cell_models.InstanceTag.resource_id == uuid))
