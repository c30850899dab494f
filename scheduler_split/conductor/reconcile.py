"""The reconciliation of claims: the super-conductor releases the
scheduler's claims that nothing needs any more.

Every path that ends a consumer's need releases its claim; this catches
the ones whose release never reached the scheduler (a crash, an outage).
The scheduler holds claims by consumer (an instance, or a migration
holding the source host of a move) and cannot tell on its own which of
them outlived their consumer; it asks no other service. The
super-conductor owns the API database and reaches every cell's, so it
pages through the scheduler's consumers through the scheduler library
(:func:`heal_allocations`) and decides: an instance needs its claim
while its build request waits for a cell, or while it lives in the
cell its mapping names, neither in ERROR nor offloaded
(:func:`needs_claim`); a migration while its move is under way and its
instance lives. Any other consumer (no mapping nor migration, a build
request deleted before scheduling, an instance deleted, failed or
offloaded, a move that ended) needs none. This module
reads only; it depends on nothing else of the conductor.
"""

import logging

import oslo_messaging as messaging

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# How many instances or migrations one look at a cell reads at a time,
# and how many consumers one page of the scheduler's holds.
CHUNK = 500


def heal_allocations(scheduler, ctx, grace=None):
    """Release the claims older than ``grace`` seconds (``[conductor]
    heal_allocations_grace`` by default) that no consumer needs, a page
    of the scheduler's consumers at a time; returns the consumers
    released. A page this process cannot decide on (a cell database
    down) releases nothing of it; schedulers too old to list their
    consumers are left alone until they are upgraded."""
    if grace is None:
        grace = CONF.conductor.heal_allocations_grace
    healed = []
    marker = None
    while True:
        try:
            page = scheduler.list_consumers(ctx, grace, marker=marker,
                                            limit=CHUNK)
        except messaging.RPCVersionCapError:
            LOG.info('The schedulers cannot list their consumers yet '
                     '(older than scheduler RPC 1.6); no reconciliation '
                     'of claims until they are upgraded')
            return healed
        if not page:
            return healed
        marker = page[-1]
        try:
            needed = set(consumers_needing_claims(ctx, page))
        except Exception as exc:
            outage.report(LOG, exc, 'Cannot tell which of %d claims are '
                          'still needed (%s); releasing none of them',
                          len(page), outage.reason(exc))
            needed = set(page)
        for consumer in page:
            if consumer in needed:
                continue
            LOG.warning('Releasing the claim of %s: no build request, live '
                        'instance or move under way needs it', consumer,
                        extra={'instance_uuid': consumer})
            scheduler.release_resources(ctx, consumer)
            healed.append(consumer)
        if len(page) < CHUNK:
            return healed


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
    handed_over = []
    for uuid in uuids:
        if uuid not in mapped:
            continue
        if mapped[uuid] is None:
            try:
                objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
                needed.add(uuid)
            except exception.BuildRequestNotFound:
                handed_over.append(uuid)
            continue
        by_cell.setdefault(mapped[uuid], []).append(uuid)
    # A build handed to its cell between the two reads: its mapping
    # named no cell yet, and its build request was gone (the hand-over
    # points the mapping at the cell before it deletes the request).
    # Read again, it names the cell that holds the instance.
    if handed_over:
        for uuid, cell_id in objects.InstanceMapping.get_cell_ids(
                ctx, handed_over).items():
            if cell_id is not None:
                by_cell.setdefault(cell_id, []).append(uuid)
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
                if needs_claim(instance):
                    needed.add(instance.uuid)
    return [uuid for uuid in uuids if uuid in needed]


def needs_claim(instance):
    """Whether a live instance of a cell needs its claim: not in ERROR
    (a failed build, rebuild or spawn gave its host back), and not
    offloaded with no unshelve under way (it is on no host)."""
    if instance.vm_state == instance_obj.ERROR:
        return False
    return not (instance.vm_state == instance_obj.SHELVED_OFFLOADED and
                instance.task_state is None)


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
