"""A small bootable test guest made only from this machine's Debian
packages: the kernel of ``linux-image-amd64``, a ramdisk holding the
static busybox of ``busybox-static`` and the kernel modules that reach a
virtio disk, and an empty qcow2 disk made with ``qemu-img``
(``qemu-utils``). Nothing is downloaded.

The guest's init reports on its serial console (``console=ttyS0``), each
line opening with :data:`MARKER`: once what it booted with (vCPUs,
memory, disk size and how many times this disk has booted), then a tick
every two seconds, so that a test can tell a guest that kept running
through a live migration from one that booted again. The boot counter
lives in the disk's first sector, so that a snapshot of the disk booted
elsewhere counts on. The ACPI power button (``virsh shutdown``) powers
the guest off.
"""

import glob
import gzip
import os
import re
import shutil
import struct
import subprocess

MARKER = 'SCHEDULER-SPLIT-GUEST'

BUSYBOX = '/bin/busybox'

# The modules init loads, with their dependencies: the virtio disk on its
# PCI transport, and the ACPI power button with the event devices
# busybox acpid listens on. A module built into the kernel (in its
# modules.builtin, =y in its config) is skipped.
MODULES = ('virtio_pci', 'virtio_blk', 'button', 'evdev')

# The program header of an ELF file that names its dynamic loader.
_PT_INTERP = 3

# The first sector of the disk: "SSGUEST <boots>".
_RECORD = 'SSGUEST'

_INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
for module in {modules}; do
    insmod /lib/modules/{version}/$module
done
# virtio_blk finds the disk asynchronously.
for i in 1 2 3 4 5 6 7 8 9 10; do
    [ -b /dev/vda ] && break
    sleep 0.2
done
disk_mb=0
boots=0
if [ -b /dev/vda ]; then
    disk_mb=$(( $(cat /sys/block/vda/size) / 2048 ))
    record=$(dd if=/dev/vda bs=512 count=1 2>/dev/null | tr -d '\000')
    case "$record" in
        "{record} "*) boots=${{record#{record} }}; boots=${{boots%%[!0-9]*}} ;;
    esac
    boots=$(( ${{boots:-0}} + 1 ))
    # conv=sync pads the record to a whole sector with zeros; fsync
    # flushes the disk, whose qcow2 metadata a plain sync leaves in
    # QEMU's cache, lost if QEMU is killed.
    printf '{record} %d\n' $boots |
        dd of=/dev/vda bs=512 count=1 conv=notrunc,sync,fsync 2>/dev/null
fi
acpid -f -c /etc/acpi -a /etc/acpid.conf -l /dev/null &
# Report only once acpid listens on the power button, so that a
# shutdown asked for after the report is not lost.
for i in $(seq 50); do
    ls -l /proc/$!/fd | grep -q /dev/input/event && break
    sleep 0.1
done
memory_kb=$(awk '/^MemTotal:/ {{ print $2 }}' /proc/meminfo)
echo "{marker} booted vcpus=$(nproc)" \
    "memory_mb=$(( (memory_kb + 512) / 1024 ))" \
    "disk_mb=$disk_mb boots=$boots"
i=0
while true; do
    i=$(( i + 1 ))
    echo "{marker} tick $i"
    sleep 2
done
"""

# busybox acpid runs ./<action> from its config directory when an event
# name contains the key; the power button is "button/power PWRF ...".
_ACPID_CONF = 'PWRF power\n'
_POWER_ACTION = """#!/bin/busybox sh
echo "{marker} power button: powering off" >/dev/console
sync
poweroff -f
"""

_DIRECTORIES = ('bin', 'sbin', 'usr', 'usr/bin', 'usr/sbin', 'proc', 'sys',
                'dev', 'etc', 'etc/acpi', 'lib', 'lib/modules', 'tmp')


class GuestImageError(Exception):
    """The guest cannot be built on this machine (a package is missing)."""


def _version_key(path):
    # "6.1.0-10" sorts after "6.1.0-9".
    return [int(part) if part.isdigit() else part
            for part in re.split(r'(\d+)', path)]


def _kernel(kernel):
    """The kernel image and its version (from its file name)."""
    if kernel is None:
        found = sorted(glob.glob('/boot/vmlinuz-*'), key=_version_key)
        if not found:
            raise GuestImageError(
                'no kernel in /boot/vmlinuz-*: install the Debian package '
                'linux-image-amd64')
        kernel = found[-1]
    name = os.path.basename(kernel)
    if not name.startswith('vmlinuz-') or not os.path.isfile(kernel):
        raise GuestImageError('%s is not a kernel named vmlinuz-<version> '
                              '(linux-image-amd64)' % kernel)
    return kernel, name[len('vmlinuz-'):]


def _is_static(path):
    """Whether the ELF file at ``path`` has no PT_INTERP header (no
    dynamic loader)."""
    with open(path, 'rb') as elf:
        ident = elf.read(64)
        if ident[:4] != b'\x7fELF' or ident[4] != 2:
            return False
        order = '<' if ident[5] == 1 else '>'
        phoff, = struct.unpack(order + 'Q', ident[32:40])
        phentsize, phnum = struct.unpack(order + 'HH', ident[54:58])
        for index in range(phnum):
            elf.seek(phoff + index * phentsize)
            p_type, = struct.unpack(order + 'I', elf.read(4))
            if p_type == _PT_INTERP:
                return False
    return True


def _busybox(busybox):
    busybox = busybox or BUSYBOX
    if not os.path.isfile(busybox) or not _is_static(busybox):
        raise GuestImageError(
            '%s is not a statically linked busybox: install the Debian '
            'package busybox-static' % busybox)
    return busybox


def describe(kernel=None, busybox=None):
    """The sources a guest is built from, for the log of whoever builds
    one."""
    kernel, version = _kernel(kernel)
    return {'kernel': kernel, 'kernel_version': version,
            'busybox': _busybox(busybox)}


def modules_to_load(version, wanted=MODULES):
    """The loadable modules of ``wanted`` and their dependencies, as
    paths relative to ``/lib/modules/<version>``, in the order insmod
    takes them (a module after those it needs)."""
    root = os.path.join('/lib/modules', version)
    try:
        with open(os.path.join(root, 'modules.dep')) as dep_file:
            lines = dep_file.read().splitlines()
        with open(os.path.join(root, 'modules.builtin')) as builtin_file:
            builtin = builtin_file.read().split()
    except OSError as exc:
        raise GuestImageError('no modules of kernel %s (%s): install its '
                              'linux-image package' % (version, exc))

    def name_of(path):
        return os.path.basename(path).split('.ko')[0].replace('-', '_')

    depends = {}
    for line in lines:
        module, _, needs = line.partition(':')
        depends[module] = needs.split()
    by_name = {name_of(path): path for path in depends}
    built_in = {name_of(path) for path in builtin}
    ordered = []

    def add(path):
        if path not in ordered:
            # modules.dep lists what a module needs, needed ones last.
            for needed in reversed(depends.get(path, [])):
                add(needed)
            ordered.append(path)

    for name in wanted:
        if name in by_name:
            add(by_name[name])
        elif name not in built_in:
            raise GuestImageError('kernel %s has no module %s'
                                  % (version, name))
    compressed = [path for path in ordered if not path.endswith('.ko')]
    if compressed:
        raise GuestImageError('compressed modules are not supported: %s'
                              % ', '.join(compressed))
    return ordered


def _cpio_entry(ino, name, mode, data=b'', rdev=(0, 0)):
    """One member of a newc ("070701") cpio archive."""
    encoded = name.encode() + b'\0'
    fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1],
              len(encoded), 0)
    entry = b'070701' + b''.join(b'%08X' % field for field in fields)
    entry += encoded + b'\0' * (-(len(entry) + len(encoded)) % 4)
    return entry + data + b'\0' * (-len(data) % 4)


def write_ramdisk(path, members):
    """Write ``members`` ((name, mode with its file type bits, data or
    the (major, minor) of a device node)) as a gzip-compressed newc cpio
    archive, the format the kernel unpacks as its initramfs."""
    archive = [_cpio_entry(ino, name, mode, rdev=data)
               if isinstance(data, tuple) else
               _cpio_entry(ino, name, mode, data)
               for ino, (name, mode, data) in enumerate(members, start=1)]
    archive.append(_cpio_entry(0, 'TRAILER!!!', 0))
    # mtime=0: the same sources give the same ramdisk.
    with gzip.GzipFile(path, 'wb', mtime=0) as ramdisk:
        ramdisk.write(b''.join(archive))


def _ramdisk_members(busybox, version, modules):
    modules_dir = 'lib/modules/' + version
    # Ordered and unique: a directory before what it holds.
    directories = dict.fromkeys(_DIRECTORIES)
    for module in modules:
        parts = os.path.join(modules_dir, module).split('/')
        for depth in range(3, len(parts)):
            directories['/'.join(parts[:depth])] = None
    members = [(directory, 0o40755, b'') for directory in directories]
    with open(busybox, 'rb') as binary:
        members.append(('bin/busybox', 0o100755, binary.read()))
    members += [
        ('dev/console', 0o20600, (5, 1)),
        ('init', 0o100755, _INIT.format(
            modules=' '.join(modules), version=version, record=_RECORD,
            marker=MARKER).encode()),
        ('etc/acpid.conf', 0o100644, _ACPID_CONF.encode()),
        ('etc/acpi/power', 0o100755,
         _POWER_ACTION.format(marker=MARKER).encode())]
    for module in modules:
        with open(os.path.join('/', modules_dir, module), 'rb') as binary:
            members.append((os.path.join(modules_dir, module), 0o100644,
                            binary.read()))
    return members


def build(dest_dir, kernel=None, busybox=None, disk_size_mb=64):
    """Build the guest into ``dest_dir`` and return its files:
    ``{'kernel': path, 'ramdisk': path, 'disk': path}``.

    Raises :class:`GuestImageError` naming the Debian package to install
    when the kernel, the static busybox or ``qemu-img`` is missing.
    """
    kernel, version = _kernel(kernel)
    busybox = _busybox(busybox)
    qemu_img = shutil.which('qemu-img')
    if qemu_img is None:
        raise GuestImageError('no qemu-img: install the Debian package '
                              'qemu-utils')
    members = _ramdisk_members(busybox, version, modules_to_load(version))
    os.makedirs(dest_dir, exist_ok=True)
    files = {'kernel': os.path.join(dest_dir, 'vmlinuz'),
             'ramdisk': os.path.join(dest_dir, 'initrd.gz'),
             'disk': os.path.join(dest_dir, 'disk.qcow2')}
    # A copy, so that dest_dir alone can move to another host.
    shutil.copyfile(kernel, files['kernel'])
    write_ramdisk(files['ramdisk'], members)
    if os.path.exists(files['disk']):
        # A new guest: no boots counted yet.
        os.unlink(files['disk'])
    subprocess.run([qemu_img, 'create', '-q', '-f', 'qcow2', files['disk'],
                    '%dM' % disk_size_mb], check=True)
    return files
