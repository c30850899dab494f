"""A server's libvirt domain, as XML, from its flavor and image.

Pure: no libvirt here, so that what a server becomes can be read and
tested without a hypervisor. :class:`GuestSpec` says what the guest
has; :func:`domain_xml` writes it down.
"""

import dataclasses
import typing
from xml.etree import ElementTree as ET

# Where the domain says which server and host it belongs to: a libvirtd
# shared by several compute hosts tells their guests apart by it.
METADATA_NS = 'https://scheduler-split.dev/xmlns/libvirt/instance/1.0'


@dataclasses.dataclass
class Disk:
    path: str
    target: str            # vda, vdb, ...
    format: str = 'qcow2'


@dataclasses.dataclass
class GuestSpec:
    name: str
    uuid: str
    host: str
    display_name: str
    flavor_name: str
    vcpus: int
    memory_mb: int
    virt_type: str = 'kvm'
    arch: str = 'x86_64'
    disks: typing.List[Disk] = dataclasses.field(default_factory=list)
    console_log: typing.Optional[str] = None
    kernel: typing.Optional[str] = None
    ramdisk: typing.Optional[str] = None
    cmdline: typing.Optional[str] = None
    # host-model, host-passthrough, custom or None (the default CPU).
    cpu_mode: typing.Optional[str] = None
    cpu_model: typing.Optional[str] = None
    # One host CPU per vCPU for hw:cpu_policy=dedicated; else the host
    # CPUs every vCPU may float over (None: any).
    pinned_cpus: typing.Optional[typing.List[int]] = None
    shared_cpus: typing.Optional[typing.List[int]] = None
    disk_cache: str = 'none'


def parse_cpu_set(text):
    """Host CPUs of a set in Nova's syntax (``0-3,8,^2``), sorted."""
    wanted, unwanted = set(), set()
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        target = wanted
        if part.startswith('^'):
            target, part = unwanted, part[1:]
        low, sep, high = part.partition('-')
        try:
            first, last = int(low), int(high if sep else low)
        except ValueError:
            raise ValueError('%r is not a CPU set (e.g. 0-3,8,^2)' % text)
        if first > last or first < 0:
            raise ValueError('%r is not a CPU set (e.g. 0-3,8,^2)' % text)
        target.update(range(first, last + 1))
    return sorted(wanted - unwanted)


def _cpu_list(cpus):
    return ','.join(str(cpu) for cpu in cpus)


def _sub(parent, tag, text=None, **attrs):
    element = ET.SubElement(parent, tag, {k.rstrip('_'): str(v)
                                          for k, v in attrs.items()})
    if text is not None:
        element.text = str(text)
    return element


def domain_xml(spec):
    """The domain of ``spec`` as a libvirt XML string."""
    domain = ET.Element('domain', type=spec.virt_type)
    _sub(domain, 'name', spec.name)
    _sub(domain, 'uuid', spec.uuid)
    ET.register_namespace('ss', METADATA_NS)
    meta = _sub(_sub(domain, 'metadata'), '{%s}instance' % METADATA_NS)
    _sub(meta, '{%s}host' % METADATA_NS, spec.host)
    _sub(meta, '{%s}name' % METADATA_NS, spec.display_name or '')
    _sub(meta, '{%s}flavor' % METADATA_NS, name=spec.flavor_name,
         vcpus=spec.vcpus, memory_mb=spec.memory_mb)
    _sub(domain, 'memory', spec.memory_mb, unit='MiB')
    vcpu = _sub(domain, 'vcpu', spec.vcpus, placement='static')
    if spec.pinned_cpus:
        cputune = _sub(domain, 'cputune')
        for guest_cpu, host_cpu in enumerate(spec.pinned_cpus):
            _sub(cputune, 'vcpupin', vcpu=guest_cpu, cpuset=host_cpu)
        _sub(cputune, 'emulatorpin', cpuset=_cpu_list(spec.pinned_cpus))
    elif spec.shared_cpus:
        vcpu.set('cpuset', _cpu_list(spec.shared_cpus))
    os_ = _sub(domain, 'os')
    _sub(os_, 'type', 'hvm', arch=spec.arch)
    if spec.kernel:
        _sub(os_, 'kernel', spec.kernel)
        if spec.ramdisk:
            _sub(os_, 'initrd', spec.ramdisk)
        if spec.cmdline:
            _sub(os_, 'cmdline', spec.cmdline)
    else:
        _sub(os_, 'boot', dev='hd')
    features = _sub(domain, 'features')
    _sub(features, 'acpi')
    _sub(features, 'apic')
    if spec.cpu_mode in ('host-model', 'host-passthrough'):
        _sub(domain, 'cpu', mode=spec.cpu_mode)
    elif spec.cpu_mode == 'custom' and spec.cpu_model:
        cpu = _sub(domain, 'cpu', mode='custom', match='exact')
        _sub(cpu, 'model', spec.cpu_model, fallback='allow')
    _sub(domain, 'clock', offset='utc')
    _sub(domain, 'on_poweroff', 'destroy')
    _sub(domain, 'on_reboot', 'restart')
    _sub(domain, 'on_crash', 'destroy')
    devices = _sub(domain, 'devices')
    for disk in spec.disks:
        element = _sub(devices, 'disk', type='file', device='disk')
        _sub(element, 'driver', name='qemu', type=disk.format,
             cache=spec.disk_cache)
        _sub(element, 'source', file=disk.path)
        _sub(element, 'target', dev=disk.target, bus='virtio')
    if spec.console_log:
        # A pty whose output virtlogd also writes to the log: the
        # console log survives the guest, and stays readable by the
        # compute (the file belongs to libvirt, not to QEMU's user).
        serial = _sub(devices, 'serial', type='pty')
        _sub(serial, 'log', file=spec.console_log, append='on')
        _sub(serial, 'target', port=0)
        console = _sub(devices, 'console', type='pty')
        _sub(console, 'target', type='serial', port=0)
    # No network: there is no network service to plug one into.
    # Its statistics feed the server's diagnostics.
    _sub(_sub(devices, 'memballoon', model='virtio'), 'stats', period=10)
    return ET.tostring(domain, encoding='unicode')


def with_owner(xml, host):
    """Domain ``xml`` (as libvirt writes it) said to belong to compute
    ``host``: what a live migration defines on its destination."""
    ET.register_namespace('ss', METADATA_NS)
    root = ET.fromstring(xml)
    found = root.find('metadata/{%s}instance/{%s}host' % (
        METADATA_NS, METADATA_NS))
    if found is None:
        raise ValueError('domain %s names no compute host'
                         % root.findtext('name'))
    found.text = host
    return ET.tostring(root, encoding='unicode')


def disk_targets(xml):
    """The targets (vda, vdb, ...) of the disks of domain ``xml``."""
    root = ET.fromstring(xml)
    return [disk.find('target').get('dev')
            for disk in root.findall('devices/disk')
            if disk.get('device') == 'disk' and disk.find('target')
            is not None]


def owner_of(xml):
    """The compute host a domain's XML says it belongs to, or None for
    a domain no compute host made."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    host = root.find('metadata/{%s}instance/{%s}host' % (
        METADATA_NS, METADATA_NS))
    return host.text if host is not None else None
