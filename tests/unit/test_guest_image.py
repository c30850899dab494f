"""The test guest built from this machine's Debian packages: what its
ramdisk holds, read back from the archive, and (marked ``guest``) that
it boots under QEMU, reports itself on its serial console, counts its
boots on its disk and powers off on the ACPI power button."""

import glob
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from scheduler_split.image import guest

needs_kernel = pytest.mark.skipif(
    not glob.glob('/boot/vmlinuz-*'),
    reason='no kernel in /boot: install the Debian package linux-image-amd64')
needs_busybox = pytest.mark.skipif(
    not os.path.isfile(guest.BUSYBOX),
    reason='no /bin/busybox: install the Debian package busybox-static')
needs_qemu_img = pytest.mark.skipif(
    shutil.which('qemu-img') is None,
    reason='no qemu-img: install the Debian package qemu-utils')
needs_qemu = pytest.mark.skipif(
    shutil.which('qemu-system-x86_64') is None,
    reason='no qemu-system-x86_64: install the Debian package '
           'qemu-system-x86')

BOOT_TIMEOUT = 60
BOOTED = re.compile(r'^%s booted vcpus=(\d+) memory_mb=(\d+) disk_mb=(\d+) '
                    r'boots=(\d+)$' % guest.MARKER, re.MULTILINE)


def read_ramdisk(path):
    """{name: (mode, data)} of the gzip-compressed newc cpio at path."""
    with gzip.open(path, 'rb') as ramdisk:
        archive = ramdisk.read()
    members = {}
    offset = 0
    while True:
        assert archive[offset:offset + 6] == b'070701', offset
        fields = [int(archive[offset + 6 + 8 * i:offset + 14 + 8 * i], 16)
                  for i in range(13)]
        mode, size, name_size = fields[1], fields[6], fields[11]
        name_start = offset + 110
        name = archive[name_start:name_start + name_size - 1].decode()
        data_start = name_start + name_size + (-(110 + name_size) % 4)
        if name == 'TRAILER!!!':
            return members
        members[name] = (mode, archive[data_start:data_start + size])
        offset = data_start + size + (-size % 4)


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    return guest.build(str(tmp_path_factory.mktemp('guest')))


@needs_kernel
@needs_busybox
@needs_qemu_img
def test_ramdisk_holds_init_busybox_and_the_virtio_disk_modules(built):
    members = read_ramdisk(built['ramdisk'])
    version = guest.describe()['kernel_version']
    init = members['init'][1].decode()
    assert init.startswith('#!/bin/busybox sh\n')
    assert members['init'][0] == 0o100755
    with open(guest.BUSYBOX, 'rb') as busybox:
        assert members['bin/busybox'][1] == busybox.read()
    virtio_blk = [name for name in members
                  if re.search(r'/virtio_blk\.ko$', name)]
    assert virtio_blk and virtio_blk[0].startswith(
        'lib/modules/%s/' % version)
    for directory in ('bin', 'sbin', 'proc', 'sys', 'dev', 'etc',
                      'lib/modules'):
        assert members[directory][0] == 0o40755, directory


@needs_kernel
@needs_busybox
@needs_qemu_img
def test_init_loads_each_module_after_those_it_needs(built):
    version = guest.describe()['kernel_version']
    with open('/lib/modules/%s/modules.dep' % version) as dep_file:
        depends = dict((line.split(':')[0], line.split(':')[1].split())
                       for line in dep_file)
    loaded = guest.modules_to_load(version)
    for index, module in enumerate(loaded):
        assert set(depends[module]) <= set(loaded[:index]), module
    members = read_ramdisk(built['ramdisk'])
    assert ' '.join(loaded) in members['init'][1].decode()
    for module in loaded:
        assert 'lib/modules/%s/%s' % (version, module) in members


@needs_kernel
@needs_busybox
@needs_qemu_img
def test_disk_is_an_empty_qcow2_of_the_size_asked(tmp_path):
    files = guest.build(str(tmp_path), disk_size_mb=32)
    info = json.loads(subprocess.run(
        ['qemu-img', 'info', '--output', 'json', files['disk']],
        capture_output=True, check=True).stdout)
    assert info['format'] == 'qcow2'
    assert info['virtual-size'] == 32 * 1024 * 1024


def test_a_missing_kernel_names_the_package_to_install(tmp_path):
    with pytest.raises(guest.GuestImageError, match='linux-image-amd64'):
        guest.describe(kernel=str(tmp_path / 'vmlinuz-0.0'))


def test_a_dynamically_linked_busybox_names_busybox_static(tmp_path):
    kernel = tmp_path / 'vmlinuz-0.0'
    kernel.write_bytes(b'')
    # The interpreter running this test needs its dynamic loader.
    with pytest.raises(guest.GuestImageError, match='busybox-static'):
        guest.describe(kernel=str(kernel), busybox=sys.executable)


class Guest(object):
    """One QEMU process (TCG) booting the built guest; its serial console
    goes to a file, its monitor to a UNIX socket."""

    def __init__(self, files, workdir, name):
        self.log = os.path.join(workdir, name + '.log')
        self.monitor = os.path.join(workdir, name + '.sock')
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            ['qemu-system-x86_64', '-machine', 'accel=tcg', '-m', '256',
             '-smp', '2', '-no-reboot', '-display', 'none',
             '-kernel', files['kernel'], '-initrd', files['ramdisk'],
             '-append', 'console=ttyS0 panic=-1 quiet',
             '-drive', 'file=%s,if=virtio,format=qcow2' % files['disk'],
             '-serial', 'file:' + self.log,
             '-monitor', 'unix:%s,server,nowait' % self.monitor],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def console(self):
        try:
            with open(self.log, errors='replace') as log:
                return log.read()
        except FileNotFoundError:
            return ''

    def wait_for(self, pattern, timeout=BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.console())
            if match:
                return match
            assert self.process.poll() is None, (
                'qemu exited: %s\n%s' % (self.process.stderr.read(),
                                         self.console()))
            time.sleep(0.2)
        pytest.fail('no %r on the console within %ss:\n%s'
                    % (pattern, timeout, self.console()))

    def press_power_button(self):
        with socket.socket(socket.AF_UNIX) as monitor:
            monitor.connect(self.monitor)
            monitor.sendall(b'system_powerdown\n')
            time.sleep(0.5)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stderr.close()


@pytest.fixture
def boot(built, tmp_path):
    """``boot(name)``: a Guest of the built kernel and ramdisk, on a disk
    of its test's own that every boot of the test shares."""
    files = dict(built, disk=str(tmp_path / 'disk.qcow2'))
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', files['disk'],
                    '64M'], check=True)
    guests = []

    def _boot(name):
        guests.append(Guest(files, str(tmp_path), name))
        return guests[-1]

    yield _boot
    for running in guests:
        running.stop()


@pytest.mark.guest
@needs_kernel
@needs_busybox
@needs_qemu_img
@needs_qemu
def test_guest_reports_itself_and_counts_boots_on_its_disk(boot):
    first = boot('first')
    booted = first.wait_for(BOOTED)
    vcpus, memory_mb, disk_mb, boots = map(int, booted.groups())
    print('booted to the marker in %.1fs under TCG'
          % (time.monotonic() - first.started))
    assert vcpus == 2
    # 256 MiB less what the kernel keeps for itself.
    assert 150 <= memory_mb <= 256
    assert disk_mb == 64
    assert boots == 1
    first.wait_for(r'%s tick 2\n' % guest.MARKER)
    # Killed, not shut down: the count is on the disk once reported.
    first.stop()

    second = boot('second')
    assert second.wait_for(BOOTED).group(4) == '2'


@pytest.mark.guest
@needs_kernel
@needs_busybox
@needs_qemu_img
@needs_qemu
def test_power_button_powers_the_guest_off(boot):
    running = boot('powerdown')
    running.wait_for(BOOTED)
    running.press_power_button()
    running.wait_for(r'%s power button' % guest.MARKER, timeout=30)
    # -no-reboot and poweroff -f: QEMU exits by itself.
    assert running.process.wait(timeout=30) == 0
