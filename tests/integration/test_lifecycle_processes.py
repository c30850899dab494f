"""Power actions across separate processes: the API casts to the
server's compute on its cell's RabbitMQ, the compute writes through its
cell conductor to PostgreSQL, and the claim stays while it is stopped."""

import time

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.integration


def _wait(api, server_id, status, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(server_id)
        if (server['status'] == status and
                server['OS-EXT-STS:task_state'] is None):
            return server
        assert time.monotonic() < deadline, server
        time.sleep(0.2)


def _claims(deployment, server_id):
    return sorted(tuple(row) for row in deployment.allocations()
                  if row[0] == server_id)


def test_power_actions_reach_the_compute_and_keep_the_claim(deployment):
    api = fixtures.Api(deployment.base_url)
    server_id = api.boot(name='lifecycle')
    assert api.wait_for(server_id, timeout=120)['status'] == 'ACTIVE'
    claimed = _claims(deployment, server_id)
    assert claimed

    for body, status in (({'os-stop': None}, 'SHUTOFF'),
                         ({'os-start': None}, 'ACTIVE'),
                         ({'pause': None}, 'PAUSED'),
                         ({'unpause': None}, 'ACTIVE'),
                         ({'suspend': None}, 'SUSPENDED'),
                         ({'reboot': {'type': 'HARD'}}, 'ACTIVE')):
        resp = api.post('/v2.1/servers/%s/action' % server_id, body)
        assert resp.status_code == 202, resp.text
        _wait(api, server_id, status)
        assert _claims(deployment, server_id) == claimed

    resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
    assert sorted(a['action'] for a in resp.json()['instanceActions']) == [
        'create', 'pause', 'reboot', 'start', 'stop', 'suspend', 'unpause']

    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id, timeout=60)
