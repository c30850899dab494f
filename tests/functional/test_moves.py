"""Resizes and cold migrations through the compute API, on the whole
system in one process: where the server ends, what the scheduler holds
for it and for its migration, and what the instance actions say."""

import time

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

# Flavors of the all-in-one: 1 m1.tiny (1 vCPU, 512 MiB, 1 GiB),
# 2 m1.small (1, 2048, 20).
TINY = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
SMALL = {'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 20}


def _action(api, server_id, body, status=202):
    resp = api.post('/v2.1/servers/%s/action' % server_id, body)
    assert resp.status_code == status, resp.text
    return resp


def _host(server):
    return server['OS-EXT-SRV-ATTR:host']


def _migrations(api, server_id):
    resp = api.get('/v2.1/os-migrations',
                   params={'instance_uuid': server_id})
    assert resp.status_code == 200, resp.text
    return resp.json()['migrations']


def _wait_for_allocations(system, expected, timeout=10):
    found = system.allocations_after_settling(expected, timeout)
    assert found == expected
    return found


def _action_events(api, server_id, action):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    # Newest first: the last request of that action.
    found = [a for a in resp.json()['instanceActions']
             if a['action'] == action][0]
    resp = api.get('/v2.1/servers/%s/os-instance-actions/%s'
                   % (server_id, found['request_id']))
    return resp.json()['instanceAction']['events']


def test_resize_then_confirm_moves_the_server_and_its_claim(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1')
    source = _host(api.wait_for(server_id))

    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    server = api.wait_for(server_id, statuses=('VERIFY_RESIZE', 'ERROR'))
    assert server['status'] == 'VERIFY_RESIZE', server.get('fault')
    dest = _host(server)
    assert dest != source
    assert server['flavor']['original_name'] == 'm1.small'
    # Until it is confirmed both hosts are held: the source by the
    # migration, the destination by the server.
    [migration] = [m for m in system.allocations() if m != server_id]
    assert system.allocations() == {server_id: {dest: SMALL},
                                    migration: {source: TINY}}

    _action(api, server_id, {'confirmResize': None}, status=204)
    server = api.wait_for(server_id, statuses=('ACTIVE', 'ERROR'))
    assert (server['status'], _host(server)) == ('ACTIVE', dest)
    _wait_for_allocations(system, {server_id: {dest: SMALL}})
    events = [e['event'] for e in _action_events(api, server_id, 'resize')]
    assert events == ['conductor_migrate_server', 'compute_prep_resize',
                      'compute_resize_instance', 'compute_finish_resize']


def test_resize_then_revert_puts_the_server_back(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1')
    source = _host(api.wait_for(server_id))
    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    api.wait_for(server_id, statuses=('VERIFY_RESIZE',))

    _action(api, server_id, {'revertResize': None})
    deadline = time.monotonic() + 10
    while True:
        server = api.server(server_id)
        if server['status'] == 'ACTIVE' or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert (server['status'], _host(server)) == ('ACTIVE', source)
    assert server['flavor']['original_name'] == 'm1.tiny'
    _wait_for_allocations(system, {server_id: {source: TINY}})


def test_a_refusing_destination_reschedules_to_an_alternate(
        start_system, fake_driver):
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    assert _host(api.wait_for(server_id)) == 'cell1-compute1'
    fake_driver('fail_move_steps', ['prep_resize@cell1-compute2',
                                    'prep_resize@cell1-compute3'])

    _action(api, server_id, {'migrate': None})
    server = api.wait_for(server_id, statuses=('ACTIVE', 'ERROR'),
                          timeout=15)
    # Both other hosts refused: the server stays where it was, holding
    # its source; the action ends in Error, with why.
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute1')
    _wait_for_allocations(system, {server_id: {'cell1-compute1': TINY}})
    events = _action_events(api, server_id, 'migrate')
    assert [e['result'] for e in events
            if 'Exhausted all hosts' in (e.get('details') or '')] == [
        'Error']
    [migration] = _migrations(api, server_id)
    assert migration['status'] == 'error'
    refused = [e['host'] for e in events
               if e['event'] == 'compute_prep_resize']
    assert sorted(refused) == ['cell1-compute2', 'cell1-compute3']
    assert any('rescheduled to' in (e.get('details') or '')
               for e in events if e['event'] == 'conductor_migrate_server')

    # One refuses, the other takes it: the alternate gets the server.
    fake_driver('fail_move_steps', ['prep_resize@cell1-compute2'])
    _action(api, server_id, {'migrate': None})
    server = api.wait_for(server_id, statuses=('VERIFY_RESIZE', 'ERROR'))
    assert _host(server) == 'cell1-compute3', server.get('fault')


def test_moves_refuse_bad_input_in_novas_words(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.wait_for(api.boot(flavor='1'))['id']
    path = '/v2.1/servers/%s/action' % server_id
    assert 'must change flavor' in nova_error(
        api.post(path, {'resize': {'flavorRef': '1'}}), 400, 'badRequest')
    assert 'Unable to locate requested flavor' in nova_error(
        api.post(path, {'resize': {'flavorRef': '999'}}), 400,
        'badRequest')
    nova_error(api.post(path, {'resize': {}}), 400, 'badRequest')
    assert 'has not been resized' in nova_error(
        api.post(path, {'confirmResize': None}), 400, 'badRequest')
    assert 'has not been resized' in nova_error(
        api.post(path, {'revertResize': None}), 400, 'badRequest')
    assert 'could not be found' in nova_error(
        api.post(path, {'migrate': {'host': 'nowhere'}}), 400,
        'badRequest')
    assert "is not of type 'null'" in nova_error(
        api.post(path, {'confirmResize': 'now'}), 400, 'badRequest')
    # An empty object is taken as null, as Nova takes it (Tempest sends
    # one).
    _action(api, server_id, {'migrate': {}})
    api.wait_for(server_id, statuses=('VERIFY_RESIZE',))
    _action(api, server_id, {'revertResize': {}})
    _settled(api, server_id)
    # Migrating is for admins; a user may resize their own server.
    user = api.as_user('demo:demo')
    own = user.wait_for(user.boot(flavor='1'))['id']
    nova_error(user.post('/v2.1/servers/%s/action' % own,
                         {'migrate': None}), 403, 'forbidden')
    nova_error(user.get('/v2.1/os-migrations'), 403, 'forbidden')
    _action(user, own, {'resize': {'flavorRef': '2'}})
    assert user.wait_for(own, statuses=('VERIFY_RESIZE', 'ERROR'))[
        'status'] == 'VERIFY_RESIZE'


def test_moves_to_a_host_of_another_cell_are_refused_up_front(start_system):
    """A server lives in its cell's database: a cold or live migration
    or an evacuation to a host of another cell is a 400 naming both
    cells, and the server stays where it was with no migration."""
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)
    path = '/v2.1/servers/%s/action' % server_id
    expected = ('host cell2-compute1 is in cell cell2, server %s in cell '
                'cell1' % server_id)
    for version, body in (
            ('2.56', {'migrate': {'host': 'cell2-compute1'}}),
            ('2.30', {'os-migrateLive': {'host': 'cell2-compute1',
                                         'block_migration': 'auto'}})):
        message = nova_error(api.at(version).post(path, body), 400,
                             'badRequest')
        assert expected in message, message
    _stop_compute(system, 'cell1-compute1')
    message = nova_error(api.at('2.95').post(
        path, {'evacuate': {'host': 'cell2-compute1'}}), 400, 'badRequest')
    assert expected in message, message
    server = api.server(server_id)
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute1')
    assert _migrations(api, server_id) == []


def _migration_statuses(api, server_id):
    return sorted(m['status'] for m in _migrations(api, server_id))


def _wait_for_migration_statuses(api, server_id, expected, timeout=10):
    """The source saves the migration confirmed just after it gives its
    resources back, so the status may lag the allocations."""
    deadline = time.monotonic() + timeout
    while True:
        found = _migration_statuses(api, server_id)
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_a_source_or_destination_failure_leaves_the_server_where_it_was(
        start_system, fake_driver):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)

    for step in ('resize@cell1-compute1', 'finish_resize@cell1-compute2'):
        fake_driver('fail_move_steps', [step])
        _action(api, server_id, {'resize': {'flavorRef': '2'}})
        deadline = time.monotonic() + 15
        while True:
            server = api.server(server_id)
            if (server['status'], server['OS-EXT-STS:task_state']) == (
                    'ACTIVE', None) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (server['status'], _host(server),
                server['flavor']['original_name']) == (
            'ACTIVE', 'cell1-compute1', 'm1.tiny'), step
        _wait_for_allocations(system, {server_id: {'cell1-compute1': TINY}})
        failed = [e for e in _action_events(api, server_id, 'resize')
                  if e['result'] == 'Error']
        assert failed and 'injected %s failure' % step.split('@')[0] in \
            failed[-1]['details'], failed
    assert _migration_statuses(api, server_id) == ['error', 'error']

    # The server still moves once nothing fails.
    fake_driver('fail_move_steps', [])
    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    assert api.wait_for(server_id, statuses=('VERIFY_RESIZE', 'ERROR'))[
        'status'] == 'VERIFY_RESIZE'


def test_deleting_a_resized_server_releases_both_hosts(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.wait_for(api.boot(flavor='1'))['id']
    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    api.wait_for(server_id, statuses=('VERIFY_RESIZE',))
    assert len(system.allocations()) == 2

    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)
    _wait_for_allocations(system, {})
    assert _wait_for_migration_statuses(api, server_id,
                                        ['confirmed']) == ['confirmed']


def test_a_resize_waiting_longer_than_the_window_is_confirmed(
        start_system, monkeypatch):
    from scheduler_split import conf
    conf.CONF.set_override('resize_confirm_window', 1)
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.wait_for(api.boot(flavor='1'))['id']
    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    dest = _host(api.wait_for(server_id, statuses=('VERIFY_RESIZE',)))

    server = api.wait_for(server_id, statuses=('ACTIVE', 'ERROR'),
                          timeout=20)
    assert (server['status'], _host(server)) == ('ACTIVE', dest)
    _wait_for_allocations(system, {server_id: {dest: SMALL}})
    assert _migration_statuses(api, server_id) == ['confirmed']


def test_a_resize_beyond_the_quota_is_refused(start_system):
    system = start_system(cells=1, hosts_per_cell=2, quotas=True)
    api = system.api
    resp = api.put('/v2.1/os-quota-sets/admin',
                   {'quota_set': {'ram': 1024}})
    assert resp.status_code == 200, resp.text
    server_id = api.wait_for(api.boot(flavor='1'))['id']
    message = nova_error(api.post('/v2.1/servers/%s/action' % server_id,
                                  {'resize': {'flavorRef': '2'}}),
                         403, 'forbidden')
    assert 'Quota exceeded for ram' in message
    assert api.server(server_id)['status'] == 'ACTIVE'
    assert _migrations(api, server_id) == []


# --- live migration ---------------------------------------------------------

def _settled(api, server_id, timeout=15):
    """The server once no task runs on it."""
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(server_id)
        if server['OS-EXT-STS:task_state'] is None and \
                server['status'] not in ('BUILD', 'MIGRATING', 'RESIZE',
                                         'REBUILD'):
            return server
        if time.monotonic() > deadline:
            raise AssertionError('server %s still %s/%s' % (
                server_id, server['status'],
                server['OS-EXT-STS:task_state']))
        time.sleep(0.05)


def _live(api, server_id, host=None):
    return _action(api, server_id, {'os-migrateLive': {
        'host': host, 'block_migration': 'auto'}})


def test_live_migration_moves_a_running_server_and_its_claim(
        start_system, fake_driver):
    fake_driver('move_delay', 1.0)
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)

    _live(api, server_id)
    # While it runs: MIGRATING, listed under the server, both hosts held.
    deadline = time.monotonic() + 10
    while True:
        listed = api.get('/v2.1/servers/%s/migrations' % server_id).json()[
            'migrations']
        if listed and listed[0]['status'] == 'running':
            break
        assert time.monotonic() < deadline, listed
        time.sleep(0.02)
    assert api.server(server_id)['status'] == 'MIGRATING'
    [running] = listed
    assert (running['source_compute'], running['dest_compute']) == (
        'cell1-compute1', 'cell1-compute2')
    shown = api.get('/v2.1/servers/%s/migrations/%s' % (
        server_id, running['id'])).json()['migration']
    assert shown['uuid'] == running['uuid']
    assert system.allocations() == {
        server_id: {'cell1-compute2': TINY},
        running['uuid']: {'cell1-compute1': TINY}}

    server = _settled(api, server_id)
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute2')
    _wait_for_allocations(system, {server_id: {'cell1-compute2': TINY}})
    [migration] = _migrations(api, server_id)
    assert (migration['migration_type'], migration['status']) == (
        'live-migration', 'completed')
    assert api.get('/v2.1/servers/%s/migrations' % server_id).json() == {
        'migrations': []}
    events = [e['event']
              for e in _action_events(api, server_id, 'live-migration')]
    assert events == ['compute_pre_live_migration',
                      'conductor_live_migrate_instance',
                      'compute_live_migration',
                      'compute_post_live_migration_at_destination']


def test_live_migration_tries_alternates_and_rolls_back_a_failure(
        start_system, fake_driver):
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)

    # A destination that is not ready gives way to the next alternate.
    fake_driver('fail_move_steps', ['pre_live_migration@cell1-compute2'])
    _live(api, server_id)
    server = _settled(api, server_id)
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute3')
    _wait_for_allocations(system, {server_id: {'cell1-compute3': TINY}})

    # A source that cannot send it keeps it, running, holding its host.
    fake_driver('fail_move_steps', ['live_migration@cell1-compute3'])
    _live(api, server_id, host='cell1-compute1')
    server = _settled(api, server_id)
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute3')
    _wait_for_allocations(system, {server_id: {'cell1-compute3': TINY}})
    statuses = sorted(m['status'] for m in _migrations(api, server_id))
    assert statuses == ['completed', 'error']
    failed = [e for e in _action_events(api, server_id, 'live-migration')
              if e['result'] == 'Error']
    assert 'injected live_migration failure' in failed[-1]['details']

    # No host at all: it stays, and the action says why.
    fake_driver('fail_move_steps', ['pre_live_migration'])
    _live(api, server_id)
    server = _settled(api, server_id)
    assert _host(server) == 'cell1-compute3'
    _wait_for_allocations(system, {server_id: {'cell1-compute3': TINY}})
    events = _action_events(api, server_id, 'live-migration')
    assert 'Exhausted all hosts' in events[-1]['details']


# --- evacuation -------------------------------------------------------------

def _stop_compute(system, host):
    system.aio.computes[host].stop()
    service = [s for s in system.api.get('/v2.1/os-services').json()[
        'services'] if s['host'] == host][0]
    resp = system.api.put('/v2.1/os-services/%s' % service['id'],
                          {'forced_down': True})
    assert resp.status_code == 200, resp.text
    return service['id']


def _start_compute(system, host, service_id):
    from scheduler_split import deployment
    [cell] = [c for c in system.aio.cells if host.startswith(c.name + '-')]
    svc = deployment.compute_service(host, cell.transport_url)
    svc.start()
    system.aio.computes[host] = svc
    system.aio.services.append(svc)
    resp = system.api.put('/v2.1/os-services/%s' % service_id,
                          {'forced_down': False})
    assert resp.status_code == 200, resp.text


def test_evacuate_rebuilds_elsewhere_and_the_source_cleans_up_on_return(
        start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)
    path = '/v2.1/servers/%s/action' % server_id
    message = nova_error(api.post(path, {'evacuate': {}}), 400,
                         'badRequest')
    assert message == 'Compute service of cell1-compute1 is still in use.'

    service_id = _stop_compute(system, 'cell1-compute1')
    resp = api.at('2.94').post(path, {'evacuate': {}})
    assert resp.status_code == 200, resp.text
    server = _settled(api, server_id)
    assert (server['status'], _host(server)) == ('ACTIVE', 'cell1-compute2')
    # The dead source stays held until its compute comes back.
    [migration] = _migrations(api, server_id)
    assert (migration['migration_type'], migration['status']) == (
        'evacuation', 'done')
    assert system.allocations() == {
        server_id: {'cell1-compute2': TINY},
        migration['uuid']: {'cell1-compute1': TINY}}

    _start_compute(system, 'cell1-compute1', service_id)
    _wait_for_allocations(system, {server_id: {'cell1-compute2': TINY}})
    deadline = time.monotonic() + 10
    while _migrations(api, server_id)[0]['status'] != 'completed':
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert _host(api.server(server_id)) == 'cell1-compute2'


def test_evacuate_from_2_95_leaves_the_server_stopped(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)
    _stop_compute(system, 'cell1-compute1')
    resp = api.at('2.95').post('/v2.1/servers/%s/action' % server_id,
                               {'evacuate': {'host': 'cell1-compute2'}})
    assert resp.status_code == 200, resp.text
    server = _settled(api, server_id)
    assert (server['status'], _host(server)) == ('SHUTOFF', 'cell1-compute2')


def test_moves_wait_for_every_service_to_understand_them(start_system):
    from scheduler_split import conf
    conf.CONF.set_override('scheduler', '1.4', group='upgrade_levels')
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.wait_for(api.boot(flavor='1'))['id']
    message = nova_error(api.post('/v2.1/servers/%s/action' % server_id,
                                  {'migrate': None}), 409,
                         'conflictingRequest')
    assert 'too old for moves' in message
    assert api.server(server_id)['status'] == 'ACTIVE'
    assert _migrations(api, server_id) == []


def test_a_move_whose_message_was_lost_is_rolled_back(start_system,
                                                      monkeypatch):
    from scheduler_split.compute import rpcapi as compute_rpcapi
    from scheduler_split import conf
    conf.CONF.set_override('lost_build_timeout', 10, group='conductor')
    conf.CONF.set_override('lost_build_check_interval', 1,
                           group='conductor')
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot(flavor='1', availability_zone='nova:cell1-compute1')
    api.wait_for(server_id)
    # The destination never hears of the resize (a broker lost it).
    monkeypatch.setattr(compute_rpcapi.ComputeAPI, 'prep_resize',
                        lambda self, *args, **kwargs: None)

    _action(api, server_id, {'resize': {'flavorRef': '2'}})
    assert api.server(server_id)['status'] == 'RESIZE'
    [migration] = [c for c in system.allocations() if c != server_id]

    server = _settled(api, server_id, timeout=30)
    assert (server['status'], _host(server),
            server['flavor']['original_name']) == (
        'ACTIVE', 'cell1-compute1', 'm1.tiny')
    _wait_for_allocations(system, {server_id: {'cell1-compute1': TINY}})
    assert _migration_statuses(api, server_id) == ['error']
    [lost] = [e for e in _action_events(api, server_id, 'resize')
              if e['event'] == 'conductor_fail_lost_moves']
    assert 'lost_build_timeout' in lost['details']
    assert migration not in system.allocations()


# --- server groups and os-migrations ----------------------------------------

def _group(api, policy):
    resp = api.at('2.64').post('/v2.1/os-server-groups', {
        'server_group': {'name': policy, 'policy': policy}})
    assert resp.status_code == 200, resp.text
    return resp.json()['server_group']['id']


def test_moves_keep_to_hard_server_group_policies(start_system):
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    apart = _group(api, 'anti-affinity')
    first = api.boot(flavor='1', hints={'group': apart},
                     availability_zone='nova:cell1-compute1')
    second = api.boot(flavor='1', hints={'group': apart},
                      availability_zone='nova:cell1-compute2')
    api.wait_for(first)
    api.wait_for(second)

    # The only host without a member is where the move may go.
    _action(api, first, {'migrate': None})
    assert _host(api.wait_for(first, statuses=('VERIFY_RESIZE',))) == \
        'cell1-compute3'
    _action(api, first, {'confirmResize': None}, status=204)
    api.wait_for(first, statuses=('ACTIVE',))
    # Named, a host with a member is refused like any filtered host.
    message = nova_error(api.post('/v2.1/servers/%s/action' % second,
                                  {'migrate': {'host': 'cell1-compute3'}}),
                         400, 'badRequest')
    assert 'No valid host' in message
    assert _host(api.server(second)) == 'cell1-compute2'

    together = _group(api, 'affinity')
    members = [api.boot(flavor='1', hints={'group': together})
               for _ in range(2)]
    hosts = {_host(api.wait_for(m)) for m in members}
    assert len(hosts) == 1
    # A member cannot leave the others' host.
    message = nova_error(api.post('/v2.1/servers/%s/action' % members[0],
                                  {'migrate': None}), 400, 'badRequest')
    assert 'No valid host' in message
    assert {_host(api.server(m)) for m in members} == hosts
    # Nothing of the refused moves is held.
    assert sorted(system.allocations()) == sorted([first, second] + members)


def test_os_migrations_shapes_filters_and_pages(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    servers = [api.wait_for(api.boot(flavor='1'))['id'] for _ in range(3)]
    for server_id in servers:
        _action(api, server_id, {'migrate': None})
        api.wait_for(server_id, statuses=('VERIFY_RESIZE',))
    # The oldest is confirmed; the others wait.
    _action(api, servers[0], {'confirmResize': None}, status=204)
    # The confirm is the source compute's: it ends with the server ACTIVE.
    api.wait_for(servers[0], statuses=('ACTIVE',))

    old = api.at('2.1').get('/v2.1/os-migrations').json()['migrations']
    assert len(old) == 3
    assert 'migration_type' not in old[0] and 'uuid' not in old[0]
    assert set(old[0]) >= {'id', 'status', 'instance_uuid', 'source_node',
                           'source_compute', 'dest_node', 'dest_compute',
                           'dest_host', 'old_instance_type_id',
                           'new_instance_type_id', 'created_at',
                           'updated_at'}
    newest = api.get('/v2.1/os-migrations').json()['migrations']
    assert [m['instance_uuid'] for m in newest] == servers[::-1]
    assert {m['user_id'] for m in newest} == {'admin'}
    assert {m['migration_type'] for m in newest} == {'migration'}

    page = api.get('/v2.1/os-migrations', params={'limit': 2}).json()
    assert len(page['migrations']) == 2
    [link] = page['migrations_links']
    assert 'marker=%s' % page['migrations'][-1]['uuid'] in link['href']
    rest = api.get('/v2.1/os-migrations', params={
        'limit': 2, 'marker': page['migrations'][-1]['uuid']}).json()
    assert [m['instance_uuid'] for m in rest['migrations']] == [servers[0]]
    assert 'migrations_links' not in rest
    nova_error(api.get('/v2.1/os-migrations', params={'marker': 'nope'}),
               400, 'badRequest')
    nova_error(api.get('/v2.1/os-migrations', params={'bogus': '1'}), 400,
               'badRequest')
    confirmed = api.get('/v2.1/os-migrations',
                        params={'status': 'confirmed'}).json()['migrations']
    assert [m['instance_uuid'] for m in confirmed] == [servers[0]]
    assert api.get('/v2.1/os-migrations', params={
        'project_id': 'someone-else'}).json()['migrations'] == []
