"""Real guests: the all-in-one with ``--compute-driver libvirt``, run as
a user installs it (the wheel with the libvirt extra, in a venv of its
own), against this machine's libvirtd, driven with the unmodified
``openstack`` CLI of the test venv.

Debian's libvirt, QEMU, kernel and busybox are installed when missing
(``tools/install-test-packages libvirt``); virtlogd and libvirtd are
started when they do not answer, and stopped at the end if this run
started them. Guests run under qemu (TCG), as the all-in-one chooses on
a machine whose KVM cannot boot them.
"""

import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest


MARKER = 'SCHEDULER-SPLIT-GUEST'
URI = 'qemu:///system'
OPENSTACK = os.path.join(os.path.dirname(sys.executable), 'openstack')
HOSTS = ('cell1-compute1', 'cell1-compute2')
# Seconds between two power-state syncs of the all-in-one's computes.
SYNC_INTERVAL = 5


def virsh(*args, check=True):
    done = subprocess.run(['virsh', '-c', URI, *args], capture_output=True,
                          text=True, timeout=60)
    if check and done.returncode:
        raise AssertionError('virsh %s: %s' % (' '.join(args),
                                               done.stderr.strip()))
    return done.stdout.strip()


def _answers():
    return subprocess.run(['virsh', '-c', URI, 'version'],
                          capture_output=True, timeout=30).returncode == 0


def _start_daemons():
    """Start virtlogd and libvirtd; the pids of those this started."""
    started = []
    for daemon in ('virtlogd', 'libvirtd'):
        if subprocess.run(['pgrep', '-x', daemon],
                          capture_output=True).returncode == 0:
            continue
        subprocess.run(['/usr/sbin/' + daemon, '-d'], check=True, timeout=30)
        started.append(daemon)
    deadline = time.monotonic() + 30
    while not _answers():
        assert time.monotonic() < deadline, 'libvirtd does not answer'
        time.sleep(0.5)
    return started


@pytest.fixture(scope='session')
def libvirtd(libvirt_venv):
    """This machine's libvirtd, running (its packages installed with
    the venv's)."""
    started = _start_daemons()
    yield URI
    for daemon in reversed(started):
        subprocess.run(['pkill', '-TERM', '-x', daemon])


class AllInOne:
    """``scheduler-split-all-in-one --compute-driver libvirt``."""

    def __init__(self, venv, base_dir):
        self.state_dir = os.path.join(base_dir, 'state')
        # Below directories QEMU's own user may enter.
        self.instances_path = os.path.join(base_dir, 'instances')
        os.makedirs(self.state_dir)
        os.makedirs(self.instances_path)
        config = os.path.join(base_dir, 'libvirt.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\ninstances_path = %s\n'
                    'sync_power_state_interval = %d\n'
                    # Apart from the domains of anything else this
                    # machine's libvirtd runs (instance-00000001 of an
                    # all-in-one of a developer's).
                    'instance_name_template = instance-%%(uuid)s\n'
                    '[libvirt]\nshutdown_timeout = 30\n'
                    # Two hosts of one CPU each take ten idle guests.
                    '[compute]\ncpu_allocation_ratio = 16\n'
                    % (self.instances_path, SYNC_INTERVAL))
        self.stderr = open(os.path.join(base_dir, 'stderr'), 'w')
        self.proc = subprocess.Popen(
            [venv.executable('scheduler-split-all-in-one'),
             '--compute-driver', 'libvirt', '--port', '0', '--state-dir',
             self.state_dir, '--config-file', config],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            cwd=venv.path, env=venv.env())
        self.lines = []
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.env = None

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def log(self, last=60):
        try:
            with open(os.path.join(self.state_dir,
                                   'scheduler-split.log')) as f:
                lines = f.readlines()
        except OSError:
            lines = []
        return ''.join(self.lines) + ''.join(lines[-last:])

    def wait_until_serving(self, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError('the all-in-one exited with %s:\n%s'
                                     % (self.proc.wait(), self.log()))
            self.lines.append(line)
            found = re.match(r'export (OS_CLIENT_CONFIG_FILE=\S+) '
                             r'(OS_CLOUD=\S+)', line)
            if found:
                self.env = dict(os.environ, **dict(
                    part.split('=', 1) for part in found.groups()))
                return
        raise AssertionError('the all-in-one did not serve:\n%s'
                             % self.log())

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.stderr.close()

    # --- the openstack CLI ------------------------------------------------

    def openstack(self, *args, check=True, timeout=180):
        done = subprocess.run([OPENSTACK, *args], capture_output=True,
                              text=True, env=self.env, timeout=timeout)
        if check and done.returncode:
            raise AssertionError('openstack %s: rc %d\n%s\n%s' % (
                ' '.join(args), done.returncode, done.stderr,
                self.log(30)))
        return done.stdout

    def show(self, server):
        return json.loads(self.openstack('server', 'show', server,
                                         '-f', 'json'))

    def wait_for(self, server, status, timeout=120):
        """The server once it is ``status`` with no task."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.show(server)
            if (shown['status'] == status and
                    not shown.get('OS-EXT-STS:task_state')):
                return shown
            assert shown['status'] != 'ERROR' or status == 'ERROR', (
                shown, self.log())
            assert time.monotonic() < deadline, (status, shown, self.log())
            time.sleep(1)

    def console(self, server):
        return self.openstack('console', 'log', 'show', server)

    def wait_for_console(self, server, pattern, timeout=90):
        """The console's lines matching ``pattern`` once there are
        some."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.findall(pattern, self.console(server), re.M)
            if found:
                return found
            assert time.monotonic() < deadline, (
                pattern, self.console(server)[-2000:])
            time.sleep(1)

    def host_dir(self, host):
        return os.path.join(self.instances_path, host)

    def cache_path(self, host, image_id):
        return os.path.join(self.host_dir(host), '_base', hashlib.sha1(
            image_id.encode('utf-8')).hexdigest())

    def usages(self):
        """{provider name: {class: used}} of every resource provider."""
        used = {}
        for provider in json.loads(self.openstack(
                'resource', 'provider', 'list', '-f', 'json')):
            rows = json.loads(self.openstack(
                'resource', 'provider', 'usage', 'show', provider['uuid'],
                '-f', 'json'))
            used[provider['name']] = {row['resource_class']: row['usage']
                                      for row in rows}
        return used


@pytest.fixture(scope='module')
def cloud(libvirtd, libvirt_venv):
    """The all-in-one with two libvirt hosts, serving."""
    # /var/tmp: every directory above the instances is open to QEMU's
    # user, which a pytest tmp_path (mode 0700) is not.
    base = tempfile.mkdtemp(prefix='scheduler-split-libvirt-',
                            dir='/var/tmp')
    os.chmod(base, 0o755)
    aio = AllInOne(libvirt_venv, base)
    try:
        aio.wait_until_serving()
        yield aio
    finally:
        code = aio.stop()
        left = [uuid for uuid in virsh('list', '--all', '--uuid').split()
                if aio.instances_path in virsh('dumpxml', uuid, check=False)]
        for uuid in left:
            virsh('destroy', uuid, check=False)
            virsh('undefine', uuid, '--managed-save', check=False)
        shutil.rmtree(base, ignore_errors=True)
    assert code == 0, aio.log()
    assert not left, 'domains outlived the all-in-one: %s' % left


def qemu_pid(domain_name):
    with open('/run/libvirt/qemu/%s.pid' % domain_name) as f:
        return int(f.read().strip())
