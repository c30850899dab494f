"""State the hypervisor owns: a compute's servers against its guests.

Periodic, every ``[DEFAULT] sync_power_state_interval`` seconds (and at
once for a server the driver reports an event of): each server of this
host that no action is running on gets the power state its guest has.
As in Nova, the database decides what a server should be; the
hypervisor decides what it is:

- an ACTIVE server whose guest stopped on its own (its QEMU died, it was
  shut down from inside) or was suspended from outside is stopped: it
  becomes SHUTOFF, with a ``stop`` instance action that says why;
- a SHUTOFF server whose guest was started outside is powered off again,
  with the same record;
- a guest this host runs that no server of its cell owns (deleted while
  the host was away, or left behind by a crash) is handled as
  ``[DEFAULT] running_deleted_instance_action`` says.

A server the host cannot see (the driver answers NOSTATE) is only
logged: the settle and fencing checks own lost builds and moves.
"""

import logging

from scheduler_split.compute.virt import driver as virt_driver
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

SYNC_EVENT = 'compute_sync_power_state'

# Power states of a guest that is not running for its user.
_STOPPED = (virt_driver.SHUTDOWN, virt_driver.CRASHED,
            virt_driver.SUSPENDED)


class PowerSyncMixin:
    """The power-state checks of :class:`ComputeManager`."""

    def sync_power_states(self):
        """Periodic: every server of this host against its guest."""
        ctx = ss_context.get_admin_context()
        for instance in self.conductor.instance_get_all_by_host(
                ctx, self.host):
            if instance.task_state is not None:
                continue
            try:
                self.sync_power_state(instance.uuid)
            except Exception:
                LOG.exception('Could not compare the power state of '
                              'instance %s', instance.uuid,
                              extra={'instance_uuid': instance.uuid})

    def sync_power_state(self, uuid):
        """Compare one server with its guest, under its lock, as read
        now; what an action runs on is that action's."""
        ctx = ss_context.get_admin_context()
        with self._locks(uuid):
            try:
                current = self.conductor.instance_get(ctx, uuid)
            except exception.InstanceNotFound:
                return
            if (current.host != self.host or current.task_state is not None
                    or self._is_building(uuid)):
                return
            power = self.driver.get_power_state(current)
            if power == current.power_state:
                return
            if power == virt_driver.NOSTATE:
                LOG.warning('Instance %s is %s on %s, but its hypervisor '
                            'does not hold it', uuid, current.vm_state,
                            self.host, extra={'instance_uuid': uuid})
                return
            self._power_state_changed(ctx, current, power)

    def _power_state_changed(self, ctx, current, power):
        uuid = current.uuid
        was = current.power_state
        stop = ((current.vm_state == instance_obj.ACTIVE and
                 power in _STOPPED) or
                (current.vm_state == instance_obj.STOPPED and
                 power not in _STOPPED))
        if stop and power not in _STOPPED:
            LOG.warning('Instance %s is SHUTOFF but its guest on %s runs; '
                        'powering it off', uuid, self.host,
                        extra={'instance_uuid': uuid})
            try:
                self.driver.power_off(current)
            except Exception as exc:
                LOG.warning('Could not power off instance %s: %s', uuid,
                            exc, extra={'instance_uuid': uuid})
                return
            power = self.driver.get_power_state(current)
        if stop:
            current.vm_state = instance_obj.STOPPED
        current.power_state = power
        # The project of the server, so that its actions list shows it.
        ctx = ss_context.RequestContext(
            is_admin=True, overwrite=False, project_id=current.project_id,
            user_id=current.user_id)
        try:
            self.conductor.instance_save(ctx, current,
                                         expected_task_states=[None])
        except (exception.InstanceNotFound, exception.Conflict):
            # An action or a delete came first: its own step decides.
            return
        if not stop:
            LOG.info('Instance %s: power state %s -> %s on %s', uuid, was,
                     power, self.host, extra={'instance_uuid': uuid})
            return
        reason = ('its guest on %s stopped on its own (power state %s)'
                  % (self.host, power))
        LOG.warning('Instance %s is SHUTOFF: %s', uuid, reason,
                    extra={'instance_uuid': uuid})
        self._record_event(ctx, uuid, SYNC_EVENT, details=reason,
                           action='stop')

    def reap_unowned_guests(self):
        """Periodic: the guests of this host no server of its cell owns,
        handled as ``[DEFAULT] running_deleted_instance_action`` says."""
        action = CONF.running_deleted_instance_action
        if action == 'noop':
            return
        ctx = ss_context.get_admin_context()
        for uuid in self.driver.list_instances():
            if self._is_building(uuid):
                continue
            try:
                current = self.conductor.instance_get(ctx, uuid,
                                                      read_deleted=True)
            except exception.InstanceNotFound:
                current = None
            if current is not None and not current.deleted:
                continue
            self._unowned(uuid, current, action)

    def _unowned(self, uuid, current, action):
        with self._locks(uuid):
            instance = current or instance_obj.Instance(uuid=uuid)
            if action == 'log':
                LOG.warning('A guest on %s belongs to instance %s, which %s',
                            self.host, uuid, 'is deleted' if current else
                            'this cell does not know',
                            extra={'instance_uuid': uuid})
            elif action == 'shutdown':
                LOG.warning('Powering off the guest of deleted instance %s '
                            'on %s', uuid, self.host,
                            extra={'instance_uuid': uuid})
                self.driver.power_off(instance)
            else:
                LOG.warning('Destroying the guest of deleted instance %s on '
                            '%s', uuid, self.host,
                            extra={'instance_uuid': uuid})
                self.driver.destroy(instance)
