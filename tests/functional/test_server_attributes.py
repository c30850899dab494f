"""What a client sees of the version list, a server's access addresses
and security groups, and a server update, in Nova's shapes."""

import base64
import threading

import pytest

pytestmark = pytest.mark.functional

V4, V6 = '192.0.2.10', '2001:db8:0:0:0:0:0:a'
V6_CANONICAL = '2001:db8::a'


@pytest.fixture
def api(start_system):
    return start_system(cells=1, hosts_per_cell=1).api


def _bad_request(resp, *words):
    assert resp.status_code == 400, resp.text
    message = resp.json()['badRequest']['message']
    for word in words:
        assert word in message
    return message


def test_the_version_list_names_v2_0_supported_before_v2_1_current(api):
    anonymous = api.as_user('')
    del anonymous.session.headers['X-Auth-Token']

    versions = anonymous.get('/').json()['versions']

    assert [(v['id'], v['status']) for v in versions] == [
        ('v2.0', 'SUPPORTED'), ('v2.1', 'CURRENT')]
    assert (versions[0]['version'], versions[0]['min_version']) == ('', '')
    for listed in versions:
        [link] = listed['links']
        assert link['rel'] == 'self'
        # Each self link answers with that version's own document.
        document = anonymous.get(
            link['href'][len(api.base_url):]).json()['version']
        assert document['id'] == listed['id']
        assert [x for x in document['links'] if x['rel'] == 'self'] == [link]


def test_access_addresses_given_at_boot_are_shown_canonical(api):
    server_id = api.boot(accessIPv4=V4, accessIPv6=V6)

    server = api.wait_for(server_id, ('ACTIVE',))

    assert (server['accessIPv4'], server['accessIPv6']) == (V4, V6_CANONICAL)
    [listed] = [s for s in api.servers() if s['id'] == server_id]
    assert (listed['accessIPv4'], listed['accessIPv6']) == (
        V4, V6_CANONICAL)
    other = api.wait_for(api.boot(name='plain'), ('ACTIVE',))
    assert (other['accessIPv4'], other['accessIPv6']) == ('', '')


@pytest.mark.parametrize('field, value', [
    ('accessIPv4', '1.1.1.1.1'), ('accessIPv4', '2001:db8::1'),
    ('accessIPv4', ''), ('accessIPv6', '1.1.1.1'),
    ('accessIPv6', '2001:db8::g'), ('accessIPv6', 'fe80::1%eth0'),
])
def test_an_access_address_of_the_wrong_family_is_a_bad_request(
        api, field, value):
    resp = api.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': '1', 'networks': 'none',
        'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01', field: value}})

    _bad_request(resp, field)
    assert api.servers() == []


def test_the_default_security_group_is_echoed_and_others_do_not_exist(api):
    server = {'name': 'vm', 'flavorRef': '1', 'networks': 'none',
              'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01'}

    plain = api.post('/v2.1/servers', {'server': server})
    asked = api.post('/v2.1/servers', {'server': dict(
        server, security_groups=[{'name': 'default'}])})
    unknown = api.post('/v2.1/servers', {'server': dict(
        server, security_groups=[{'name': 'web'}])})

    assert plain.json()['server']['security_groups'] == [
        {'name': 'default'}]
    assert asked.json()['server']['security_groups'] == [
        {'name': 'default'}]
    _bad_request(unknown, 'web')
    # As Nova shows a server without ports: no security_groups at all.
    shown = api.wait_for(plain.json()['server']['id'], ('ACTIVE',))
    assert 'security_groups' not in shown


def test_a_server_update_renames_readdresses_and_describes_it(api):
    server_id = api.boot(name='before', description='old')
    api.wait_for(server_id, ('ACTIVE',))

    resp = api.put('/v2.1/servers/%s' % server_id, {'server': {
        'name': 'after', 'accessIPv4': V4, 'accessIPv6': V6,
        'description': None}})

    assert resp.status_code == 200, resp.text
    updated = resp.json()['server']
    assert (updated['name'], updated['accessIPv4'], updated['accessIPv6'],
            updated['description']) == ('after', V4, V6_CANONICAL, None)
    shown = api.server(server_id)
    assert (shown['name'], shown['accessIPv4'], shown['accessIPv6'],
            shown['description'], shown['status']) == (
        'after', V4, V6_CANONICAL, None, 'ACTIVE')


def test_the_update_answer_has_the_shape_of_its_microversion(api):
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))

    def answer(version):
        resp = api.at(version).put('/v2.1/servers/%s' % server_id,
                                   {'server': {'name': 'renamed'}})
        assert resp.status_code == 200, resp.text
        return resp.json()['server']

    v21, v29, v247, v274, v275 = (answer(v) for v in (
        '2.1', '2.9', '2.47', '2.74', '2.75'))
    assert 'locked' not in v21 and 'description' not in v21
    assert 'OS-EXT-STS:vm_state' not in v21 and 'key_name' not in v21
    assert set(v21['flavor']) == {'id', 'links'}
    assert v29['locked'] is False
    assert v247['flavor']['original_name'] == 'm1.tiny'
    assert v274['server_groups'] == [] and 'config_drive' not in v274
    assert v275['OS-EXT-STS:vm_state'] == 'active'
    assert v275['OS-EXT-AZ:availability_zone'] == \
        api.server(server_id)['OS-EXT-AZ:availability_zone']


def test_bad_server_updates_are_refused_in_novas_shape(api):
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))
    path = '/v2.1/servers/%s' % server_id

    _bad_request(api.put(path, {'server': {'accessIPv4': '::1'}}),
                 'accessIPv4')
    _bad_request(api.put(path, {'server': {'name': ''}}), 'name')
    _bad_request(api.at('2.18').put(path, {'server': {'description': 'd'}}),
                 'description')
    _bad_request(api.put(path, {'server': {'flavorRef': '2'}}), 'flavorRef')
    _bad_request(api.put(path, {'name': 'x'}), 'server')
    missing = api.put('/v2.1/servers/%s' % ('0' * 8 + '-0000-4000-8000-'
                                            + '0' * 12),
                      {'server': {'name': 'x'}})
    assert missing.status_code == 404
    assert list(missing.json()) == ['itemNotFound']
    assert api.server(server_id)['name'] == 'vm'


def test_only_the_project_may_update_its_server(api):
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))
    path = '/v2.1/servers/%s' % server_id

    stranger = api.as_user('mallory:project-m').put(
        path, {'server': {'name': 'taken'}})

    assert stranger.status_code == 404
    assert api.server(server_id)['name'] == 'vm'


def test_an_update_while_the_server_is_scheduled_is_kept(
        start_system, monkeypatch):
    from scheduler_split.scheduler import client as scheduler_client
    api = start_system(cells=1, hosts_per_cell=1).api
    release = threading.Event()
    select = scheduler_client.SchedulerClient.select_destinations

    def held(self, *args, **kwargs):
        release.wait(30)
        return select(self, *args, **kwargs)

    monkeypatch.setattr(scheduler_client.SchedulerClient,
                        'select_destinations', held)
    server_id = api.boot(name='queued')

    resp = api.put('/v2.1/servers/%s' % server_id, {'server': {
        'name': 'renamed-in-build', 'accessIPv4': V4}})
    release.set()

    assert resp.status_code == 200, resp.text
    assert resp.json()['server']['status'] == 'BUILD'
    assert resp.json()['server']['name'] == 'renamed-in-build'
    server = api.wait_for(server_id, ('ACTIVE',))
    assert (server['name'], server['accessIPv4']) == ('renamed-in-build', V4)


def test_an_update_as_the_conductor_moves_the_server_to_its_cell_is_kept(
        start_system, monkeypatch):
    from scheduler_split import objects
    api = start_system(cells=1, hosts_per_cell=1).api
    hand_over = objects.BuildRequest.hand_over
    answers = []

    def update_first(self, ctx, cell):
        # The instance is in the cell already, its mapping not yet: the
        # API still updates the build request.
        if not answers:
            answers.append(api.put('/v2.1/servers/%s' % self.instance_uuid,
                                   {'server': {'name': 'late-rename',
                                               'accessIPv6': V6}}))
        return hand_over(self, ctx, cell)

    monkeypatch.setattr(objects.BuildRequest, 'hand_over', update_first)
    server_id = api.boot(name='moving')

    server = api.wait_for(server_id, ('ACTIVE',))

    assert answers[0].status_code == 200, answers[0].text
    assert (server['name'], server['accessIPv6']) == ('late-rename',
                                                      V6_CANONICAL)


def _compute_service(api, host):
    resp = api.get('/v2.1/os-services', params={'binary': 'nova-compute',
                                                'host': host})
    assert resp.status_code == 200, resp.text
    [service] = resp.json()['services']
    return service


def test_admins_see_the_boots_details_and_the_hosts_status(api):
    user_data = base64.b64encode(b'#cloud-config\n').decode()
    server_id = api.boot(user_data=user_data)
    assert api.wait_for(server_id)['status'] == 'ACTIVE'

    shown = api.at('2.3').server(server_id)
    assert shown['OS-EXT-SRV-ATTR:user_data'] == user_data
    assert shown['OS-EXT-SRV-ATTR:root_device_name'] == '/dev/vda'
    assert shown['OS-EXT-SRV-ATTR:reservation_id'].startswith('r-')
    assert shown['OS-EXT-SRV-ATTR:launch_index'] == 0
    assert shown['OS-EXT-SRV-ATTR:hostname'] == 'vm'
    assert (shown['OS-EXT-SRV-ATTR:kernel_id'],
            shown['OS-EXT-SRV-ATTR:ramdisk_id']) == ('', '')
    assert 'host_status' not in shown
    assert 'OS-EXT-SRV-ATTR:user_data' not in api.at('2.2').server(server_id)

    assert api.at('2.16').server(server_id)['host_status'] == 'UP'
    host = shown['OS-EXT-SRV-ATTR:host']
    service = _compute_service(api.at('2.53'), host)
    resp = api.at('2.53').put('/v2.1/os-services/%s' % service['id'],
                              {'status': 'disabled'})
    assert resp.status_code == 200, resp.text
    [listed] = api.at('2.16').servers()
    assert listed['host_status'] == 'MAINTENANCE'
    resp = api.at('2.53').put('/v2.1/os-services/%s' % service['id'],
                              {'forced_down': True})
    assert resp.status_code == 200, resp.text
    assert api.at('2.16').server(server_id)['host_status'] == 'DOWN'

    # A project's own user sees neither.
    user = api.as_user('user:%s' % shown['tenant_id']).at('2.16')
    mine = user.server(server_id)
    assert 'host_status' not in mine
    assert 'OS-EXT-SRV-ATTR:user_data' not in mine

    # The compute's events name their host, hashed for the project.
    resp = api.at('2.62').get('/v2.1/servers/%s/os-instance-actions'
                              % server_id)
    [action] = resp.json()['instanceActions']
    events = api.at('2.62').get(
        '/v2.1/servers/%s/os-instance-actions/%s'
        % (server_id, action['request_id'])).json()['instanceAction'][
        'events']
    compute_events = [e for e in events if e['host'] == host]
    assert compute_events
    assert all(e['hostId'] == shown['hostId'] for e in compute_events)


def test_user_data_that_is_not_base64_is_refused(api):
    _bad_request(api.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': '1', 'imageRef': 'cirros',
        'networks': 'none', 'user_data': 'not base64!'}}),
        'User data needs to be valid base 64.')
