"""os-aggregates and os-availability-zone: operators group hosts, make
zones of them and steer placement with their metadata."""

import time

import pytest

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import objects
from tests.functional.fixtures import nova_error

CONF = conf.CONF
pytestmark = pytest.mark.functional


def _create(api, name, zone=None):
    body = {'aggregate': {'name': name}}
    if zone is not None:
        body['aggregate']['availability_zone'] = zone
    resp = api.post('/v2.1/os-aggregates', body)
    assert resp.status_code == 200, resp.text
    return resp.json()['aggregate']


def _action(api, aggregate_id, action, args):
    return api.post('/v2.1/os-aggregates/%s/action' % aggregate_id,
                    {action: args})


def _add_host(api, aggregate_id, host):
    resp = _action(api, aggregate_id, 'add_host', {'host': host})
    assert resp.status_code == 200, resp.text
    return resp.json()['aggregate']


def _hosts_of(api, server_ids):
    return [api.wait_for(s)['OS-EXT-SRV-ATTR:host'] for s in server_ids]


def test_aggregates_in_novas_shapes_and_errors(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api

    created = _create(api, 'fast', zone='az1')
    assert set(created) == {'id', 'uuid', 'name', 'availability_zone',
                            'deleted', 'deleted_at', 'created_at',
                            'updated_at'}
    assert (created['name'], created['availability_zone'],
            created['deleted']) == ('fast', 'az1', False)
    old = api.at('2.40').get('/v2.1/os-aggregates/%d' % created['id'])
    assert old.status_code == 200 and 'uuid' not in old.json()['aggregate']
    assert old.json()['aggregate']['hosts'] == []
    assert old.json()['aggregate']['metadata'] == {'availability_zone':
                                                   'az1'}

    nova_error(api.post('/v2.1/os-aggregates',
                        {'aggregate': {'name': 'fast'}}), 409,
               'conflictingRequest')
    nova_error(api.post('/v2.1/os-aggregates',
                        {'aggregate': {'name': 'x', 'zone': 'a'}}), 400,
               'badRequest')
    nova_error(api.post('/v2.1/os-aggregates',
                        {'aggregate': {'name': 'x',
                                       'availability_zone': 'a:b'}}), 400,
               'badRequest')
    nova_error(api.post('/v2.1/os-aggregates',
                        {'aggregate': {'name': 'x',
                                       'availability_zone': 'internal'}}),
               400, 'badRequest')
    nova_error(api.get('/v2.1/os-aggregates/999'), 404, 'itemNotFound')
    # Ids no database column holds are not found either, on any route.
    for huge in ('9223372036854775808', '-9223372036854775809', '0'):
        nova_error(api.get('/v2.1/os-aggregates/' + huge), 404,
                   'itemNotFound')
        nova_error(api.delete('/v2.1/os-aggregates/' + huge), 404,
                   'itemNotFound')
        nova_error(_action(api, huge, 'add_host',
                           {'host': 'cell1-compute1'}), 404, 'itemNotFound')
    nova_error(api.get('/v2.1/os-aggregates/abc'), 400, 'badRequest')

    agg = _add_host(api, created['id'], 'cell1-compute1')
    assert agg['hosts'] == ['cell1-compute1']
    assert 'Compute host nohost could not be found' in nova_error(
        _action(api, created['id'], 'add_host', {'host': 'nohost'}), 404,
        'itemNotFound')
    nova_error(_action(api, created['id'], 'add_host',
                       {'host': 'cell1-compute1'}), 409, 'conflictingRequest')
    nova_error(_action(api, created['id'], 'remove_host',
                       {'host': 'cell1-compute2'}), 404, 'itemNotFound')
    nova_error(_action(api, created['id'], 'reboot', {}), 400,
               'badRequest')

    # A host is in one zone at most.
    other = _create(api, 'other', zone='az2')
    assert 'availability zone' in nova_error(
        _action(api, other['id'], 'add_host', {'host': 'cell1-compute1'}),
        409, 'conflictingRequest')
    plain = _create(api, 'plain')
    assert _add_host(api, plain['id'], 'cell1-compute1')['hosts'] == [
        'cell1-compute1']
    nova_error(_action(api, plain['id'], 'set_metadata',
                       {'metadata': {'availability_zone': 'az2'}}), 409,
               'conflictingRequest')

    resp = _action(api, created['id'], 'set_metadata',
                   {'metadata': {'ssd': 'true', 'tier': 'gold'}})
    assert resp.status_code == 200, resp.text
    resp = _action(api, created['id'], 'set_metadata',
                   {'metadata': {'tier': None}})
    assert resp.json()['aggregate']['metadata'] == {
        'availability_zone': 'az1', 'ssd': 'true'}

    resp = api.put('/v2.1/os-aggregates/%d' % created['id'],
                   {'aggregate': {'name': 'faster'}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['aggregate']['name'] == 'faster'
    nova_error(api.put('/v2.1/os-aggregates/%d' % created['id'],
                       {'aggregate': {}}), 400, 'badRequest')

    nova_error(api.delete('/v2.1/os-aggregates/%d' % created['id']), 400,
               'badRequest')
    resp = _action(api, created['id'], 'remove_host',
                   {'host': 'cell1-compute1'})
    assert resp.status_code == 200 and resp.json()['aggregate'][
        'hosts'] == []
    assert api.delete('/v2.1/os-aggregates/%d'
                      % created['id']).status_code == 200
    nova_error(api.get('/v2.1/os-aggregates/%d' % created['id']), 404,
               'itemNotFound')
    # Its name is free again.
    assert _create(api, 'faster')['name'] == 'faster'
    listed = api.get('/v2.1/os-aggregates').json()['aggregates']
    assert sorted(a['name'] for a in listed) == ['faster', 'other', 'plain']

    nova_error(system.api.as_user('u1:p1').get('/v2.1/os-aggregates'), 403,
               'forbidden')
    nova_error(api.post('/v2.1/os-aggregates/%d/images' % other['id'],
                        {'cache': [{'id': 'x'}]}), 400, 'badRequest')


def test_a_zone_aggregate_places_servers_asked_for_its_zone_on_its_hosts(
        start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    zone = _create(api, 'rack-a', zone='az1')
    for host in ('cell1-compute2', 'cell2-compute1'):
        _add_host(api, zone['id'], host)

    zones = api.get('/v2.1/os-availability-zone').json()[
        'availabilityZoneInfo']
    assert sorted((z['zoneName'], z['zoneState']['available'], z['hosts'])
                  for z in zones) == [('az1', True, None),
                                      ('nova', True, None)]

    in_zone = [api.boot(name='z%d' % i, availability_zone='az1')
               for i in range(6)]
    anywhere = [api.boot(name='a%d' % i) for i in range(6)]
    zone_hosts = {'cell1-compute2', 'cell2-compute1'}
    assert set(_hosts_of(api, in_zone)) <= zone_hosts
    assert {api.server(s)['OS-EXT-AZ:availability_zone']
            for s in in_zone} == {'az1'}
    # The others go anywhere (the weighers spread them over all four).
    assert set(_hosts_of(api, anywhere)) - zone_hosts

    in_nova = [api.boot(name='n%d' % i, availability_zone='nova')
               for i in range(4)]
    assert set(_hosts_of(api, in_nova)) <= {'cell1-compute1',
                                            'cell2-compute2'}

    assert 'availability zone is not available' in nova_error(
        api.post('/v2.1/servers', {'server': {
            'name': 'x', 'flavorRef': '1', 'networks': 'none',
            'imageRef': api.server(in_zone[0])['image']['id'],
            'availability_zone': 'nowhere'}}), 400, 'badRequest')

    # Taking a host out of the zone moves it back to the default zone.
    resp = _action(api, zone['id'], 'remove_host',
                   {'host': 'cell2-compute1'})
    assert resp.status_code == 200, resp.text
    more = [api.boot(name='m%d' % i, availability_zone='az1')
            for i in range(3)]
    assert set(_hosts_of(api, more)) == {'cell1-compute2'}

    detail = api.get('/v2.1/os-availability-zone/detail').json()[
        'availabilityZoneInfo']
    by_name = {z['zoneName']: z for z in detail}
    assert set(by_name['az1']['hosts']) == {'cell1-compute2'}
    entry = by_name['az1']['hosts']['cell1-compute2']['nova-compute']
    assert (entry['available'], entry['active']) == (True, True)
    assert set(by_name['nova']['hosts']) == {
        'cell1-compute1', 'cell2-compute1', 'cell2-compute2'}
    assert 'nova-scheduler' in {
        binary for services in by_name['internal']['hosts'].values()
        for binary in services}
    nova_error(system.api.as_user('u1:p1').get(
        '/v2.1/os-availability-zone/detail'), 403, 'forbidden')
    assert system.api.as_user('u1:p1').get(
        '/v2.1/os-availability-zone').status_code == 200


@pytest.fixture
def aggregate_filters():
    CONF.set_override('enabled_filters',
                      CONF.filter_scheduler.enabled_filters +
                      ['AggregateInstanceExtraSpecsFilter',
                       'AggregateMultiTenancyIsolation'],
                      group='filter_scheduler')
    yield
    CONF.clear_override('enabled_filters', group='filter_scheduler')


def test_aggregate_metadata_steers_flavors_and_projects(
        start_system, aggregate_filters):
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    ctx = ss_context.get_admin_context()
    objects.Flavor(flavorid='ssd', name='m1.ssd', memory_mb=128, vcpus=1,
                   root_gb=1, extra_specs={
                       'aggregate_instance_extra_specs:ssd': 'true',
                       'aggregate_instance_extra_specs:gen': '>= 3'}
                   ).create(ctx)
    fast = _create(api, 'fast')
    _add_host(api, fast['id'], 'cell1-compute1')
    _action(api, fast['id'], 'set_metadata',
            {'metadata': {'ssd': 'true', 'gen': '4'}})
    old = _create(api, 'old')
    _add_host(api, old['id'], 'cell1-compute2')
    _action(api, old['id'], 'set_metadata',
            {'metadata': {'ssd': 'true', 'gen': '2'}})

    ssd = [api.boot(name='s%d' % i, flavor='ssd') for i in range(3)]
    assert set(_hosts_of(api, ssd)) == {'cell1-compute1'}

    # A project's own hosts take only its servers.
    _action(api, old['id'], 'set_metadata',
            {'metadata': {'filter_tenant_id': 'p-gold'}})
    others = [api.boot(name='o%d' % i, flavor='1') for i in range(4)]
    assert 'cell1-compute2' not in _hosts_of(api, others)
    gold = system.api.as_user('u1:p-gold')
    mine = [gold.boot(name='g%d' % i, flavor='1') for i in range(6)]
    assert 'cell1-compute2' in _hosts_of(api, mine)


def test_a_boot_into_a_zone_goes_on_when_no_scheduler_can_say(
        start_system, monkeypatch):
    """During a rolling upgrade the schedulers of the previous release
    cannot list the zones: the boot is not refused for it, and the
    scheduler keeps it in its zone."""
    import oslo_messaging as messaging

    from scheduler_split.scheduler import client
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    zone = _create(api, 'rack-a', zone='az1')
    _add_host(api, zone['id'], 'cell1-compute2')

    def refuse(self, ctx):
        raise messaging.RPCVersionCapError(version='1.3', version_cap='1.0')
    monkeypatch.setattr(client.SchedulerClient, 'get_availability_zones',
                        refuse)
    server = api.boot(name='z', availability_zone='az1')
    assert _hosts_of(api, [server]) == ['cell1-compute2']
    # A zone no host is in now ends in ERROR rather than a 400.
    lost = api.boot(name='lost', availability_zone='nowhere')
    assert api.wait_for(lost)['status'] == 'ERROR'


def test_aggregates_isolate_hosts_by_image_property(start_system):
    CONF.set_override('enabled_filters',
                      CONF.filter_scheduler.enabled_filters +
                      ['AggregateImagePropertiesIsolation'],
                      group='filter_scheduler')
    try:
        system = start_system(cells=1, hosts_per_cell=2)
        api = system.api
        ubuntu = _create(api, 'ubuntu-hosts')
        _add_host(api, ubuntu['id'], 'cell1-compute1')
        _action(api, ubuntu['id'], 'set_metadata',
                {'metadata': {'os_distro': 'ubuntu'}})
        cirros = _create(api, 'cirros-hosts')
        _add_host(api, cirros['id'], 'cell1-compute2')
        _action(api, cirros['id'], 'set_metadata',
                {'metadata': {'os_distro': 'cirros, arch'}})
        on_ubuntu = [api.boot(name='u%d' % i, image='ubuntu-24.04')
                     for i in range(3)]
        on_cirros = [api.boot(name='c%d' % i) for i in range(3)]
        assert set(_hosts_of(api, on_ubuntu)) == {'cell1-compute1'}
        assert set(_hosts_of(api, on_cirros)) == {'cell1-compute2'}
        # A fedora image fits neither aggregate's list.
        fedora = api.wait_for(api.boot(name='f', image='fedora-41',
                                       flavor='2'))
        assert fedora['status'] == 'ERROR'
        assert 'No valid host' in fedora['fault']['message']
    finally:
        CONF.clear_override('enabled_filters', group='filter_scheduler')


def test_zone_detail_says_up_as_available_and_enabled_as_active(
        start_system):
    """As Nova's ``os-availability-zone/detail``: a service is
    ``available`` when it is up and ``active`` when it is enabled."""
    CONF.set_override('report_interval', 1)
    CONF.set_override('service_down_time', 3)
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    services = {s['host']: s for s in api.get('/v2.1/os-services').json()[
        'services'] if s['binary'] == 'nova-compute'}
    resp = api.put('/v2.1/os-services/%s' % services['cell1-compute1']['id'],
                   {'status': 'disabled'})
    assert resp.status_code == 200, resp.text
    system.aio.computes['cell1-compute2'].stop()

    def compute_entries():
        zones = api.get('/v2.1/os-availability-zone/detail').json()[
            'availabilityZoneInfo']
        return {host: (entry['nova-compute']['available'],
                       entry['nova-compute']['active'])
                for zone in zones if zone['zoneName'] == 'nova'
                for host, entry in zone['hosts'].items()}

    expected = {'cell1-compute1': (True, False),   # up, disabled
                'cell1-compute2': (False, True),   # down, enabled
                'cell1-compute3': (True, True)}
    deadline = time.monotonic() + 15
    while compute_entries() != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert compute_entries() == expected
    # The scheduler and the conductors are up and enabled.
    internal = {binary: (entry['available'], entry['active'])
                for zone in api.get('/v2.1/os-availability-zone/detail')
                .json()['availabilityZoneInfo']
                if zone['zoneName'] == 'internal'
                for services in zone['hosts'].values()
                for binary, entry in services.items()}
    assert set(internal.values()) == {(True, True)}, internal
