"""Soft delete: with ``[DEFAULT] reclaim_instance_interval`` a delete
leaves the server SOFT_DELETED on its host with its claim, restorable,
until its cell conductor reclaims it; ``forceDelete`` deletes at once."""

import time

import pytest

from scheduler_split import conf
from tests.functional.fixtures import nova_error

CONF = conf.CONF
pytestmark = pytest.mark.functional


def _action(api, server_id, name):
    return api.post('/v2.1/servers/%s/action' % server_id, {name: None})


def _instances_used(api, project_id):
    resp = api.get('/v2.1/os-quota-sets/%s/detail' % project_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['quota_set']['instances']['in_use']


def _action_names(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert resp.status_code == 200, resp.text
    return sorted(a['action'] for a in resp.json()['instanceActions'])


def test_a_soft_deleted_server_keeps_its_claim_until_restored(
        start_system, override):
    override('reclaim_instance_interval', 3600)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    server = api.wait_for(server_id)
    assert server['status'] == 'ACTIVE'
    project_id = server['tenant_id']
    claims = system.allocations()
    assert _instances_used(api, project_id) == 1

    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    server = api.wait_for(server_id, ('SOFT_DELETED',))
    assert server['OS-EXT-STS:power_state'] == 4
    assert server['OS-EXT-STS:vm_state'] == 'soft-delete'
    # Listed still, on its host with its claim; counted against no quota.
    assert [s['id'] for s in api.servers()] == [server_id]
    assert system.allocations() == claims
    assert _instances_used(api, project_id) == 0

    assert _action(api, server_id, 'restore').status_code == 202
    server = api.wait_for(server_id, ('ACTIVE',))
    assert server['OS-EXT-STS:power_state'] == 1
    assert system.allocations() == claims
    assert _instances_used(api, project_id) == 1
    assert _action_names(api, server_id) == ['create', 'delete', 'restore']

    # Only a soft-deleted server is restored.
    assert "Cannot 'restore' instance" in nova_error(
        _action(api, server_id, 'restore'), 409, 'conflictingRequest')


def test_force_delete_and_a_second_delete_delete_at_once(
        start_system, override):
    override('reclaim_instance_interval', 3600)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    first, second = api.boot(name='first'), api.boot(name='second')
    for server_id in (first, second):
        assert api.wait_for(server_id)['status'] == 'ACTIVE'
        assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
        api.wait_for(server_id, ('SOFT_DELETED',))

    assert _action(api, first, 'forceDelete').status_code == 202
    api.wait_gone(first)
    # Deleting a soft-deleted server again deletes it for good.
    assert api.delete('/v2.1/servers/%s' % second).status_code == 204
    api.wait_gone(second)
    assert system.allocations_after_settling({}) == {}
    missing = '00000000-0000-4000-8000-000000000000'
    nova_error(_action(api, missing, 'forceDelete'), 404, 'itemNotFound')
    nova_error(_action(api, missing, 'restore'), 404, 'itemNotFound')


def test_the_cell_conductor_reclaims_after_the_interval(start_system,
                                                        override):
    override('reclaim_instance_interval', 1)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    started = time.monotonic()
    api.wait_gone(server_id, timeout=20)
    assert time.monotonic() - started >= 1
    assert system.allocations_after_settling({}) == {}


def test_a_restore_the_quota_no_longer_takes_is_refused(start_system,
                                                        override):
    override('reclaim_instance_interval', 3600)
    system = start_system(cells=1, hosts_per_cell=2, quotas=True)
    admin = system.api
    project = 'p-restore'
    assert admin.put('/v2.1/os-quota-sets/%s' % project, {
        'quota_set': {'instances': 1}}).status_code == 200
    user = admin.as_user('user:%s' % project)
    first = user.boot(name='first')
    assert user.wait_for(first)['status'] == 'ACTIVE'
    assert user.delete('/v2.1/servers/%s' % first).status_code == 204
    user.wait_for(first, ('SOFT_DELETED',))
    second = user.boot(name='second')
    assert user.wait_for(second)['status'] == 'ACTIVE'

    message = nova_error(_action(user, first, 'restore'), 403, 'forbidden')
    assert 'Quota exceeded for instances' in message
    # Refused, it stays as it was, restorable once there is room.
    assert user.server(first)['status'] == 'SOFT_DELETED'
    assert user.delete('/v2.1/servers/%s' % second).status_code == 204
    user.wait_for(second, ('SOFT_DELETED',))
    assert _action(user, first, 'restore').status_code == 202
    assert user.wait_for(first, ('ACTIVE',))['status'] == 'ACTIVE'
