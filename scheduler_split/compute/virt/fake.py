"""A fake hypervisor: configurable size, spawn time and failures."""

import json
import random
import threading
import time

from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF


class FakeDriver:

    def __init__(self, host):
        self.host = host
        self._running = set()
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
            self._running.add(instance.uuid)

    def destroy(self, instance):
        with self._lock:
            self._running.discard(instance.uuid)

    def list_instances(self):
        with self._lock:
            return sorted(self._running)
