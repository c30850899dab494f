"""A server's life after boot: power, pause, suspend and lock actions,
metadata and tags, as Nova's compute API answers them."""

import time

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional


def _action(api, server_id, body):
    return api.post('/v2.1/servers/%s/action' % server_id, body)


def _wait(api, server_id, status, timeout=30):
    """The server once its status is ``status`` (or one of them) and no
    task runs."""
    statuses = (status,) if isinstance(status, str) else status
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(server_id)
        if (server['status'] in statuses and
                server['OS-EXT-STS:task_state'] is None):
            return server
        if time.monotonic() > deadline:
            raise AssertionError('server %s is %s/%s, not %s' % (
                server_id, server['status'],
                server['OS-EXT-STS:task_state'], status))
        time.sleep(0.05)


def _actions(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['instanceActions']


def _events(api, server_id, request_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions/%s'
                   % (server_id, request_id))
    assert resp.status_code == 200, resp.text
    return resp.json()['instanceAction']['events']


def test_stop_start_pause_suspend_reboot_cycle(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    api.wait_for(server_id, ('ACTIVE',))

    for body, status, power in (
            ({'os-stop': None}, 'SHUTOFF', 4),
            ({'os-start': None}, 'ACTIVE', 1),
            ({'pause': None}, 'PAUSED', 3),
            ({'unpause': None}, 'ACTIVE', 1),
            ({'suspend': None}, 'SUSPENDED', 7),
            ({'resume': None}, 'ACTIVE', 1),
            ({'reboot': {'type': 'SOFT'}}, 'ACTIVE', 1),
            ({'reboot': {'type': 'HARD'}}, 'ACTIVE', 1)):
        resp = _action(api, server_id, body)
        assert resp.status_code == 202, resp.text
        server = _wait(api, server_id, status)
        assert server['OS-EXT-STS:power_state'] == power

    actions = [a['action'] for a in _actions(api, server_id)]
    assert sorted(actions) == sorted([
        'create', 'stop', 'start', 'pause', 'unpause', 'suspend', 'resume',
        'reboot', 'reboot'])
    by_action = {}
    for action in _actions(api, server_id):
        events = _events(api, server_id, action['request_id'])
        by_action.setdefault(action['action'], []).extend(
            (e['event'], e['result']) for e in events)
    assert by_action['stop'] == [('compute_stop_instance', 'Success')]
    assert by_action['start'] == [('compute_start_instance', 'Success')]
    assert by_action['pause'] == [('compute_pause_instance', 'Success')]
    assert by_action['unpause'] == [('compute_unpause_instance', 'Success')]
    assert by_action['suspend'] == [('compute_suspend_instance', 'Success')]
    assert by_action['resume'] == [('compute_resume_instance', 'Success')]
    assert by_action['reboot'] == [('compute_reboot_instance', 'Success')] * 2


def _active(system, **boot):
    server_id = system.api.boot(**boot)
    assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
    return server_id


def test_actions_in_the_wrong_state_are_409s_in_novas_words(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)

    for body, action in (({'os-start': None}, 'start'),
                         ({'unpause': None}, 'unpause'),
                         ({'resume': None}, 'resume')):
        message = nova_error(_action(api, server_id, body), 409,
                             'conflictingRequest')
        assert message == ("Cannot '%s' instance %s while it is in "
                           "vm_state active" % (action, server_id))
    assert _action(api, server_id, {'os-stop': None}).status_code == 202
    # As Nova: a server shows its progress only while it runs or moves.
    assert 'progress' not in _wait(api, server_id, 'SHUTOFF')
    for body, action in (({'os-stop': None}, 'stop'),
                         ({'pause': None}, 'pause'),
                         ({'suspend': None}, 'suspend'),
                         ({'reboot': {'type': 'SOFT'}}, 'reboot')):
        message = nova_error(_action(api, server_id, body), 409,
                             'conflictingRequest')
        assert message == ("Cannot '%s' instance %s while it is in "
                           "vm_state stopped" % (action, server_id))
    # A hard reboot starts a stopped server, as in Nova.
    resp = _action(api, server_id, {'reboot': {'type': 'HARD'}})
    assert resp.status_code == 202, resp.text
    assert _wait(api, server_id, 'ACTIVE')['OS-EXT-STS:power_state'] == 1

    # Bad bodies and unknown actions are 400s.
    nova_error(_action(api, server_id, {'reboot': {'type': 'WARM'}}), 400,
               'badRequest')
    nova_error(_action(api, server_id, {'reboot': {}}), 400, 'badRequest')
    message = nova_error(_action(api, server_id, {'os-fly': None}), 400,
                         'badRequest')
    assert message == 'There is no such action: os-fly'
    nova_error(_action(api, 'f' * 8 + '-0000-0000-0000-' + '0' * 12,
                       {'os-stop': None}), 404, 'itemNotFound')
    # A snapshot needs a name; a backup its type and rotation (the
    # snapshots themselves: test_server_images.py).
    nova_error(_action(api, server_id, {'createImage': {}}), 400,
               'badRequest')
    nova_error(_action(api, server_id, {'createBackup': {'name': 'b'}}),
               400, 'badRequest')


def test_a_build_or_failed_server_is_not_ready_for_power_actions(
        start_system, fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1'])
    fake_driver('failures_reschedulable', False)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ERROR'
    message = nova_error(_action(api, server_id, {'pause': None}), 409,
                         'conflictingRequest')
    assert message == ("Cannot 'pause' instance %s while it is in "
                       "vm_state error" % server_id)


def test_a_locked_server_refuses_its_owner_but_not_an_admin(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    owner = system.api.as_user('alice:project-a')
    server_id = owner.boot()
    assert owner.wait_for(server_id)['status'] == 'ACTIVE'

    resp = _action(owner.at('2.73'), server_id,
                   {'lock': {'locked_reason': 'maintenance'}})
    assert resp.status_code == 202, resp.text
    server = owner.at('2.73').server(server_id)
    assert server['locked'] is True
    assert server['locked_reason'] == 'maintenance'
    server = owner.at('2.9').server(server_id)
    assert server['locked'] is True and 'locked_reason' not in server
    assert 'locked' not in owner.at('2.8').server(server_id)

    for body in ({'os-stop': None}, {'reboot': {'type': 'HARD'}},
                 {'pause': None}, {'suspend': None}):
        message = nova_error(_action(owner, server_id, body), 409,
                             'conflictingRequest')
        assert message == 'Instance %s is locked' % server_id
    message = nova_error(owner.delete('/v2.1/servers/%s' % server_id), 409,
                         'conflictingRequest')
    assert message == 'Instance %s is locked' % server_id
    nova_error(owner.post('/v2.1/servers/%s/metadata' % server_id,
                          {'metadata': {'a': 'b'}}), 409,
               'conflictingRequest')

    # An admin acts on a locked server, and the lock stays.
    admin = system.api
    assert _action(admin, server_id, {'os-stop': None}).status_code == 202
    assert _wait(admin, server_id, 'SHUTOFF')['locked'] is True
    assert _action(admin, server_id, {'os-start': None}).status_code == 202
    _wait(admin, server_id, 'ACTIVE')

    # The owner unlocks what the owner locked.
    assert _action(owner, server_id, {'unlock': None}).status_code == 202
    server = owner.server(server_id)
    assert (server['locked'], server['locked_reason']) == (False, None)

    # What an admin locked only an admin unlocks.
    assert _action(admin, server_id, {'lock': None}).status_code == 202
    nova_error(_action(owner, server_id, {'unlock': None}), 403,
               'forbidden')
    assert owner.server(server_id)['locked'] is True
    assert _action(admin, server_id, {'unlock': None}).status_code == 202
    assert _action(owner, server_id, {'os-stop': None}).status_code == 202
    _wait(owner, server_id, 'SHUTOFF')

    actions = [a['action'] for a in _actions(owner, server_id)]
    assert sorted(actions) == sorted(['create', 'lock', 'unlock', 'lock',
                                      'unlock', 'stop', 'start', 'stop'])
    lock = [a for a in _actions(owner, server_id)
            if a['action'] == 'lock'][-1]
    assert [e['event'] for e in _events(admin, server_id,
                                        lock['request_id'])] == ['api_lock']

    # Before 2.73 a reason is not taken (and not refused).
    resp = _action(owner.at('2.72'), server_id,
                   {'lock': {'locked_reason': 'ignored'}})
    assert resp.status_code == 202, resp.text
    assert owner.server(server_id)['locked_reason'] is None
    nova_error(_action(owner, server_id, {'lock': {'locked_reason': ''}}),
               400, 'badRequest')


def test_a_stopped_or_paused_server_keeps_its_claim(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    server_id = _active(system)
    claimed = system.allocations()
    assert list(claimed) == [server_id]

    for body, status in (({'os-stop': None}, 'SHUTOFF'),
                         ({'os-start': None}, 'ACTIVE'),
                         ({'suspend': None}, 'SUSPENDED')):
        assert _action(api, server_id, body).status_code == 202
        _wait(api, server_id, status)
        assert system.allocations() == claimed
    # A settle of the compute (its periodic task) leaves it alone.
    for compute in system.aio.computes.values():
        compute.manager.settle_instances()
    assert _wait(api, server_id, 'SUSPENDED')
    assert system.allocations() == claimed


def test_an_injected_driver_failure_keeps_the_state_with_a_fault(
        start_system, fake_driver):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)
    claimed = system.allocations()
    fake_driver('fail_actions', ['stop', 'reboot'])

    assert _action(api, server_id, {'os-stop': None}).status_code == 202
    server = _wait(api, server_id, 'ACTIVE')
    assert server['OS-EXT-STS:power_state'] == 1
    stop = [a for a in _actions(api, server_id) if a['action'] == 'stop']
    assert stop[0]['message'] == 'Error'
    events = _events(api, server_id, stop[0]['request_id'])
    assert [(e['event'], e['result']) for e in events] == [
        ('compute_stop_instance', 'Error')]
    assert 'injected stop failure' in events[0]['details']

    # A failed reboot that leaves the VM running is no ERROR either.
    assert _action(api, server_id,
                   {'reboot': {'type': 'SOFT'}}).status_code == 202
    assert _wait(api, server_id, 'ACTIVE')['status'] == 'ACTIVE'
    assert system.allocations() == claimed

    # Once the failure is gone, the action works.
    fake_driver('fail_actions', [])
    assert _action(api, server_id, {'os-stop': None}).status_code == 202
    _wait(api, server_id, 'SHUTOFF')


def test_a_compute_too_old_for_an_action_gets_a_409(start_system):
    from scheduler_split import conf
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)
    conf.CONF.set_override('compute', '1.2', group='upgrade_levels')
    try:
        message = nova_error(_action(api, server_id, {'os-stop': None}),
                             409, 'conflictingRequest')
    finally:
        conf.CONF.clear_override('compute', group='upgrade_levels')
    assert 'too old' in message
    # Nothing was recorded: the server is as it was.
    server = api.server(server_id)
    assert (server['status'], server['OS-EXT-STS:task_state']) == (
        'ACTIVE', None)
    assert [a['action'] for a in _actions(api, server_id)] == ['create']


def test_concurrent_actions_never_both_win(start_system, fake_driver):
    import threading

    fake_driver('action_delay', 0.3)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_ids = [_active(system, name='race-%d' % i) for i in range(4)]
    for server_id in server_ids:
        barrier = threading.Barrier(3)
        codes = []

        def act(body, server_id=server_id, barrier=barrier, codes=codes):
            barrier.wait()
            codes.append(_action(api, server_id, body).status_code)
        threads = [threading.Thread(target=act, args=(body,))
                   for body in ({'os-stop': None}, {'pause': None},
                                {'suspend': None})]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(codes) == [202, 409, 409]
        server = _wait(api, server_id, ('SHUTOFF', 'PAUSED', 'SUSPENDED'))
        actions = [a['action'] for a in _actions(api, server_id)]
        assert len(actions) == 2
        assert server['status'] == {'stop': 'SHUTOFF', 'pause': 'PAUSED',
                                    'suspend': 'SUSPENDED'}[actions[0]]


def test_notifications_tell_each_action_in_novas_event_types(
        start_system, fake_driver):
    from oslo_messaging.notify import _impl_test

    from scheduler_split import conf
    from scheduler_split import notifications

    conf.CONF.set_override('driver', ['test'],
                           group='oslo_messaging_notifications')
    notifications.reset()
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    try:
        server_id = _active(system)
        _impl_test.reset()
        for body, status in (({'os-stop': None}, 'SHUTOFF'),
                             ({'os-start': None}, 'ACTIVE'),
                             ({'reboot': {'type': 'SOFT'}}, 'ACTIVE'),
                             ({'pause': None}, 'PAUSED'),
                             ({'unpause': None}, 'ACTIVE'),
                             ({'suspend': None}, 'SUSPENDED'),
                             ({'resume': None}, 'ACTIVE'),
                             ({'lock': None}, 'ACTIVE'),
                             ({'unlock': None}, 'ACTIVE')):
            assert _action(api, server_id, body).status_code == 202
            _wait(api, server_id, status)
        resp = api.put('/v2.1/servers/%s' % server_id,
                       {'server': {'name': 'renamed'}})
        assert resp.status_code == 200, resp.text
        fake_driver('fail_actions', ['reboot'])
        assert _action(api, server_id,
                       {'reboot': {'type': 'HARD'}}).status_code == 202
        _wait(api, server_id, 'ACTIVE')
        sent = [(m['event_type'], m['priority'],
                 m['payload']['scheduler_split_object.name'],
                 m['payload']['scheduler_split_object.data'])
                for _, m, _, _ in _impl_test.NOTIFICATIONS]
    finally:
        notifications.reset()
    assert [event for event, _, _, _ in sent] == [
        'instance.power_off.start', 'instance.power_off.end',
        'instance.power_on.start', 'instance.power_on.end',
        'instance.reboot.start', 'instance.reboot.end',
        'instance.pause.start', 'instance.pause.end',
        'instance.unpause.start', 'instance.unpause.end',
        'instance.suspend.start', 'instance.suspend.end',
        'instance.resume.start', 'instance.resume.end',
        'instance.lock', 'instance.unlock', 'instance.update',
        'instance.reboot.start', 'instance.reboot.error']
    assert {name for _, _, name, _ in sent} == {'InstanceActionPayload'}
    assert sent[1][3]['state'] == 'stopped'
    assert sent[14][3]['locked'] is True
    assert sent[16][3]['display_name'] == 'renamed'
    assert sent[-1][1] == 'ERROR'
    assert 'injected reboot failure' in sent[-1][3]['fault_message']


def test_server_metadata_in_novas_shapes(start_system):
    from scheduler_split import conf
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system, metadata={'a': '1'})
    url = '/v2.1/servers/%s/metadata' % server_id

    assert api.get(url).json() == {'metadata': {'a': '1'}}
    resp = api.post(url, {'metadata': {'b': '2'}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'metadata': {'a': '1', 'b': '2'}}
    resp = api.put(url, {'metadata': {'c': '3'}})
    assert resp.json() == {'metadata': {'c': '3'}}
    resp = api.put(url + '/d', {'meta': {'d': '4'}})
    assert resp.status_code == 200 and resp.json() == {'meta': {'d': '4'}}
    assert api.get(url + '/d').json() == {'meta': {'d': '4'}}
    assert api.server(server_id)['metadata'] == {'c': '3', 'd': '4'}
    assert api.delete(url + '/c').status_code == 204
    assert api.get(url).json() == {'metadata': {'d': '4'}}

    assert nova_error(api.get(url + '/c'), 404,
                      'itemNotFound') == 'Metadata item was not found'
    nova_error(api.delete(url + '/c'), 404, 'itemNotFound')
    assert nova_error(api.put(url + '/d', {'meta': {'e': '5'}}), 400,
                      'badRequest') == 'Request body and URI mismatch'
    nova_error(api.put(url + '/d', {'meta': {'d': '4', 'e': '5'}}), 400,
               'badRequest')
    nova_error(api.post(url, {'metadata': {'k/slash': 'v'}}), 400,
               'badRequest')
    nova_error(api.post(url, {'metadata': {'k': 'v' * 256}}), 400,
               'badRequest')
    nova_error(api.post(url, {'metadata': {'k': 1}}), 400, 'badRequest')

    conf.CONF.set_override('metadata_items', 2, group='quota')
    try:
        message = nova_error(api.post(url, {'metadata': {'x': '1',
                                                         'y': '2'}}),
                             403, 'forbidden')
    finally:
        conf.CONF.clear_override('metadata_items', group='quota')
    assert message.startswith('Quota exceeded for metadata items')
    assert api.get(url).json() == {'metadata': {'d': '4'}}


def test_server_tags_in_novas_shapes_and_filters(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    one = _active(system, name='one')
    two = _active(system, name='two')
    url = '/v2.1/servers/%s/tags' % one

    nova_error(api.at('2.25').get(url), 404, 'itemNotFound')
    assert 'tags' not in api.at('2.25').server(one)
    assert api.get(url).json() == {'tags': []}
    resp = api.put(url, {'tags': ['b', 'a', 'a']})
    assert resp.status_code == 200 and resp.json() == {'tags': ['a', 'b']}
    resp = api.put(url + '/c')
    assert resp.status_code == 201, resp.text
    assert resp.headers['Location'].endswith('/servers/%s/tags/c' % one)
    assert api.put(url + '/c').status_code == 204
    assert api.get(url + '/c').status_code == 204
    assert nova_error(api.get(url + '/z'), 404, 'itemNotFound') == (
        "Server %s has no tag 'z'" % one)
    assert api.server(one)['tags'] == ['a', 'b', 'c']
    assert api.delete(url + '/c').status_code == 204
    assert nova_error(api.delete(url + '/c'), 404, 'itemNotFound') == (
        "Instance %s has no tag 'c'" % one)
    assert api.put('/v2.1/servers/%s/tags' % two,
                   {'tags': ['b', 'x']}).status_code == 200

    def names(**params):
        return sorted(s['name'] for s in api.servers(**params))
    assert names(tags='a,b') == ['one']
    assert names(tags='b') == ['one', 'two']
    assert names(**{'tags-any': 'a,x'}) == ['one', 'two']
    assert names(**{'not-tags': 'a,b'}) == ['two']
    assert names(**{'not-tags-any': 'x'}) == ['one']
    assert names(**{'not-tags-any': 'a,x'}) == []

    # Nova's limits: 60 characters, no ',' or '/', 50 tags a server.
    nova_error(api.put(url + '/' + 'x' * 61), 400, 'badRequest')
    assert "is invalid" in nova_error(api.put(url + '/a,b'), 400,
                                      'badRequest')
    nova_error(api.put(url, {'tags': ['a/b']}), 400, 'badRequest')
    nova_error(api.put(url, {'tags': ['t%d' % i for i in range(51)]}),
               400, 'badRequest')
    assert api.put(url, {'tags': ['t%d' % i for i in range(50)]}
                   ).status_code == 200
    assert nova_error(api.put(url + '/one-more'), 400, 'badRequest') == (
        'The number of tags exceeded the per-server limit 50')
    assert api.delete(url).status_code == 204
    assert api.get(url).json() == {'tags': []}


def test_tags_and_metadata_of_a_building_server_are_409s(start_system,
                                                         fake_driver):
    fake_driver('spawn_delay', 3)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    assert api.server(server_id)['status'] == 'BUILD'
    message = nova_error(api.put('/v2.1/servers/%s/tags/t' % server_id),
                         409, 'conflictingRequest')
    assert message == ("Cannot 'update tag' instance %s while it is in "
                       "vm_state building" % server_id)
    message = nova_error(api.post('/v2.1/servers/%s/metadata' % server_id,
                                  {'metadata': {'a': 'b'}}),
                         409, 'conflictingRequest')
    assert message == ("Cannot 'update metadata' instance %s while it is "
                       "in vm_state building" % server_id)
    message = nova_error(_action(api, server_id, {'os-stop': None}), 409,
                         'conflictingRequest')
    assert message == ("Cannot 'stop' instance %s while it is in vm_state "
                       "building" % server_id)
    # Once built, the same requests are taken.
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    assert api.put('/v2.1/servers/%s/tags/t' % server_id).status_code == 201


def test_update_takes_nova_fields_by_microversion(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)
    url = '/v2.1/servers/%s' % server_id

    resp = api.at('2.18').put(url, {'server': {'description': 'd'}})
    nova_error(resp, 400, 'badRequest')
    resp = api.at('2.19').put(url, {'server': {'name': 'new',
                                               'description': 'd',
                                               'accessIPv4': '10.0.0.1'}})
    assert resp.status_code == 200, resp.text
    body = resp.json()['server']
    assert (body['name'], body['description'], body['accessIPv4']) == (
        'new', 'd', '10.0.0.1')
    nova_error(api.at('2.89').put(url, {'server': {'hostname': 'h1'}}),
               400, 'badRequest')
    nova_error(api.at('2.90').put(url, {'server': {'hostname': 'a.b'}}),
               400, 'badRequest')
    assert api.at('2.90').put(
        url, {'server': {'hostname': 'h1'}}).status_code == 200
    assert api.at('2.94').put(
        url, {'server': {'hostname': 'h1.example.org'}}).status_code == 200
    nova_error(api.put(url, {'server': {'name': ''}}), 400, 'badRequest')
    # No instance action is recorded for an update, as in Nova.
    assert [a['action'] for a in _actions(api, server_id)] == ['create']


def test_racing_tag_additions_never_pass_the_limit(start_system):
    import threading

    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)
    url = '/v2.1/servers/%s/tags' % server_id
    assert api.put(url, {'tags': ['t%d' % i for i in range(48)]}
                   ).status_code == 200
    barrier = threading.Barrier(6)
    codes = []

    def add(tag):
        barrier.wait()
        codes.append(api.put('%s/%s' % (url, tag)).status_code)
    threads = [threading.Thread(target=add, args=('new%d' % i,))
               for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [201, 201, 400, 400, 400, 400]
    assert len(api.get(url).json()['tags']) == 50


def test_racing_metadata_changes_are_all_kept(start_system):
    import threading

    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = _active(system)
    url = '/v2.1/servers/%s/metadata' % server_id
    barrier = threading.Barrier(8)
    codes = []

    def add(key):
        barrier.wait()
        codes.append(api.post(url, {'metadata': {key: 'v'}}).status_code)
    threads = [threading.Thread(target=add, args=('k%d' % i,))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [200] * 8
    assert api.get(url).json() == {
        'metadata': {'k%d' % i: 'v' for i in range(8)}}


def test_an_admin_resets_a_server_state_and_then_deletes_it(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u1:p1')
    server = user.boot(name='stuck')
    assert user.wait_for(server)['status'] == 'ACTIVE'
    path = '/v2.1/servers/%s/action' % server

    nova_error(user.post(path, {'os-resetState': {'state': 'error'}}), 403,
               'forbidden')
    assert api.post(path, {'os-resetState': {
        'state': 'error'}}).status_code == 202
    assert api.server(server)['status'] == 'ERROR'
    # An ERROR server cannot be paused; reset to active, it can again.
    nova_error(user.post(path, {'pause': None}), 409, 'conflictingRequest')
    assert api.post(path, {'os-resetState': {
        'state': 'active'}}).status_code == 202
    assert api.server(server)['status'] == 'ACTIVE'
    nova_error(api.post(path, {'os-resetState': {'state': 'paused'}}), 400,
               'badRequest')
    nova_error(api.post('/v2.1/servers/%s/action' % ('0' * 32),
                        {'os-resetState': {'state': 'error'}}), 404,
               'itemNotFound')
    api.post(path, {'os-resetState': {'state': 'error'}})
    assert user.delete('/v2.1/servers/' + server).status_code == 204
    user.wait_gone(server)
    assert system.allocations_after_settling({}) == {}
