"""A fake hypervisor: configurable size, spawn time and failures; power,
pause and suspend actions with their own injected failures."""

import json
import random
import threading
import time

from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF

# Power states, as Nova's.
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4
SUSPENDED = 7


class ActionFailed(exception.SchedulerSplitException):
    msg_fmt = 'fake driver: injected %(action)s failure on %(host)s'
    code = 500


class FakeDriver:

    def __init__(self, host):
        self.host = host
        # uuid -> power state of each VM this driver runs.
        self._running = {}
        self._lock = threading.Lock()

    def get_available_resource(self):
        opts = CONF.fake_driver
        return {'vcpus': opts.vcpus, 'memory_mb': opts.memory_mb,
                'local_gb': opts.local_gb, 'hypervisor_type': 'fake',
                'hypervisor_version': opts.hypervisor_version,
                'cpu_arch': opts.cpu_arch,
                'cpu_info': json.dumps({
                    'arch': opts.cpu_arch, 'model': 'fake', 'vendor': 'fake',
                    'topology': {'cells': 1, 'sockets': 1,
                                 'cores': opts.vcpus, 'threads': 1},
                    'features': []})}

    def nodename(self):
        return self.host

    def spawn(self, instance):
        opts = CONF.fake_driver
        if opts.spawn_delay:
            time.sleep(opts.spawn_delay)
        failing = (self.host in opts.fail_hosts or
                   (opts.failure_rate and
                    random.random() < opts.failure_rate))
        if failing:
            reason = 'fake driver: injected spawn failure on %s' % self.host
            if opts.failures_reschedulable:
                raise exception.RescheduledException(
                    instance_uuid=instance.uuid, reason=reason)
            raise exception.BuildAbortException(
                instance_uuid=instance.uuid, reason=reason)
        with self._lock:
            self._running[instance.uuid] = RUNNING

    def destroy(self, instance):
        with self._lock:
            self._running.pop(instance.uuid, None)

    def get_power_state(self, instance):
        """The VM's power state; one this process did not start (the
        service restarted) is taken to be as the record says."""
        with self._lock:
            return self._running.get(instance.uuid, instance.power_state)

    def _act(self, instance, action, power_state):
        opts = CONF.fake_driver
        if opts.action_delay:
            time.sleep(opts.action_delay)
        if action in opts.fail_actions:
            raise ActionFailed(action=action, host=self.host)
        with self._lock:
            self._running[instance.uuid] = power_state

    def power_off(self, instance):
        self._act(instance, 'stop', SHUTDOWN)

    def power_on(self, instance):
        self._act(instance, 'start', RUNNING)

    def reboot(self, instance, reboot_type):
        # A failed reboot leaves the VM as it was.
        self._act(instance, 'reboot', RUNNING)

    def pause(self, instance):
        self._act(instance, 'pause', PAUSED)

    def unpause(self, instance):
        self._act(instance, 'unpause', RUNNING)

    def suspend(self, instance):
        self._act(instance, 'suspend', SUSPENDED)

    def resume(self, instance):
        self._act(instance, 'resume', RUNNING)

    def list_instances(self):
        with self._lock:
            return sorted(self._running)
