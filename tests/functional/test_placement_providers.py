"""Resource providers, their inventories, trees and aggregates written
through the Placement API with the unmodified osc-placement commands,
as an operator (or a service such as Neutron) writes them; and what the
writes refuse."""

import json
import uuid

import pytest

from tests.functional.test_clients import openstack_cli  # noqa: F401

pytestmark = pytest.mark.functional

VERSION = 'placement 1.39'


def _error(resp, status):
    assert resp.status_code == status, resp.text
    return resp.json()['errors'][0]


def test_the_cli_makes_a_tree_with_inventories_and_aggregates(
        start_system, openstack_cli):  # noqa: F811
    system = start_system(cells=1, hosts_per_cell=1)
    cli = openstack_cli(system)

    def run(version, *args):
        return json.loads(cli('--os-placement-api-version', version, *args,
                              '-f', 'json'))

    [compute] = run('1.14', 'resource', 'provider', 'list')
    pool = run('1.20', 'resource', 'provider', 'create', 'bandwidth-pool')
    assert pool['generation'] == 0
    child = run('1.20', 'resource', 'provider', 'create', 'nic-1',
                '--parent-provider', compute['uuid'])
    assert child['parent_provider_uuid'] == compute['uuid']
    assert child['root_provider_uuid'] == compute['uuid']
    tree = run('1.14', 'resource', 'provider', 'list', '--in-tree',
               child['uuid'])
    assert sorted(p['name'] for p in tree) == sorted(
        [compute['name'], 'nic-1'])

    cli('--os-placement-api-version', '1.7', 'resource', 'class', 'create',
        'CUSTOM_NET_MBPS')
    inventory = run('1.20', 'resource', 'provider', 'inventory', 'set',
                    pool['uuid'], '--resource', 'CUSTOM_NET_MBPS=1000',
                    '--resource', 'CUSTOM_NET_MBPS:reserved=100',
                    '--resource', 'CUSTOM_NET_MBPS:step_size=10')
    [row] = inventory
    assert (row['resource_class'], row['total'], row['reserved'],
            row['step_size']) == ('CUSTOM_NET_MBPS', 1000, 100, 10)
    # Amounts a provider has room and units for, as the listing filters
    # them: 500 in steps of 10 fits, 505 does not.
    found = run('1.20', 'resource', 'provider', 'list', '--resource',
                'CUSTOM_NET_MBPS=500')
    assert [p['uuid'] for p in found] == [pool['uuid']]
    assert run('1.20', 'resource', 'provider', 'list', '--resource',
               'CUSTOM_NET_MBPS=505') == []
    # One class written alone takes the defaults for what it leaves out.
    one = run('1.20', 'resource', 'provider', 'inventory', 'class', 'set',
              pool['uuid'], 'CUSTOM_NET_MBPS', '--total', '2000')
    assert (one['total'], one['reserved'], one['step_size']) == (2000, 0, 1)

    aggregate = str(uuid.uuid4())
    generation = run('1.20', 'resource', 'provider', 'show',
                     pool['uuid'])['generation']
    run('1.19', 'resource', 'provider', 'aggregate', 'set', pool['uuid'],
        '--aggregate', aggregate, '--generation', str(generation))
    members = run('1.14', 'resource', 'provider', 'list', '--aggregate-uuid',
                  aggregate)
    assert [p['uuid'] for p in members] == [pool['uuid']]

    renamed = run('1.20', 'resource', 'provider', 'set', pool['uuid'],
                  '--name', 'bandwidth-pool-a')
    assert renamed['name'] == 'bandwidth-pool-a'
    # The class is in use by an inventory: not deleted.
    placement = system.api
    resp = placement.delete('/placement/resource_classes/CUSTOM_NET_MBPS',
                            headers={'OpenStack-API-Version': VERSION})
    assert resp.status_code == 409

    # A parent with a child is not deleted; the child first, then it.
    resp = placement.delete('/placement/resource_providers/%s'
                            % compute['uuid'],
                            headers={'OpenStack-API-Version': VERSION})
    assert _error(resp, 409)['code'] == \
        'placement.resource_provider.cannot_delete_parent'
    cli('resource', 'provider', 'delete', child['uuid'])
    cli('resource', 'provider', 'delete', pool['uuid'])
    names = [p['name'] for p in run('1.14', 'resource', 'provider',
                                    'list')]
    assert names == [compute['name']]


def test_writes_are_guarded_and_checked(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    headers = {'OpenStack-API-Version': VERSION}
    base = '/placement/resource_providers'

    resp = api.post(base, {'name': 'pool'}, headers=headers)
    assert resp.status_code == 200, resp.text
    pool = resp.json()
    assert resp.headers['Location'].endswith('/resource_providers/%s'
                                             % pool['uuid'])
    error = _error(api.post(base, {'name': 'pool'}, headers=headers), 409)
    assert error['code'] == 'placement.duplicate_name'
    assert 'name: pool' in error['detail']
    _error(api.post(base, {'name': 'x', 'uuid': 'not-a-uuid'},
                    headers=headers), 400)
    error = _error(api.post(base, {'name': 'y', 'parent_provider_uuid':
                                   str(uuid.uuid4())}, headers=headers), 400)
    assert 'parent provider UUID does not exist' in error['detail']

    path = '%s/%s/inventories' % (base, pool['uuid'])
    body = {'resource_provider_generation': 0,
            'inventories': {'DISK_GB': {'total': 100, 'reserved': 10}}}
    resp = api.put(path, body, headers=headers)
    assert resp.status_code == 200, resp.text
    written = resp.json()
    assert written['resource_provider_generation'] == 1
    assert written['inventories']['DISK_GB'] == {
        'total': 100, 'reserved': 10, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 1.0}
    # The generation read before the write is stale now.
    error = _error(api.put(path, body, headers=headers), 409)
    assert error['code'] == 'placement.concurrent_update'
    # Reserving more than the total is refused.
    body['resource_provider_generation'] = 1
    body['inventories']['DISK_GB']['reserved'] = 101
    assert 'The reserved value is greater than total' in _error(
        api.put(path, body, headers=headers), 400)['detail']
    body['inventories'] = {'CUSTOM_NOPE': {'total': 1}}
    assert 'Unknown resource class' in _error(
        api.put(path, body, headers=headers), 400)['detail']
    # Without a JSON body's content type, 415.
    resp = api.session.put(api.base_url + path, data="{}", headers=dict(
        headers, **{'Content-Type': 'text/plain'}))
    assert resp.status_code == 415

    resp = api.delete(path + '/DISK_GB', headers=headers)
    assert resp.status_code == 204 and 'Content-Type' not in resp.headers
    _error(api.delete(path + '/DISK_GB', headers=headers), 404)
    assert api.delete('%s/%s' % (base, pool['uuid']),
                      headers=headers).status_code == 204
    _error(api.get('%s/%s' % (base, pool['uuid']), headers=headers), 404)


def test_an_inventory_in_use_stays(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    headers = {'OpenStack-API-Version': VERSION}
    server = api.wait_for(api.boot(name='vm'))
    assert server['status'] == 'ACTIVE'
    [compute] = api.get('/placement/resource_providers',
                        headers=headers).json()['resource_providers']
    path = '/placement/resource_providers/%s/inventories' % compute['uuid']
    error = _error(api.delete(path + '/VCPU', headers=headers), 409)
    assert "Inventory for 'VCPU'" in error['detail']
    error = _error(api.delete(path, headers=headers), 409)
    assert error['code'] == 'placement.inventory.inuse'
    # A provider a server holds allocations of is not deleted.
    error = _error(api.delete('/placement/resource_providers/%s'
                              % compute['uuid'], headers=headers), 409)
    assert error['code'] == 'placement.resource_provider.inuse'


def test_a_consumer_that_is_no_server_holds_what_it_was_given(
        start_system, openstack_cli):  # noqa: F811
    """An allocation written with the CLI for a consumer that is not a
    server (as Neutron writes a port's) takes its amount from the host:
    a server that needs it finds no host until it is deleted."""
    system = start_system(cells=1, hosts_per_cell=1)
    cli = openstack_cli(system)
    api = system.api
    [compute] = json.loads(cli('resource', 'provider', 'list', '-f',
                               'json'))
    inventory = api.get('/placement/resource_providers/%s/inventories'
                        % compute['uuid'], headers={
                            'OpenStack-API-Version': VERSION}).json()
    vcpus = inventory['inventories']['VCPU']
    capacity = int((vcpus['total'] - vcpus['reserved']) *
                   vcpus['allocation_ratio'])
    port = str(uuid.uuid4())
    shown = json.loads(cli(
        '--os-placement-api-version', '1.12', 'resource', 'provider',
        'allocation', 'set', port, '--project-id', 'demo', '--user-id',
        'demo', '--allocation', 'rp=%s,VCPU=%d' % (compute['uuid'],
                                                   capacity),
        '-f', 'json'))
    assert [(a['resource_provider'], a['resources']) for a in shown] == [
        (compute['uuid'], {'VCPU': capacity})]

    server = api.wait_for(api.boot(name='vm'))
    assert server['status'] == 'ERROR', server
    assert server['fault']['message'].startswith('No valid host')

    resp = api.get('/placement/allocations/%s' % port,
                   headers={'OpenStack-API-Version': VERSION})
    assert resp.json()['consumer_generation'] == 1
    assert resp.json()['project_id'] == 'demo'
    cli('--os-placement-api-version', '1.12', 'resource', 'provider',
        'allocation', 'delete', port)
    server = api.wait_for(api.boot(name='vm2'))
    assert server['status'] == 'ACTIVE', server
