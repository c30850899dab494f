"""What a compute does for a rebuild of a server on its own host (compute
RPC 1.6).

The API set the server ``rebuilding`` (its new image, name, metadata,
key, user data written), the super-conductor had the scheduler check that
this host still passes the filters for a new image, and casts
``rebuild_in_place`` here. The compute goes on only if the server is
still ``rebuilding`` (a delete that came first wins), rebuilds it from its
image, keeping its claim, and writes the outcome guarded by
``rebuild_spawning``: a server that ran runs again (one in ERROR
included), one that was stopped stays stopped. A failure puts the server
in ERROR with a fault, its VM gone and its claim given back, as a failed
build's: a rebuild of it claims its host again.

An evacuation is a rebuild on another host; it is
:mod:`~scheduler_split.compute.evacuation`'s.
"""

import logging

import oslo_messaging as messaging

from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

LOG = logging.getLogger(__name__)

EVENT = 'compute_rebuild_instance'


def _details(instance, orig_image_ref, preserve_ephemeral):
    details = 'rebuilt from image %s' % instance.image_ref
    if orig_image_ref and orig_image_ref != instance.image_ref:
        details += ' (was %s)' % orig_image_ref
    if preserve_ephemeral:
        details += ', ephemeral disks kept'
    return details


class RebuildMixin:
    """The in-place rebuild of :class:`ComputeManager`."""

    @messaging.expose
    def rebuild_in_place(self, ctx, instance, orig_image_ref=None,
                         preserve_ephemeral=False):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.REBUILDING],
                                    'rebuild_in_place')
            if current is None:
                return
            notifications.instance_event(ctx, self._publisher(), current,
                                         'instance.rebuild.start')
            current.task_state = instance_obj.REBUILD_SPAWNING
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.REBUILDING])
            except (exception.InstanceNotFound, exception.Conflict):
                LOG.info('Instance %s moved on before its rebuild', uuid,
                         extra={'instance_uuid': uuid})
                return
            power_on = current.vm_state != instance_obj.STOPPED
            try:
                self.driver.reimage(ctx, current, power_on)
            except Exception as exc:
                self._rebuild_failed(ctx, current, exc, started)
                return
            current.vm_state = (instance_obj.ACTIVE if power_on
                                else instance_obj.STOPPED)
            current.power_state = (instance_obj.RUNNING if power_on
                                   else instance_obj.SHUTDOWN)
            current.task_state = None
            current.launched_at = obj_base.utcnow()
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.REBUILD_SPAWNING],
                    event=dict(event=EVENT, host=self.host,
                               result=instance_action.SUCCESS,
                               details=_details(current, orig_image_ref,
                                                preserve_ephemeral),
                               action='rebuild', start_time=started))
            except (exception.InstanceNotFound, exception.Conflict):
                # Deleted meanwhile: the delete's own step removes it.
                LOG.info('Instance %s moved on during its rebuild', uuid,
                         extra={'instance_uuid': uuid})
                return
            notifications.instance_event(ctx, self._publisher(), current,
                                         'instance.rebuild.end')
        LOG.info('Instance %s rebuilt on %s from image %s', uuid,
                 self.host, current.image_ref, extra={'instance_uuid': uuid})

    def _rebuild_failed(self, ctx, instance, exc, started=None):
        uuid = instance.uuid
        LOG.warning('Rebuilding instance %s on %s failed: %s', uuid,
                    self.host, exc, extra={'instance_uuid': uuid})
        self.driver.destroy(instance)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            instance = self.conductor.instance_save_error(
                ctx, instance, fault,
                expected_task_states=[instance_obj.REBUILD_SPAWNING])
        except (exception.InstanceNotFound, exception.Conflict):
            return
        # In ERROR it holds nothing, as a failed build.
        self.scheduler.try_release_resources(ctx, uuid)
        self._record_event(ctx, uuid, EVENT, result=instance_action.ERROR,
                           details=exception.describe(exc),
                           action='rebuild', start_time=started)
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.rebuild.error', exc)
