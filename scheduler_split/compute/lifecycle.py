"""What a compute does for a server's power, pause and suspend actions
(compute RPC 1.3): stop, start, reboot, pause, unpause, suspend, resume;
and for a soft delete and its restore (1.6), which power it off and on.

The API set the task state (``powering-off``, ...) guarded by the one it
read; the compute goes on only if the instance still has that task state
(a delete, or another action, that moved it first wins), asks the driver,
and writes the outcome guarded by that task state again. A failure keeps
the state the server had (the task state is cleared) and records a fault
and an event in Error; only a reboot that leaves the VM not running puts
the server in ERROR, as in Nova. The claim of the server is never
touched: a stopped server keeps its resources on its host.
"""

import collections
import logging

import oslo_messaging as messaging

from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

LOG = logging.getLogger(__name__)

Action = collections.namedtuple('Action', (
    'action', 'task_state', 'event', 'notification', 'driver_method',
    'vm_state', 'power_state'))

ACTIONS = {
    'stop': Action('stop', instance_obj.POWERING_OFF,
                   'compute_stop_instance', 'power_off', 'power_off',
                   instance_obj.STOPPED, instance_obj.SHUTDOWN),
    'start': Action('start', instance_obj.POWERING_ON,
                    'compute_start_instance', 'power_on', 'power_on',
                    instance_obj.ACTIVE, instance_obj.RUNNING),
    'reboot': Action('reboot', instance_obj.REBOOTING,
                     'compute_reboot_instance', 'reboot', 'reboot',
                     instance_obj.ACTIVE, instance_obj.RUNNING),
    'pause': Action('pause', instance_obj.PAUSING,
                    'compute_pause_instance', 'pause', 'pause',
                    instance_obj.PAUSED, instance_obj.PAUSED_POWER),
    'unpause': Action('unpause', instance_obj.UNPAUSING,
                      'compute_unpause_instance', 'unpause', 'unpause',
                      instance_obj.ACTIVE, instance_obj.RUNNING),
    'suspend': Action('suspend', instance_obj.SUSPENDING,
                      'compute_suspend_instance', 'suspend', 'suspend',
                      instance_obj.SUSPENDED, instance_obj.SUSPENDED_POWER),
    'resume': Action('resume', instance_obj.RESUMING,
                     'compute_resume_instance', 'resume', 'resume',
                     instance_obj.ACTIVE, instance_obj.RUNNING),
    # A delete with [DEFAULT] reclaim_instance_interval: its instance
    # action is the delete's.
    'soft_delete': Action('delete', instance_obj.SOFT_DELETING,
                          'compute_soft_delete_instance', 'soft_delete',
                          'soft_delete', instance_obj.SOFT_DELETED,
                          instance_obj.SHUTDOWN),
    'restore': Action('restore', instance_obj.RESTORING,
                      'compute_restore_instance', 'restore', 'restore',
                      instance_obj.ACTIVE, instance_obj.RUNNING),
}

# The task states of these actions: none of them is a build.
TASK_STATES = frozenset([a.task_state for a in ACTIONS.values()] +
                        [instance_obj.REBOOTING_HARD])


class LifecycleMixin:
    """The 1.3 casts of :class:`ComputeManager`."""

    @messaging.expose
    def stop_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['stop'])

    @messaging.expose
    def start_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['start'])

    @messaging.expose
    def reboot_instance(self, ctx, instance, reboot_type='SOFT'):
        action = ACTIONS['reboot']
        if reboot_type == 'HARD':
            action = action._replace(task_state=instance_obj.REBOOTING_HARD)
        self._lifecycle(ctx, instance, action, reboot_type=reboot_type)

    @messaging.expose
    def pause_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['pause'])

    @messaging.expose
    def unpause_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['unpause'])

    @messaging.expose
    def suspend_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['suspend'])

    @messaging.expose
    def resume_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['resume'])

    @messaging.expose
    def soft_delete_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['soft_delete'])

    @messaging.expose
    def restore_instance(self, ctx, instance):
        self._lifecycle(ctx, instance, ACTIONS['restore'])

    def _publisher(self):
        return 'scheduler-split-compute:%s' % self.host

    def _lifecycle(self, ctx, instance, action, **driver_kwargs):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            try:
                instance = self.conductor.instance_get(ctx, uuid)
            except exception.InstanceNotFound:
                LOG.info('Instance %s was deleted before its %s', uuid,
                         action.action, extra={'instance_uuid': uuid})
                return
            if instance.task_state != action.task_state:
                # A delete (or a hard reboot) took over meanwhile.
                LOG.info('Not doing %s of instance %s: it is %s/%s now',
                         action.action, uuid, instance.vm_state,
                         instance.task_state, extra={'instance_uuid': uuid})
                return
            notifications.instance_event(
                ctx, self._publisher(), instance,
                'instance.%s.start' % action.notification)
            try:
                getattr(self.driver, action.driver_method)(
                    instance, **driver_kwargs)
            except Exception as exc:
                self._lifecycle_failed(ctx, instance, action, exc,
                                       started)
                return
            self._record_event(ctx, uuid, action.event,
                               action=action.action, start_time=started)
            instance.vm_state = action.vm_state
            instance.power_state = action.power_state
            instance.task_state = None
            try:
                instance = self.conductor.instance_save(
                    ctx, instance, expected_task_states=[action.task_state])
            except (exception.InstanceNotFound, exception.Conflict):
                # A delete (or a hard reboot) took over meanwhile; its
                # own step decides what the server becomes.
                LOG.info('Instance %s moved on during its %s', uuid,
                         action.action, extra={'instance_uuid': uuid})
                return
            notifications.instance_event(
                ctx, self._publisher(), instance,
                'instance.%s.end' % action.notification)
            LOG.info('Instance %s: %s done on %s', uuid, action.action,
                     self.host, extra={'instance_uuid': uuid})

    def _lifecycle_failed(self, ctx, instance, action, exc,
                          started=None):
        uuid = instance.uuid
        LOG.warning('%s of instance %s failed: %s', action.action, uuid,
                    exc, extra={'instance_uuid': uuid})
        self._record_event(ctx, uuid, action.event,
                           result=instance_action.ERROR,
                           details=exception.describe(exc),
                           action=action.action, start_time=started)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        power_state = self.driver.get_power_state(instance)
        try:
            if (action.action == 'reboot' and
                    power_state != instance_obj.RUNNING):
                # As Nova: a reboot that left the VM down is an ERROR.
                instance = self.conductor.instance_save_error(
                    ctx, instance, fault,
                    expected_task_states=[action.task_state])
            else:
                instance.task_state = None
                instance.power_state = power_state
                instance = self.conductor.instance_save_with_fault(
                    ctx, instance, fault,
                    expected_task_states=[action.task_state])
        except (exception.InstanceNotFound, exception.Conflict):
            return
        if action.action == 'reboot':
            notifications.instance_event(
                ctx, self._publisher(), instance, 'instance.reboot.error',
                exc)

    def _settle_lifecycle(self, ctx, instance):
        """At a start: an action that was running when the service stopped
        will not finish; its task state is cleared (guarded by it), the
        server keeps its state and its claim (a soft delete ends
        SOFT_DELETED: the API took the delete already)."""
        uuid = instance.uuid
        with self._locks(uuid):
            seen = instance.task_state
            instance.task_state = None
            instance.power_state = self.driver.get_power_state(instance)
            if seen == instance_obj.SOFT_DELETING:
                # The delete was taken (the server counts against no
                # quota): it ends as a soft delete, for its reclaim.
                instance.vm_state = instance_obj.SOFT_DELETED
            try:
                self.conductor.instance_save(ctx, instance,
                                             expected_task_states=[seen])
            except (exception.InstanceNotFound, exception.Conflict):
                return
            LOG.warning('Instance %s was %s when this compute stopped; '
                        'its task state is cleared', uuid, seen,
                        extra={'instance_uuid': uuid})
