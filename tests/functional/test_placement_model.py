"""Servers land only where their flavor's and image's traits, resource
classes and CPU policy fit, on the all-in-one; and end in ERROR with a
fault that says what no host had when none fits."""

import json
import time

import pytest

from tests.functional.test_clients import openstack_cli  # noqa: F401

pytestmark = pytest.mark.functional

HOSTS_TRAITS = ['cell1-compute1=HW_CPU_X86_AVX512F,CUSTOM_GOLD']
HOSTS_RESOURCES = ['cell1-compute2=VGPU:2,PCPU:4',
                   'cell1-compute3=CUSTOM_BAREMETAL_GOLD:1']


@pytest.fixture
def system(start_system, fake_driver):
    fake_driver('traits', HOSTS_TRAITS)
    fake_driver('resources', HOSTS_RESOURCES)
    return start_system(cells=1, hosts_per_cell=3)


def _flavor(api, name, extra_specs, vcpus=1, ram=512, disk=1):
    resp = api.post('/v2.1/flavors', {'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk}})
    assert resp.status_code == 200, resp.text
    flavor_id = resp.json()['flavor']['id']
    resp = api.post('/v2.1/flavors/%s/os-extra_specs' % flavor_id,
                    {'extra_specs': extra_specs})
    assert resp.status_code == 200, resp.text
    return flavor_id


def _boot(system, flavor_id, **kwargs):
    api = system.api
    return api.wait_for(api.boot(name='vm', flavor=flavor_id, **kwargs))


def _no_valid_host(server):
    assert server['status'] == 'ERROR', server
    message = server['fault']['message']
    assert message.startswith('No valid host was found.'), message
    return message


def test_required_and_forbidden_traits(system):
    avx = _flavor(system.api, 'avx',
                  {'trait:HW_CPU_X86_AVX512F': 'required'})
    plain = _flavor(system.api, 'not-gold',
                    {'trait:CUSTOM_GOLD': 'forbidden'})
    sgx = _flavor(system.api, 'sgx', {'trait:HW_CPU_X86_SGX': 'required'})

    for _ in range(3):
        assert _boot(system, avx)['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
    for _ in range(4):
        server = _boot(system, plain)
        assert server['status'] == 'ACTIVE'
        assert server['OS-EXT-SRV-ATTR:host'] != 'cell1-compute1'
    message = _no_valid_host(_boot(system, sgx))
    assert 'No host has the traits HW_CPU_X86_SGX.' in message


def test_vgpu_custom_class_and_dedicated_cpus(system):
    vgpu = _flavor(system.api, 'vgpu', {'resources:VGPU': '1'})
    gold = _flavor(system.api, 'gold', {
        'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
        'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})
    pinned = _flavor(system.api, 'pinned', {'hw:cpu_policy': 'dedicated'},
                     vcpus=2)

    vgpus = [_boot(system, vgpu) for _ in range(2)]
    assert {s['OS-EXT-SRV-ATTR:host'] for s in vgpus} == {'cell1-compute2'}
    # Two VGPUs, both handed out.
    message = _no_valid_host(_boot(system, vgpu))
    assert 'No host has room for VGPU=1.' in message

    metal = _boot(system, gold)
    assert metal['OS-EXT-SRV-ATTR:host'] == 'cell1-compute3'
    _no_valid_host(_boot(system, gold))

    dedicated = [_boot(system, pinned) for _ in range(2)]
    assert {s['OS-EXT-SRV-ATTR:host'] for s in dedicated} == {
        'cell1-compute2'}
    message = _no_valid_host(_boot(system, pinned))
    assert 'PCPU=2' in message

    allocations = system.allocations()
    for server in vgpus:
        assert allocations[server['id']] == {'cell1-compute2': {
            'VGPU': 1, 'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}
    assert allocations[metal['id']] == {
        'cell1-compute3': {'CUSTOM_BAREMETAL_GOLD': 1}}
    for server in dedicated:
        assert allocations[server['id']] == {'cell1-compute2': {
            'PCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 1}}

    # Deleting a VGPU server gives its unit back.
    system.api.delete('/v2.1/servers/%s' % vgpus[0]['id'])
    system.api.wait_gone(vgpus[0]['id'])
    assert _boot(system, vgpu)['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'


def test_an_image_with_a_required_trait(system):
    api = system.api
    resp = api.post('/image/v2/images', {
        'name': 'gold-only', 'disk_format': 'raw',
        'container_format': 'bare', 'trait:CUSTOM_GOLD': 'required'})
    assert resp.status_code == 201, resp.text
    image_id = resp.json()['id']
    resp = api.request('PUT', '/image/v2/images/%s/file' % image_id,
                       data=b'*' * 1024,
                       headers={'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 204, resp.text
    resp = api.post('/v2.1/servers', {'server': {
        'name': 'gold', 'flavorRef': '1', 'imageRef': image_id,
        'networks': 'none'}})
    assert resp.status_code == 202, resp.text
    for server_id in [resp.json()['server']['id']]:
        server = api.wait_for(server_id)
        assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'


def test_placement_shows_the_reported_traits_and_inventories(system):
    api = system.api
    headers = {'OpenStack-API-Version': 'placement 1.39'}

    def provider(name):
        resp = api.get('/placement/resource_providers', params={
            'name': name}, headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()['resource_providers'][0]['uuid']

    resp = api.get('/placement/resource_providers/%s/traits'
                   % provider('cell1-compute1'), headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json()['traits'] == ['CUSTOM_GOLD', 'HW_CPU_X86_AVX512F']
    resp = api.get('/placement/resource_providers/%s/inventories'
                   % provider('cell1-compute2'), headers=headers)
    inventories = resp.json()['inventories']
    assert (inventories['VGPU']['total'], inventories['PCPU']['total']) == (
        2, 4)
    resp = api.get('/placement/resource_providers/%s/traits'
                   % provider('cell1-compute3'), headers=headers)
    assert resp.json()['traits'] == []


def test_a_trait_the_operator_sets_with_the_cli_steers_a_flavor(
        system, openstack_cli):  # noqa: F811
    """The unmodified osc-placement commands make a custom trait and set
    it on one host; a flavor requiring it then lands there only, and the
    host keeps it across its compute's reports."""
    cli = openstack_cli(system)
    api = system.api
    listed = json.loads(cli('resource', 'provider', 'list', '-f', 'json'))
    target = {p['name']: p['uuid'] for p in listed}['cell1-compute3']
    fast = _flavor(api, 'fast', {'trait:CUSTOM_FAST': 'required'})
    message = _no_valid_host(_boot(system, fast))
    assert 'No host has the traits CUSTOM_FAST.' in message

    cli('--os-placement-api-version', '1.6', 'trait', 'create',
        'CUSTOM_FAST')
    set_to = json.loads(cli(
        '--os-placement-api-version', '1.6', 'resource', 'provider',
        'trait', 'set', '--trait', 'CUSTOM_FAST', '--trait', 'HW_CPU_X86_AVX2',
        target, '-f', 'json'))
    assert sorted(t['name'] for t in set_to) == ['CUSTOM_FAST',
                                                 'HW_CPU_X86_AVX2']
    for _ in range(3):
        assert _boot(system, fast)['OS-EXT-SRV-ATTR:host'] == \
            'cell1-compute3'
    # The compute's next reports keep what the operator set.
    system.aio.computes['cell1-compute3'].manager.report()
    shown = json.loads(cli('--os-placement-api-version', '1.6', 'resource',
                           'provider', 'trait', 'list', target, '-f',
                           'json'))
    assert sorted(t['name'] for t in shown) == ['CUSTOM_FAST',
                                                'HW_CPU_X86_AVX2']
    assert 'CUSTOM_FAST' in [t['name'] for t in json.loads(cli(
        '--os-placement-api-version', '1.6', 'trait', 'list', '-f',
        'json'))]
    # In use: not deleted; cleared from the host, it is.
    assert api.delete('/placement/traits/CUSTOM_FAST', headers={
        'OpenStack-API-Version': 'placement 1.6'}).status_code == 409
    cli('--os-placement-api-version', '1.6', 'resource', 'provider',
        'trait', 'delete', target)
    cli('--os-placement-api-version', '1.6', 'trait', 'delete',
        'CUSTOM_FAST')
    message = _no_valid_host(_boot(system, fast))
    assert 'CUSTOM_FAST' in message


def test_a_trait_write_at_a_stale_generation_is_a_conflict(system):
    api = system.api
    headers = {'OpenStack-API-Version': 'placement 1.39'}
    resp = api.get('/placement/resource_providers', params={
        'name': 'cell1-compute1'}, headers=headers)
    provider = resp.json()['resource_providers'][0]
    path = '/placement/resource_providers/%s/traits' % provider['uuid']
    body = {'traits': ['CUSTOM_GOLD', 'HW_CPU_X86_AVX512F', 'CUSTOM_NEW'],
            'resource_provider_generation': provider['generation']}
    resp = api.put(path, body, headers=headers)
    assert resp.status_code == 400, resp.text
    assert 'CUSTOM_NEW' in resp.json()['errors'][0]['detail']
    assert api.put('/placement/traits/CUSTOM_NEW',
                   headers=headers).status_code == 201
    assert api.put('/placement/traits/CUSTOM_NEW',
                   headers=headers).status_code == 204
    assert api.put('/placement/traits/NOT_CUSTOM',
                   headers=headers).status_code == 400
    resp = api.put(path, body, headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json()['resource_provider_generation'] == \
        provider['generation'] + 1
    resp = api.put(path, body, headers=headers)
    assert resp.status_code == 409
    assert resp.json()['errors'][0]['code'] == 'placement.concurrent_update'
    assert api.delete('/placement/traits/HW_CPU_X86_AVX512F',
                      headers=headers).status_code == 400


def test_custom_resource_classes_with_the_cli(system, openstack_cli):  # noqa
    """``openstack resource class create/list/delete``: the reported
    custom class is listed, a new one made and removed; one in use is
    not removed."""
    cli = openstack_cli(system)
    listed = [c['name'] for c in json.loads(cli(
        '--os-placement-api-version', '1.7', 'resource', 'class', 'list',
        '-f', 'json'))]
    assert listed[:3] == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    assert 'CUSTOM_BAREMETAL_GOLD' in listed and 'VGPU' in listed
    cli('--os-placement-api-version', '1.7', 'resource', 'class', 'create',
        'CUSTOM_FPGA')
    assert 'CUSTOM_FPGA' in cli('--os-placement-api-version', '1.7',
                                'resource', 'class', 'list')
    cli('--os-placement-api-version', '1.7', 'resource', 'class', 'delete',
        'CUSTOM_FPGA')
    api = system.api
    headers = {'OpenStack-API-Version': 'placement 1.23'}
    assert api.get('/placement/resource_classes/CUSTOM_FPGA',
                   headers=headers).status_code == 404
    resp = api.delete('/placement/resource_classes/CUSTOM_BAREMETAL_GOLD',
                      headers=headers)
    assert resp.status_code == 409, resp.text
    assert api.delete('/placement/resource_classes/VGPU',
                      headers=headers).status_code == 400
    resp = api.post('/placement/resource_classes', {'name': 'CUSTOM_X'},
                    headers=headers)
    assert resp.status_code == 201, resp.text
    resp = api.post('/placement/resource_classes', {'name': 'CUSTOM_X'},
                    headers=headers)
    assert resp.status_code == 409
    assert resp.json()['errors'][0]['code'] == 'placement.duplicate_name'
    assert api.post('/placement/resource_classes', {'name': 'GOLD'},
                    headers=headers).status_code == 400


def test_placement_lists_filter_on_traits_and_any_class(system):
    api = system.api

    def read(path, version='1.39', status=200):
        resp = api.get('/placement' + path, headers={
            'OpenStack-API-Version': 'placement %s' % version})
        assert resp.status_code == status, resp.text
        return resp.json()

    def names(path, version='1.39'):
        return sorted(p['name'] for p in read(path, version)[
            'resource_providers'])

    assert names('/resource_providers?required=CUSTOM_GOLD') == [
        'cell1-compute1']
    assert names('/resource_providers?required=!CUSTOM_GOLD') == [
        'cell1-compute2', 'cell1-compute3']
    assert names('/resource_providers?required=in:CUSTOM_GOLD,'
                 'HW_CPU_X86_AVX512F') == ['cell1-compute1']
    assert names('/resource_providers?resources=VGPU:2') == [
        'cell1-compute2']
    assert 'No such trait(s): CUSTOM_NOPE' in read(
        '/resource_providers?required=CUSTOM_NOPE', status=400)[
        'errors'][0]['detail']
    candidates = read('/allocation_candidates?resources=VCPU:1'
                      '&required=HW_CPU_X86_AVX512F')
    [(uuid, summary)] = candidates['provider_summaries'].items()
    # Standard traits first, then the custom ones, as Placement lists them.
    assert summary['traits'] == ['HW_CPU_X86_AVX512F', 'CUSTOM_GOLD']
    candidates = read('/allocation_candidates?resources=CUSTOM_BAREMETAL_'
                      'GOLD:1&root_required=!CUSTOM_GOLD')
    assert len(candidates['allocation_requests']) == 1


def test_a_report_replaces_what_the_compute_reported_only(system,
                                                          fake_driver):
    """A host that stops reporting a trait or a class loses it; an
    operator's trait stays, and an inventory stays while it is in use."""
    api = system.api
    headers = {'OpenStack-API-Version': 'placement 1.39'}

    def provider(name):
        return api.get('/placement/resource_providers', params={
            'name': name}, headers=headers).json()['resource_providers'][0]

    def traits(name):
        return api.get('/placement/resource_providers/%s/traits'
                       % provider(name)['uuid'], headers=headers).json()[
            'traits']

    def inventory(name):
        return sorted(api.get('/placement/resource_providers/%s/inventories'
                              % provider(name)['uuid'],
                              headers=headers).json()['inventories'])

    first = provider('cell1-compute1')
    assert api.put('/placement/traits/CUSTOM_MINE',
                   headers=headers).status_code == 201
    resp = api.put('/placement/resource_providers/%s/traits' % first['uuid'],
                   {'traits': ['CUSTOM_GOLD', 'HW_CPU_X86_AVX512F',
                               'CUSTOM_MINE'],
                    'resource_provider_generation': first['generation']},
                   headers=headers)
    assert resp.status_code == 200, resp.text
    vgpu = _flavor(api, 'vgpu', {'resources:VGPU': '1'})
    server = _boot(system, vgpu)
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'

    fake_driver('traits', ['cell1-compute1=CUSTOM_GOLD'])
    fake_driver('resources', [])
    for host in ('cell1-compute1', 'cell1-compute2', 'cell1-compute3'):
        system.aio.computes[host].manager.report()
    # A report is a cast: the scheduler writes it a moment later.
    _eventually(lambda: traits('cell1-compute1'),
                ['CUSTOM_GOLD', 'CUSTOM_MINE'])
    _eventually(lambda: inventory('cell1-compute3'),
                ['DISK_GB', 'MEMORY_MB', 'VCPU'])
    # VGPU is in use: it stays until the server goes; PCPU goes now.
    _eventually(lambda: inventory('cell1-compute2'),
                ['DISK_GB', 'MEMORY_MB', 'VCPU', 'VGPU'])
    api.delete('/v2.1/servers/%s' % server['id'])
    api.wait_gone(server['id'])
    # The claim goes just after the server does.
    _eventually(lambda: server['id'] in system.allocations(), False)
    system.aio.computes['cell1-compute2'].manager.report()
    _eventually(lambda: inventory('cell1-compute2'),
                ['DISK_GB', 'MEMORY_MB', 'VCPU'])
    _no_valid_host(_boot(system, vgpu))


def _eventually(read, expected, timeout=10):
    """``read()`` once it answers ``expected``; the last answer in the
    assertion after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = read()
        if found == expected or time.monotonic() > deadline:
            assert found == expected
            return found
        time.sleep(0.05)
