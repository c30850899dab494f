"""Server groups: the API, and their policies across concurrent boots."""

import concurrent.futures

import pytest

from scheduler_split.image import catalog as images

pytestmark = pytest.mark.functional

GROUPS = '/v2.1/os-server-groups'


def _create(api, name='g', policy='anti-affinity', rules=None):
    group = {'name': name, 'policy': policy}
    if rules is not None:
        group['rules'] = rules
    resp = api.at('2.64').post(GROUPS, {'server_group': group})
    assert resp.status_code == 200, resp.text
    return resp.json()['server_group']['id']


def _members(api, group_id):
    resp = api.get('%s/%s' % (GROUPS, group_id))
    assert resp.status_code == 200, resp.text
    return resp.json()['server_group']['members']


def _race(api, group_id, count, prefix='m'):
    """``count`` boots into the group, racing each other, one request
    each; returns ``{server id: final server}``."""
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        ids = list(pool.map(
            lambda i: api.boot(name='%s%d' % (prefix, i),
                               hints={'group': group_id}), range(count)))
    return {sid: api.wait_for(sid) for sid in ids}


def _member_hosts(system, server_ids):
    """The host of every allocation the scheduler DB holds for them."""
    allocations = system.allocations()
    return [host for sid in server_ids for host in allocations.get(sid, {})]


# --- the API ----------------------------------------------------------------

def test_each_microversion_shows_a_group_in_its_own_shape(start_system):
    api = start_system(cells=1, hosts_per_cell=1).api
    group_id = _create(api, 'web', 'anti-affinity',
                       rules={'max_server_per_host': 2})

    v264 = api.at('2.64').get('%s/%s' % (GROUPS, group_id)).json()
    v213 = api.at('2.13').get('%s/%s' % (GROUPS, group_id)).json()
    v21 = api.at('2.1').get('%s/%s' % (GROUPS, group_id)).json()

    assert v264['server_group'] == {
        'id': group_id, 'name': 'web', 'policy': 'anti-affinity',
        'rules': {'max_server_per_host': 2}, 'members': [],
        'project_id': 'admin', 'user_id': 'admin'}
    assert v213['server_group'] == {
        'id': group_id, 'name': 'web', 'policies': ['anti-affinity'],
        'metadata': {}, 'members': [], 'project_id': 'admin',
        'user_id': 'admin'}
    assert v21['server_group'] == {
        'id': group_id, 'name': 'web', 'policies': ['anti-affinity'],
        'metadata': {}, 'members': []}

    resp = api.at('2.1').post(GROUPS, {'server_group': {
        'name': 'old', 'policies': ['affinity']}})
    assert resp.status_code == 200, resp.text
    listed = api.at('2.64').get(GROUPS).json()['server_groups']
    assert [(g['name'], g['policy']) for g in listed] == [
        ('web', 'anti-affinity'), ('old', 'affinity')]
    assert [g['name'] for g in api.get(GROUPS, params={
        'limit': 1, 'offset': 1}).json()['server_groups']] == ['old']

    assert api.delete('%s/%s' % (GROUPS, group_id)).status_code == 204
    resp = api.get('%s/%s' % (GROUPS, group_id))
    assert resp.status_code == 404
    assert group_id in resp.json()['itemNotFound']['message']


@pytest.mark.parametrize('version, group, message', [
    ('2.64', {'name': 'g'}, "'policy' is a required property"),
    ('2.64', {'name': 'g', 'policy': 'affinity',
              'rules': {'max_server_per_host': 2}},
     'Only anti-affinity policy supports rules.'),
    ('2.64', {'name': 'g', 'policy': 'anti-affinity',
              'rules': {'max_server_per_host': 0}}, 'max_server_per_host'),
    ('2.64', {'name': 'g', 'policy': 'anti-affinity',
              'rules': {'max_servers': 2}}, 'max_servers'),
    ('2.64', {'name': 'g', 'policy': 'packed'}, 'packed'),
    ('2.64', {'name': '', 'policy': 'affinity'}, 'name'),
    ('2.14', {'name': 'g', 'policies': ['soft-affinity']}, 'soft-affinity'),
    ('2.1', {'name': 'g', 'policy': 'affinity'}, 'policy'),
    ('2.1', {'name': 'g', 'policies': ['affinity', 'anti-affinity']},
     'policies'),
], ids=['no-policy', 'rules-for-affinity', 'zero-per-host', 'unknown-rule',
        'unknown-policy', 'empty-name', 'soft-before-2.15',
        'policy-before-2.64', 'two-policies'])
def test_bad_server_groups_get_400_in_nova_shape(start_system, version,
                                                 group, message):
    api = start_system(cells=1, hosts_per_cell=1).api
    resp = api.at(version).post(GROUPS, {'server_group': group})
    assert resp.status_code == 400, resp.text
    assert message in resp.json()['badRequest']['message']
    assert api.get(GROUPS).json()['server_groups'] == []


def test_soft_policies_exist_from_2_15(start_system):
    api = start_system(cells=1, hosts_per_cell=1).api
    resp = api.at('2.15').post(GROUPS, {'server_group': {
        'name': 'g', 'policies': ['soft-anti-affinity']}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['server_group']['policies'] == ['soft-anti-affinity']


def test_groups_belong_to_their_project(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    admin = system.api
    alice = admin.as_user('alice:project-a')
    mine = _create(alice, 'mine')
    theirs = _create(admin, 'theirs')

    assert [g['id'] for g in alice.get(GROUPS).json()['server_groups']] \
        == [mine]
    assert alice.get('%s/%s' % (GROUPS, theirs)).status_code == 404
    assert alice.delete('%s/%s' % (GROUPS, theirs)).status_code == 404
    resp = alice.post('/v2.1/servers', {
        'server': {'name': 'x', 'flavorRef': '1', 'networks': 'none',
                   'imageRef': images.find('cirros')[0]},
        'os:scheduler_hints': {'group': theirs}})
    assert resp.status_code == 400
    assert theirs in resp.json()['badRequest']['message']
    # Admins see every project's groups when they ask for all of them.
    assert {g['id'] for g in admin.get(GROUPS).json()['server_groups']} \
        == {theirs}
    assert {g['id'] for g in admin.get(
        GROUPS, params={'all_projects': 'True'}).json()['server_groups']} \
        == {mine, theirs}


@pytest.mark.parametrize('hint, message', [
    ('not-a-uuid', "is not a 'uuid'"),
    ('7d2b1c7e-8d2f-4a8e-9f3a-1b2c3d4e5f60', 'could not be found'),
])
def test_boot_into_a_group_that_is_not_there_gets_400(start_system, hint,
                                                      message):
    api = start_system(cells=1, hosts_per_cell=1).api
    resp = api.post('/v2.1/servers', {
        'server': {'name': 'x', 'flavorRef': '1', 'networks': 'none',
                   'imageRef': images.find('cirros')[0]},
        'os:scheduler_hints': {'group': hint}})
    assert resp.status_code == 400, resp.text
    assert message in resp.json()['badRequest']['message']
    assert api.servers() == []


# --- policies across concurrent boots --------------------------------------

def test_racing_anti_affinity_boots_never_share_a_host(start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    group_id = _create(api, policy='anti-affinity')

    servers = _race(api, group_id, 6)

    active = {sid: s for sid, s in servers.items()
              if s['status'] == 'ACTIVE'}
    failed = [s for s in servers.values() if s['status'] == 'ERROR']
    hosts = [s['OS-EXT-SRV-ATTR:host'] for s in active.values()]
    assert sorted(hosts) == ['cell1-compute1', 'cell1-compute2',
                             'cell2-compute1', 'cell2-compute2']
    assert len(failed) == 2
    assert all('No valid host' in s['fault']['message'] for s in failed)
    assert sorted(_member_hosts(system, servers)) == sorted(hosts)
    assert sorted(_members(api, group_id)) == sorted(servers)


def test_racing_affinity_boots_all_land_with_the_first(start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    group_id = _create(api, policy='affinity')

    servers = _race(api, group_id, 5)

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    hosts = {s['OS-EXT-SRV-ATTR:host'] for s in servers.values()}
    assert len(hosts) == 1
    assert set(_member_hosts(system, servers)) == hosts
    for sid in servers:
        assert api.at('2.71').server(sid)['server_groups'] == [group_id]


def test_max_server_per_host_lets_that_many_members_share(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    group_id = _create(api, rules={'max_server_per_host': 2})

    api.boot(name='pair', count=4, hints={'group': group_id})

    servers = [api.wait_for(s['id']) for s in api.servers()]
    assert {s['status'] for s in servers} == {'ACTIVE'}
    hosts = sorted(s['OS-EXT-SRV-ATTR:host'] for s in servers)
    assert hosts == ['cell1-compute1'] * 2 + ['cell1-compute2'] * 2


def test_deleted_member_leaves_the_group_and_frees_its_host(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    group_id = _create(api)
    first = api.wait_for(api.boot(name='first', hints={'group': group_id}))
    second = api.wait_for(api.boot(name='second',
                                   hints={'group': group_id}))
    assert (first['status'], second['status']) == ('ACTIVE', 'ERROR')

    assert api.delete('/v2.1/servers/%s' % first['id']).status_code == 204
    api.wait_gone(first['id'])
    assert _members(api, group_id) == [second['id']]
    third = api.wait_for(api.boot(name='third', hints={'group': group_id}))
    assert third['status'] == 'ACTIVE'
    assert third['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'

    # The delete is an action of the deleted server, done by its host.
    actions = api.get('/v2.1/servers/%s/os-instance-actions'
                      % first['id']).json()['instanceActions']
    assert [a['action'] for a in actions] == ['delete', 'create']
    delete = api.get('/v2.1/servers/%s/os-instance-actions/%s' % (
        first['id'], actions[0]['request_id'])).json()['instanceAction']
    assert [(e['event'], e['host'], e['result'])
            for e in delete['events']] == [
        ('compute_terminate_instance', 'cell1-compute1', 'Success')]


def test_rescheduled_members_never_join_another_member(start_system,
                                                       fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1'])
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    group_id = _create(api)

    first = api.wait_for(api.boot(name='first', hints={'group': group_id}))
    second = api.wait_for(api.boot(name='second',
                                   hints={'group': group_id}))

    assert (first['status'], second['status']) == ('ACTIVE', 'ACTIVE')
    hosts = {first['OS-EXT-SRV-ATTR:host'], second['OS-EXT-SRV-ATTR:host']}
    assert hosts == {'cell1-compute2', 'cell1-compute3'}
    for server in (first, second):
        failed = [e['host'] for e in api.events(server['id'])
                  if e['result'] == 'Error']
        assert set(failed) <= {'cell1-compute1'}

    # Only the failing host holds no member: the third member is built
    # there, fails, and has no alternate left that the policy allows.
    third = api.wait_for(api.boot(name='third', hints={'group': group_id}))
    assert third['status'] == 'ERROR'
    assert 'Exhausted all hosts' in third['fault']['message']
    steps = [(e['event'], e['host'], e['result'])
             for e in api.events(third['id'])]
    assert steps[:2] == [
        ('conductor_schedule_and_build_instances', 'cell1-compute1',
         'Success'),
        ('compute_build_and_run_instance', 'cell1-compute1', 'Error')]
    assert third['id'] not in system.allocations()
    assert sorted(_member_hosts(system, [first['id'], second['id']])) == \
        sorted(hosts)
