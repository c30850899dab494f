"""What a flavor and an image ask of the providers, as Nova reads them."""

import pytest

from scheduler_split import objects
from scheduler_split.objects import resource_request as rr
from scheduler_split import provider_model


def _flavor(extra_specs=None, vcpus=4, memory_mb=2048, root_gb=10,
            ephemeral_gb=0, swap=0):
    return objects.Flavor(vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb,
                          ephemeral_gb=ephemeral_gb, swap=swap,
                          extra_specs=extra_specs or {})


def _request(extra_specs=None, image=None, **flavor):
    return rr.ResourceRequest.of(_flavor(extra_specs, **flavor), image)


def test_a_plain_flavor_asks_its_cpus_memory_and_disk():
    request = _request(ephemeral_gb=5, swap=1)
    assert request.totals() == {'VCPU': 4, 'MEMORY_MB': 2048,
                                'DISK_GB': 16}
    assert request.required_traits() == frozenset()
    assert request.numbered() == []


def test_resources_override_and_drop_what_the_flavor_gives():
    request = _request({'resources:CUSTOM_BAREMETAL_GOLD': '1',
                        'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                        'resources:DISK_GB': '0'})
    assert request.totals() == {'CUSTOM_BAREMETAL_GOLD': 1}
    assert _request({'resources:VGPU': 2, 'resources:VCPU': '8'}).totals() \
        == {'VCPU': 8, 'MEMORY_MB': 2048, 'DISK_GB': 10, 'VGPU': 2}


def test_dedicated_and_mixed_cpu_policies_ask_pcpu():
    assert _request({'hw:cpu_policy': 'dedicated'}).totals() == {
        'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10}
    assert _request(image={'hw_cpu_policy': 'dedicated'}).totals()[
        'PCPU'] == 4
    mixed = _request({'hw:cpu_policy': 'mixed',
                      'hw:cpu_dedicated_mask': '^0'})
    assert (mixed.totals()['VCPU'], mixed.totals()['PCPU']) == (1, 3)
    assert _request({'hw:cpu_policy': 'mixed',
                     'hw:cpu_dedicated_mask': '0-1'}).totals()['PCPU'] == 2
    # The flavor's policy wins over the image's.
    assert 'PCPU' not in _request({'hw:cpu_policy': 'shared'}, image={
        'hw_cpu_policy': 'dedicated'}).totals()


@pytest.mark.parametrize('specs,problem', [
    ({'hw:cpu_policy': 'mixed'}, 'needs hw:cpu_dedicated_mask'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-3'},
     'must leave some'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '7'},
     'names a CPU the flavor does not have'),
    ({'resources:VGPU': 'two'}, 'not an integer'),
    ({'resources:VGPU': '-1'}, 'negative'),
    ({'trait:CUSTOM_X': 'preferred'}, 'required or forbidden'),
])
def test_what_no_provider_could_give_is_refused(specs, problem):
    with pytest.raises(rr.InvalidRequest, match=problem):
        _request(specs)


def test_traits_of_the_flavor_and_the_image():
    request = _request({'trait:HW_CPU_X86_AVX2': 'required',
                        'trait:CUSTOM_SLOW': 'forbidden'},
                       image={'trait:CUSTOM_GOLD': 'required',
                              'trait:CUSTOM_IGNORED': 'forbidden',
                              'hw_architecture': 'x86_64'})
    assert request.required_traits() == {'HW_CPU_X86_AVX2', 'CUSTOM_GOLD'}
    assert request.forbidden_traits() == {'CUSTOM_SLOW'}


def test_numbered_groups_and_their_policy():
    request = _request({'resources1:VGPU': '1', 'trait1:CUSTOM_A': 'required',
                        'resources2:VGPU': '1', 'resources_NIC:NET_BW_EGR_'
                        'KILOBIT_PER_SEC': '1000', 'group_policy': 'isolate'})
    assert [g.suffix for g in request.numbered()] == ['1', '2', '_NIC']
    assert request.totals()['VGPU'] == 2
    assert request.isolated_groups() == 3
    assert request.group('1').required == {'CUSTOM_A'}
    assert 'group 1: VGPU=1, CUSTOM_A' in request.describe()
    assert _request({'resources1:VGPU': '1', 'resources2:VGPU': '1',
                     'group_policy': 'none'}).isolated_groups() == 0


def test_request_spec_resources_follow_the_extra_specs():
    spec = objects.RequestSpec(flavor=_flavor({'resources:VGPU': '1'}),
                               image_properties={})
    assert spec.resources == {'VCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10,
                              'VGPU': 1}


def test_names_of_traits_and_resource_classes():
    assert provider_model.check_trait('HW_CPU_X86_AVX512F')
    assert provider_model.check_trait('CUSTOM_GOLD_1')
    assert provider_model.check_resource_class('VGPU')
    for bad in ('custom_gold', 'GOLD', 'CUSTOM_', 'CUSTOM_a'):
        with pytest.raises(provider_model.BadName):
            provider_model.check_trait(bad)
    with pytest.raises(provider_model.BadName):
        provider_model.check_resource_class('GPU')


def test_per_host_lines_of_the_fake_driver():
    lines = ['cell1-*=CUSTOM_A', 'cell1-compute2=CUSTOM_B,HW_CPU_X86_AVX2',
             '*=CUSTOM_ALL']
    assert provider_model.for_host(
        lines, 'cell1-compute2', provider_model.parse_traits, 'traits') == {
        'CUSTOM_A', 'CUSTOM_B', 'HW_CPU_X86_AVX2', 'CUSTOM_ALL'}
    assert provider_model.for_host(
        lines, 'cell2-compute1', provider_model.parse_traits, 'traits') == {
        'CUSTOM_ALL'}
    assert provider_model.for_host(
        ['cell2-compute1=VGPU:4,PCPU:2'], 'cell2-compute1',
        provider_model.parse_inventory, 'resources') == {'VGPU': 4,
                                                         'PCPU': 2}
    with pytest.raises(provider_model.BadName, match='HOSTS=VALUE'):
        provider_model.for_host(['VGPU:4'], 'h',
                                provider_model.parse_inventory, 'resources')
    with pytest.raises(provider_model.BadName, match='GPU'):
        provider_model.for_host(['*=GPU:4'], 'h',
                                provider_model.parse_inventory, 'resources')
