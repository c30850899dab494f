"""Computes report provider trees, and servers take their devices from
the children: a VGPU from a GPU below the compute node, a PCI device of
a custom class, a numbered group from the one child that has its trait.
"""

import pytest

from tests.functional import test_placement_model as model

pytestmark = pytest.mark.functional

PLACEMENT = {'OpenStack-API-Version': 'placement 1.39'}
PROVIDERS = [
    'cell1-compute2=pgpu0|VGPU:1|CUSTOM_GPU_A;pgpu1|VGPU:1|CUSTOM_GPU_B',
    'cell1-compute3=pci0|CUSTOM_PCI_FPGA:1;nic0|NET_BW_EGR_KILOBIT_PER_'
    'SEC:1000|CUSTOM_PHYSNET_PUBLIC;nic0vf@nic0|SRIOV_NET_VF:2',
]


@pytest.fixture
def system(start_system, fake_driver):
    fake_driver('providers', PROVIDERS)
    fake_driver('traits', ['cell1-compute1=CUSTOM_GOLD'])
    return start_system(cells=1, hosts_per_cell=3)


def _providers(api):
    resp = api.get('/placement/resource_providers', headers=PLACEMENT)
    assert resp.status_code == 200, resp.text
    return {rp['name']: rp for rp in resp.json()['resource_providers']}


def _allocations(api, consumer):
    resp = api.get('/placement/allocations/%s' % consumer,
                   headers=PLACEMENT)
    assert resp.status_code == 200, resp.text
    return {uuid: alloc['resources']
            for uuid, alloc in resp.json()['allocations'].items()}


def _usages(api, uuid):
    resp = api.get('/placement/resource_providers/%s/usages' % uuid,
                   headers=PLACEMENT)
    assert resp.status_code == 200, resp.text
    return resp.json()['usages']


def test_computes_report_their_trees(system):
    providers = _providers(system.api)
    node = providers['cell1-compute2']
    for name, trait in (('cell1-compute2_pgpu0', 'CUSTOM_GPU_A'),
                        ('cell1-compute2_pgpu1', 'CUSTOM_GPU_B')):
        child = providers[name]
        assert child['parent_provider_uuid'] == node['uuid']
        assert child['root_provider_uuid'] == node['uuid']
        resp = system.api.get('/placement/resource_providers/%s/traits'
                              % child['uuid'], headers=PLACEMENT)
        assert resp.json()['traits'] == [trait]
    vf = providers['cell1-compute3_nic0vf']
    assert vf['parent_provider_uuid'] == providers['cell1-compute3_nic0'][
        'uuid']
    assert vf['root_provider_uuid'] == providers['cell1-compute3']['uuid']
    resp = system.api.get('/placement/resource_providers/%s/inventories'
                          % vf['uuid'], headers=PLACEMENT)
    assert resp.json()['inventories']['SRIOV_NET_VF']['total'] == 2


def test_servers_take_devices_from_children(system):
    api = system.api
    providers = _providers(api)
    pgpu = {name: providers['cell1-compute2_%s' % name]['uuid']
            for name in ('pgpu0', 'pgpu1')}
    node2 = providers['cell1-compute2']['uuid']
    gpu_b = model._flavor(api, 'gpu-b', {
        'resources1:VGPU': '1', 'trait1:CUSTOM_GPU_B': 'required'})
    vgpu = model._flavor(api, 'vgpu', {'resources:VGPU': '1'})
    fpga = model._flavor(api, 'fpga', {'resources:CUSTOM_PCI_FPGA': '1'})

    first = model._boot(system, gpu_b)
    assert first['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'
    assert _allocations(api, first['id']) == {
        node2: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
        pgpu['pgpu1']: {'VGPU': 1}}
    # The only GPU with the trait is taken; the other has no trait B.
    message = model._no_valid_host(model._boot(system, gpu_b))
    assert 'VGPU' in message

    second = model._boot(system, vgpu)
    assert second['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'
    assert _allocations(api, second['id'])[pgpu['pgpu0']] == {'VGPU': 1}
    message = model._no_valid_host(model._boot(system, vgpu))
    assert 'No host has room for VGPU=1.' in message
    assert _usages(api, pgpu['pgpu0']) == {'VGPU': 1}

    device = model._boot(system, fpga)
    assert device['OS-EXT-SRV-ATTR:host'] == 'cell1-compute3'
    pci = providers['cell1-compute3_pci0']['uuid']
    assert _allocations(api, device['id'])[pci] == {'CUSTOM_PCI_FPGA': 1}

    # Deleting a server gives its child's unit back, to the next one.
    api.delete('/v2.1/servers/%s' % second['id'])
    api.wait_gone(second['id'])
    assert _usages(api, pgpu['pgpu0']) == {'VGPU': 0}
    third = model._boot(system, vgpu)
    assert _allocations(api, third['id'])[pgpu['pgpu0']] == {'VGPU': 1}


def test_isolated_groups_take_a_child_each(system):
    api = system.api
    providers = _providers(api)
    both = model._flavor(api, 'two-gpus', {
        'resources1:VGPU': '1', 'resources2:VGPU': '1',
        'group_policy': 'isolate'})
    server = model._boot(system, both)
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'
    held = _allocations(api, server['id'])
    assert {providers['cell1-compute2_pgpu0']['uuid'],
            providers['cell1-compute2_pgpu1']['uuid']} <= set(held)
    message = model._no_valid_host(model._boot(system, both))
    # Both GPUs are taken now.
    assert 'No host has room for VGPU=2.' in message


def test_an_operator_trait_on_a_child_survives_reports(
        system, fake_driver):
    api = system.api
    child = _providers(api)['cell1-compute2_pgpu0']
    assert api.put('/placement/traits/CUSTOM_OPERATOR',
                   headers=PLACEMENT).status_code == 201
    url = '/placement/resource_providers/%s/traits' % child['uuid']
    resp = api.put(url, {'traits': ['CUSTOM_GPU_A', 'CUSTOM_OPERATOR'],
                         'resource_provider_generation':
                             child['generation']}, headers=PLACEMENT)
    assert resp.status_code == 200, resp.text
    flavor = model._flavor(api, 'operator-gpu', {
        'resources1:VGPU': '1', 'trait1:CUSTOM_OPERATOR': 'required'})
    # The compute's next report names another trait, and a new child.
    fake_driver('providers', [
        'cell1-compute2=pgpu0|VGPU:1|CUSTOM_GPU_A2;pgpu1|VGPU:1|'
        'CUSTOM_GPU_B;pgpu2|VGPU:1'])
    system.aio.computes['cell1-compute2'].manager.report()
    # A report is a cast: the scheduler writes it a moment later.
    model._eventually(lambda: sorted(api.get(url, headers=PLACEMENT).json()[
        'traits']), ['CUSTOM_GPU_A2', 'CUSTOM_OPERATOR'])
    assert 'cell1-compute2_pgpu2' in _providers(api)
    server = model._boot(system, flavor)
    assert _allocations(api, server['id'])[child['uuid']] == {'VGPU': 1}
    # A child no longer reported goes once nothing is allocated of it.
    fake_driver('providers', ['cell1-compute2=pgpu0|VGPU:1'])
    system.aio.computes['cell1-compute2'].manager.report()
    model._eventually(lambda: sorted(
        name for name in _providers(api) if name.startswith(
            'cell1-compute2')), ['cell1-compute2', 'cell1-compute2_pgpu0'])


def test_moves_hold_and_hand_over_a_childs_units(start_system, fake_driver):
    """A VGPU server's resize holds the source's GPU (the migration's)
    and the destination's (the server's) until it is confirmed; a revert
    gives the server its source's GPU back; a cold migration confirmed
    leaves only the destination's held."""
    fake_driver('providers', ['cell1-compute1=pgpu0|VGPU:1',
                              'cell1-compute2=pgpu0|VGPU:1'])
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    gpu = {name: rp['uuid'] for name, rp in _providers(api).items()}
    small = model._flavor(api, 'vgpu-small', {'resources:VGPU': '1'})
    large = model._flavor(api, 'vgpu-large', {'resources:VGPU': '1'},
                          ram=1024)
    server = model._boot(system, small)
    source = server['OS-EXT-SRV-ATTR:host']
    dest = ({'cell1-compute1', 'cell1-compute2'} - {source}).pop()

    def vgpus():
        return {name[:-len('_pgpu0')]: _usages(api, gpu[name])['VGPU']
                for name in gpu if name.endswith('_pgpu0')}

    def action(body, status=202):
        resp = api.post('/v2.1/servers/%s/action' % server['id'], body)
        assert resp.status_code == status, resp.text

    action({'resize': {'flavorRef': large}})
    moved = api.wait_for(server['id'], statuses=('VERIFY_RESIZE', 'ERROR'))
    assert moved['status'] == 'VERIFY_RESIZE', moved.get('fault')
    assert moved['OS-EXT-SRV-ATTR:host'] == dest
    assert vgpus() == {source: 1, dest: 1}
    assert _allocations(api, server['id'])[gpu[dest + '_pgpu0']] == {
        'VGPU': 1}

    action({'revertResize': None})
    back = api.wait_for(server['id'], statuses=('ACTIVE', 'ERROR'))
    assert (back['status'], back['OS-EXT-SRV-ATTR:host']) == (
        'ACTIVE', source)
    model._eventually(vgpus, {source: 1, dest: 0})
    assert _allocations(api, server['id'])[gpu[source + '_pgpu0']] == {
        'VGPU': 1}

    action({'migrate': None})
    moved = api.wait_for(server['id'], statuses=('VERIFY_RESIZE', 'ERROR'))
    assert moved['OS-EXT-SRV-ATTR:host'] == dest
    action({'confirmResize': None}, status=204)
    api.wait_for(server['id'], statuses=('ACTIVE', 'ERROR'))
    model._eventually(vgpus, {source: 0, dest: 1})


def _set_inventory(api, uuid, rc, **fields):
    url = '/placement/resource_providers/%s/inventories/%s' % (uuid, rc)
    held = api.get(url, headers=PLACEMENT).json()
    body = {k: v for k, v in held.items()
            if k not in ('resource_provider_generation',)}
    body.update(fields, resource_provider_generation=held[
        'resource_provider_generation'])
    resp = api.put(url, body, headers=PLACEMENT)
    assert resp.status_code == 200, resp.text
    return url


def test_an_operators_ratio_and_reserved_survive_reports(system,
                                                         fake_driver):
    """As in Nova: an allocation ratio the compute's configuration leaves
    unset, and the reserved amount of a child's class, are the
    operator's; the totals are the compute's."""
    api = system.api
    providers = _providers(api)
    node = providers['cell1-compute2']['uuid']
    gpu = providers['cell1-compute2_pgpu0']['uuid']
    vcpu = _set_inventory(api, node, 'VCPU', allocation_ratio=8.0)
    vgpu = _set_inventory(api, gpu, 'VGPU', reserved=1)
    # The compute's next report says something new: it is written.
    fake_driver('traits', ['cell1-compute2=CUSTOM_SILVER'])
    fake_driver('providers', [
        'cell1-compute2=pgpu0|VGPU:2|CUSTOM_GPU_A;pgpu1|VGPU:1|'
        'CUSTOM_GPU_B'])
    system.aio.computes['cell1-compute2'].manager.report()
    model._eventually(lambda: api.get(vgpu, headers=PLACEMENT).json()[
        'total'], 2)
    assert api.get(vgpu, headers=PLACEMENT).json()['reserved'] == 1
    assert api.get(vcpu, headers=PLACEMENT).json()[
        'allocation_ratio'] == 8.0
    # The scheduler places on what the operator set: 8 CPUs at 8.0, where
    # the other hosts have the initial 4.0.
    wide = model._flavor(api, 'wide', {}, vcpus=48, ram=64)
    server = model._boot(system, wide)
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'


def test_a_disabled_compute_node_has_the_disabled_trait(system):
    """As Nova's computes do: while the operator has the service
    disabled, the compute node's provider has COMPUTE_STATUS_DISABLED;
    enabled again, it has not."""
    api = system.api
    node = _providers(api)['cell1-compute3']['uuid']
    url = '/placement/resource_providers/%s/traits' % node
    [compute] = [s for s in api.get('/v2.1/os-services').json()['services']
                 if s['host'] == 'cell1-compute3' and
                 s['binary'] == 'nova-compute']
    manager = system.aio.computes['cell1-compute3'].manager

    def traits_after_a_report():
        manager.heartbeat()
        manager.report()
        return 'COMPUTE_STATUS_DISABLED' in api.get(
            url, headers=PLACEMENT).json()['traits']

    assert not traits_after_a_report()
    for status, disabled in (('disabled', True), ('enabled', False)):
        resp = api.put('/v2.1/os-services/%s' % compute['id'],
                       {'status': status})
        assert resp.status_code == 200, resp.text
        model._eventually(traits_after_a_report, disabled)
