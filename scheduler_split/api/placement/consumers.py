"""Who holds the scheduler's allocations, in Placement's consumer types.

The scheduler keeps a consumer's uuid only. An ``INSTANCE`` consumer is
a server, whose project and user its instance mapping (API database)
holds; a ``MIGRATION`` consumer is a move under way holding its source
host, whose project and user its migration record (its cell's database)
holds. Neither is the scheduler's to know, so the API reads them here.
"""

from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import migration as migration_obj

INSTANCE = 'INSTANCE'
MIGRATION = 'MIGRATION'
# Placement's name of the type of a consumer it knows nothing of.
UNKNOWN = 'unknown'

# The statuses of a migration whose consumer still holds the source host
# (every status but those of a move that ended).
HOLDING = migration_obj.UNDER_WAY + (
    migration_obj.FINISHED, migration_obj.CONFIRMING,
    migration_obj.REVERTING, migration_obj.DONE)


def _cells(ctx):
    for cell in objects.CellMapping.get_all(ctx):
        if not cell.is_cell0:
            yield ss_context.target_cell(ctx, cell)


def owner(ctx, consumer_uuid):
    """``(consumer type, project id, user id)`` of a consumer;
    ``(UNKNOWN, None, None)`` for one that is neither an instance nor a
    migration."""
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctx, consumer_uuid)
        return INSTANCE, mapping.project_id, mapping.user_id
    except exception.InstanceMappingNotFound:
        pass
    for cctx in _cells(ctx):
        found = objects.Migration.get_all(cctx, uuids=[consumer_uuid])
        if found:
            return MIGRATION, found[0].project_id, found[0].user_id
    return UNKNOWN, None, None


def of_project(ctx, project_id, user_id=None):
    """``{consumer type: [uuid, ...]}``: the consumers of a project (and
    user) that may hold allocations: its instances, and its moves that
    have not ended."""
    migrations = []
    for cctx in _cells(ctx):
        migrations.extend(
            m.uuid for m in objects.Migration.get_all(cctx, statuses=HOLDING)
            if m.project_id == project_id and
            (user_id is None or m.user_id == user_id))
    return {INSTANCE: objects.InstanceMapping.get_instance_uuids(
                ctx, project_id, user_id),
            MIGRATION: migrations}
