"""What a compute does for a shelve, an offload and an unshelve (compute
RPC 1.7).

A shelve powers the server off and keeps it as its shelved image (the API
made the image record): the server is SHELVED, still on this host and
holding its claim. With ``[DEFAULT] shelved_offload_time`` 0 it is
offloaded at once; later, by the API's ``shelveOffload`` or its cell
conductor's sweep. An offload destroys the VM and gives the claim back:
the server is SHELVED_OFFLOADED, on no host.

An unshelve of a SHELVED server powers it on here. One of an offloaded
server comes with the claim the scheduler made for this host: the server
is spawned as a build is, and a spawn that fails here in a way another
host may not (``RescheduledException``) gives the claim back and hands
the unshelve to the cell conductor for the next alternate
(``conductor/tasks/unshelve.py``); any other failure leaves the server
SHELVED_OFFLOADED with its fault.

Every step goes on only if the server is still in the task the API (or a
conductor) set, and writes its outcome guarded by it: a delete that came
first wins.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.compute import snapshot
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

CONF = conf.CONF
LOG = logging.getLogger(__name__)

SHELVE_EVENT = 'compute_shelve_instance'
OFFLOAD_EVENT = 'compute_shelve_offload_instance'
UNSHELVE_EVENT = 'compute_unshelve_instance'

# What a shelve writes into the server's system metadata, and an
# unshelve removes.
SHELVED_KEYS = ('shelved_at', 'shelved_host', 'shelved_image_id')


def _without_shelved_keys(system_metadata):
    return {key: value for key, value in system_metadata.items()
            if key not in SHELVED_KEYS}


class ShelveMixin:
    """The 1.7 casts of :class:`ComputeManager`."""

    @messaging.expose
    def shelve_instance(self, ctx, instance, image_id):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.SHELVING],
                                    'shelve_instance')
            if current is None:
                return
            notifications.instance_event(ctx, self._publisher(), current,
                                         'instance.shelve.start')
            try:
                self.driver.shelve(ctx, current, image_id)
            except Exception as exc:
                self._shelve_step_failed(ctx, current, exc, SHELVE_EVENT,
                                         'shelve', instance_obj.SHELVING,
                                         started)
                return
            offload = CONF.shelved_offload_time == 0
            system_metadata = dict(current.system_metadata)
            system_metadata.update({
                'shelved_at': obj_base.utcnow().isoformat(),
                'shelved_host': self.host,
                'shelved_image_id': image_id or ''})
            current.system_metadata = system_metadata
            current.vm_state = instance_obj.SHELVED
            current.power_state = instance_obj.SHUTDOWN
            current.task_state = (instance_obj.SHELVING_OFFLOADING
                                  if offload else None)
            try:
                current = self.conductor.instance_save(
                    ctx, current,
                    expected_task_states=[instance_obj.SHELVING],
                    event=dict(event=SHELVE_EVENT, host=self.host,
                               result=instance_action.SUCCESS,
                               details='shelved as image %s' % image_id,
                               action='shelve', start_time=started))
            except (exception.InstanceNotFound, exception.Conflict):
                LOG.info('Instance %s moved on during its shelve', uuid,
                         extra={'instance_uuid': uuid})
                return
            notifications.instance_event(ctx, self._publisher(), current,
                                         'instance.shelve.end')
            LOG.info('Instance %s shelved on %s', uuid, self.host,
                     extra={'instance_uuid': uuid})
            if offload:
                self._offload(ctx, current, 'shelve', obj_base.utcnow())

    @messaging.expose
    def shelve_offload_instance(self, ctx, instance):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid,
                                    [instance_obj.SHELVING_OFFLOADING],
                                    'shelve_offload_instance')
            if current is None:
                return
            self._offload(ctx, current, 'shelveOffload', started)

    def _offload(self, ctx, instance, action, started):
        """The VM goes, then the claim (nothing else claims for a server
        while it is ``shelving_offloading``, so this release never drops
        a newer claim), then the server is SHELVED_OFFLOADED on no host,
        written only while it is still offloading."""
        uuid = instance.uuid
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.shelve_offload.start')
        try:
            self.driver.destroy(instance)
        except Exception as exc:
            self._shelve_step_failed(ctx, instance, exc, OFFLOAD_EVENT,
                                     action,
                                     instance_obj.SHELVING_OFFLOADING,
                                     started)
            return
        self.scheduler.try_release_resources(ctx, uuid)
        instance.vm_state = instance_obj.SHELVED_OFFLOADED
        instance.power_state = instance_obj.SHUTDOWN
        instance.task_state = None
        instance.host = None
        instance.node = None
        try:
            instance = self.conductor.instance_save(
                ctx, instance,
                expected_task_states=[instance_obj.SHELVING_OFFLOADING],
                event=dict(event=OFFLOAD_EVENT, host=self.host,
                           result=instance_action.SUCCESS,
                           details='offloaded from %s' % self.host,
                           action=action, start_time=started))
        except (exception.InstanceNotFound, exception.Conflict):
            LOG.info('Instance %s moved on during its offload', uuid,
                     extra={'instance_uuid': uuid})
            return
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.shelve_offload.end')
        LOG.info('Instance %s offloaded from %s', uuid, self.host,
                 extra={'instance_uuid': uuid})

    def _shelve_step_failed(self, ctx, instance, exc, event, action,
                            task_state, started):
        """A shelve or an offload that failed: the server keeps its state
        and its claim, its task cleared, with the fault and the event in
        Error."""
        uuid = instance.uuid
        LOG.warning('%s of instance %s on %s failed: %s', action, uuid,
                    self.host, exc, extra={'instance_uuid': uuid})
        instance.task_state = None
        instance.power_state = self.driver.get_power_state(instance)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_with_fault(
                ctx, instance, fault, expected_task_states=[task_state])
        except (exception.InstanceNotFound, exception.Conflict):
            return
        self._record_event(ctx, uuid, event, result=instance_action.ERROR,
                           details=exception.describe(exc), action=action,
                           start_time=started)

    @messaging.expose
    def unshelve_instance(self, ctx, instance, request_spec=None,
                          host_list=None, retry=None, node=None):
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [instance_obj.UNSHELVING],
                                    'unshelve_instance')
            if current is None:
                return
            if current.vm_state == instance_obj.SHELVED:
                self._power_on_shelved(ctx, current, started)
            elif current.vm_state == instance_obj.SHELVED_OFFLOADED:
                self._spawn_unshelved(ctx, current, request_spec,
                                      host_list or [], retry, node, started)

    def _unshelved(self, ctx, instance, details, expected_vm_state,
                   started):
        """The server runs here again: ACTIVE, its shelved keys gone,
        and its shelved image, which nothing needs any more (from
        compute RPC 1.8; before, the super-conductor deleted it)."""
        shelved_image = (instance.system_metadata or {}).get(
            'shelved_image_id')
        instance.vm_state = instance_obj.ACTIVE
        instance.power_state = instance_obj.RUNNING
        instance.task_state = None
        instance.system_metadata = _without_shelved_keys(
            instance.system_metadata)
        instance = self.conductor.instance_save(
            ctx, instance, expected_task_states=[instance_obj.UNSHELVING],
            expected_vm_state=expected_vm_state,
            event=dict(event=UNSHELVE_EVENT, host=self.host,
                       result=instance_action.SUCCESS, details=details,
                       action='unshelve', start_time=started))
        if shelved_image:
            snapshot.delete_image(ctx, shelved_image)
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.unshelve.end')
        LOG.info('Instance %s unshelved on %s', instance.uuid, self.host,
                 extra={'instance_uuid': instance.uuid})
        return instance

    def _power_on_shelved(self, ctx, instance, started):
        uuid = instance.uuid
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.unshelve.start')
        try:
            self.driver.power_on(instance)
        except Exception as exc:
            self._shelve_step_failed(ctx, instance, exc, UNSHELVE_EVENT,
                                     'unshelve', instance_obj.UNSHELVING,
                                     started)
            return
        try:
            self._unshelved(ctx, instance, 'powered on on %s' % self.host,
                            instance_obj.SHELVED, started)
        except (exception.InstanceNotFound, exception.Conflict):
            LOG.info('Instance %s moved on during its unshelve', uuid,
                     extra={'instance_uuid': uuid})

    def _spawn_unshelved(self, ctx, instance, request_spec, host_list,
                         retry, node, started):
        uuid = instance.uuid
        instance.host = self.host
        instance.node = node
        try:
            # Taken here, guarded: a delete that came first wins.
            instance = self.conductor.instance_save(
                ctx, instance, expected_task_states=[instance_obj.UNSHELVING],
                expected_vm_state=instance_obj.SHELVED_OFFLOADED)
        except (exception.InstanceNotFound, exception.Conflict):
            LOG.info('Unshelve of instance %s not started: it moved on',
                     uuid, extra={'instance_uuid': uuid})
            current = self.conductor.instance_get(ctx, uuid,
                                                  read_deleted=True)
            if current.deleted:
                self.scheduler.try_release_resources(ctx, uuid)
            return
        notifications.instance_event(ctx, self._publisher(), instance,
                                     'instance.unshelve.start')
        try:
            # From the disk it was shelved as.
            self.driver.spawn(ctx, instance, image_id=(
                instance.system_metadata or {}).get('shelved_image_id'))
        except Exception as exc:
            # A spawn that failed weighs this host down, as a build's.
            self.resource_tracker.build_failed(ctx)
            self._unshelve_spawn_failed(ctx, instance, request_spec,
                                        host_list, retry, exc, started)
            return
        self.resource_tracker.build_succeeded(ctx)
        instance.launched_at = obj_base.utcnow()
        try:
            self._unshelved(ctx, instance, 'spawned on %s' % self.host,
                            instance_obj.SHELVED_OFFLOADED, started)
        except (exception.InstanceNotFound, exception.Conflict):
            # Deleted meanwhile (its delete drops the claim), or given up
            # by the lost-task sweep, which released the claim.
            LOG.info('Instance %s moved on during its unshelve', uuid,
                     extra={'instance_uuid': uuid})
            self.driver.destroy(instance)
            self.scheduler.try_release_resources(ctx, uuid)

    def _unshelve_spawn_failed(self, ctx, instance, request_spec, host_list,
                               retry, exc, started):
        uuid = instance.uuid
        self.driver.destroy(instance)
        reschedulable = (isinstance(exc, exception.RescheduledException)
                         and request_spec is not None and retry is not None)
        LOG.warning('Unshelving instance %s on %s failed%s: %s', uuid,
                    self.host, ', rescheduling' if reschedulable else '',
                    exc, extra={'instance_uuid': uuid})
        self._record_event(
            ctx, uuid, UNSHELVE_EVENT, result=instance_action.ERROR,
            details=exception.describe(exc) + (
                '; rescheduling' if reschedulable else ''),
            action='unshelve', start_time=started)
        # Nothing else claims for the server while it is unshelving: the
        # claim goes before the server leaves this host.
        self.scheduler.try_release_resources(ctx, uuid)
        instance.host = None
        instance.node = None
        if not reschedulable:
            instance.task_state = None
            fault = objects.InstanceFault.from_exception(uuid, exc,
                                                         host=self.host)
            try:
                self.conductor.instance_save_with_fault(
                    ctx, instance, fault,
                    expected_task_states=[instance_obj.UNSHELVING])
            except (exception.InstanceNotFound, exception.Conflict):
                pass
            return
        try:
            instance = self.conductor.instance_save(
                ctx, instance, expected_task_states=[instance_obj.UNSHELVING],
                expected_vm_state=instance_obj.SHELVED_OFFLOADED)
        except (exception.InstanceNotFound, exception.Conflict):
            return
        self.conductor.unshelve_reschedule(ctx, instance, request_spec,
                                           host_list, retry)
