"""os-services and os-hypervisors: operators take hosts out of
scheduling and see capacity, in Nova's shapes."""

import time

import pytest
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from tests.functional import fixtures
from tests.functional.fixtures import nova_error

CONF = conf.CONF
pytestmark = pytest.mark.functional


def _services(api, **params):
    resp = api.get('/v2.1/os-services', params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()['services']


def _compute(api, host):
    [service] = _services(api, host=host, binary='nova-compute')
    return service


def _wait_for_scheduler_status(system, host, disabled, timeout=10):
    """Until the scheduler database holds the host's status (reports are
    casts, processed after the caller moves on)."""
    deadline = time.monotonic() + timeout
    query = sa.text('SELECT service_disabled FROM resource_providers '
                    'WHERE host = :host')
    while True:
        with engines.reader(system.scheduler_db()) as session:
            if session.scalar(query, {'host': host}) == disabled:
                return
        assert time.monotonic() < deadline, 'the scheduler never heard'
        time.sleep(0.05)


def _hosts_of(api, server_ids):
    return [api.wait_for(s)['OS-EXT-SRV-ATTR:host'] for s in server_ids]


def test_services_are_listed_in_novas_shapes(start_system):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    services = _services(api.at('2.52'))
    by_binary = {}
    for service in services:
        by_binary.setdefault(service['binary'], []).append(service)
    assert sorted(s['host'] for s in by_binary['nova-compute']) == [
        'cell1-compute1', 'cell2-compute1']
    # The super-conductor and each cell's conductor run on one host here;
    # each row says which it is.
    hosts = sorted(s['host'] for s in by_binary['nova-conductor'])
    assert hosts == ['%s@%s' % (CONF.host, name)
                     for name in ('cell1', 'cell2', 'super')]
    assert {s['zone'] for s in by_binary['nova-conductor']} == {'internal'}
    # The host as the services record it finds all three; as shown, one.
    assert len(_services(api, host=CONF.host,
                         binary='nova-conductor')) == 3
    assert [s['host'] for s in _services(api, host=hosts[0])] == hosts[:1]
    assert len(by_binary['nova-scheduler']) == 1
    compute = by_binary['nova-compute'][0]
    assert set(compute) == {'id', 'binary', 'host', 'zone', 'status',
                            'state', 'updated_at', 'disabled_reason',
                            'forced_down'}
    assert isinstance(compute['id'], int)
    assert (compute['zone'], compute['status'], compute['state'],
            compute['forced_down']) == ('nova', 'enabled', 'up', False)
    assert by_binary['nova-scheduler'][0]['zone'] == 'internal'
    assert by_binary['nova-scheduler'][0]['state'] == 'up'

    old = _services(api.at('2.10'), binary='nova-compute')
    assert len(old) == 2 and 'forced_down' not in old[0]
    new = _services(api, host='cell1-compute1')
    assert [(s['binary'], len(s['id'])) for s in new] == [
        ('nova-compute', 36)]
    assert _services(api, binary='nova-api') == []

    # Unknown query parameters are refused from 2.75 only.
    assert api.at('2.74').get('/v2.1/os-services',
                              params={'foo': 'bar'}).status_code == 200
    nova_error(api.get('/v2.1/os-services', params={'foo': 'bar'}), 400,
               'badRequest')


def test_a_disabled_host_gets_no_new_server_until_enabled(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    compute = _compute(api, 'cell1-compute1')
    resp = api.put('/v2.1/os-services/%s' % compute['id'],
                   {'status': 'disabled', 'disabled_reason': 'maintenance'})
    assert resp.status_code == 200, resp.text
    service = resp.json()['service']
    assert (service['status'], service['disabled_reason'],
            service['state']) == ('disabled', 'maintenance', 'up')

    # The next reports of the disabled compute do not enable it again.
    system.aio.computes['cell1-compute1'].manager.heartbeat()
    system.aio.computes['cell1-compute1'].manager.report()

    servers = [api.boot(name='vm%d' % i) for i in range(6)]
    assert _hosts_of(api, servers) == ['cell1-compute2'] * 6

    resp = api.put('/v2.1/os-services/%s' % compute['id'],
                   {'status': 'enabled'})
    assert resp.status_code == 200, resp.text
    assert resp.json()['service']['disabled_reason'] is None
    more = [api.boot(name='after%d' % i) for i in range(4)]
    assert 'cell1-compute1' in _hosts_of(api, more)


def test_a_forced_down_host_gets_no_new_server(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api.at('2.11')
    resp = api.put('/v2.1/os-services/force-down',
                   {'host': 'cell1-compute2', 'binary': 'nova-compute',
                    'forced_down': True})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'service': {
        'host': 'cell1-compute2', 'binary': 'nova-compute',
        'forced_down': True}}
    service = _compute(api, 'cell1-compute2')
    assert (service['state'], service['forced_down']) == ('down', True)
    servers = [system.api.boot(name='vm%d' % i) for i in range(4)]
    assert _hosts_of(system.api, servers) == ['cell1-compute1'] * 4


def test_pre_253_actions_and_their_errors(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api.at('2.1')
    body = {'host': 'cell1-compute1', 'binary': 'nova-compute'}
    resp = api.put('/v2.1/os-services/disable-log-reason',
                   dict(body, disabled_reason='broken fan'))
    assert resp.json() == {'service': dict(
        body, status='disabled', disabled_reason='broken fan')}
    assert _compute(api, 'cell1-compute1')['disabled_reason'] == \
        'broken fan'
    resp = api.put('/v2.1/os-services/enable', body)
    assert resp.json() == {'service': dict(body, status='enabled')}

    nova_error(api.put('/v2.1/os-services/disable-log-reason', body), 400,
               'badRequest')
    nova_error(api.put('/v2.1/os-services/force-down',
                       dict(body, forced_down=True)), 400, 'badRequest')
    assert nova_error(api.put('/v2.1/os-services/reboot', body), 404,
                      'itemNotFound') == 'Unknown action'
    assert nova_error(api.put('/v2.1/os-services/disable',
                              {'host': 'nowhere', 'binary': 'nova-compute'}),
                      404, 'itemNotFound') == (
        "Host 'nowhere' is not mapped to any cell")
    assert 'Only nova-compute' in nova_error(api.put(
        '/v2.1/os-services/disable',
        {'host': 'cell1-compute1', 'binary': 'nova-scheduler'}), 400,
        'badRequest')
    nova_error(api.put('/v2.1/os-services/disable', {'host': 'x'}), 400,
               'badRequest')


def test_253_update_errors(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    compute = _compute(api, 'cell1-compute1')
    path = '/v2.1/os-services/%s' % compute['id']
    nova_error(api.put('/v2.1/os-services/not-a-uuid',
                       {'status': 'disabled'}), 400, 'badRequest')
    nova_error(api.put('/v2.1/os-services/%s' % ('0' * 8 + '-0000-0000-'
                                                 '0000-' + '0' * 12),
                       {'status': 'disabled'}), 404, 'itemNotFound')
    nova_error(api.put(path, {}), 400, 'badRequest')
    nova_error(api.put(path, {'status': 'off'}), 400, 'badRequest')
    nova_error(api.put(path, {'status': 'enabled',
                              'disabled_reason': 'x'}), 400, 'badRequest')
    [scheduler] = _services(api, binary='nova-scheduler')
    nova_error(api.put('/v2.1/os-services/%s' % scheduler['id'],
                       {'status': 'disabled'}), 400, 'badRequest')
    user = api.as_user('demo:demo')
    nova_error(user.get('/v2.1/os-services'), 403, 'forbidden')
    nova_error(user.put(path, {'status': 'disabled'}), 403, 'forbidden')


def test_delete_refuses_a_compute_with_servers_then_forgets_it(
        start_system):
    CONF.set_override('report_interval', 1)
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    disabled = _compute(api, 'cell1-compute2')
    api.put('/v2.1/os-services/%s' % disabled['id'],
            {'status': 'disabled'})
    server = api.boot()
    assert _hosts_of(api, [server]) == ['cell1-compute1']
    busy = _compute(api, 'cell1-compute1')
    message = nova_error(api.delete('/v2.1/os-services/%s' % busy['id']),
                         409, 'conflictingRequest')
    assert 'hosting instances' in message

    resp = api.delete('/v2.1/os-services/%s' % disabled['id'])
    assert resp.status_code == 204, resp.text
    assert _services(api, host='cell1-compute2') == []
    hypervisors = api.get('/v2.1/os-hypervisors').json()['hypervisors']
    assert [h['hypervisor_hostname'] for h in hypervisors] == [
        'cell1-compute1']
    nova_error(api.delete('/v2.1/os-services/%s' % disabled['id']), 404,
               'itemNotFound')
    # The deleted compute still runs: three heartbeats and reports later
    # neither its record nor its hypervisor is back.
    time.sleep(3.5)
    assert _services(api, host='cell1-compute2') == []
    hypervisors = api.get('/v2.1/os-hypervisors').json()['hypervisors']
    assert [h['hypervisor_hostname'] for h in hypervisors] == [
        'cell1-compute1']
    nova_error(api.at('2.52').delete('/v2.1/os-services/abc'), 400,
               'badRequest')


def test_hypervisors_show_capacity_and_usage(start_system, fake_driver):
    fake_driver('cpu_arch', 'aarch64')
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server = api.boot(flavor='1')
    [host] = _hosts_of(api, [server])

    listed = api.get('/v2.1/os-hypervisors').json()['hypervisors']
    assert sorted(h['hypervisor_hostname'] for h in listed) == [
        'cell1-compute1', 'cell1-compute2']
    assert set(listed[0]) == {'id', 'hypervisor_hostname', 'state',
                              'status'}
    old = api.at('2.87')
    detail = old.get('/v2.1/os-hypervisors/detail').json()['hypervisors']
    used = {h['hypervisor_hostname']: h for h in detail}[host]
    assert (used['vcpus'], used['memory_mb'], used['local_gb']) == (
        8, 16384, 200)
    assert (used['vcpus_used'], used['running_vms'],
            used['hypervisor_type'], used['host_ip']) == (
        1, 1, 'fake', '127.0.0.1')
    # Reserved memory counts as used, as in Nova; m1.tiny has 512 MiB.
    reserved = CONF.compute.reserved_host_memory_mb
    assert used['memory_mb_used'] == 512 + reserved
    assert used['free_ram_mb'] == 16384 - 512 - reserved
    assert used['cpu_info']['arch'] == 'aarch64'
    assert used['service']['host'] == host

    shown = old.get('/v2.1/os-hypervisors/%s' % used['id']).json()[
        'hypervisor']
    assert shown['id'] == used['id'] and shown['running_vms'] == 1
    trimmed = api.get('/v2.1/os-hypervisors/%s' % used['id']).json()[
        'hypervisor']
    assert 'vcpus' not in trimmed and 'uptime' in trimmed
    stats = old.get('/v2.1/os-hypervisors/statistics').json()[
        'hypervisor_statistics']
    assert (stats['count'], stats['vcpus'], stats['vcpus_used'],
            stats['running_vms']) == (2, 16, 1, 1)
    nova_error(api.get('/v2.1/os-hypervisors/statistics'), 404,
               'itemNotFound')

    with_servers = api.get('/v2.1/os-hypervisors', params={
        'with_servers': 'true',
        'hypervisor_hostname_pattern': host}).json()['hypervisors']
    assert [[s['uuid'] for s in h['servers']] for h in with_servers] == [
        [server]]
    v21 = api.at('2.1')
    found = v21.get('/v2.1/os-hypervisors/%s/servers' % host).json()
    assert found['hypervisors'][0]['servers'][0]['uuid'] == server
    assert isinstance(found['hypervisors'][0]['id'], int)
    nova_error(v21.get('/v2.1/os-hypervisors/nomatch/search'), 404,
               'itemNotFound')
    nova_error(api.get('/v2.1/os-hypervisors/%s/search' % host), 404,
               'itemNotFound')
    nova_error(api.get('/v2.1/os-hypervisors/42'), 400, 'badRequest')
    nova_error(v21.get('/v2.1/os-hypervisors/999'), 404, 'itemNotFound')
    assert 'uptime' in v21.get('/v2.1/os-hypervisors/%d/uptime' % found[
        'hypervisors'][0]['id']).json()['hypervisor']

    page = api.at('2.33').get('/v2.1/os-hypervisors',
                              params={'limit': 1}).json()
    assert len(page['hypervisors']) == 1
    assert page['hypervisors_links'][0]['rel'] == 'next'
    nova_error(api.at('2.33').get('/v2.1/os-hypervisors',
                                  params={'marker': '9999'}), 400,
               'badRequest')
    nova_error(api.as_user('demo:demo').get('/v2.1/os-hypervisors'), 403,
               'forbidden')


def test_a_disable_the_scheduler_did_not_hear_arrives_with_the_next_report(
        start_system, monkeypatch):
    import oslo_messaging as messaging

    from scheduler_split.scheduler import rpcapi

    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    compute = _compute(api, 'cell1-compute1')

    def lost(self, *args, **kwargs):
        raise messaging.MessagingTimeout('no scheduler answered')

    with monkeypatch.context() as patch:
        patch.setattr(rpcapi.SchedulerAPI, 'update_host_status', lost)
        resp = api.put('/v2.1/os-services/%s' % compute['id'],
                       {'status': 'disabled'})
        nova_error(resp, 503, 'serviceUnavailable')
    # The record is written; the compute's next heartbeat and report carry
    # it to the scheduler.
    assert _compute(api, 'cell1-compute1')['status'] == 'disabled'
    manager = system.aio.computes['cell1-compute1'].manager
    manager.heartbeat()
    manager.report()
    _wait_for_scheduler_status(system, 'cell1-compute1', disabled=True)
    servers = [api.boot(name='vm%d' % i) for i in range(4)]
    assert _hosts_of(api, servers) == ['cell1-compute2'] * 4


def test_a_cell_that_cannot_be_reached_is_shown_as_nova_shows_it(
        start_system):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    with fixtures.cell_database_down(system, 'cell2'):
        computes = _services(api, binary='nova-compute')
        unknown = [s for s in computes if s['status'] == 'UNKNOWN']
        assert unknown == [{'binary': 'nova-compute',
                            'host': 'cell2-compute1', 'status': 'UNKNOWN'}]
        assert [s['host'] for s in computes if s not in unknown] == [
            'cell1-compute1']
        old = _services(api.at('2.68'), binary='nova-compute')
        assert [s['host'] for s in old] == ['cell1-compute1']
        hypervisors = api.get('/v2.1/os-hypervisors').json()['hypervisors']
        assert [h['hypervisor_hostname'] for h in hypervisors] == [
            'cell1-compute1']


def test_os_hosts_lists_shows_and_disables_hosts_until_2_42(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api.at('2.42')
    user = system.api.as_user('u1:p1').at('2.42')
    hosts = api.get('/v2.1/os-hosts').json()['hosts']
    computes = sorted(h['host_name'] for h in hosts
                      if h['service'] == 'compute')
    assert computes == ['cell1-compute1', 'cell1-compute2']
    assert {h['service'] for h in hosts} >= {'compute', 'conductor',
                                             'scheduler'}
    assert {h['zone'] for h in hosts if h['service'] == 'scheduler'} == {
        'internal'}
    zone = [h for h in hosts if h['service'] == 'compute'][0]['zone']
    assert sorted(h['host_name'] for h in api.get(
        '/v2.1/os-hosts', params={'zone': zone}).json()['hosts']) == computes
    assert api.get('/v2.1/os-hosts',
                   params={'zone': 'xxx'}).json()['hosts'] == []
    nova_error(user.get('/v2.1/os-hosts'), 403, 'forbidden')
    nova_error(system.api.at('2.43').get('/v2.1/os-hosts'), 404,
               'itemNotFound')

    server = user.boot(name='on-host')
    assert user.wait_for(server)['status'] == 'ACTIVE'
    placed = system.api.server(server)['OS-EXT-SRV-ATTR:host']
    lines = [r['resource'] for r in api.get(
        '/v2.1/os-hosts/%s' % placed).json()['host']]
    assert [r['project'] for r in lines] == [
        '(total)', '(used_now)', '(used_max)', 'p1']
    assert lines[3]['memory_mb'] == 512 and lines[3]['cpu'] == 1
    assert lines[2]['memory_mb'] == 512
    assert lines[0]['cpu'] >= lines[1]['cpu'] >= 1
    nova_error(api.get('/v2.1/os-hosts/nope'), 404, 'itemNotFound')

    other = [h for h in computes if h != placed][0]
    resp = api.put('/v2.1/os-hosts/%s' % other, {'status': 'disable'})
    assert resp.json() == {'host': other, 'status': 'disabled'}
    assert [system.api.wait_for(user.boot(name='n%d' % i))[
        'OS-EXT-SRV-ATTR:host'] for i in range(2)] == [placed, placed]
    assert api.put('/v2.1/os-hosts/%s' % other,
                   {'status': 'enable'}).json()['status'] == 'enabled'
    for body in ({}, {'status': 'off'}, {'maintenance_mode': 'on'}):
        nova_error(api.put('/v2.1/os-hosts/%s' % other, body), 400,
                   'badRequest')
    nova_error(api.put('/v2.1/os-hosts/%s' % other,
                       {'maintenance_mode': 'enable'}), 501,
               'notImplemented')
    nova_error(api.put('/v2.1/os-hosts/nope', {'status': 'enable'}), 404,
               'itemNotFound')
    for action in ('reboot', 'shutdown', 'startup'):
        nova_error(api.get('/v2.1/os-hosts/%s/%s' % (other, action)), 501,
                   'notImplemented')
        nova_error(api.get('/v2.1/os-hosts/nope/%s' % action), 404,
                   'itemNotFound')
        nova_error(user.get('/v2.1/os-hosts/%s/%s' % (other, action)), 403,
                   'forbidden')
