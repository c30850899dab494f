"""Shelve, shelve-offload and unshelve: a shelved server keeps its host
and claim until it is offloaded; an offloaded one holds neither, and its
unshelve places it again through the scheduler, inside its cell, with
alternates."""

import time

import pytest

from scheduler_split import conf
from tests.functional.fixtures import nova_error

CONF = conf.CONF
pytestmark = pytest.mark.functional


def _action(api, server_id, name, value=None):
    return api.post('/v2.1/servers/%s/action' % server_id, {name: value})


def _images_named(api, name):
    resp = api.get('/image/v2/images', params={'name': name})
    assert resp.status_code == 200, resp.text
    return resp.json()['images']


def _wait_settled(api, server_id, timeout=30):
    """The server once it has no task left."""
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(server_id)
        if server['OS-EXT-STS:task_state'] is None and \
                server['status'] != 'ACTIVE' or time.monotonic() > deadline:
            return server
        time.sleep(0.05)


def _events(api, server_id):
    """(event, result) of every action of the server, oldest first."""
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    events = []
    for action in reversed(resp.json()['instanceActions']):
        resp = api.get('/v2.1/servers/%s/os-instance-actions/%s'
                       % (server_id, action['request_id']))
        assert resp.status_code == 200, resp.text
        events += [(e['event'], e['result'])
                   for e in resp.json()['instanceAction']['events']]
    return events


def _actions(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    return sorted(a['action'] for a in resp.json()['instanceActions'])


def test_an_offloaded_server_holds_no_claim_and_is_placed_again_by_unshelve(
        start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(name='keeper')
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    assert set(system.allocations()) == {server_id}

    assert _action(api, server_id, 'shelve').status_code == 202
    # [DEFAULT] shelved_offload_time is 0: offloaded at once.
    server = api.wait_for(server_id, ('SHELVED_OFFLOADED',))
    assert server['OS-EXT-SRV-ATTR:host'] is None
    assert server['OS-EXT-STS:vm_state'] == 'shelved_offloaded'
    assert server['OS-EXT-STS:task_state'] is None
    assert system.allocations_after_settling({}) == {}
    [image] = _images_named(api, 'keeper-shelved')
    assert image['status'] == 'active'

    assert _action(api, server_id, 'unshelve').status_code == 202
    server = api.wait_for(server_id, ('ACTIVE',))
    host = server['OS-EXT-SRV-ATTR:host']
    assert host in ('cell1-compute1', 'cell1-compute2')
    assert server['OS-EXT-STS:power_state'] == 1
    assert list(system.allocations()[server_id]) == [host]
    # The shelved image goes once a host took the server; the server
    # keeps its identity.
    assert _images_named(api, 'keeper-shelved') == []
    assert server['name'] == 'keeper'
    assert _actions(api, server_id) == ['create', 'shelve', 'unshelve']
    events = dict(_events(api, server_id))
    assert events['compute_shelve_instance'] == 'Success'
    assert events['compute_shelve_offload_instance'] == 'Success'
    assert events['conductor_unshelve_instance'] == 'Success'
    assert events['compute_unshelve_instance'] == 'Success'


def test_a_shelved_server_keeps_its_host_and_claim_until_offloaded(
        start_system, override):
    override('shelved_offload_time', -1)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u1:p1')
    server_id = user.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    claims = system.allocations()

    assert _action(api, server_id, 'shelve').status_code == 202
    server = api.wait_for(server_id, ('SHELVED',))
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
    assert server['OS-EXT-STS:power_state'] == 4
    assert system.allocations() == claims

    # Not offloaded: it runs again where it is.
    assert _action(api, server_id, 'unshelve').status_code == 202
    assert api.wait_for(server_id, ('ACTIVE',))[
        'OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
    assert system.allocations() == claims

    assert _action(api, server_id, 'shelve').status_code == 202
    api.wait_for(server_id, ('SHELVED',))
    # Only admins offload, and only a shelved server.
    assert nova_error(_action(user, server_id, 'shelveOffload'), 403,
                      'forbidden')
    assert _action(api, server_id, 'shelveOffload').status_code == 202
    api.wait_for(server_id, ('SHELVED_OFFLOADED',))
    assert system.allocations_after_settling({}) == {}
    assert "Cannot 'shelveOffload' instance" in nova_error(
        _action(api, server_id, 'shelveOffload'), 409, 'conflictingRequest')


def test_unshelve_to_a_named_host_and_zone_rules(start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    user = api.as_user('u1:p1')
    server_id = user.boot()
    first = api.wait_for(server_id)['OS-EXT-SRV-ATTR:host']
    cell = first.split('-')[0]
    other = ({cell + '-compute1', cell + '-compute2'} - {first}).pop()
    elsewhere = ('cell2' if cell == 'cell1' else 'cell1') + '-compute1'
    v291 = api.at('2.91')

    # Shelve is not a move: before it, nothing to unshelve.
    assert "Cannot 'unshelve' instance" in nova_error(
        _action(api, server_id, 'unshelve'), 409, 'conflictingRequest')
    assert _action(api, server_id, 'shelve').status_code == 202
    api.wait_for(server_id, ('SHELVED_OFFLOADED',))

    assert 'host' in nova_error(
        _action(api.at('2.90'), server_id, 'unshelve', {'host': other}),
        400, 'badRequest')
    assert 'could not be found' in nova_error(
        _action(v291, server_id, 'unshelve', {'host': 'nowhere'}),
        400, 'badRequest')
    assert 'a server is unshelved in its own cell' in nova_error(
        _action(v291, server_id, 'unshelve', {'host': elsewhere}),
        400, 'badRequest')
    assert nova_error(
        _action(user.at('2.91'), server_id, 'unshelve',
                {'host': other}), 403, 'forbidden')
    assert 'availability zone' in nova_error(
        _action(v291, server_id, 'unshelve',
                {'availability_zone': 'no-such-zone'}),
        400, 'badRequest').lower()

    assert _action(v291, server_id, 'unshelve',
                   {'host': other, 'availability_zone': None}
                   ).status_code == 202
    server = api.wait_for(server_id, ('ACTIVE',))
    assert server['OS-EXT-SRV-ATTR:host'] == other
    assert list(system.allocations()[server_id]) == [other]


def test_an_unshelve_whose_spawn_fails_goes_to_the_next_alternate(
        start_system, fake_driver):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    filler = api.boot(name='filler', flavor='2')
    filler_host = api.wait_for(filler)['OS-EXT-SRV-ATTR:host']
    empty = ({'cell1-compute1', 'cell1-compute2'} - {filler_host}).pop()
    server_id = api.boot(name='mover')
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    assert _action(api, server_id, 'shelve').status_code == 202
    api.wait_for(server_id, ('SHELVED_OFFLOADED',))

    # The emptier host weighs best and fails the spawn: the cell
    # conductor claims the alternate and the unshelve goes on there.
    fake_driver('fail_hosts', [empty])
    assert _action(api, server_id, 'unshelve').status_code == 202
    server = api.wait_for(server_id, ('ACTIVE',))
    assert server['OS-EXT-SRV-ATTR:host'] == filler_host
    assert sorted(system.allocations()) == sorted([filler, server_id])
    assert list(system.allocations()[server_id]) == [filler_host]
    results = _events(api, server_id)
    assert ('compute_unshelve_instance', 'Error') in results
    assert ('conductor_unshelve_reschedule', 'Success') in results

    # With every host failing, the server is offloaded again, with the
    # fault, and holds nothing.
    fake_driver('fail_hosts', ['cell1-compute1', 'cell1-compute2'])
    assert _action(api, server_id, 'shelve').status_code == 202
    _wait_settled(api, server_id)
    assert _action(api, server_id, 'unshelve').status_code == 202
    server = _wait_settled(api, server_id)
    assert server['status'] == 'SHELVED_OFFLOADED'
    assert server['OS-EXT-SRV-ATTR:host'] is None
    # (A server that is not in ERROR shows no fault; its events say why.)
    assert _events(api, server_id)[-1] == ('conductor_unshelve_reschedule',
                                           'Error')
    assert set(system.allocations_after_settling(
        {filler: system.allocations()[filler]})) == {filler}
