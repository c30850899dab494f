"""The all-in-one behind a real Keystone, as an operator puts it there.

Keystone (PyPI's, SQLite, one gunicorn worker) issues the tokens; the
all-in-one reads ``[api] auth_strategy = keystone`` and
``[keystone_authtoken]`` from its ``--config-file`` and validates every
token with keystonemiddleware, through a service user of its own.
"""

import signal

import pytest
import requests

from tests.functional import fixtures
from tests import keystone as keystone_mod

pytestmark = [pytest.mark.integration, pytest.mark.keystone]

SERVICE_PASSWORD = 'service-secret'


@pytest.fixture(scope='module')
def keystone(tmp_path_factory):
    ks = keystone_mod.Keystone(str(tmp_path_factory.mktemp('keystone')))
    ks.start()
    try:
        yield ks
    finally:
        ks.stop()


@pytest.fixture(scope='module')
def cloud(keystone, tmp_path_factory):
    """The all-in-one behind ``keystone``, with two projects' members."""
    state = tmp_path_factory.mktemp('state')
    conf = state / 'keystone.conf'
    conf.write_text(keystone.api_config('scheduler-split', SERVICE_PASSWORD))
    proc, url, lines = fixtures.start_all_in_one(
        state, config_files=[conf])
    keystone.register_api(url)
    for user, project in (('alice', 'project-a'), ('bob', 'project-b')):
        keystone.create_user(user, user + '-pw', project, roles=('member',))
    try:
        yield url, ''.join(lines)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert 'Traceback' not in err


def _api(url, token):
    return fixtures.Api(url, token=token)


def test_the_all_in_one_says_where_tokens_come_from(cloud, keystone):
    url, printed = cloud
    assert 'Keystone token from %s' % keystone.auth_url in printed


@pytest.mark.parametrize('token', [None, 'bogus', 'admin:admin', 'notused'],
                         ids=['no-token', 'bad-token', 'noauth2-admin',
                              'auth-none-placeholder'])
def test_a_request_without_a_valid_token_is_401(cloud, keystone, token):
    url, _ = cloud
    headers = {'X-Auth-Token': token} if token else {}
    resp = requests.get(url + '/v2.1/servers', headers=headers, timeout=30)
    assert resp.status_code == 401
    assert keystone.auth_url in resp.headers['WWW-Authenticate']
    # Version discovery still answers without a token.
    assert requests.get(url + '/v2.1', timeout=30).status_code == 200


def test_a_member_sees_only_the_servers_of_their_project(cloud, keystone):
    url, _ = cloud
    alice = _api(url, keystone.token('alice', 'alice-pw', 'project-a'))
    bob = _api(url, keystone.token('bob', 'bob-pw', 'project-b'))
    server = alice.wait_for(alice.boot(name='alices'), timeout=60)
    assert server['status'] == 'ACTIVE'
    assert server['tenant_id'] == keystone.project('project-a')
    assert server['user_id'] == keystone._find('users', 'alice')

    assert [s['id'] for s in alice.servers()] == [server['id']]
    assert bob.servers() == []
    resp = bob.get('/v2.1/servers/%s' % server['id'])
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['code'] == 404
    assert bob.delete('/v2.1/servers/%s' % server['id']).status_code == 404
    # Members may not list every project's servers or see the host.
    resp = alice.get('/v2.1/servers/detail?all_tenants=1')
    assert resp.status_code == 403
    assert 'forbidden' in resp.json()
    assert 'OS-EXT-SRV-ATTR:host' not in alice.server(server['id'])


def test_the_admin_role_reaches_admin_apis(cloud, keystone):
    url, _ = cloud
    alice = _api(url, keystone.token('alice', 'alice-pw', 'project-a'))
    admin = _api(url, keystone.token())
    mine = alice.wait_for(alice.boot(name='for-admin'), timeout=60)
    everything = admin.get('/v2.1/servers/detail?all_tenants=1')
    assert everything.status_code == 200
    found = {s['id']: s for s in everything.json()['servers']}
    assert mine['id'] in found
    assert found[mine['id']]['OS-EXT-SRV-ATTR:host'].startswith('cell')
    # Only an admin may force a host.
    host = found[mine['id']]['OS-EXT-SRV-ATTR:host']
    forced = admin.wait_for(admin.boot(name='forced',
                                       availability_zone='nova:' + host),
                            timeout=60)
    assert forced['OS-EXT-SRV-ATTR:host'] == host
    resp = alice.post('/v2.1/servers', {'server': {
        'name': 'x', 'flavorRef': '1', 'imageRef': forced['image']['id'],
        'networks': 'none', 'availability_zone': 'nova:' + host}})
    assert resp.status_code == 403


def test_a_service_token_goes_with_a_user_token(cloud, keystone):
    url, _ = cloud
    user_token = keystone.token('alice', 'alice-pw', 'project-a')
    service_token = keystone.token('scheduler-split', SERVICE_PASSWORD,
                                   'service')
    resp = requests.get(url + '/v2.1/servers', timeout=30, headers={
        'X-Auth-Token': user_token, 'X-Service-Token': service_token})
    assert resp.status_code == 200
    # An invalid service token is refused even with a valid user token.
    resp = requests.get(url + '/v2.1/servers', timeout=30, headers={
        'X-Auth-Token': user_token, 'X-Service-Token': 'bogus'})
    assert resp.status_code == 401
    # The service user's own token is a token like any other.
    service = _api(url, service_token)
    assert service.get('/v2.1/servers').status_code == 200
