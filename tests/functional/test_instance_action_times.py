"""What a client reads of when a server's actions and their steps
happened: each step from when it began to when it ended, no action
starting after its first step, and the events shown as Nova shows them
at each microversion."""

import datetime

import pytest

pytestmark = pytest.mark.functional

FMT = '%Y-%m-%dT%H:%M:%S.%f'


def _time(text):
    return datetime.datetime.strptime(text, FMT)


def _action(api, server_id, name):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    [listed] = [a for a in resp.json()['instanceActions']
                if a['action'] == name]
    resp = api.get('/v2.1/servers/%s/os-instance-actions/%s'
                   % (server_id, listed['request_id']))
    assert resp.status_code == 200, resp.text
    return resp.json()['instanceAction']


def _assert_in_order(action):
    starts = [_time(e['start_time']) for e in action['events']]
    assert _time(action['start_time']) <= min(starts)
    for event in action['events']:
        assert _time(event['start_time']) <= _time(event['finish_time'])


def test_a_builds_steps_run_from_when_they_began_to_when_they_ended(
        start_system, fake_driver):
    fake_driver('spawn_delay', 0.2)
    api = start_system(cells=1, hosts_per_cell=1).api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))

    create = _action(api, server_id, 'create')

    _assert_in_order(create)
    events = {e['event']: e for e in create['events']}
    scheduling = events['conductor_schedule_and_build_instances']
    building = events['compute_build_and_run_instance']
    # The spawn took its time, and the compute's step began after the
    # conductor's.
    spawn = (_time(building['finish_time']) -
             _time(building['start_time']))
    assert spawn >= datetime.timedelta(seconds=0.2)
    assert _time(scheduling['start_time']) < _time(building['start_time'])
    # The create started with its first step.
    assert create['start_time'] == scheduling['start_time']


def test_an_action_the_api_starts_begins_before_its_computes_step(
        start_system):
    api = start_system(cells=1, hosts_per_cell=1).api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))

    assert api.post('/v2.1/servers/%s/action' % server_id,
                    {'os-stop': None}).status_code == 202
    api.wait_for(server_id, ('SHUTOFF',))

    stop = _action(api, server_id, 'stop')
    assert [e['event'] for e in stop['events']] == ['compute_stop_instance']
    _assert_in_order(stop)


def test_events_are_shown_as_nova_shows_them_at_each_microversion(
        start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    admin = system.api
    owner = admin.as_user('u1:p1')
    server_id = owner.boot()
    owner.wait_for(server_id, ('ACTIVE',))

    def events(api):
        return _action(api, server_id, 'create').get('events')

    # Before 2.51 only admins see the events: with a traceback, without
    # host, hostId or details.
    assert events(owner.at('2.50')) is None
    for event in events(admin.at('2.50')):
        assert set(event) == {'event', 'start_time', 'finish_time',
                              'result', 'traceback'}
    # From 2.51 the owner sees them, without a traceback.
    for event in events(owner.at('2.51')):
        assert set(event) == {'event', 'start_time', 'finish_time',
                              'result'}
    # From 2.62 everyone sees the hashed hostId, admins the host too.
    for event in events(owner.at('2.62')):
        assert set(event) == {'event', 'start_time', 'finish_time',
                              'result', 'hostId'}
    for event in events(admin.at('2.62')):
        assert set(event) == {'event', 'start_time', 'finish_time',
                              'result', 'traceback', 'hostId', 'host'}
    # From 2.84 the details.
    for event in events(owner.at('2.84')):
        assert set(event) == {'event', 'start_time', 'finish_time',
                              'result', 'hostId', 'details'}
