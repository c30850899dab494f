"""Who may do what through the REST API, and how policy.yaml changes it."""

import json

import pytest

from scheduler_split import conf

pytestmark = pytest.mark.functional

CONF = conf.CONF

SERVERS = '/v2.1/servers'
IMAGE = 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01'
NEW_SERVER = {'server': {'name': 'vm', 'flavorRef': '1', 'imageRef': IMAGE,
                         'networks': 'none'}}


def _forbidden(resp, rule):
    assert resp.status_code == 403, resp.text
    assert resp.json() == {'forbidden': {
        'code': 403,
        'message': "Policy doesn't allow %s to be performed." % rule}}


@pytest.fixture
def policy_file(tmp_path):
    """``policy_file(rules)``: write policy.yaml and make it the one the
    API reads. The API re-reads it when it changes."""
    path = tmp_path / 'policy.yaml'
    path.write_text('{}\n')
    CONF.set_override('policy_file', str(path), group='oslo_policy')

    def write(rules):
        # JSON is YAML; one rule per line, as an operator writes it.
        path.write_text(''.join('%s: %s\n' % (json.dumps(k), json.dumps(v))
                                for k, v in rules.items()))
    yield write
    CONF.clear_override('policy_file', group='oslo_policy')


def test_a_reader_sees_servers_but_cannot_create_or_delete_them(
        start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    member = system.as_keystone_user('mia', 'project-a',
                                     ['member', 'reader'])
    reader = system.as_keystone_user('rey', 'project-a', ['reader'])
    server_id = member.boot()
    member.wait_for(server_id)

    assert [s['id'] for s in reader.servers()] == [server_id]
    shown = reader.server(server_id)
    assert shown['status'] == 'ACTIVE'
    assert 'OS-EXT-SRV-ATTR:host' not in shown
    assert reader.events(server_id)

    _forbidden(reader.post(SERVERS, NEW_SERVER),
               'os_compute_api:servers:create')
    _forbidden(reader.delete('%s/%s' % (SERVERS, server_id)),
               'os_compute_api:servers:delete')
    _forbidden(reader.post('/v2.1/os-server-groups', {'server_group': {
        'name': 'g', 'policy': 'anti-affinity'}}),
        'os_compute_api:os-server-groups:create')
    assert reader.get('/v2.1/os-server-groups').status_code == 200
    assert [s['id'] for s in member.servers()] == [server_id]

    # A reader of another project does not even find it.
    stranger = system.as_keystone_user('sam', 'project-b', ['reader'])
    assert stranger.get('%s/%s' % (SERVERS, server_id)).status_code == 404


def test_keystone_admin_role_is_admin(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    member = system.as_keystone_user('mia', 'project-a',
                                     ['member', 'reader'])
    server_id = member.boot()
    member.wait_for(server_id)
    admin = system.as_keystone_user('ada', 'ops', ['admin'])
    shown = admin.server(server_id)
    assert shown['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
    assert [s['id'] for s in admin.servers(all_tenants='1')] == [server_id]


def test_policy_yaml_making_create_admin_only_forbids_members(
        start_system, policy_file):
    system = start_system(cells=1, hosts_per_cell=1)
    alice = system.api.as_user('alice:project-a')
    before = alice.boot(name='before')

    policy_file({'os_compute_api:servers:create': 'rule:context_is_admin'})
    _forbidden(alice.post(SERVERS, NEW_SERVER),
               'os_compute_api:servers:create')
    server = system.api.wait_for(system.api.boot(name='by-admin'))
    assert server['status'] == 'ACTIVE'
    # Only the rule the file names changed.
    assert {s['id'] for s in alice.servers()} == {before}
    assert alice.delete('%s/%s' % (SERVERS, before)).status_code == 204


def test_policy_yaml_can_forbid_readers_to_list_servers(start_system,
                                                        policy_file):
    policy_file({'os_compute_api:servers:detail':
                 'rule:project_member_or_admin'})
    system = start_system(cells=1, hosts_per_cell=1)
    reader = system.as_keystone_user('rey', 'project-a', ['reader'])
    member = system.as_keystone_user('mia', 'project-a',
                                     ['member', 'reader'])
    _forbidden(reader.get(SERVERS + '/detail'),
               'os_compute_api:servers:detail')
    assert reader.get(SERVERS).status_code == 200
    assert member.get(SERVERS + '/detail').status_code == 200


def test_policy_yaml_can_show_members_where_their_servers_run(
        start_system, policy_file):
    policy_file({'os_compute_api:os-extended-server-attributes':
                 'rule:project_reader_or_admin'})
    system = start_system(cells=1, hosts_per_cell=1)
    alice = system.api.as_user('alice:project-a')
    server = alice.wait_for(alice.boot())
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'


def test_context_is_admin_decides_who_is_an_admin(start_system,
                                                  policy_file):
    policy_file({'context_is_admin': 'role:cloud_admin'})
    system = start_system(cells=1, hosts_per_cell=1)
    alice = system.api.as_user('alice:project-a')
    server_id = alice.boot()
    admin = system.api
    # The user "admin" has the admin role, which is no longer enough.
    _forbidden(admin.get(SERVERS, params={'all_tenants': '1'}),
               'os_compute_api:servers:index:get_all_tenants')
    assert admin.get('%s/%s' % (SERVERS, server_id)).status_code == 404
    cloud_admin = system.as_keystone_user('root', 'ops', ['cloud_admin'])
    shown = cloud_admin.server(server_id)
    assert 'OS-EXT-SRV-ATTR:host' in shown
