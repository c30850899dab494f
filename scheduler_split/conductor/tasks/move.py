"""What the moves share: placing one in the instance's cell, and rolling
back one that will not happen.

A move (a resize, a cold or a live migration, an evacuation) keeps both
hosts accounted for: its migration record holds the source host's
allocations and the instance claims its destination. The super-conductor
locates the instance, hands its allocations to the migration and asks
the scheduler for a destination in the same cell (:class:`MoveTask`).

A move that will not happen (no destination, every alternate refused it,
or no service advanced it for too long) is rolled back one way,
:func:`roll_back`, whoever finds out.
"""

import logging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The task states a server holds while each kind of move is under way,
# before it waits for its user or ends.
MOVING = {
    migration_obj.RESIZE: instance_obj.RESIZE_TASK_STATES,
    migration_obj.MIGRATION: instance_obj.RESIZE_TASK_STATES,
    migration_obj.LIVE_MIGRATION: (instance_obj.MIGRATING,),
    migration_obj.EVACUATION: (instance_obj.REBUILDING,
                               instance_obj.REBUILD_SPAWNING),
}


def roll_back(scheduler, ctx, migration, exc, event, host=None, fault=True,
              instance=None, start_time=None):
    """Undo a move that will not happen; ``ctx`` targets its cell.

    The instance holds its source again and no longer any destination
    (first: if the scheduler cannot be asked, this raises before anything
    else changed). The migration ends in error, if it has not already.
    The instance, if it is still moving (``instance`` as the caller read
    it, else read now), is on its source again with its old flavor and
    its task cleared, with ``exc`` as its fault unless ``fault`` is
    False. An event ``event`` (on ``host``, begun at ``start_time``) in
    Error says why.
    """
    uuid = migration.instance_uuid
    scheduler.revert_claim_from_migration(ctx, migration.uuid, uuid)
    if migration.status != migration_obj.ERROR:
        migration.status = migration_obj.ERROR
        try:
            migration.save(ctx)
        except exception.MigrationNotFound:
            pass
    try:
        if instance is None:
            instance = objects.Instance.get_by_uuid(ctx, uuid)
        moving = MOVING.get(migration.migration_type, ())
        if instance.task_state in moving:
            instance.task_state = None
            instance.host = migration.source_compute
            instance.node = migration.source_node
            if migration.old_flavor is not None:
                instance.flavor = migration.old_flavor
            instance.save(ctx, expected_task_state=list(moving),
                          fault=(objects.InstanceFault.from_exception(
                              uuid, exc) if fault else None))
    except (exception.InstanceNotFound, exception.Conflict):
        pass
    instance_action.record_event(
        ctx, uuid, event, host=host, result=instance_action.ERROR,
        details=exception.describe(exc), action=migration.action,
        start_time=start_time)


def aim(migration, selection):
    """The migration says where to: ``selection``'s host and node."""
    migration.dest_compute = migration.dest_host = selection.service_host
    migration.dest_node = selection.nodename


class MoveTask(base.ConductorTask):
    """A move the super-conductor places for the API.

    Subclasses run ``_locate``, get their ``migration``, then
    ``_schedule``: from there until a destination took the move
    (``_settled``) a failure rolls the move back with the conductor's
    ``event``, and the instance keeps no fault (it stays as it was, and
    its user reads why in its actions). Once a compute was handed the
    move it is that compute's to finish or fail, or the lost-moves
    sweep's to settle: the conductor cannot tell a lost cast from a slow
    host.
    """

    event = None

    def __init__(self, scheduler, ctx, instance, migration=None, host=None,
                 computes=compute_rpcapi.ComputeAPI.for_cell):
        """``migration``: the move's record, when the API made it (a
        live migration, an evacuation); ``host``: the destination an
        admin named, still filtered; ``computes``: a client for the
        computes of a cell, given its mapping."""
        self.scheduler = scheduler
        self.ctx = ctx
        self.uuid = instance.uuid
        self.migration = migration
        self.host = host
        self.computes = computes
        self.cell = self.cctx = self.instance = None
        self.placing = False

    def _locate(self):
        """The instance as its cell holds it, and that cell."""
        self.cell, self.cctx, self.instance = base.locate(self.ctx,
                                                          self.uuid)

    def _locate_for_cast(self):
        """``_locate``; False once the server is deleted (a cast has
        nobody to tell, and nothing to do)."""
        try:
            self._locate()
        except (exception.InstanceNotFound,
                exception.InstanceMappingNotFound):
            return False
        return True

    def _spec(self, flavor):
        """What the scheduler needs to move the instance: its boot's
        request (zone, group, hints, image), with ``flavor``, kept to its
        cell, off its own host, and to ``self.host`` if one was named."""
        instance = self.instance
        spec = objects.RequestSpec.of_instance(self.ctx, instance)
        spec.instance_uuid = self.uuid
        spec.flavor = flavor
        spec.num_instances = 1
        spec.retry = None
        spec.requested_cell = self.cell.uuid
        spec.ignore_hosts = [instance.host] if instance.host else None
        spec.force_hosts = [self.host] if self.host else None
        spec.force_nodes = None
        if spec.get('instance_group') is not None:
            # Where the other members are is the scheduler's to read.
            spec.instance_group.hosts = []
        return spec

    def _schedule(self, spec, alternates=True):
        """The migration holds the source from now on, and the scheduler
        claims a destination for the instance: ``[chosen, alternates of
        its cell...]`` (only the chosen one without ``alternates``)."""
        self.placing = True
        self.scheduler.move_claim_to_migration(self.ctx, self.uuid,
                                               self.migration.uuid)
        if not alternates:
            [[chosen]] = self.scheduler.select_destinations(
                self.ctx, spec, [self.uuid], return_alternates=False)
            return [chosen]
        [host_list] = self.scheduler.select_destinations(
            self.ctx, spec, [self.uuid], return_alternates=True,
            num_alternates=CONF.conductor.build_max_attempts - 1)
        return host_list

    def _settled(self):
        """A destination took the move: a failure from here on is not
        rolled back."""
        self.placing = False

    def rollback(self, exc):
        if not self.placing:
            return False
        exception.log_failure(LOG, exc, 'Scheduling the move of instance '
                              '%s failed', self.uuid,
                              extra={'instance_uuid': self.uuid})
        roll_back(self.scheduler, self.cctx, self.migration, exc,
                  self.event, host=CONF.host, fault=False,
                  instance=self.instance, start_time=self.started)
        return True
