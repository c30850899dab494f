"""``POST /os-server-external-events``: what other services tell the
compute API about servers, answered event by event in Nova's codes."""

import uuid

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

PATH = '/v2.1/os-server-external-events'


@pytest.fixture
def system(start_system):
    return start_system(cells=1, hosts_per_cell=1)


def _actions(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    return sorted(a['action'] for a in resp.json()['instanceActions'])


def test_an_event_of_a_running_server_is_accepted(system):
    api = system.api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))

    resp = api.post(PATH, {'events': [
        {'name': 'network-vif-plugged', 'server_uuid': server_id,
         'tag': 'port-1', 'status': 'in-progress'}]})

    assert resp.status_code == 200, resp.text
    assert resp.json() == {'events': [
        {'name': 'network-vif-plugged', 'server_uuid': server_id,
         'tag': 'port-1', 'status': 'completed', 'code': 200}]}
    # Nothing changed for the server's user, and no action was recorded
    # for a network event.
    assert api.server(server_id)['status'] == 'ACTIVE'
    assert _actions(api, server_id) == ['create']


def test_events_not_accepted_are_a_207_with_each_ones_reason(system):
    api = system.api
    running = api.boot()
    api.wait_for(running, ('ACTIVE',))
    # m1.xlarge fits no fake host: ERROR in cell0, on no host.
    unplaced = api.boot(flavor='5')
    assert api.wait_for(unplaced)['status'] == 'ERROR'
    unknown = str(uuid.uuid4())

    resp = api.post(PATH, {'events': [
        {'name': 'network-changed', 'server_uuid': running},
        {'name': 'network-changed', 'server_uuid': unknown},
        {'name': 'network-changed', 'server_uuid': unplaced},
        {'name': 'volume-extended', 'server_uuid': running},
    ]})

    assert resp.status_code == 207, resp.text
    assert [(e['server_uuid'], e['code'], e['status'])
            for e in resp.json()['events']] == [
        (running, 200, 'completed'), (unknown, 404, 'failed'),
        (unplaced, 422, 'failed'), (running, 400, 'failed')]
    # None accepted is a 207 too (Nova's 404 for it went with bug
    # 1855752).
    resp = api.post(PATH, {'events': [
        {'name': 'network-changed', 'server_uuid': unknown}]})
    assert resp.status_code == 207, resp.text
    assert resp.json()['events'][0]['code'] == 404


def test_event_names_follow_the_microversion_and_record_novas_actions(
        system):
    api = system.api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))
    extended = {'name': 'volume-extended', 'server_uuid': server_id,
                'tag': 'volume-1'}
    powered_off = {'name': 'power-update', 'server_uuid': server_id,
                   'tag': 'POWER_OFF'}

    assert 'volume-extended' in nova_error(
        api.at('2.50').post(PATH, {'events': [extended]}), 400,
        'badRequest')
    assert 'power-update' in nova_error(
        api.at('2.75').post(PATH, {'events': [powered_off]}), 400,
        'badRequest')
    resp = api.at('2.76').post(PATH, {'events': [extended]})
    assert resp.status_code == 200, resp.text
    resp = api.at('2.76').post(PATH, {'events': [powered_off]})
    assert resp.status_code == 200, resp.text

    # As Nova's API records them; the server itself is as it was (no
    # compute acts on them here).
    assert _actions(api, server_id) == ['create', 'extend_volume', 'stop']
    assert api.server(server_id)['status'] == 'ACTIVE'


@pytest.mark.parametrize('body', [
    {},
    {'events': []},
    {'events': [{'name': 'network-changed'}]},
    {'events': [{'name': 'network-changed', 'server_uuid': 'not-a-uuid'}]},
    {'events': [{'name': 'unheard-of', 'server_uuid': str(uuid.uuid4())}]},
    {'events': [{'name': 'network-changed', 'server_uuid':
                 str(uuid.uuid4()), 'status': 'done'}]},
    {'events': [{'name': 'network-changed', 'server_uuid':
                 str(uuid.uuid4()), 'extra': 1}]},
])
def test_a_malformed_body_is_a_400(system, body):
    nova_error(system.api.post(PATH, body), 400, 'badRequest')


def test_only_admins_and_other_services_send_events(system):
    api = system.api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))
    events = {'events': [{'name': 'network-changed',
                          'server_uuid': server_id}]}

    nova_error(api.as_user('u1:p1').post(PATH, events), 403, 'forbidden')
    member = system.as_keystone_user('u1', 'p1', ['member', 'reader'])
    nova_error(member.post(PATH, events), 403, 'forbidden')
    neutron = system.as_keystone_user('neutron', 'service', ['service'])
    resp = neutron.post(PATH, events)
    assert resp.status_code == 200, resp.text
    assert resp.json()['events'][0]['code'] == 200
