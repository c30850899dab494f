"""Booting through the REST API with every service in one process."""

import time

import pytest


pytestmark = pytest.mark.functional


def test_boot_reaches_active_and_is_listed_shown_and_deleted(start_system):
    system = start_system()
    api = system.api
    server_id = api.boot(name='vm1')

    server = api.wait_for(server_id)
    assert server['status'] == 'ACTIVE'
    assert server['name'] == 'vm1'
    assert server['OS-EXT-SRV-ATTR:host'].split('-')[0] == \
        system.cell_of(server_id)
    assert server['flavor']['original_name'] == 'm1.tiny'
    assert [s['id'] for s in api.servers()] == [server_id]
    assert set(system.allocations()[server_id]) == {
        server['OS-EXT-SRV-ATTR:host']}

    resp = api.delete('/v2.1/servers/%s' % server_id)
    assert resp.status_code == 204
    api.wait_gone(server_id)
    assert api.servers() == []
    assert server_id not in system.allocations()


def test_a_server_shows_its_hosts_zone_and_is_pinned_only_if_asked(
        start_system):
    api = start_system(cells=1, hosts_per_cell=1).api

    free = api.wait_for(api.boot(name='free'))
    pinned = api.wait_for(api.boot(name='pinned', availability_zone='nova'))

    assert free['status'] == pinned['status'] == 'ACTIVE'
    assert free['OS-EXT-AZ:availability_zone'] == 'nova'
    assert free['pinned_availability_zone'] is None
    assert pinned['OS-EXT-AZ:availability_zone'] == 'nova'
    assert pinned['pinned_availability_zone'] == 'nova'


def test_multi_instance_boot_spreads_and_claims_each_instance(start_system):
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    api.boot(name='many', count=3)
    servers = api.servers()
    assert len(servers) == 3
    hosts = set()
    for server in servers:
        server = api.wait_for(server['id'])
        assert server['status'] == 'ACTIVE'
        hosts.add(server['OS-EXT-SRV-ATTR:host'])
    assert len(hosts) == 3
    allocations = system.allocations()
    assert sorted(allocations) == sorted(s['id'] for s in servers)
    assert all(alloc[host]['MEMORY_MB'] == 512
               for alloc in allocations.values() for host in alloc)


def test_reschedule_stays_in_the_cell_and_ends_active(start_system,
                                                      fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1'])
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    # Four instances on four equal hosts: the spreading weighers give each
    # host one claim, so one of them is first claimed on the failing host.
    api.boot(name='spread', count=4)
    hosts = []
    for server in api.servers():
        server = api.wait_for(server['id'])
        assert server['status'] == 'ACTIVE', server.get('fault')
        hosts.append(server['OS-EXT-SRV-ATTR:host'])
        assert system.cell_of(server['id']) == 'cell' + \
            server['OS-EXT-SRV-ATTR:host'][4]
    assert sorted(hosts) == ['cell1-compute2', 'cell1-compute2',
                             'cell2-compute1', 'cell2-compute2']
    claimed = [h for alloc in system.allocations().values() for h in alloc]
    assert sorted(claimed) == sorted(hosts)

    # The instance first claimed on the failing host tells its story.
    rescheduled = []
    for server in api.servers():
        steps = [(e['event'], e['host'], e['result'])
                 for e in api.events(server['id'])]
        if ('compute_build_and_run_instance', 'cell1-compute1',
                'Error') in steps:
            rescheduled.append(steps)
    assert rescheduled == [[
        ('conductor_schedule_and_build_instances', 'cell1-compute1',
         'Success'),
        ('compute_build_and_run_instance', 'cell1-compute1', 'Error'),
        ('conductor_build_instances', 'cell1-compute2', 'Success'),
        ('compute_build_and_run_instance', 'cell1-compute2', 'Success'),
    ]]


@pytest.mark.parametrize('conductor_cap', [None, '1.8'])
def test_a_build_records_its_attempt_whatever_conductor_it_reports_to(
        start_system, conductor_cap):
    """A conductor of this release writes the compute's last save and the
    event of its attempt together; one of the release before (capped at
    1.8) is sent the event in a call of its own: either way the create
    action tells where the build ran."""
    from scheduler_split import conf

    if conductor_cap:
        conf.CONF.set_override('conductor', conductor_cap,
                               group='upgrade_levels')
    try:
        api = start_system(cells=1, hosts_per_cell=1).api
        server = api.wait_for(api.boot(name='told'))
    finally:
        conf.CONF.clear_override('conductor', group='upgrade_levels')

    assert server['status'] == 'ACTIVE', server.get('fault')
    assert [(e['event'], e['host'], e['result'])
            for e in api.events(server['id'])] == [
        ('conductor_schedule_and_build_instances', 'cell1-compute1',
         'Success'),
        ('compute_build_and_run_instance', 'cell1-compute1', 'Success'),
    ]


def test_build_failing_on_every_host_of_the_cell_ends_in_error(
        start_system, fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1', 'cell1-compute2'])
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = api.boot()
    server = api.wait_for(server_id)
    assert server['status'] == 'ERROR'
    assert 'Exhausted all hosts available for retrying build failures' in \
        server['fault']['message']
    assert system.allocations() == {}
    events = api.events(server_id)
    assert [(e['event'], e['result']) for e in events] == [
        ('conductor_schedule_and_build_instances', 'Success'),
        ('compute_build_and_run_instance', 'Error'),
        ('conductor_build_instances', 'Success'),
        ('compute_build_and_run_instance', 'Error'),
        ('conductor_build_instances', 'Error')]
    assert sorted(e['host'] for e in events
                  if e['event'] == 'compute_build_and_run_instance') == [
        'cell1-compute1', 'cell1-compute2']
    assert 'hosts tried: cell1-compute' in events[-1]['details']


def test_non_reschedulable_failure_ends_in_error_with_fault(start_system,
                                                            fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1'])
    fake_driver('failures_reschedulable', False)
    system = start_system(cells=1, hosts_per_cell=1)
    server = system.api.wait_for(system.api.boot())
    assert server['status'] == 'ERROR'
    assert 'injected spawn failure' in server['fault']['message']
    # The compute records ERROR with its fault first, then gives the claim
    # back (a crash in between leaves it to the scheduler's heal).
    assert system.allocations_after_settling({}) == {}


def test_boot_that_fits_nowhere_ends_in_error_in_cell0(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    # m1.xlarge wants 16 GiB; a fake host has 16 GiB minus 512 MiB reserved.
    server_id = api.boot(flavor='5')
    server = api.wait_for(server_id)
    assert server['status'] == 'ERROR'
    assert 'No valid host was found' in server['fault']['message']
    assert system.cell_of(server_id) == 'cell0'
    # It changed when it went to ERROR, not when it was posted: a client
    # polling with changes-since from then on sees it.
    assert server['updated'] >= server['fault']['created']
    changed = api.get('/v2.1/servers/detail', params={
        'changes-since': server['fault']['created']}).json()['servers']
    assert [s['id'] for s in changed] == [server_id]
    assert [(e['event'], e['result']) for e in api.events(server_id)] == [
        ('conductor_schedule_and_build_instances', 'Error')]
    assert system.allocations() == {}
    # It can still be deleted.
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)


def test_servers_survive_a_restart_on_the_same_state_dir(start_system,
                                                         tmp_path):
    system = start_system(cells=1, hosts_per_cell=1)
    server_id = system.api.boot(name='keeper')
    assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
    system.stop()

    system = start_system(cells=1, hosts_per_cell=1)
    server = system.api.server(server_id)
    assert server['status'] == 'ACTIVE'
    assert server['name'] == 'keeper'
    assert server_id in system.allocations()


def test_projects_see_only_their_own_servers(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    alice = system.api.as_user('alice:project-a')
    bob = system.api.as_user('bob:project-b')
    server_id = alice.boot()
    alice.wait_for(server_id)
    assert [s['id'] for s in alice.servers()] == [server_id]
    assert bob.servers() == []
    resp = bob.get('/v2.1/servers/%s' % server_id)
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['code'] == 404
    assert bob.delete('/v2.1/servers/%s' % server_id).status_code == 404
    assert alice.server(server_id)['status'] == 'ACTIVE'


def test_scheduler_takes_up_a_cell_mapped_while_it_runs(start_system):
    import time

    import oslo_messaging as messaging

    from scheduler_split import cells
    from scheduler_split import conf
    from scheduler_split import deployment

    system = start_system(cells=1, hosts_per_cell=1)
    aio = system.aio
    cell = cells.create_cell('cell9', 'memory:///cell9',
                             aio._sqlite('cell9'), echo=lambda line: None)
    conductor = deployment.cell_conductor_service(
        cell.transport_url, cell.database_connection)
    compute = deployment.compute_service('cell9-compute1',
                                         cell.transport_url)
    aio.services += [conductor, compute]
    conductor.start()
    compute.start()
    scheduler = aio.services[0]
    # Nothing listens on cell9's scheduler topic yet: its report is
    # refused, as RabbitMQ returns a message no queue takes, and sent
    # again until [DEFAULT] rpc_delivery_timeout.
    conf.CONF.set_override('rpc_delivery_timeout', 1)
    try:
        with pytest.raises(messaging.MessageDeliveryFailure):
            compute.manager.report()
    finally:
        conf.CONF.clear_override('rpc_delivery_timeout')
    assert 'cell9-compute1' not in scheduler.known_hosts()

    scheduler.reload()          # what SIGHUP does
    compute.manager.report()
    deadline = time.monotonic() + 10
    while 'cell9-compute1' not in scheduler.known_hosts():
        assert time.monotonic() < deadline
        time.sleep(0.05)

    system.api.boot(name='two', count=2)
    hosts = sorted(system.api.wait_for(s['id'])['OS-EXT-SRV-ATTR:host']
                   for s in system.api.servers())
    assert hosts == ['cell1-compute1', 'cell9-compute1']


def test_versioned_notifications_tell_scheduling_and_builds(start_system,
                                                            fake_driver):
    """Nova's event types, so that consumers of Nova's notifications read
    them unchanged."""
    from oslo_messaging.notify import _impl_test

    from scheduler_split import conf
    from scheduler_split import notifications

    conf.CONF.set_override('driver', ['test'],
                           group='oslo_messaging_notifications')
    notifications.reset()
    _impl_test.reset()
    fake_driver('fail_hosts', ['cell1-compute1'])
    system = start_system(cells=1, hosts_per_cell=2)

    def sent():
        return [(message['event_type'], message['publisher_id'],
                 message['payload']['scheduler_split_object.name'],
                 message['payload']['scheduler_split_object.data'])
                for _, message, _, _ in _impl_test.NOTIFICATIONS]
    try:
        system.api.boot(name='told', count=2)
        for server in system.api.servers():
            assert system.api.wait_for(server['id'])['status'] == 'ACTIVE'
        built = sent()
        _impl_test.reset()
        nowhere = system.api.boot(name='nowhere', flavor='5')
        assert system.api.wait_for(nowhere)['status'] == 'ERROR'
        unplaced = sent()
        _impl_test.reset()
        victim = [s['id'] for s in system.api.servers()
                  if s['name'].startswith('told')][0]
        assert system.api.delete('/v2.1/servers/' + victim).status_code \
            == 204
        system.api.wait_gone(victim)
        # The compute tells of the end once the record is gone, so the
        # API may show it gone a moment before.
        deadline = time.monotonic() + 10
        while len(sent()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        deleted = sent()
    finally:
        notifications.reset()

    scheduler = 'scheduler-split-conductor:all-in-one'
    events = [(event, publisher) for event, publisher, _, _ in built]
    assert events[:2] == [
        ('scheduler.select_destinations.start', scheduler),
        ('scheduler.select_destinations.end', scheduler)]
    assert built[0][2] == 'SelectDestinationsPayload'
    assert built[0][3]['num_alternates'] == 2
    assert len(built[0][3]['instance_uuids']) == 2
    creates = [(event, publisher) for event, publisher, _, _ in built[2:]]
    # One build failed on cell1-compute1 and went to the alternate; the
    # other built on cell1-compute2 at once.
    assert sorted(creates) == sorted([
        ('instance.create.start', 'scheduler-split-compute:cell1-compute1'),
        ('instance.create.error', 'scheduler-split-compute:cell1-compute1'),
        ('instance.create.start', 'scheduler-split-compute:cell1-compute2'),
        ('instance.create.end', 'scheduler-split-compute:cell1-compute2'),
        ('instance.create.start', 'scheduler-split-compute:cell1-compute2'),
        ('instance.create.end', 'scheduler-split-compute:cell1-compute2')])
    error = [data for event, _, _, data in built
             if event == 'instance.create.error'][0]
    assert 'injected spawn failure' in error['fault_message']

    # A flavor no host fits: the scheduler starts, and the conductor
    # tells of the instance it could not place.
    assert [(event, publisher) for event, publisher, _, _ in unplaced] == [
        ('scheduler.select_destinations.start', scheduler),
        ('compute_task.build_instances.error', scheduler)]
    assert unplaced[1][3]['instance_uuid'] == nowhere
    assert 'No valid host' in unplaced[1][3]['reason']

    assert [(event, publisher) for event, publisher, _, _ in deleted] == [
        ('instance.delete.start', 'scheduler-split-compute:cell1-compute2'),
        ('instance.delete.end', 'scheduler-split-compute:cell1-compute2')]
    assert deleted[0][3]['uuid'] == victim


def test_admins_can_force_a_host_and_others_cannot(start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    for host in ('cell2-compute2', 'cell1-compute1'):
        server = api.wait_for(api.boot(name='forced',
                                       availability_zone='nova:' + host))
        assert server['status'] == 'ACTIVE'
        assert server['OS-EXT-SRV-ATTR:host'] == host
        assert server['OS-EXT-AZ:availability_zone'] == 'nova'

    user = api.as_user('alice:project-a')
    resp = user.post('/v2.1/servers', {'server': {
        'name': 'nope', 'flavorRef': '1', 'networks': 'none',
        'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01',
        'availability_zone': 'nova:cell1-compute1'}})
    assert resp.status_code == 403
    assert resp.json()['forbidden']['code'] == 403

    missing = api.wait_for(api.boot(name='nowhere',
                                    availability_zone=':no-such-host'))
    assert missing['status'] == 'ERROR'
    assert 'No valid host' in missing['fault']['message']


def test_stopping_lets_a_spawn_in_progress_finish(start_system,
                                                  fake_driver):
    """The computes stop first, while their conductor still answers, so a
    build caught mid-spawn by a stop is saved ACTIVE, not left building
    behind a conductor that no longer listens."""
    import time

    import sqlalchemy as sa

    from scheduler_split import conf
    from scheduler_split.db import engines

    fake_driver('spawn_delay', 1.0)
    system = start_system(cells=1, hosts_per_cell=1)
    server_id = system.api.boot('caught')
    deadline = time.monotonic() + 30
    while system.api.server(server_id)['OS-EXT-STS:task_state'] != \
            'spawning':
        assert time.monotonic() < deadline, 'the spawn never started'
        time.sleep(0.02)
    system.stop()
    with engines.reader(conf.CONF.api_database.connection) as session:
        cell_url = session.execute(sa.text(
            'SELECT c.database_connection FROM instance_mappings m '
            'JOIN cell_mappings c ON c.id = m.cell_id '
            'WHERE m.instance_uuid = :u'), {'u': server_id}).scalar_one()
    with engines.reader(cell_url) as session:
        state = session.execute(sa.text(
            'SELECT vm_state, task_state FROM instances WHERE uuid = :u'),
            {'u': server_id}).one()
    assert tuple(state) == ('active', None)
