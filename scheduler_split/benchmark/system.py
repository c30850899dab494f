"""The deployment a run drives when it is given no endpoint: the
all-in-one, started in a process of its own, with fake hosts that can
hold the run's servers."""

import logging
import math
import os
import signal
import subprocess
import sys
import time

from scheduler_split.benchmark import base
from scheduler_split import cells
from scheduler_split.compute import resource_tracker
from scheduler_split import conf

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _capacity(total, reserved, ratio):
    """What a host offers of one resource, as the scheduler counts it."""
    return int((total - reserved) * ratio)


def _flavor(flavor_ref):
    """``(id, name, ram, vcpus, disk)`` of an all-in-one flavor."""
    flavor = next((f for f in cells.DEFAULT_FLAVORS
                   if flavor_ref in (f[0], f[1])), None)
    if flavor is None:
        raise base.BenchError(
            'No flavor %r in the all-in-one: it has %s' % (
                flavor_ref, ', '.join(f[1] for f in cells.DEFAULT_FLAVORS)))
    return flavor


def _per_host(flavor):
    """How many servers of ``flavor`` one fake host holds, as the
    configuration sizes it."""
    _, _, ram, vcpus, disk = flavor
    fake, compute = CONF.fake_driver, CONF.compute
    ratios = resource_tracker.allocation_ratios()
    fits = [_capacity(fake.vcpus, compute.reserved_host_cpus,
                      ratios['VCPU']) // vcpus,
            _capacity(fake.memory_mb, compute.reserved_host_memory_mb,
                      ratios['MEMORY_MB']) // ram]
    if disk:
        fits.append(_capacity(fake.local_gb,
                              (compute.reserved_host_disk_mb + 1023) // 1024,
                              ratios['DISK_GB']) // disk)
    return max(0, min(fits))


def check_capacity(flavor_ref, servers, hosts):
    """Refuse a run whose servers cannot all fit on the fake hosts (as
    the configuration sizes them)."""
    flavor = _flavor(flavor_ref)
    per_host = _per_host(flavor)
    if per_host * hosts < servers:
        fake = CONF.fake_driver
        raise base.BenchError(
            '%d fake hosts of %d vCPUs, %d MiB and %d GiB hold at most %d '
            'servers of %s (%d each), not %d: ask for fewer --servers or '
            'more --hosts, or give the hosts more ([fake_driver] vcpus, '
            'memory_mb, local_gb in a --config-file)'
            % (hosts, fake.vcpus, fake.memory_mb, fake.local_gb,
               per_host * hosts, flavor[1], per_host, servers))


# What a fake host has, which room_for() multiplies.
SIZES = ('vcpus', 'memory_mb', 'local_gb')


def room_for(flavor_ref, servers, hosts):
    """``{[fake_driver] option: value}``: the fake hosts made a whole
    number of times bigger, until each holds twice its share of
    ``servers`` (the scheduler need not deal them out evenly). They are
    made the defaults here too, for check_capacity(); what a
    --config-file sets stays as it says."""
    per_host = _per_host(_flavor(flavor_ref))
    share = 2 * math.ceil(servers / hosts)
    factor = max(1, math.ceil(share / per_host)) if per_host else 1
    sizes = {name: getattr(CONF.fake_driver, name) * factor
             for name in SIZES}
    for name, value in sizes.items():
        CONF.set_default(name, value, group='fake_driver')
    return sizes


class StartedSystem:
    """The all-in-one, started for one run as operators run it:
    ``scheduler-split-all-in-one`` in a process of its own (the bench's
    client threads must not share its interpreter), ``hosts_per_cell``
    fake hosts in each of ``num_cells`` cells, SQLite in ``state_dir``
    and the API on a free port of 127.0.0.1."""

    # Before the user's --config-file: spawns take no time unless a
    # file says otherwise, since the run measures the control plane,
    # not a pretend hypervisor.
    DEFAULTS = '[fake_driver]\nspawn_delay = 0\n'
    # After them: the bench speaks noauth2 to the system it starts.
    OVERRIDES = '[api]\nauth_strategy = noauth2\n'
    READY = 'scheduler-split is running: compute API '

    def __init__(self, state_dir, num_cells, hosts_per_cell,
                 config_files=(), debug=False, fake_driver=None):
        self.state_dir = state_dir
        self.num_cells = num_cells
        self.hosts_per_cell = hosts_per_cell
        self.config_files = list(config_files)
        self.debug = debug
        # More [fake_driver] defaults, as room_for() gives them.
        self.defaults = self.DEFAULTS + ''.join(
            '%s = %s\n' % item for item in sorted((fake_driver or {}).items()))
        self.proc = None
        self.output = os.path.join(state_dir, 'all-in-one.out')

    def _file(self, name, text):
        path = os.path.join(self.state_dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def start(self, timeout=600):
        """Start it and wait until its API serves; the compute
        endpoint."""
        os.makedirs(self.state_dir, exist_ok=True)
        files = ([self._file('bench-defaults.conf', self.defaults)] +
                 self.config_files +
                 [self._file('bench-overrides.conf', self.OVERRIDES)])
        command = [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
                   '--state-dir', self.state_dir,
                   '--cells', str(self.num_cells),
                   '--hosts-per-cell', str(self.hosts_per_cell),
                   '--host', '127.0.0.1', '--port', '0']
        for path in files:
            command += ['--config-file', path]
        if self.debug:
            command.append('--debug')
        out = open(self.output, 'w')
        self.proc = subprocess.Popen(command, stdout=out,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        out.close()
        deadline = time.monotonic() + timeout
        while True:
            with open(self.output) as f:
                for line in f:
                    if line.startswith(self.READY):
                        return line[len(self.READY):].split()[0].rstrip(',')
            if self.proc.poll() is not None:
                raise base.BenchError(
                    'The all-in-one exited (status %s) before it served: '
                    '%s' % (self.proc.returncode, self._tail()))
            if time.monotonic() > deadline:
                raise base.BenchError(
                    'The all-in-one did not serve within %d s: %s'
                    % (timeout, self._tail()))
            time.sleep(0.2)

    def _tail(self, lines=10):
        try:
            with open(self.output) as f:
                return ''.join(f.readlines()[-lines:]).strip()
        except OSError:
            return '(no output)'

    def stop(self, timeout=120):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            LOG.warning('The all-in-one did not stop within %d s; killing '
                        'it', timeout)
            self.proc.kill()
            self.proc.wait()
