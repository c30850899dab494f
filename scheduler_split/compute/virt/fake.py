"""A fake hypervisor: configurable size, spawn time and failures; power,
pause and suspend actions with their own injected failures."""

import json
import os
import random
import tempfile
import threading
import time

from scheduler_split.compute.virt import driver
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import provider_model

CONF = conf.CONF

RUNNING = driver.RUNNING
PAUSED = driver.PAUSED
SHUTDOWN = driver.SHUTDOWN
SUSPENDED = driver.SUSPENDED


_DIAGNOSTIC_STATES = {RUNNING: 'running', PAUSED: 'paused',
                      SHUTDOWN: 'shutdown', SUSPENDED: 'suspended'}


def _boot_banner(instance, host):
    name = instance.get('hostname') or instance.uuid
    return ['fake hypervisor on %s: booting %s' % (host, instance.uuid),
            'Image %s' % (instance.get('image_ref') or '-'),
            'Kernel: fake, root on %s' % FakeDriver.root_device_name,
            'Starting %s ... OK' % name,
            '%s login:' % name]


class ActionFailed(exception.SchedulerSplitException):
    msg_fmt = 'fake driver: injected %(action)s failure on %(host)s'
    code = 500


class MoveStepFailed(exception.SchedulerSplitException):
    msg_fmt = 'fake driver: injected %(step)s failure on %(host)s'
    code = 500


class _Record(dict):
    """uuid -> power state of the VMs a fake host runs, written whole to
    ``<record_dir>/<host>.json`` at every change when ``[fake_driver]
    record_dir`` is set: what runs where, read from outside the process
    (a test counting servers that run on two hosts at once). Changed
    only under the driver's lock."""

    def __init__(self, host):
        super().__init__()
        self._path = None
        if CONF.fake_driver.record_dir:
            self._path = os.path.join(CONF.fake_driver.record_dir,
                                      '%s.json' % host)
            self._write()

    def _write(self):
        if self._path is None:
            return
        folder = os.path.dirname(self._path)
        os.makedirs(folder, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=folder, prefix='.record-')
        with os.fdopen(fd, 'w') as f:
            json.dump(dict(self), f)
        os.replace(temp, self._path)

    def __setitem__(self, uuid, power_state):
        super().__setitem__(uuid, power_state)
        self._write()

    def pop(self, uuid, *default):
        found = uuid in self
        value = super().pop(uuid, *default)
        if found:
            self._write()
        return value


class FakeDriver(driver.ComputeDriver):

    # Where every fake server's root disk is.
    root_device_name = '/dev/vda'

    def __init__(self, host):
        super().__init__(host)
        # uuid -> power state of each VM this driver runs.
        self._running = _Record(host)
        # uuid -> (when it last started, its console's lines).
        self._started = {}
        self._console = {}
        self._lock = threading.Lock()

    def get_available_resource(self):
        opts = CONF.fake_driver
        return {'traits': sorted(provider_model.for_host(
                    opts.traits, self.host, provider_model.parse_traits,
                    'traits')),
                'resources': provider_model.for_host(
                    opts.resources, self.host,
                    provider_model.parse_inventory, 'resources'),
                'providers': [
                    dict(child, name='%s_%s' % (self.nodename(),
                                                child['name']),
                         parent=child['parent'] and '%s_%s' % (
                             self.nodename(), child['parent']))
                    for child in provider_model.for_host(
                        opts.providers, self.host,
                        provider_model.parse_children, 'providers')],
                'vcpus': opts.vcpus, 'memory_mb': opts.memory_mb,
                'local_gb': opts.local_gb, 'hypervisor_type': 'fake',
                'hypervisor_version': opts.hypervisor_version,
                'cpu_arch': opts.cpu_arch,
                'cpu_info': json.dumps({
                    'arch': opts.cpu_arch, 'model': 'fake', 'vendor': 'fake',
                    'topology': {'cells': 1, 'sockets': 1,
                                 'cores': opts.vcpus, 'threads': 1},
                    'features': []})}

    def spawn(self, context, instance, image_id=None):
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
            self._started[instance.uuid] = time.time()
            self._console[instance.uuid] = _boot_banner(instance, self.host)

    def destroy(self, instance):
        with self._lock:
            self._running.pop(instance.uuid, None)
            self._started.pop(instance.uuid, None)
            self._console.pop(instance.uuid, None)

    # --- what a server shows of itself ----------------------------------

    def get_console_output(self, instance):
        """The server's console since it booted on this host (a boot
        banner, then a line per action); one this process did not start
        shows its banner."""
        with self._lock:
            lines = self._console.get(instance.uuid)
            if lines is None:
                lines = _boot_banner(instance, self.host)
            # No newline after the last line, as a console read while the
            # guest waits at its prompt.
            return '\n'.join(lines)

    def get_diagnostics(self, instance):
        """Nova's diagnostics of 2.48 for the server: its state and
        uptime, and its flavor's CPUs, memory and disks. ``driver`` is
        one of the names the compute API allows; the hypervisor says it
        is fake."""
        power = self.get_power_state(instance)
        with self._lock:
            started = self._started.get(instance.uuid)
        uptime = int(time.time() - started) if started else None
        flavor = instance.flavor
        disks = 1 + (1 if flavor.ephemeral_gb else 0) + \
            (1 if flavor.swap else 0)
        return {
            'state': _DIAGNOSTIC_STATES.get(power, 'pending'),
            'driver': 'libvirt', 'hypervisor': 'fake',
            'hypervisor_os': 'fake', 'uptime': uptime,
            'config_drive': False, 'num_cpus': flavor.vcpus, 'num_nics': 0,
            'num_disks': disks,
            'memory_details': {'maximum': flavor.memory_mb,
                               'used': flavor.memory_mb if power == RUNNING
                               else 0},
            'cpu_details': [{'id': cpu, 'time': (uptime or 0) * 10 ** 9,
                             'utilisation': None}
                            for cpu in range(flavor.vcpus)],
            'nic_details': [],
            'disk_details': [{'read_bytes': 0, 'read_requests': 0,
                              'write_bytes': 0, 'write_requests': 0,
                              'errors_count': 0} for _ in range(disks)]}

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
            lines = self._console.setdefault(
                instance.uuid, _boot_banner(instance, self.host))
            lines.append('[fake] %s: %s' % (time.strftime(
                '%Y-%m-%dT%H:%M:%SZ', time.gmtime()), action))
            if power_state == RUNNING and action not in ('resume',
                                                         'unpause'):
                # Booted again: its uptime starts over.
                self._started[instance.uuid] = time.time()

    def power_off(self, instance):
        self._act(instance, 'stop', SHUTDOWN)

    def soft_delete(self, instance):
        """A delete that may be undone: the VM stops, its disk stays."""
        self._act(instance, 'soft_delete', SHUTDOWN)

    def restore(self, instance):
        self._act(instance, 'restore', RUNNING)

    def reimage(self, context, instance, power_on=True):
        """A rebuild on the server's own host: its disk again, from its
        (new) image; running afterwards unless ``power_on`` is False."""
        self._act(instance, 'rebuild', RUNNING if power_on else SHUTDOWN)

    def shelve(self, context, instance, image_id):
        """The VM stops and its (empty) disk is the shelved image."""
        self._act(instance, 'shelve', SHUTDOWN)
        if image_id:
            image_client.upload_if_queued(context, image_id, os.devnull)

    def snapshot(self, context, instance, image_id):
        """A fake disk is empty: so is its image."""
        image_client.upload(context, image_id, os.devnull)

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

    # --- moves ------------------------------------------------------------
    # A moved VM runs on the destination; until the move is confirmed the
    # source keeps its copy (powered off), which a revert starts again.

    def _move_step(self, step, sends=False):
        if sends and CONF.fake_driver.move_delay:
            time.sleep(CONF.fake_driver.move_delay)
        failing = CONF.fake_driver.fail_move_steps
        if step in failing or '%s@%s' % (step, self.host) in failing:
            raise MoveStepFailed(step=step, host=self.host)

    def check_can_take(self, instance):
        """Destination: whether this host takes the server (a resize or a
        cold migration's ``prep_resize``)."""
        self._move_step('prep_resize')

    def migrate_disk_and_power_off(self, context, instance, migration):
        """Source: send the server's disk off; it stops here."""
        self._move_step('resize', sends=True)
        with self._lock:
            if instance.uuid in self._running:
                self._running[instance.uuid] = SHUTDOWN

    def finish_migration(self, context, instance, migration, power_on):
        """Destination: start the moved server (stopped unless
        ``power_on``)."""
        self._move_step('finish_resize')
        with self._lock:
            self._running[instance.uuid] = RUNNING if power_on else SHUTDOWN

    def confirm_migration(self, context, instance, migration):
        """Source: the move is confirmed; its copy goes."""
        self.destroy(instance)

    def finish_revert_migration(self, context, instance, migration,
                                power_on):
        """Source: the move is reverted; its copy runs again."""
        with self._lock:
            self._running[instance.uuid] = RUNNING if power_on else SHUTDOWN

    def pre_live_migration(self, context, instance, migration):
        """Destination: ready to take the server live."""
        self._move_step('pre_live_migration')

    def live_migration(self, context, instance, migration):
        """Source: send the running server to the destination."""
        self._move_step('live_migration', sends=True)
        self.destroy(instance)

    def post_live_migration_at_destination(self, context, instance,
                                           migration, power_state):
        with self._lock:
            self._running[instance.uuid] = power_state

    def rebuild(self, context, instance, power_on=True):
        """Destination of an evacuation: the server again, from its
        image."""
        self._move_step('rebuild')
        with self._lock:
            self._running[instance.uuid] = RUNNING if power_on else SHUTDOWN

    def list_instances(self):
        with self._lock:
            return sorted(self._running)
