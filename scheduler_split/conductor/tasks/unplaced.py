"""A boot the API accepted and no cell holds yet, as every placement of
it and every sweep of the super-conductor sees it: which cells were
read, which boots this process has in hand (:data:`HELD`), whether one
still waits for a cell (:func:`still_pending`), and its end in ERROR in
cell0 (:func:`bury_in_cell0`). The placement itself is ``build.py``'s.
"""

import collections
import logging
import threading

from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

LOG = logging.getLogger(__name__)

# The event of a boot's scheduling, in the instance's create action.
EVENT = 'conductor_schedule_and_build_instances'


class CellMappings:
    """The cell mappings a super-conductor has read, by uuid: where a
    cell's bus and database are does not change while it runs."""

    def __init__(self):
        self._cells = {}
        self._lock = threading.Lock()

    def get(self, ctx, cell_uuid):
        with self._lock:
            cell = self._cells.get(cell_uuid)
        if cell is None:
            cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
            with self._lock:
                self._cells[cell_uuid] = cell
        return cell


class HeldBuilds:
    """The build requests this process is taking or placing.

    The lost-build sweep renews them before it looks for lost ones
    (``SuperConductorPeriodics.fail_lost_builds``): a placement held up
    for longer than ``[conductor] lost_build_timeout`` (its call to the
    schedulers waiting out a broker outage, say) is still being worked
    on, and no super-conductor's sweep takes it for lost. One whose
    process died is renewed by nobody. One this process took and no
    longer has in hand was dropped, and its own sweep takes it back
    (``SuperConductorPeriodics.resume_orphaned_boots``).
    """

    def __init__(self):
        self._uuids = collections.Counter()
        self._lock = threading.Lock()

    def add(self, uuids):
        with self._lock:
            self._uuids.update(uuids)

    def discard(self, uuids):
        with self._lock:
            self._uuids.subtract(uuids)
            for uuid in uuids:
                if self._uuids[uuid] <= 0:
                    del self._uuids[uuid]

    def uuids(self):
        with self._lock:
            return sorted(self._uuids)


HELD = HeldBuilds()


def still_pending(ctx, build_request):
    """Whether the build request still waits for a cell.

    A user's delete or the API taking back a boot it could not hand over
    removes it; a second delivery of the same boot finds it mapped.
    Either way there is nothing to schedule, and scheduling anyway would
    move the claim of the instance.
    """
    uuid = build_request.instance_uuid
    try:
        objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
    except (exception.BuildRequestNotFound,
            exception.InstanceMappingNotFound):
        LOG.info('Build request of %s is gone; nothing to build', uuid,
                 extra={'instance_uuid': uuid})
        return False
    return mapping.cell_mapping is None


def bury_in_cell0(ctx, cells, build_request, exc, reason='error',
                  start_time=None):
    """An instance that could not be scheduled: ERROR in cell0.

    The row comes first, then the mapping points at it (only if no one
    placed the instance meanwhile), then the build request goes. If cell0
    cannot be written, the build request stays and the lost-build sweep
    tries again later. Returns whether this call placed the instance (the
    claims are then its to release); ``reason`` is what the metrics count
    it under; ``cells`` is a :class:`CellMappings`; ``start_time``: when
    the scheduling that failed began (its event's start).
    """
    uuid = build_request.instance_uuid
    try:
        cell0 = cells.get(ctx, cell_mapping_obj.CELL0_UUID)
        cctx = ss_context.target_cell(ctx, cell0)
        try:
            # An earlier attempt that stopped before pointing the mapping
            # at cell0 left its row: that one is the ERROR.
            instance = objects.Instance.get_by_uuid(cctx, uuid)
        except exception.InstanceNotFound:
            instance = build_request.instance
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            # Its status changed now, from BUILD to ERROR: a list with
            # changes-since shows it from this moment, the moment its
            # fault names.
            fault = objects.InstanceFault.from_exception(uuid, exc)
            instance.updated_at = fault.created_at = obj_base.utcnow()
            instance.create(cctx, fault=fault)
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
        if not mapping.set_cell(ctx, cell0):
            instance.destroy(cctx)
            return False
        metrics.BURIED_IN_CELL0.labels(reason=reason).inc()
        instance_action.record_event(
            cctx, uuid, EVENT, result=instance_action.ERROR,
            details=exception.describe(exc), start_time=start_time)
    except Exception:
        LOG.exception('Could not record instance %s in cell0', uuid,
                      extra={'instance_uuid': uuid})
        return False
    try:
        recorded = build_request.destroy(ctx)
    except exception.BuildRequestNotFound:
        # The user deleted the server meanwhile.
        instance.destroy(cctx)
        return True
    try:
        if instance.take_user_edits(recorded):
            instance.save(cctx)
    except exception.InstanceNotFound:
        pass
    return True
