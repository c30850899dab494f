"""Which claims are still needed: the super-conductor's answer to the
scheduler's heal.

The scheduler holds claims by consumer (an instance, or a migration
holding the source host of a move) and cannot tell on its own which of
them outlived their consumer. The super-conductor owns the API database
and reaches every cell's, so it answers: an instance needs its claim
while its build request waits for a cell, or while it lives (neither
deleted nor in ERROR) in the cell its mapping names; a migration while
its move is under way and its instance lives. Any other consumer (no
mapping nor migration, a build request deleted before scheduling, an
instance deleted or failed, a move that ended) needs none. This module
reads only; it depends on nothing else of the conductor.
"""

from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj

# How many instances or migrations one look at a cell reads at a time.
CHUNK = 500


def consumers_needing_claims(ctx, consumer_uuids):
    """Those of ``consumer_uuids`` whose claims are still needed, in the
    order asked."""
    uuids = list(dict.fromkeys(consumer_uuids))
    mapped = objects.InstanceMapping.get_cell_ids(ctx, uuids)
    needed = set()
    by_cell = {}
    unmapped = [uuid for uuid in uuids if uuid not in mapped]
    if unmapped:
        needed.update(_migrations_under_way(ctx, unmapped))
    for uuid in uuids:
        if uuid not in mapped:
            continue
        if mapped[uuid] is None:
            try:
                objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
                needed.add(uuid)
            except exception.BuildRequestNotFound:
                pass
            continue
        by_cell.setdefault(mapped[uuid], []).append(uuid)
    cells = {cell.id: cell for cell in objects.CellMapping.get_all(ctx)}
    for cell_id, in_cell in by_cell.items():
        if cell_id not in cells:
            # A cell unmapped meanwhile: in doubt, keep the claims.
            needed.update(in_cell)
            continue
        cctx = ss_context.target_cell(ctx, cells[cell_id])
        for start in range(0, len(in_cell), CHUNK):
            for instance in objects.Instance.get_all(
                    cctx, uuids=in_cell[start:start + CHUNK]):
                if instance.vm_state != instance_obj.ERROR:
                    needed.add(instance.uuid)
    return [uuid for uuid in uuids if uuid in needed]


def _migrations_under_way(ctx, uuids):
    """Of ``uuids``, the migrations of any cell whose move has not ended
    and whose instance lives."""
    found = set()
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            continue
        cctx = ss_context.target_cell(ctx, cell)
        for start in range(0, len(uuids), CHUNK):
            moving = {m.uuid: m.instance_uuid
                      for m in objects.Migration.get_all(
                          cctx, uuids=uuids[start:start + CHUNK])
                      if not m.ended}
            if not moving:
                continue
            alive = {i.uuid for i in objects.Instance.get_all(
                cctx, uuids=sorted(set(moving.values())))}
            found.update(uuid for uuid, instance in moving.items()
                         if instance in alive)
    return found
