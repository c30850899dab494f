"""The host filters: liveness/enabled and the three resource filters."""

import datetime

import pytest

from scheduler_split import objects
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import host_state
from tests.unit import helpers


def _host(inventory=None, used=None, disabled=False, age_seconds=0):
    state = host_state.HostState(
        'b2b7c9a6-0d6f-4c1c-9a55-1f1f6f4f2a01', 'host1', 'node1',
        'c0a1e6a4-1111-4d7e-8e44-2a1a5b6c7d01')
    state.inventory = inventory or {}
    state.used = used or {}
    state.disabled = disabled
    state.last_report_at = (helpers.naive_utcnow() -
                            datetime.timedelta(seconds=age_seconds))
    return state


# --- ComputeFilter ----------------------------------------------------------

def test_compute_filter_passes_enabled_host_that_reported_recently():
    assert filters.ComputeFilter().host_passes(_host(age_seconds=5),
                                               helpers.make_spec())


def test_compute_filter_rejects_disabled_host():
    host = _host(disabled=True, age_seconds=5)
    assert not filters.ComputeFilter().host_passes(host, helpers.make_spec())


def test_compute_filter_rejects_host_whose_last_report_is_older_than_service_down_time(  # noqa
        override):
    override('service_down_time', 30)
    host = _host(age_seconds=31)
    assert not filters.ComputeFilter().host_passes(host, helpers.make_spec())


def test_compute_filter_uses_configured_service_down_time(override):
    override('service_down_time', 120)
    host = _host(age_seconds=90)
    assert filters.ComputeFilter().host_passes(host, helpers.make_spec())


def test_compute_filter_rejects_host_that_never_reported():
    host = _host()
    host.last_report_at = None
    assert not filters.ComputeFilter().host_passes(host, helpers.make_spec())


def test_compute_filter_filter_all_keeps_only_live_enabled_hosts(override):
    override('service_down_time', 60)
    up = _host(age_seconds=1)
    disabled = _host(disabled=True, age_seconds=1)
    down = _host(age_seconds=600)
    passed = filters.ComputeFilter().filter_all([down, up, disabled],
                                                helpers.make_spec())
    assert passed == [up]


# --- RamFilter --------------------------------------------------------------

def test_ram_filter_rejects_host_without_enough_free_memory():
    host = _host(inventory={'MEMORY_MB': (4096, 0, 1.0)},
                 used={'MEMORY_MB': 3584})
    assert not filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1024))


def test_ram_filter_passes_host_with_exactly_enough_free_memory():
    host = _host(inventory={'MEMORY_MB': (4096, 0, 1.0)},
                 used={'MEMORY_MB': 3072})
    assert filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1024))


def test_ram_filter_counts_allocation_ratio_over_total_minus_reserved():
    # capacity = (4096 - 512) * 1.5 = 5376; 5376 - 4352 = 1024 free
    host = _host(inventory={'MEMORY_MB': (4096, 512, 1.5)},
                 used={'MEMORY_MB': 4352})
    assert filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1024))
    assert not filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1025))


def test_ram_filter_never_allocates_reserved_memory():
    # 2048 physical, 512 reserved, nothing used: 1536 allocatable.
    host = _host(inventory={'MEMORY_MB': (2048, 512, 1.0)})
    assert filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1536))
    assert not filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1537))


def test_ram_filter_rejects_host_without_memory_inventory():
    host = _host(inventory={'VCPU': (8, 0, 1.0)})
    assert not filters.RamFilter().host_passes(
        host, helpers.make_spec(memory_mb=1))


# --- CoreFilter -------------------------------------------------------------

def test_core_filter_overcommits_vcpus_by_cpu_allocation_ratio():
    # 4 pCPUs at ratio 4.0 = 16 vCPUs; 14 used leaves 2.
    host = _host(inventory={'VCPU': (4, 0, 4.0)}, used={'VCPU': 14})
    assert filters.CoreFilter().host_passes(host, helpers.make_spec(vcpus=2))
    assert not filters.CoreFilter().host_passes(host,
                                                helpers.make_spec(vcpus=3))


def test_core_filter_subtracts_reserved_vcpus_before_the_ratio():
    # (4 - 1) * 2.0 = 6 vCPUs
    host = _host(inventory={'VCPU': (4, 1, 2.0)})
    assert filters.CoreFilter().host_passes(host, helpers.make_spec(vcpus=6))
    assert not filters.CoreFilter().host_passes(host,
                                                helpers.make_spec(vcpus=7))


def test_core_filter_rejects_fully_used_host_at_ratio_one():
    host = _host(inventory={'VCPU': (8, 0, 1.0)}, used={'VCPU': 8})
    assert not filters.CoreFilter().host_passes(host,
                                                helpers.make_spec(vcpus=1))


# --- DiskFilter -------------------------------------------------------------

def test_disk_filter_counts_root_ephemeral_and_swap():
    # root 10 + ephemeral 5 + swap 1025 MiB (-> 2 GiB) = 17 GiB
    spec = helpers.make_spec(root_gb=10, ephemeral_gb=5, swap=1025)
    fits = _host(inventory={'DISK_GB': (100, 0, 1.0)}, used={'DISK_GB': 83})
    short = _host(inventory={'DISK_GB': (100, 0, 1.0)}, used={'DISK_GB': 84})
    assert filters.DiskFilter().host_passes(fits, spec)
    assert not filters.DiskFilter().host_passes(short, spec)


def test_disk_filter_counts_disk_allocation_ratio_and_reserved():
    # (100 - 20) * 0.5 = 40 GiB allocatable
    host = _host(inventory={'DISK_GB': (100, 20, 0.5)})
    assert filters.DiskFilter().host_passes(host,
                                            helpers.make_spec(root_gb=40))
    assert not filters.DiskFilter().host_passes(
        host, helpers.make_spec(root_gb=41))


# --- loading ----------------------------------------------------------------

def test_load_returns_instances_of_the_named_filters_in_order():
    loaded = filters.load(['DiskFilter', 'ComputeFilter'])
    assert [type(f) for f in loaded] == [filters.DiskFilter,
                                         filters.ComputeFilter]


def test_load_with_unknown_filter_name_raises_value_error_naming_it():
    with pytest.raises(ValueError) as info:
        filters.load(['RamFilter', 'NoSuchFilter'])
    assert 'NoSuchFilter' in str(info.value)


# --- server group filters ---------------------------------------------------

def _member_spec(policy, hosts, rules=None):
    spec = helpers.make_spec()
    spec.instance_group = objects.InstanceGroup(
        uuid='5b0e4c7a-1d2e-4f3a-9b8c-7d6e5f4a3b2c', name='g',
        project_id='project', user_id='user', policy=policy,
        rules=rules or {}, members=[], hosts=hosts)
    return spec


def test_anti_affinity_filter_rejects_a_host_holding_a_member():
    anti = filters.ServerGroupAntiAffinityFilter()
    assert not anti.host_passes(_host(), _member_spec('anti-affinity',
                                                      ['host1']))
    assert anti.host_passes(_host(), _member_spec('anti-affinity',
                                                  ['host2']))


def test_anti_affinity_filter_honours_max_server_per_host():
    anti = filters.ServerGroupAntiAffinityFilter()
    rules = {'max_server_per_host': 2}
    assert anti.host_passes(_host(), _member_spec(
        'anti-affinity', ['host1'], rules))
    assert not anti.host_passes(_host(), _member_spec(
        'anti-affinity', ['host1', 'host1'], rules))


def test_affinity_filter_passes_any_host_for_the_first_member_only():
    affinity = filters.ServerGroupAffinityFilter()
    assert affinity.host_passes(_host(), _member_spec('affinity', []))
    assert affinity.host_passes(_host(), _member_spec('affinity',
                                                      ['host1']))
    assert not affinity.host_passes(_host(), _member_spec('affinity',
                                                          ['host2']))


@pytest.mark.parametrize('policy', ['soft-affinity', 'soft-anti-affinity'])
def test_group_filters_ignore_soft_policies_and_specs_without_group(policy):
    for host_filter in (filters.ServerGroupAntiAffinityFilter(),
                        filters.ServerGroupAffinityFilter()):
        assert host_filter.host_passes(_host(), _member_spec(policy,
                                                             ['host2']))
        assert host_filter.host_passes(_host(), helpers.make_spec())


def _counted(name, instances=0, io_ops=0, limits=None):
    from scheduler_split.scheduler import aggregates
    state = host_state.HostState('uuid-' + name, name, name, 'cell')
    state.instances = {'i%d' % n for n in range(instances)}
    state.num_io_ops = io_ops
    if limits:
        state.set_aggregates([aggregates.Aggregate({
            'id': 1, 'uuid': 'agg', 'name': 'agg', 'metadata': limits,
            'hosts': [name]})])
    return state


def test_num_instances_filter_refuses_a_host_at_max_instances_per_host(
        override):
    override('max_instances_per_host', 3, group='filter_scheduler')
    spec = helpers.make_spec()
    check = filters.NumInstancesFilter()
    assert check.host_passes(_counted('a', instances=2), spec)
    assert not check.host_passes(_counted('b', instances=3), spec)


def test_aggregate_num_instances_filter_takes_the_smallest_aggregate_limit(
        override):
    override('max_instances_per_host', 50, group='filter_scheduler')
    spec = helpers.make_spec()
    check = filters.AggregateNumInstancesFilter()
    assert not check.host_passes(
        _counted('a', instances=2, limits={'max_instances_per_host': '2'}),
        spec)
    assert check.host_passes(_counted('b', instances=2), spec)
    # A value that is not a number is ignored, with a warning.
    assert check.host_passes(
        _counted('c', instances=2, limits={'max_instances_per_host': 'x'}),
        spec)


def test_io_ops_filters_refuse_a_host_running_too_many_builds(override):
    override('max_io_ops_per_host', 2, group='filter_scheduler')
    spec = helpers.make_spec()
    assert filters.IoOpsFilter().host_passes(_counted('a', io_ops=1), spec)
    assert not filters.IoOpsFilter().host_passes(_counted('b', io_ops=2),
                                                 spec)
    assert not filters.AggregateIoOpsFilter().host_passes(
        _counted('c', io_ops=1, limits={'max_io_ops_per_host': '1'}), spec)


# --- ImagePropertiesFilter --------------------------------------------------

def _typed_host(cpu_arch=None, hypervisor_type=None, hypervisor_version=None):
    host = _host(age_seconds=5)
    host.cpu_arch = cpu_arch
    host.hypervisor_type = hypervisor_type
    host.hypervisor_version = hypervisor_version
    return host


def _image_spec(**props):
    spec = helpers.make_spec()
    spec.image_properties = props
    return spec


def test_image_properties_filter_passes_request_without_image_properties():
    host = _typed_host(cpu_arch='x86_64')
    assert filters.ImagePropertiesFilter().host_passes(host,
                                                       helpers.make_spec())


def test_image_properties_filter_passes_request_spec_of_the_release_before():
    # A RequestSpec 1.1 (from a conductor capped below 1.6) has no
    # image_properties at all.
    old = objects.RequestSpec.obj_from_primitive(
        _image_spec(architecture='aarch64').obj_to_primitive(
            target_version='1.1'))
    assert filters.ImagePropertiesFilter().host_passes(
        _typed_host(cpu_arch='x86_64'), old)


def test_image_properties_filter_rejects_host_of_another_architecture():
    host = _typed_host(cpu_arch='x86_64')
    assert not filters.ImagePropertiesFilter().host_passes(
        host, _image_spec(architecture='aarch64'))
    assert not filters.ImagePropertiesFilter().host_passes(
        host, _image_spec(hw_architecture='aarch64'))


def test_image_properties_filter_passes_host_of_the_image_architecture():
    host = _typed_host(cpu_arch='aarch64')
    assert filters.ImagePropertiesFilter().host_passes(
        host, _image_spec(architecture='AArch64'))


def test_image_properties_filter_passes_host_that_reports_nothing():
    assert filters.ImagePropertiesFilter().host_passes(
        _host(age_seconds=5),
        _image_spec(architecture='aarch64', img_hv_type='qemu',
                    img_hv_requested_version='>=6000'))


def test_image_properties_filter_compares_hypervisor_type():
    host = _typed_host(hypervisor_type='QEMU')
    f = filters.ImagePropertiesFilter()
    assert f.host_passes(host, _image_spec(img_hv_type='qemu'))
    assert f.host_passes(host, _image_spec(hypervisor_type='qemu'))
    assert not f.host_passes(host, _image_spec(img_hv_type='xen'))


@pytest.mark.parametrize('wanted,passes', [
    ('>=6000', True), ('>= 7000', False), ('<7000', True),
    ('6002', True), ('==6001', False), ('>=6.0.0', False),
])
def test_image_properties_filter_compares_requested_hypervisor_version(
        wanted, passes):
    host = _typed_host(hypervisor_version=6002)
    assert filters.ImagePropertiesFilter().host_passes(
        host, _image_spec(img_hv_requested_version=wanted)) is passes


def test_image_properties_filter_can_be_enabled_by_name():
    loaded = filters.load(['ImagePropertiesFilter'])
    assert [type(f).__name__ for f in loaded] == ['ImagePropertiesFilter']


# --- AggregateImagePropertiesIsolation --------------------------------------

def _isolated(name, *metadatas):
    from scheduler_split.scheduler import aggregates
    state = host_state.HostState('uuid-' + name, name, name, 'cell')
    state.set_aggregates([aggregates.Aggregate({
        'id': n, 'uuid': 'agg%d' % n, 'name': 'agg%d' % n,
        'metadata': metadata, 'hosts': [name]})
        for n, metadata in enumerate(metadatas)])
    return state


def test_aggregate_image_isolation_takes_only_listed_property_values():
    check = filters.AggregateImagePropertiesIsolation()
    windows = _isolated('w', {'os_distro': 'windows'})
    linux = _isolated('l', {'os_distro': 'ubuntu, fedora'}, {'ssd': 'true'})
    plain = _isolated('p')
    assert check.host_passes(windows, _image_spec(os_distro='windows'))
    assert not check.host_passes(windows, _image_spec(os_distro='fedora'))
    assert check.host_passes(linux, _image_spec(os_distro='fedora'))
    assert not check.host_passes(linux, _image_spec(os_distro='windows'))
    assert check.host_passes(plain, _image_spec(os_distro='windows'))
    # An image without the property goes anywhere, and so does a
    # RequestSpec from before image properties.
    assert check.host_passes(windows, _image_spec(architecture='x86_64'))
    assert check.host_passes(windows, helpers.make_spec())


def test_aggregate_image_isolation_namespace_limits_the_keys(override):
    override('aggregate_image_properties_isolation_namespace', 'iso',
             group='filter_scheduler')
    check = filters.AggregateImagePropertiesIsolation()
    host = _isolated('h', {'iso.os_distro': 'windows', 'os_type': 'linux'})
    # os_type is outside the namespace: it no longer isolates.
    assert check.host_passes(host, _image_spec(os_type='windows'))
    assert check.host_passes(host, _image_spec(**{'iso.os_distro':
                                                  'windows'}))
    assert not check.host_passes(host, _image_spec(**{'iso.os_distro':
                                                      'linux'}))
