"""What a server becomes on libvirt: its domain's name and XML, the CPUs
it may run on, the traits of its host's CPU. No libvirtd is needed."""

import threading
from xml.etree import ElementTree as ET

import pytest

from scheduler_split.compute.virt.libvirt import config
from scheduler_split.compute.virt.libvirt import driver
from scheduler_split.compute.virt.libvirt import host
from scheduler_split import objects

UUID = '6f1c9d2e-8a4b-4c3d-9e5f-0a1b2c3d4e5f'


def _spec(**overrides):
    fields = dict(name='instance-0000002a', uuid=UUID, host='cell1-compute1',
                  display_name='vm1', flavor_name='m1.tiny', vcpus=2,
                  memory_mb=512, virt_type='qemu',
                  disks=[config.Disk('/i/%s/disk' % UUID, 'vda')],
                  console_log='/i/%s/console.log' % UUID)
    fields.update(overrides)
    return config.GuestSpec(**fields)


def test_a_domain_is_named_as_nova_names_it(override):
    instance = objects.Instance(uuid=UUID, id=42)
    assert driver.LibvirtDriver.instance_name(instance) == \
        'instance-0000002a'
    override('instance_name_template', 'instance-%(uuid)s')
    assert driver.LibvirtDriver.instance_name(instance) == \
        'instance-%s' % UUID


def test_the_domain_has_the_flavors_size_a_console_log_and_no_network():
    root = ET.fromstring(config.domain_xml(_spec()))
    assert root.get('type') == 'qemu'
    assert (root.findtext('name'), root.findtext('uuid')) == (
        'instance-0000002a', UUID)
    assert root.findtext('vcpu') == '2'
    assert (root.findtext('memory'), root.find('memory').get('unit')) == (
        '512', 'MiB')
    [disk] = root.findall('devices/disk')
    assert disk.find('target').get('dev') == 'vda'
    assert disk.find('target').get('bus') == 'virtio'
    assert disk.find('driver').get('type') == 'qcow2'
    assert root.find('devices/serial/log').get('file').endswith(
        '/console.log')
    assert root.find('devices/interface') is None
    assert root.find('os/boot').get('dev') == 'hd'
    # The compute host it belongs to, read back from the XML.
    assert config.owner_of(ET.tostring(root, encoding='unicode')) == \
        'cell1-compute1'
    assert config.owner_of('<domain><name>other</name></domain>') is None


def test_a_live_migration_defines_the_domain_as_the_destinations():
    """The source sends the domain's XML with the destination named as
    its owner, every disk migrated."""
    xml = config.domain_xml(_spec(disks=[
        config.Disk('/i/%s/disk' % UUID, 'vda'),
        config.Disk('/i/%s/disk.swap' % UUID, 'vdb')]))
    moved = config.with_owner(xml, 'cell1-compute2')
    assert config.owner_of(moved) == 'cell1-compute2'
    assert config.owner_of(xml) == 'cell1-compute1'
    assert config.disk_targets(moved) == ['vda', 'vdb']
    # Nothing else changes.
    assert ET.fromstring(moved).findtext('name') == 'instance-0000002a'
    with pytest.raises(ValueError):
        config.with_owner('<domain><name>other</name></domain>', 'h')


class _StuckMigration:
    """A domain whose migration runs until its job is aborted."""

    def __init__(self):
        self.aborted = threading.Event()

    def migrate(self):
        if not self.aborted.wait(30):
            raise AssertionError('never aborted')
        raise RuntimeError('operation aborted: migration out job')

    def abortJob(self):
        self.aborted.set()

    def jobStats(self):
        return {'memory_processed': 1 << 20, 'memory_total': 512 << 20}


def test_a_live_migration_past_its_limit_is_aborted(override):
    """The migration that does not end within its limit is aborted, and
    its failure is what the source gets back (it keeps the guest)."""
    override('live_migration_progress_interval', 1, group='libvirt')
    domain = _StuckMigration()
    instance = objects.Instance(uuid=UUID)
    failure = driver.LibvirtDriver('h1')._watch_migration(
        instance, domain, domain.migrate, limit=1)
    assert domain.aborted.is_set()
    assert 'aborted' in str(failure)


def test_an_image_with_a_kernel_boots_it_directly():
    root = ET.fromstring(config.domain_xml(_spec(
        kernel='/i/k', ramdisk='/i/r', cmdline='console=ttyS0')))
    assert (root.findtext('os/kernel'), root.findtext('os/initrd'),
            root.findtext('os/cmdline')) == ('/i/k', '/i/r',
                                             'console=ttyS0')
    assert root.find('os/boot') is None


def test_dedicated_cpus_pin_each_vcpu_and_shared_ones_bound_the_rest():
    pinned = ET.fromstring(config.domain_xml(_spec(pinned_cpus=[4, 5])))
    assert [(p.get('vcpu'), p.get('cpuset'))
            for p in pinned.findall('cputune/vcpupin')] == [
        ('0', '4'), ('1', '5')]
    assert pinned.find('cputune/emulatorpin').get('cpuset') == '4,5'
    shared = ET.fromstring(config.domain_xml(_spec(shared_cpus=[0, 1, 2])))
    assert shared.find('vcpu').get('cpuset') == '0,1,2'
    assert shared.find('cputune') is None


def test_cpu_modes():
    assert ET.fromstring(config.domain_xml(_spec(
        cpu_mode='host-model'))).find('cpu').get('mode') == 'host-model'
    custom = ET.fromstring(config.domain_xml(_spec(
        cpu_mode='custom', cpu_model='Nehalem'))).find('cpu')
    assert (custom.get('mode'), custom.findtext('model')) == (
        'custom', 'Nehalem')
    assert ET.fromstring(config.domain_xml(_spec(
        cpu_mode='none'))).find('cpu') is None


@pytest.mark.parametrize('text, cpus', [
    ('0-3', [0, 1, 2, 3]), ('0-3,^2', [0, 1, 3]), ('4,8-9', [4, 8, 9]),
    ('', [])])
def test_cpu_sets_read_as_nova_writes_them(text, cpus):
    assert config.parse_cpu_set(text) == cpus


@pytest.mark.parametrize('text', ['a', '3-1', '1-x', '-1'])
def test_a_wrong_cpu_set_says_so(text):
    with pytest.raises(ValueError, match='not a CPU set'):
        config.parse_cpu_set(text)


def test_cpu_features_become_the_traits_os_traits_knows():
    assert host.cpu_traits(['sse4.2', 'avx', 'pni', 'no-such-feature']) == {
        'HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX', 'HW_CPU_X86_SSE3'}


def test_a_cpu_without_vmx_or_svm_runs_no_kvm_guest(tmp_path, monkeypatch):
    cpuinfo = tmp_path / 'cpuinfo'
    cpuinfo.write_text('flags\t\t: fpu sse4_2 popcnt hypervisor\n')
    real_open = open

    def fake_open(path, *args, **kwargs):
        return real_open(cpuinfo if path == '/proc/cpuinfo' else path,
                         *args, **kwargs)
    monkeypatch.setattr(host.os, 'open', lambda *a, **k: 99)
    monkeypatch.setattr(host.os, 'close', lambda fd: None)
    monkeypatch.setattr('builtins.open', fake_open)
    usable, why = host.kvm_usable()
    assert not usable and 'vmx or svm' in why
    cpuinfo.write_text('flags\t\t: fpu vmx sse4_2\n')
    assert host.kvm_usable() == (True, None)
