"""What computes do for evacuations (compute RPC 1.5).

The source's compute is down. The super-conductor claimed a destination
(the migration holds the source until its compute comes back and cleans
up) and casts ``rebuild_instance`` to it: the destination rebuilds the
server from its image. A failure leaves the server in ERROR with a fault,
holding its dead source again, as a failed build holds its host until it
is deleted. When the source's compute starts again it drops its copies of
the servers evacuated off it, and the resources their migrations still
held there.
"""

import logging

import oslo_messaging as messaging

from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

LOG = logging.getLogger(__name__)


class EvacuationMixin:
    """The evacuation cast of :class:`ComputeManager` and its clean-up at
    start; the steps share :class:`~.moves.MovesMixin`'s ``_current``,
    ``_abandon`` and ``_save_migration``."""

    @messaging.expose
    def rebuild_instance(self, ctx, instance, migration):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.REBUILDING],
                                    'rebuild_instance')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            current.task_state = instance_obj.REBUILD_SPAWNING
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.REBUILDING])
            except (exception.InstanceNotFound, exception.Conflict):
                self._abandon(ctx, uuid, migration)
                return
            power_on = migration.old_vm_state != instance_obj.STOPPED
            try:
                self.driver.rebuild(ctx, current, power_on)
            except Exception as exc:
                self._evacuation_failed(ctx, current, migration, exc,
                                        started)
                return
            current.host = self.host
            current.node = migration.dest_node or self.driver.nodename()
            current.vm_state = (instance_obj.ACTIVE if power_on
                                else instance_obj.STOPPED)
            current.task_state = None
            current.power_state = (instance_obj.RUNNING if power_on
                                   else instance_obj.SHUTDOWN)
            try:
                self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.REBUILD_SPAWNING])
            except (exception.InstanceNotFound, exception.Conflict):
                self.driver.destroy(current)
                self._abandon(ctx, uuid, migration)
                return
            self._save_migration(ctx, migration, migration_obj.DONE, None)
            self._record_event(ctx, uuid, 'compute_rebuild_instance',
                               details='rebuilt on %s' % self.host,
                               action='evacuate', start_time=started)
        LOG.info('Instance %s evacuated from %s to %s', uuid,
                 migration.source_compute, self.host,
                 extra={'instance_uuid': uuid})

    def _evacuation_failed(self, ctx, instance, migration, exc,
                           started=None):
        """ERROR with the fault; the instance holds its (dead) source
        again, as a failed build holds its host until it is deleted."""
        uuid = instance.uuid
        LOG.warning('Evacuating instance %s to %s failed: %s', uuid,
                    self.host, exc, extra={'instance_uuid': uuid})
        self.driver.destroy(instance)
        self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                   uuid)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_error(
                ctx, instance, fault,
                expected_task_states=[instance_obj.REBUILD_SPAWNING])
        except (exception.InstanceNotFound, exception.Conflict):
            pass
        self._save_migration(ctx, migration, migration_obj.FAILED, None)
        self._record_event(ctx, uuid, 'compute_rebuild_instance',
                           result=instance_action.ERROR,
                           details=exception.describe(exc),
                           action='evacuate', start_time=started)

    def clean_up_evacuations(self, ctx):
        """At start: servers evacuated off this host while it was down
        run elsewhere now. Their copies here go, and so do the resources
        their migrations still held here; each migration is
        ``completed``."""
        for migration in self.conductor.migrations_get(
                ctx, source_compute=self.host,
                migration_types=[migration_obj.EVACUATION],
                statuses=[migration_obj.DONE]):
            uuid = migration.instance_uuid
            with self._locks(uuid):
                try:
                    instance = self.conductor.instance_get(
                        ctx, uuid, read_deleted=True)
                    self.driver.destroy(instance)
                except exception.InstanceNotFound:
                    pass
                self.scheduler.try_release_resources(ctx, migration.uuid)
                try:
                    self._save_migration(ctx, migration,
                                         migration_obj.COMPLETED,
                                         migration_obj.DONE)
                except (exception.MigrationNotFound, exception.Conflict):
                    continue
            LOG.info('Instance %s was evacuated from this host to %s; its '
                     'copy and its resources here are gone', uuid,
                     migration.dest_compute, extra={'instance_uuid': uuid})
