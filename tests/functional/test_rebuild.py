"""Rebuild: a server again from an image on its own host, its claim kept;
a new image checked against the host by the scheduler; a failure in
ERROR with a fault."""

import base64
import time

import pytest

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.image import catalog as images
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from tests.functional.fixtures import nova_error
from tests.functional.test_images import glance_source  # noqa: F401
from tests import glance as fake_glance

CONF = conf.CONF
pytestmark = pytest.mark.functional

CIRROS = images.find('cirros')[0]
UBUNTU = images.find('ubuntu-24.04')[0]
SPARC_IMAGE = '5f0c9e1d-2b3a-4c5d-8e6f-7a8b9c0d1e2f'
NATIVE_IMAGE = '6a1d0f2e-3c4b-4d6e-9f70-8b9c0d1e2f30'


def _rebuild(api, server_id, **args):
    return api.post('/v2.1/servers/%s/action' % server_id,
                    {'rebuild': args})


def _actions(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['instanceActions']


def _events(api, server_id, action):
    [found] = [a for a in _actions(api, server_id) if a['action'] == action]
    resp = api.get('/v2.1/servers/%s/os-instance-actions/%s'
                   % (server_id, found['request_id']))
    assert resp.status_code == 200, resp.text
    return resp.json()['instanceAction']['events']


def _wait_events(api, server_id, action, count, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        events = [e for e in _events(api, server_id, action)
                  if e['finish_time']]
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def test_a_rebuild_with_a_new_image_keeps_host_and_claim(start_system,
                                                         fake_driver):
    fake_driver('action_delay', 0.3)
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api.at('2.57')
    server_id = api.boot(name='before', metadata={'a': '1'})
    before = api.wait_for(server_id)
    assert before['status'] == 'ACTIVE'
    claims = system.allocations()
    user_data = base64.b64encode(b'#!/bin/sh\necho hi\n').decode()

    resp = _rebuild(api, server_id, imageRef=UBUNTU, name='after',
                    metadata={'b': '2'}, user_data=user_data,
                    adminPass='given-password')
    assert resp.status_code == 202, resp.text
    answer = resp.json()['server']
    assert answer['status'] == 'REBUILD'
    assert answer['image']['id'] == UBUNTU
    assert answer['name'] == 'after'
    assert answer['metadata'] == {'b': '2'}
    assert answer['adminPass'] == 'given-password'
    assert answer['user_data'] == user_data
    assert answer['key_name'] is None
    assert 'OS-EXT-SRV-ATTR:host' not in answer    # not before 2.75

    after = api.wait_for(server_id)
    assert after['status'] == 'ACTIVE'
    assert after['image']['id'] == UBUNTU
    assert after['metadata'] == {'b': '2'}
    assert after['OS-EXT-SRV-ATTR:host'] == before['OS-EXT-SRV-ATTR:host']
    assert after['OS-SRV-USG:launched_at'] >= before['OS-SRV-USG:launched_at']
    # Same host, same claim: nothing was claimed or released.
    assert system.allocations() == claims
    # Later moves are placed for the new image.
    spec = objects.RequestSpec.get_by_instance_uuid(
        ss_context.get_admin_context(), server_id)
    assert spec.image_ref == UBUNTU
    events = _events(api, server_id, 'rebuild')
    assert [(e['event'], e['result']) for e in events] == [
        ('conductor_rebuild_server', 'Success'),
        ('compute_rebuild_instance', 'Success')]

    # Without an adminPass the answer carries a new random one; at 2.75
    # it shows the whole server.
    resp = _rebuild(api.at('2.75'), server_id, imageRef=UBUNTU)
    assert resp.status_code == 202, resp.text
    answer = resp.json()['server']
    assert len(answer['adminPass']) == 12
    assert answer['OS-EXT-SRV-ATTR:host'] == before['OS-EXT-SRV-ATTR:host']
    # The user data once, at the top (2.57), as Nova's rebuild says it.
    assert 'user_data' in answer
    assert 'OS-EXT-SRV-ATTR:user_data' not in answer
    assert api.wait_for(server_id)['status'] == 'ACTIVE'


def test_stopped_stays_stopped_and_error_becomes_active(start_system,
                                                        fake_driver):
    """A server in ERROR holds no claim once reconciled; its rebuild
    claims its host again."""
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    stopped = api.boot(name='stopped')
    broken = api.boot(name='broken')
    for server_id in (stopped, broken):
        assert api.wait_for(server_id)['status'] == 'ACTIVE'
    resp = api.post('/v2.1/servers/%s/action' % stopped, {'os-stop': None})
    assert resp.status_code == 202, resp.text
    assert api.wait_for(stopped, ('SHUTOFF',))['status'] == 'SHUTOFF'
    resp = api.post('/v2.1/servers/%s/action' % broken,
                    {'os-resetState': {'state': 'error'}})
    assert resp.status_code == 202, resp.text

    claims = system.allocations()
    # The reconciliation of claims gave the broken one's back.
    scheduler_client.SchedulerClient(rpc.get_transport()).release_resources(
        ss_context.get_admin_context(), broken)
    assert set(system.allocations()) == {stopped}

    for server_id in (stopped, broken):
        resp = _rebuild(api, server_id, imageRef=CIRROS)
        assert resp.status_code == 202, resp.text
    assert api.wait_for(stopped, ('SHUTOFF',))['OS-EXT-STS:power_state'] == 4
    shown = api.wait_for(broken, ('ACTIVE',))
    assert shown['OS-EXT-STS:power_state'] == 1
    assert system.allocations() == claims


def test_a_new_image_the_host_does_not_pass_leaves_the_server_as_it_was(
        start_system, glance_source):  # noqa: F811
    glance_source(
        fake_glance.image(NATIVE_IMAGE, 'native',
                          architecture=CONF.fake_driver.cpu_arch),
        fake_glance.image(SPARC_IMAGE, 'sparc', architecture='sparc64'))
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    resp = api.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': '1', 'imageRef': NATIVE_IMAGE,
        'networks': 'none'}})
    assert resp.status_code == 202, resp.text
    server_id = resp.json()['server']['id']
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    claims = system.allocations()

    resp = _rebuild(api, server_id, imageRef=SPARC_IMAGE)
    assert resp.status_code == 202, resp.text
    [event] = _wait_events(api, server_id, 'rebuild', 1)
    assert (event['event'], event['result']) == ('conductor_rebuild_server',
                                                 'Error')
    assert 'ImagePropertiesFilter' in event['details']
    # The host was not touched: the server runs as it was, with its
    # image and its claim.
    server = api.wait_for(server_id)
    assert server['status'] == 'ACTIVE'
    assert server['image']['id'] == NATIVE_IMAGE
    assert system.allocations() == claims

    # Rebuilt again with an image the host passes, it runs again.
    resp = _rebuild(api, server_id, imageRef=NATIVE_IMAGE)
    assert resp.status_code == 202, resp.text
    assert api.wait_for(server_id, ('ACTIVE',))['status'] == 'ACTIVE'


def test_a_rebuild_the_driver_fails_ends_in_error_with_its_fault(
        start_system, fake_driver):
    fake_driver('fail_actions', ['rebuild'])
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    claims = system.allocations()
    resp = _rebuild(api, server_id, imageRef=UBUNTU)
    assert resp.status_code == 202, resp.text
    server = api.wait_for(server_id)
    assert server['status'] == 'ERROR'
    assert 'injected rebuild failure' in server['fault']['message']
    # In ERROR it holds nothing, as a failed build.
    assert system.allocations_after_settling({}) == {}
    assert claims
    events = _events(api, server_id, 'rebuild')
    assert events[-1]['event'] == 'compute_rebuild_instance'
    assert events[-1]['result'] == 'Error'
    # Deleting it gives the claim back.
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)
    assert system.allocations_after_settling({}) == {}


def test_bad_rebuilds_get_nova_errors(start_system, fake_driver):
    fake_driver('action_delay', 1.0)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'

    assert nova_error(_rebuild(api, server_id, imageRef='no-such-image'),
                      400, 'badRequest') == 'Can not find requested image'
    assert 'imageRef' in nova_error(
        api.post('/v2.1/servers/%s/action' % server_id, {'rebuild': {}}),
        400, 'badRequest')
    # key_name and user_data are for 2.54 and 2.57 on.
    assert 'key_name' in nova_error(
        _rebuild(api.at('2.53'), server_id, imageRef=CIRROS, key_name=None),
        400, 'badRequest')
    assert nova_error(
        _rebuild(api.at('2.57'), server_id, imageRef=CIRROS,
                 user_data='not base64!'), 400,
        'badRequest') == 'User data needs to be valid base 64.'
    assert nova_error(
        _rebuild(api.at('2.54'), server_id, imageRef=CIRROS,
                 key_name='nobodys-key'), 400,
        'badRequest') == 'Invalid key_name provided.'
    missing = '00000000-0000-4000-8000-000000000000'
    nova_error(_rebuild(api, missing, imageRef=CIRROS), 404, 'itemNotFound')

    # One rebuild at a time: a second one while the first runs is a 409.
    assert _rebuild(api, server_id, imageRef=CIRROS).status_code == 202
    message = nova_error(_rebuild(api, server_id, imageRef=CIRROS), 409,
                         'conflictingRequest')
    assert "Cannot 'rebuild' instance" in message
    assert api.wait_for(server_id)['status'] == 'ACTIVE'

    # A locked server is rebuilt by an admin only.
    user = api.as_user('user:%s' % api.server(server_id)['tenant_id'])
    assert api.post('/v2.1/servers/%s/action' % server_id,
                    {'lock': None}).status_code == 202
    nova_error(_rebuild(user, server_id, imageRef=CIRROS), 409,
               'conflictingRequest')
