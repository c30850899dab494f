"""A cell whose database cannot be reached does not fail the rest: the
servers of the other cells are listed, and from 2.69 those of the down
cell as UNKNOWN, as Nova shows them; boots go to the other cell; quotas
and limits are counted; an API started meanwhile serves."""

import time

import pytest

from scheduler_split import conf

pytestmark = pytest.mark.functional

CONF = conf.CONF


@pytest.fixture(scope='module')
def system(tmp_path_factory):
    from tests.functional import fixtures
    # The scheduler looks at the cells' databases every second.
    CONF.set_override('cell_check_interval', 1, group='scheduler')
    system = fixtures.System(tmp_path_factory.mktemp('down-cells'), 2,
                             1).start()
    yield system
    system.stop()
    CONF.reset()


@pytest.fixture(scope='module')
def servers(system):
    """A server of project "admin" on each cell's host, and one of
    project "other" wherever the scheduler puts it."""
    found = {}
    for cell in ('cell1', 'cell2'):
        found[cell] = system.api.boot(
            name='on-' + cell,
            availability_zone='nova:%s-compute1' % cell)
    found['others-own'] = system.api.as_user('other:other').boot(
        name='of-other')
    for server_id in found.values():
        assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
    return found


def _database_down(system, cell_name):
    from tests.functional import fixtures
    return fixtures.cell_database_down(system, cell_name)


def _cell_of(system, server_id):
    return system.api.server(server_id)['OS-EXT-SRV-ATTR:host'].split(
        '-')[0]


def _timed_get(api, path, **params):
    started = time.monotonic()
    resp = api.get(path, params=params)
    return resp, time.monotonic() - started


def test_a_list_before_2_69_leaves_the_down_cell_out(system, servers):
    in_cell1 = {s for s in servers.values()
                if _cell_of(system, s) == 'cell1'}
    with _database_down(system, 'cell2'):
        for path in ('/v2.1/servers', '/v2.1/servers/detail'):
            resp, took = _timed_get(system.api.at('2.68'), path,
                                    all_tenants=1)
            assert resp.status_code == 200, resp.text
            assert took < 5
            assert {s['id'] for s in resp.json()['servers']} == in_cell1


def test_a_list_at_2_69_shows_the_down_cells_servers_as_unknown(
        system, servers):
    in_cell2 = {s for s in servers.values()
                if _cell_of(system, s) == 'cell2'}
    with _database_down(system, 'cell2'):
        resp, took = _timed_get(system.api.at('2.69'), '/v2.1/servers',
                                all_tenants=1)
        detail, _ = _timed_get(system.api.at('2.69'),
                               '/v2.1/servers/detail', all_tenants=1)
    assert resp.status_code == 200, resp.text
    assert took < 5
    unknown = [s for s in resp.json()['servers']
               if s.get('status') == 'UNKNOWN']
    assert {s['id'] for s in unknown} == in_cell2
    for server in unknown:
        assert sorted(server) == ['id', 'links', 'status']
        assert server['links'][0]['href'].endswith(
            '/v2.1/servers/%s' % server['id'])
    known = [s for s in resp.json()['servers'] if 'status' not in s]
    assert {s['name'] for s in known} == {'on-cell1'} | (
        {'of-other'} if _cell_of(system, servers['others-own']) == 'cell1'
        else set())

    assert detail.status_code == 200, detail.text
    shown = {s['id']: s for s in detail.json()['servers']
             if s['status'] == 'UNKNOWN'}
    assert set(shown) == in_cell2
    assert shown[servers['cell2']]['tenant_id'] == 'admin'
    for server in shown.values():
        assert sorted(server) == ['created', 'id', 'links', 'status',
                                  'tenant_id']
        assert server['created'].endswith('Z')


def test_a_projects_list_shows_only_its_own_unknown_servers(system,
                                                            servers):
    other = system.api.as_user('other:other').at('2.69')
    with _database_down(system, 'cell2'):
        resp, _ = _timed_get(other, '/v2.1/servers')
    assert resp.status_code == 200, resp.text
    assert [s['id'] for s in resp.json()['servers']] == [
        servers['others-own']]


@pytest.mark.parametrize('params', [
    {'name': 'on-'}, {'status': 'ACTIVE'}, {'limit': 10},
    {'sort_key': 'display_name'}, {'host': 'cell2-compute1'},
], ids=['name', 'status', 'limit', 'sort', 'host'])
def test_a_filtered_list_cannot_tell_and_leaves_the_down_cell_out(
        system, servers, params):
    with _database_down(system, 'cell2'):
        resp, _ = _timed_get(system.api.at('2.69'), '/v2.1/servers',
                             all_tenants=1, **params)
    assert resp.status_code == 200, resp.text
    assert all(s.get('status') != 'UNKNOWN'
               for s in resp.json()['servers'])
    assert servers['cell2'] not in {s['id'] for s in resp.json()['servers']}


def test_show_at_2_69_is_the_partial_record(system, servers):
    with _database_down(system, 'cell2'):
        resp, took = _timed_get(system.api.at('2.69'),
                                '/v2.1/servers/%s' % servers['cell2'])
        at_2_71, _ = _timed_get(system.api.at('2.71'),
                                '/v2.1/servers/%s' % servers['cell2'])
    assert resp.status_code == 200, resp.text
    assert took < 5
    server = resp.json()['server']
    assert server['id'] == servers['cell2']
    assert server['status'] == 'UNKNOWN'
    assert server['tenant_id'] == 'admin'
    assert server['user_id'] == 'admin'
    assert server['OS-EXT-STS:power_state'] == 0
    assert server['OS-EXT-AZ:availability_zone'] == 'nova'
    assert server['flavor']['original_name'] == 'm1.tiny'
    from scheduler_split.image import catalog as images
    assert server['image']['id'] == images.find('cirros')[0]
    assert 'name' not in server and 'server_groups' not in server
    assert at_2_71.json()['server']['server_groups'] == []


def test_show_before_2_69_is_503(system, servers):
    with _database_down(system, 'cell2'):
        resp = system.api.at('2.68').get('/v2.1/servers/%s'
                                         % servers['cell2'])
    assert resp.status_code == 503, resp.text
    assert 'database' in resp.json()['serviceUnavailable']['message']
    assert int(resp.headers['Retry-After']) == CONF.api.retry_after


def test_show_of_a_server_of_an_up_cell_is_whole(system, servers):
    with _database_down(system, 'cell2'):
        server = system.api.at('2.69').server(servers['cell1'])
    assert server['status'] == 'ACTIVE'
    assert server['name'] == 'on-cell1'


def test_another_projects_server_in_a_down_cell_is_not_found(system,
                                                             servers):
    other = system.api.as_user('other:other').at('2.69')
    with _database_down(system, 'cell2'):
        resp = other.get('/v2.1/servers/%s' % servers['cell2'])
    assert resp.status_code == 404, resp.text


def test_the_cell_back_lists_whole(system, servers):
    with _database_down(system, 'cell2'):
        system.api.get('/v2.1/servers')
    listed = system.api.servers(all_tenants=1)
    assert {s['id'] for s in listed} == set(servers.values())
    assert {s['status'] for s in listed} == {'ACTIVE'}


def _scheduler_sees_down(system, names, timeout=10):
    """Wait until the scheduler's look at the cells finds ``names``
    (a set of cell names) down."""
    health = system.aio.services[0].manager.cell_health
    deadline = time.monotonic() + timeout
    while {health.name(uuid) for uuid in health.down} != names:
        assert time.monotonic() < deadline, health.down
        time.sleep(0.1)


def test_boots_go_to_the_cell_that_answers(system, servers):
    with _database_down(system, 'cell2'):
        _scheduler_sees_down(system, {'cell2'})
        booted = [system.api.boot(name='while-cell2-is-down-%d' % n)
                  for n in range(4)]
        found = [system.api.wait_for(server_id) for server_id in booted]
    assert [s['status'] for s in found] == ['ACTIVE'] * 4
    assert {_cell_of(system, s) for s in booted} == {'cell1'}
    _scheduler_sees_down(system, set())
    for server_id in booted:
        system.api.delete('/v2.1/servers/%s' % server_id)
        system.api.wait_gone(server_id)


def test_a_boot_when_no_cell_answers_ends_in_error_after_waiting(
        system, servers):
    # Every cell down says more about the scheduler's link than about the
    # cells: no host is left out, the boot waits for its cell's database
    # ([database] retry_timeout, twice: the second try goes to a cell
    # that does not answer either) and then ends in ERROR.
    CONF.set_override('retry_timeout', 1, group='database')
    try:
        with _database_down(system, 'cell1'), \
                _database_down(system, 'cell2'):
            _scheduler_sees_down(system, {'cell1', 'cell2'})
            server_id = system.api.boot(name='nowhere')
            server = system.api.wait_for(server_id, statuses=('ERROR',),
                                         timeout=30)
    finally:
        CONF.clear_override('retry_timeout', group='database')
    assert 'database' in server['fault']['message'].lower(), server
    system.api.delete('/v2.1/servers/%s' % server_id)
    system.api.wait_gone(server_id)


def test_quotas_and_limits_are_counted_while_a_cell_is_down(system,
                                                            servers):
    with _database_down(system, 'cell2'):
        limits, took = _timed_get(system.api, '/v2.1/limits')
        quotas, _ = _timed_get(system.api,
                               '/v2.1/os-quota-sets/admin/detail')
    assert limits.status_code == 200, limits.text
    assert took < 5
    # Both of project admin's servers count, the one in cell2 too.
    assert limits.json()['limits']['absolute']['totalInstancesUsed'] == 2
    assert quotas.status_code == 200, quotas.text
    assert quotas.json()['quota_set']['instances']['in_use'] == 2


def test_an_api_started_while_a_cell_is_down_serves(system, servers):
    from scheduler_split.api import wsgi
    from tests.functional import fixtures
    with _database_down(system, 'cell2'):
        started = time.monotonic()
        server = fixtures._serve(wsgi.make_app())
        try:
            api = fixtures.Api(server.url).at('2.69')
            resp = api.get('/v2.1/servers', params={'all_tenants': 1})
        finally:
            server.stop(graceful=False)
        took = time.monotonic() - started
    assert resp.status_code == 200, resp.text
    assert took < 5
    assert {s['id']: s.get('status') for s in resp.json()['servers']}[
        servers['cell2']] == 'UNKNOWN'
