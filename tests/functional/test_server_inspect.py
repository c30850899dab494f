"""What a server's compute tells of it: its console output and its
diagnostics, in Nova's shapes."""

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional


def _console(api, server_id, length=None):
    body = {'os-getConsoleOutput': {} if length is None
            else {'length': length}}
    return api.post('/v2.1/servers/%s/action' % server_id, body)


@pytest.fixture
def api(start_system):
    return start_system(cells=1, hosts_per_cell=1).api


def test_the_console_shows_the_boot_and_each_action(api):
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'
    resp = api.post('/v2.1/servers/%s/action' % server_id,
                    {'reboot': {'type': 'SOFT'}})
    assert resp.status_code == 202, resp.text
    api.wait_for(server_id, ('ACTIVE',))

    resp = _console(api, server_id)
    assert resp.status_code == 200, resp.text
    lines = resp.json()['output'].splitlines()
    assert lines[0].endswith('booting %s' % server_id)
    assert lines[-1].endswith(': reboot')
    assert _console(api, server_id, 1).json()['output'].splitlines() == \
        lines[-1:]
    assert _console(api, server_id, '-1').json()['output'].splitlines() == \
        lines
    assert _console(api, server_id, 0).json()['output'] == ''
    # Tempest counts the pieces between newlines, as Nova tails them.
    assert len(_console(api, server_id, 3).json()['output'].split(
        '\n')) == 3
    assert 'length' in nova_error(_console(api, server_id, 'two'), 400,
                                  'badRequest')
    missing = '00000000-0000-4000-8000-000000000000'
    nova_error(_console(api, missing), 404, 'itemNotFound')


def test_diagnostics_in_the_common_shape_and_the_old_one(api):
    server_id = api.boot()
    assert api.wait_for(server_id)['status'] == 'ACTIVE'

    resp = api.at('2.48').get('/v2.1/servers/%s/diagnostics' % server_id)
    assert resp.status_code == 200, resp.text
    found = resp.json()
    assert (found['state'], found['num_cpus'], found['num_disks']) == (
        'running', 1, 1)
    assert found['memory_details'] == {'maximum': 512, 'used': 512}
    assert isinstance(found['uptime'], int)

    old = api.at('2.47').get('/v2.1/servers/%s/diagnostics'
                             % server_id).json()
    assert old['memory'] == 512 * 1024 and 'cpu0_time' in old

    user = api.as_user('user:%s' % api.server(server_id)['tenant_id'])
    nova_error(user.get('/v2.1/servers/%s/diagnostics' % server_id), 403,
               'forbidden')
    resp = api.post('/v2.1/servers/%s/action' % server_id,
                    {'os-stop': None})
    assert resp.status_code == 202
    api.wait_for(server_id, ('SHUTOFF',))
    assert api.at('2.48').get('/v2.1/servers/%s/diagnostics' % server_id
                              ).json()['state'] == 'shutdown'
