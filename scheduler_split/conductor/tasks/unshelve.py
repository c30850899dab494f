"""Unshelving: a shelved server runs again; an offloaded one is placed
again through the scheduler, like a boot, inside its cell.

The API set the server ``unshelving`` (guarded by the state it read) and
casts ``unshelve_instance`` to the super-conductor (:class:`UnshelveTask`).
A server still SHELVED is on its host and holds its claim: its compute
powers it on. One SHELVED_OFFLOADED has neither: the scheduler claims a
host for it in its own cell, from the request it was booted with (its
group's hard policies hold again, its zone is the one the unshelve asked
for, if any, and ``host`` when an admin named one, still filtered), and
answers the same-cell alternates with it. The compute spawns it there
(``scheduler_split/compute/shelve.py``); a spawn that fails there is
handed by the compute to its cell conductor, which claims the next
alternate and casts the unshelve to it (:class:`UnshelveRescheduleTask`).

An unshelve that will not happen (no host takes it, every alternate
failed, or it was lost) leaves the server SHELVED_OFFLOADED with no claim,
its fault recorded and the ``unshelve`` action's event in Error
(:func:`back_to_offloaded`): it may be unshelved again.
"""

import logging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import build
from scheduler_split.conductor.tasks import reschedule
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

CONF = conf.CONF
LOG = logging.getLogger(__name__)

EVENT = 'conductor_unshelve_instance'
EXHAUSTED = ('Exhausted all hosts available for unshelving instance %s.')


def back_to_offloaded(scheduler, ctx, instance, exc, event, host=None,
                      action='unshelve', start_time=None):
    """An unshelve of an offloaded server that will not happen, or an
    offload nobody finished; ``ctx`` targets the server's cell and
    ``instance`` is as read, in its task. Its claim goes first (nothing
    else claims for a server in either task, so no newer claim can be
    dropped), then it is SHELVED_OFFLOADED on no host with the fault
    ``exc``, written only while it is still in the task and state read;
    the event ``event`` (on ``host``) of ``action`` in Error says why.
    Returns whether the server was put back."""
    seen_task, seen_vm = instance.task_state, instance.vm_state
    scheduler.try_release_resources(ctx, instance.uuid)
    instance.vm_state = instance_obj.SHELVED_OFFLOADED
    instance.task_state = None
    instance.host = None
    instance.node = None
    try:
        instance.save(
            ctx, expected_task_state=seen_task, expected_vm_state=seen_vm,
            fault=objects.InstanceFault.from_exception(instance.uuid, exc),
            event=dict(event=event, host=host,
                       result=instance_action.ERROR,
                       details=exception.describe(exc), action=action,
                       start_time=start_time))
    except (exception.InstanceNotFound, exception.Conflict):
        return False
    return True


class UnshelveTask(base.ConductorTask):
    """The super-conductor's part of an unshelve."""

    def __init__(self, scheduler, ctx, instance, spec_changes=None,
                 host=None, computes=compute_rpcapi.ComputeAPI.for_cell):
        """``spec_changes``: RequestSpec field -> value the unshelve
        changes for good (its availability zone); ``host``: the host an
        admin named."""
        self.scheduler = scheduler
        self.ctx = ctx
        self.uuid = instance.uuid
        self.spec_changes = dict(spec_changes or {})
        self.host = host
        self.computes = computes
        self.cell = self.cctx = self.instance = None
        self.placing = False

    def _execute(self):
        found = base.locate_in_task(self.ctx, self.uuid,
                                    instance_obj.UNSHELVING, 'unshelve')
        if found is None:
            return
        self.cell, self.cctx, self.instance = found
        instance = self.instance
        compute = self.computes(self.cell)
        if instance.vm_state == instance_obj.SHELVED:
            # Still on its host, with its claim: it only runs again.
            instance_action.record_event(
                self.cctx, self.uuid, EVENT, host=CONF.host,
                details='shelved on %s, not offloaded' % instance.host,
                action='unshelve', start_time=self.started)
            compute.unshelve_instance(self.ctx, instance.host, instance)
            return
        stored = objects.RequestSpec.of_instance(self.ctx, instance)
        for name, value in self.spec_changes.items():
            setattr(stored, name, value)
        spec = self._spec(stored)
        self.placing = True
        [host_list] = self.scheduler.select_destinations(
            self.ctx, spec, [self.uuid], return_alternates=True,
            num_alternates=CONF.conductor.build_max_attempts - 1)
        chosen, rest = host_list[0], host_list[1:]
        if build.take_host_zone(instance, stored, chosen):
            instance.save(self.cctx,
                          expected_task_state=instance_obj.UNSHELVING)
        retry = objects.SchedulerRetries(num_attempts=1,
                                         hosts=[chosen.service_host])
        instance_action.record_event(
            self.cctx, self.uuid, EVENT, host=CONF.host,
            details='%s claimed (alternates: %s)' % (
                chosen.service_host,
                ', '.join(s.service_host for s in rest) or 'none'),
            action='unshelve', start_time=self.started)
        compute.unshelve_instance(self.ctx, chosen.service_host, instance,
                                  request_spec=spec, host_list=rest,
                                  retry=retry, node=chosen.nodename)
        self.placing = False
        self._keep(stored)
        if not compute.uploads_images():
            # A compute of 1.8 spawns from it and deletes it then.
            self._delete_shelved_image()

    def _spec(self, stored):
        """What the scheduler places the server with: the request it was
        booted with, as the unshelve changed it, kept to its cell (and to
        ``self.host`` if one was named)."""
        spec = stored.obj_clone()
        spec.instance_uuid = self.uuid
        spec.flavor = self.instance.flavor
        spec.num_instances = 1
        spec.retry = None
        spec.requested_cell = self.cell.uuid
        spec.ignore_hosts = None
        spec.force_hosts = [self.host] if self.host else None
        spec.force_nodes = None
        if spec.get('instance_group') is not None:
            # Where the other members are is the scheduler's to read.
            spec.instance_group.hosts = []
        return spec

    def _keep(self, stored):
        """The unshelve's zone holds for the server's later moves, once a
        host took it."""
        if not self.spec_changes:
            return
        try:
            stored.save(self.ctx)
        except Exception:
            LOG.exception('Could not keep the availability zone of the '
                          'unshelve of instance %s in its request spec',
                          self.uuid, extra={'instance_uuid': self.uuid})

    def _delete_shelved_image(self):
        """The image the shelve saved goes once a host took the server
        (the server keeps booting from the image it was created with)."""
        image_id = self.instance.system_metadata.get('shelved_image_id')
        if not image_id:
            return
        try:
            image_client.delete_image(self.ctx, image_id)
        except exception.ImageNotFound:
            pass
        except Exception:
            LOG.exception('Could not delete the shelved image %s of '
                          'instance %s', image_id, self.uuid,
                          extra={'instance_uuid': self.uuid})

    def rollback(self, exc):
        if not self.placing:
            return False
        exception.log_failure(LOG, exc, 'Scheduling the unshelve of '
                              'instance %s failed', self.uuid,
                              extra={'instance_uuid': self.uuid})
        back_to_offloaded(self.scheduler, self.cctx, self.instance, exc,
                          EVENT, host=CONF.host, start_time=self.started)
        return True


class UnshelveRescheduleTask(reschedule.RescheduleTask):
    """An unshelve whose spawn failed on its host: on to the next
    alternate of the cell, or SHELVED_OFFLOADED again with the
    exhausted-hosts fault and no claim."""

    event = 'conductor_unshelve_reschedule'
    what = 'the unshelve of instance'
    action = 'unshelve'

    def _execute(self):
        uuid = self.instance.uuid
        try:
            current = objects.Instance.get_by_uuid(self.ctx, uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its reschedule',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(self.ctx, uuid)
            return
        if (current.task_state != instance_obj.UNSHELVING or
                current.vm_state != instance_obj.SHELVED_OFFLOADED or
                current.host):
            LOG.info('Not rescheduling the unshelve of instance %s: it is '
                     '%s/%s on %s now', uuid, current.vm_state,
                     current.task_state, current.host,
                     extra={'instance_uuid': uuid})
            return
        self.instance = current
        super()._execute()

    def _prepare(self, selection):
        if build.take_host_zone(self.instance, self.request_spec,
                                selection):
            self.instance.save(self.ctx,
                               expected_task_state=instance_obj.UNSHELVING)

    def _hand_over(self, selection, rest):
        self.compute.unshelve_instance(
            self.ctx, selection.service_host, self.instance,
            request_spec=self.request_spec, host_list=rest,
            retry=self.retry, node=selection.nodename)

    def _exhausted(self):
        uuid = self.instance.uuid
        return exception.MaxRetriesExceeded(reason='%s (hosts tried: %s)' % (
            EXHAUSTED % uuid, ', '.join(self.retry.hosts)))

    def rollback(self, exc):
        uuid = self.instance.uuid
        if self.exhausted:
            LOG.warning('Instance %s: %s', uuid, exc.format_message(),
                        extra={'instance_uuid': uuid})
        else:
            exception.log_failure(LOG, exc, 'Rescheduling the unshelve of '
                                  'instance %s failed', uuid,
                                  extra={'instance_uuid': uuid})
        back_to_offloaded(self.scheduler, self.ctx, self.instance, exc,
                          self.event, host=CONF.host,
                          start_time=self.started)
        return True
