"""What computes do for resizes, cold and live migrations (compute RPC
1.5); evacuations are in ``evacuation.py``.

The super-conductor has claimed the destination for the instance and
handed the source host's allocations to the migration; it casts
``prep_resize`` to the destination. Then, each step a cast to the next
host, each guarded by the task state the step before left:

1. destination ``prep_resize``: takes the server, or casts
   ``migrate_reschedule`` to its cell conductor, which claims the next
   alternate;
2. source ``resize_instance`` (task ``resize_migrating``, migration
   ``migrating``): sends the server off and stops its copy;
3. destination ``finish_resize`` (``resize_finish``): starts it with the
   new flavor; the server is ``VERIFY_RESIZE`` (vm state ``resized``),
   the migration ``finished``.

The user then confirms (source ``confirm_resize``: its copy goes and the
migration's allocations are released) or reverts (destination
``revert_resize`` drops the server, source ``finish_revert_resize``
starts its copy again and takes the allocations back from the migration,
which releases the destination's in the same transaction).

A failure after the destination took the server rolls the move back the
same way: the server runs on the source with its old flavor and the state
it had, with a fault and an instance-action event in Error; the
migration ends in ``error``. No step leaves a claim behind: whatever a
move ends in, the instance holds one host and the migration none.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

LOG = logging.getLogger(__name__)


class MovesMixin:
    """The 1.5 casts of :class:`ComputeManager`."""

    _compute_api = None

    @property
    def computes(self):
        """A client for the other computes of this cell."""
        if self._compute_api is None:
            self._compute_api = compute_rpcapi.ComputeAPI(
                self.transport, None, conductor=self.conductor)
        return self._compute_api

    def _current(self, ctx, uuid, task_states, step):
        """The instance as its cell holds it now, or None (deleted, or
        another action took over) with the reason logged."""
        try:
            instance = self.conductor.instance_get(ctx, uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before %s', uuid, step,
                     extra={'instance_uuid': uuid})
            return None
        if instance.task_state not in task_states:
            LOG.info('Not doing %s of instance %s: it is %s/%s now', step,
                     uuid, instance.vm_state, instance.task_state,
                     extra={'instance_uuid': uuid})
            return None
        return instance

    def _abandon(self, ctx, uuid, migration):
        """The instance went (deleted) or moved on mid-move: nothing of
        the move may hold resources. One that lives on its source (an API
        that gave up waiting put it back) holds its source again, not
        the destination."""
        try:
            current = self.conductor.instance_get(ctx, uuid)
        except Exception:
            current = None
        if current is not None and \
                current.task_state != instance_obj.DELETING and \
                current.host == migration.source_compute:
            try:
                self.scheduler.revert_claim_from_migration(
                    ctx, migration.uuid, uuid)
            except Exception:
                LOG.exception('Could not give instance %s its source '
                              'back', uuid, extra={'instance_uuid': uuid})
        else:
            self.scheduler.try_release_resources(ctx, migration.uuid)
        migration.status = migration_obj.ERROR
        try:
            self.conductor.migration_save(ctx, migration)
        except Exception as exc:
            # Gone with its instance, or ended by a sweep, meanwhile.
            exception.log_failure(LOG, exc, 'Could not end migration %s',
                                  migration.uuid,
                                  extra={'instance_uuid': uuid})

    def _save_migration(self, ctx, migration, status, expected):
        migration.status = status
        return self.conductor.migration_save(ctx, migration,
                                             expected_status=expected)

    # --- destination: take the server --------------------------------------

    @messaging.expose
    def prep_resize(self, ctx, instance, migration, flavor, request_spec,
                    host_list, retry):
        """Cast from a conductor to the destination it claimed."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        action = migration.action
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.RESIZE_PREP],
                                    'prep_resize')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            try:
                self.driver.check_can_take(current)
            except Exception as exc:
                reason = exception.describe(exc)
                LOG.warning('%s refused instance %s: %s; trying the next '
                            'alternate', self.host, uuid, reason,
                            extra={'instance_uuid': uuid})
                self._record_event(ctx, uuid, 'compute_prep_resize',
                                   result=instance_action.ERROR,
                                   details='%s; rescheduling' % reason,
                                   action=action, start_time=started)
                self.conductor.migrate_reschedule(
                    ctx, current, migration, flavor, request_spec,
                    host_list, retry, reason)
                return
            self._record_event(ctx, uuid, 'compute_prep_resize',
                               details='%s takes it' % self.host,
                               action=action, start_time=started)
        self.computes.resize_instance(ctx, migration.source_compute,
                                      current, migration, flavor)

    # --- source: send it off ------------------------------------------------

    @messaging.expose
    def resize_instance(self, ctx, instance, migration, flavor):
        uuid = instance.uuid
        started = obj_base.utcnow()
        action = migration.action
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.RESIZE_PREP],
                                    'resize_instance')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            current.task_state = instance_obj.RESIZE_MIGRATING
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.RESIZE_PREP])
                migration = self._save_migration(
                    ctx, migration, migration_obj.MIGRATING,
                    migration_obj.PRE_MIGRATING)
            except (exception.InstanceNotFound, exception.Conflict):
                self._abandon(ctx, uuid, migration)
                return
            try:
                self.driver.migrate_disk_and_power_off(ctx, current,
                                                       migration)
            except Exception as exc:
                self._roll_back_at_source(
                    ctx, current, migration, exc, 'compute_resize_instance',
                    [instance_obj.RESIZE_MIGRATING], started)
                return
            current.task_state = instance_obj.RESIZE_MIGRATED
            current = self.conductor.instance_save(
                ctx, current,
                expected_task_states=[instance_obj.RESIZE_MIGRATING])
            migration = self._save_migration(
                ctx, migration, migration_obj.POST_MIGRATING,
                migration_obj.MIGRATING)
            self._record_event(ctx, uuid, 'compute_resize_instance',
                               details='sent to %s' % migration.dest_compute,
                               action=action, start_time=started)
        self.computes.finish_resize(ctx, migration.dest_compute, current,
                                    migration, flavor)

    # --- destination: start it there ---------------------------------------

    @messaging.expose
    def finish_resize(self, ctx, instance, migration, flavor):
        uuid = instance.uuid
        started = obj_base.utcnow()
        action = migration.action
        with self._locks(uuid):
            current = self._current(ctx, uuid,
                                    [instance_obj.RESIZE_MIGRATED],
                                    'finish_resize')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            power_on = migration.old_vm_state != instance_obj.STOPPED
            try:
                self.driver.finish_migration(ctx, current, migration,
                                             power_on)
            except Exception as exc:
                self._fail_at_destination(ctx, current, migration, exc,
                                          started)
                return
            # The migration is finished before the server shows
            # VERIFY_RESIZE, so that a confirm or a revert sent as soon
            # as it does finds it.
            try:
                migration = self._save_migration(
                    ctx, migration, migration_obj.FINISHED,
                    migration_obj.POST_MIGRATING)
            except (exception.MigrationNotFound, exception.Conflict):
                # Ended meanwhile (the server is being deleted).
                self.driver.destroy(current)
                self._abandon(ctx, uuid, migration)
                return
            current.host = self.host
            current.node = migration.dest_node or self.driver.nodename()
            current.flavor = migration.new_flavor
            current.vm_state = instance_obj.RESIZED
            current.task_state = None
            current.power_state = (instance_obj.RUNNING if power_on
                                   else instance_obj.SHUTDOWN)
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.RESIZE_MIGRATED])
            except (exception.InstanceNotFound, exception.Conflict):
                self.driver.destroy(current)
                self._abandon(ctx, uuid, migration)
                return
            self._record_event(ctx, uuid, 'compute_finish_resize',
                               details='running on %s' % self.host,
                               action=action, start_time=started)
        LOG.info('Instance %s moved from %s to %s; waiting for its '
                 'confirmation', uuid, migration.source_compute, self.host,
                 extra={'instance_uuid': uuid})

    def _fail_at_destination(self, ctx, instance, migration, exc,
                             started=None):
        """The destination, whose step began at ``started``, could not
        start the server: its copy goes, the fault is recorded, and the
        source takes it back."""
        uuid = instance.uuid
        LOG.warning('Finishing the move of instance %s on %s failed: %s; '
                    'reverting to %s', uuid, self.host, exc,
                    migration.source_compute, extra={'instance_uuid': uuid})
        self.driver.destroy(instance)
        self._record_event(ctx, uuid, 'compute_finish_resize',
                           result=instance_action.ERROR,
                           details='%s; reverting to %s' % (
                               exception.describe(exc),
                               migration.source_compute),
                           action=migration.action, start_time=started)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_with_fault(
                ctx, instance, fault,
                expected_task_states=[instance_obj.RESIZE_MIGRATED])
            self._save_migration(ctx, migration, migration_obj.ERROR,
                                 migration_obj.POST_MIGRATING)
        except (exception.InstanceNotFound, exception.Conflict):
            self._abandon(ctx, uuid, migration)
            return
        self.computes.finish_revert_resize(ctx, migration.source_compute,
                                           instance, migration)

    # --- source: a failure before the destination took over -----------------

    def _roll_back_at_source(self, ctx, instance, migration, exc, event,
                             task_states, started=None):
        """The source, whose step began at ``started``, failed to send
        the server: it stays here as it was, holding this host again,
        with a fault."""
        uuid = instance.uuid
        LOG.warning('Moving instance %s off %s failed: %s; it stays here',
                    uuid, self.host, exc, extra={'instance_uuid': uuid})
        self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                   uuid)
        power_on = migration.old_vm_state != instance_obj.STOPPED
        self.driver.finish_revert_migration(ctx, instance, migration,
                                            power_on)
        instance.vm_state = migration.old_vm_state or instance_obj.ACTIVE
        instance.task_state = None
        instance.power_state = (instance_obj.RUNNING if power_on
                                else instance_obj.SHUTDOWN)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_with_fault(
                ctx, instance, fault, expected_task_states=task_states)
        except (exception.InstanceNotFound, exception.Conflict):
            pass
        self._save_migration(ctx, migration, migration_obj.ERROR, None)
        self._record_event(ctx, uuid, event, result=instance_action.ERROR,
                           details='%s; it stays on %s' % (
                               exception.describe(exc), self.host),
                           action=migration.action, start_time=started)

    # --- confirm ------------------------------------------------------------

    @messaging.expose
    def confirm_resize(self, ctx, instance, migration):
        """Cast to the source: the move is confirmed."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            try:
                current = self.conductor.instance_get(ctx, uuid)
            except exception.InstanceNotFound:
                current = None
            self.driver.confirm_migration(ctx, instance, migration)
            # The source's resources go back first: a confirmed move
            # holds one host, whatever happens next.
            released = self.scheduler.try_release_resources(
                ctx, migration.uuid)
            if released is False:
                LOG.warning('The source allocations of migration %s could '
                            'not be released now; the scheduler\'s heal '
                            'will', migration.uuid)
            try:
                self._save_migration(ctx, migration,
                                     migration_obj.CONFIRMED,
                                     migration_obj.CONFIRMING)
            except exception.Conflict:
                LOG.info('Migration %s is no longer being confirmed',
                         migration.uuid)
            if current is None or current.vm_state != instance_obj.RESIZED:
                return
            current.vm_state = (instance_obj.STOPPED
                                if current.power_state ==
                                instance_obj.SHUTDOWN
                                else instance_obj.ACTIVE)
            current.task_state = None
            try:
                self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[None,
                                          instance_obj.RESIZE_CONFIRMING],
                    expected_vm_state=instance_obj.RESIZED)
            except (exception.InstanceNotFound, exception.Conflict):
                return
            self._record_event(ctx, uuid, 'compute_confirm_resize',
                               details='%s released' % self.host,
                               action='confirmResize', start_time=started)
        LOG.info('Move of instance %s confirmed; %s released', uuid,
                 self.host, extra={'instance_uuid': uuid})

    # --- revert -------------------------------------------------------------

    @messaging.expose
    def revert_resize(self, ctx, instance, migration):
        """Cast to the destination: the user reverts the move."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid,
                                    [instance_obj.RESIZE_REVERTING],
                                    'revert_resize')
            if current is None:
                return
            self.driver.destroy(current)
            self._record_event(ctx, uuid, 'compute_revert_resize',
                               details='dropped from %s' % self.host,
                               action='revertResize', start_time=started)
        self.computes.finish_revert_resize(ctx, migration.source_compute,
                                           current, migration)

    @messaging.expose
    def finish_revert_resize(self, ctx, instance, migration):
        """Cast to the source: the server runs here again, with its old
        flavor, holding this host (a revert, or a destination that could
        not start it)."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(
                ctx, uuid, [instance_obj.RESIZE_REVERTING,
                            instance_obj.RESIZE_MIGRATED],
                'finish_revert_resize')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            seen = current.task_state
            reverting = seen == instance_obj.RESIZE_REVERTING
            # The instance holds the source again and no longer the
            # destination, in one transaction.
            self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                       uuid)
            power_on = migration.old_vm_state != instance_obj.STOPPED
            self.driver.finish_revert_migration(ctx, current, migration,
                                                power_on)
            current.host = migration.source_compute
            current.node = migration.source_node
            current.flavor = migration.old_flavor
            current.vm_state = migration.old_vm_state or instance_obj.ACTIVE
            current.task_state = None
            current.power_state = (instance_obj.RUNNING if power_on
                                   else instance_obj.SHUTDOWN)
            try:
                self.conductor.instance_save(ctx, current,
                                             expected_task_states=[seen])
            except (exception.InstanceNotFound, exception.Conflict):
                self._abandon(ctx, uuid, migration)
                return
            if reverting:
                self._save_migration(ctx, migration,
                                     migration_obj.REVERTED,
                                     migration_obj.REVERTING)
            self._record_event(
                ctx, uuid, 'compute_finish_revert_resize',
                details='running on %s again' % self.host,
                action='revertResize' if reverting else migration.action,
                start_time=started)
        LOG.info('Instance %s is back on %s', uuid, self.host,
                 extra={'instance_uuid': uuid})

    # --- live migration ------------------------------------------------------
    # The conductor claimed the destination (the migration holds the
    # source) and asked it ``pre_live_migration``; the source sends the
    # running server, then the destination takes it over. A failure
    # leaves it running on the source, which holds it again.

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def pre_live_migration(self, ctx, instance, migration):
        """Call from the conductor to the destination: ready to take the
        server? Raises if not."""
        started = obj_base.utcnow()
        self.driver.pre_live_migration(ctx, instance, migration)
        self._record_event(ctx, instance.uuid, 'compute_pre_live_migration',
                           details='%s is ready' % self.host,
                           action='live-migration', start_time=started)
        return True

    @messaging.expose
    def live_migration(self, ctx, instance, migration):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.MIGRATING],
                                    'live_migration')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            try:
                migration = self._save_migration(
                    ctx, migration, migration_obj.RUNNING,
                    migration_obj.PREPARING)
            except (exception.MigrationNotFound, exception.Conflict):
                LOG.info('Live migration %s of instance %s ended before it '
                         'ran', migration.uuid, uuid,
                         extra={'instance_uuid': uuid})
                return
            try:
                self.driver.live_migration(ctx, current, migration)
            except Exception as exc:
                self._live_rollback(ctx, current, migration, exc, started)
                return
            # The server runs on the destination now: the source's
            # resources go back.
            self.scheduler.try_release_resources(ctx, migration.uuid)
            self._record_event(ctx, uuid, 'compute_live_migration',
                               details='sent to %s' % migration.dest_compute,
                               action='live-migration', start_time=started)
        self.computes.post_live_migration_at_destination(
            ctx, migration.dest_compute, current, migration)

    def _live_rollback(self, ctx, instance, migration, exc,
                       started=None):
        uuid = instance.uuid
        LOG.warning('Live migration of instance %s to %s failed: %s; it '
                    'keeps running on %s', uuid, migration.dest_compute,
                    exc, self.host, extra={'instance_uuid': uuid})
        self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                   uuid)
        instance.task_state = None
        try:
            self.conductor.instance_save(
                ctx, instance, expected_task_states=[instance_obj.MIGRATING])
        except (exception.InstanceNotFound, exception.Conflict):
            pass
        self._save_migration(ctx, migration, migration_obj.ERROR, None)
        self._record_event(ctx, uuid, 'compute_live_migration',
                           result=instance_action.ERROR,
                           details='%s; it stays on %s' % (
                               exception.describe(exc), self.host),
                           action='live-migration', start_time=started)
        self.computes.rollback_live_migration_at_destination(
            ctx, migration.dest_compute, instance, migration)

    @messaging.expose
    def post_live_migration_at_destination(self, ctx, instance, migration):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.MIGRATING],
                                    'post_live_migration_at_destination')
            if current is None:
                self._abandon(ctx, uuid, migration)
                return
            self.driver.post_live_migration_at_destination(
                ctx, current, migration, current.power_state)
            current.host = self.host
            current.node = migration.dest_node or self.driver.nodename()
            current.task_state = None
            try:
                self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.MIGRATING])
            except (exception.InstanceNotFound, exception.Conflict):
                self.driver.destroy(current)
                self._abandon(ctx, uuid, migration)
                return
            self._save_migration(ctx, migration, migration_obj.COMPLETED,
                                 migration_obj.RUNNING)
            self._record_event(
                ctx, uuid, 'compute_post_live_migration_at_destination',
                details='running on %s' % self.host,
                action='live-migration', start_time=started)
        LOG.info('Instance %s live migrated from %s to %s', uuid,
                 migration.source_compute, self.host,
                 extra={'instance_uuid': uuid})

    @messaging.expose
    def rollback_live_migration_at_destination(self, ctx, instance,
                                               migration):
        """Whatever the destination prepared for a live migration that
        failed goes."""
        self.driver.destroy(instance)
