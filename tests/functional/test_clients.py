"""The unmodified openstack CLI and openstacksdk against the API."""

import json
import os
import shutil
import subprocess
import sys
import time

import openstack
import pytest
import requests

from scheduler_split.cmd import all_in_one
from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional


def _openstack_cli():
    found = shutil.which('openstack', path=os.path.dirname(sys.executable))
    return found or shutil.which('openstack')


@pytest.fixture
def openstack_cli(tmp_path):
    """``cli = openstack_cli(system)``; ``cli('server', 'list', ...)`` runs
    the unmodified CLI against ``system`` and returns what it printed."""
    if _openstack_cli() is None:
        pytest.skip('python-openstackclient is not installed')

    def bind(system):
        clouds = all_in_one.write_clouds_yaml(str(tmp_path),
                                              system.base_url)
        env = dict(os.environ, OS_CLIENT_CONFIG_FILE=clouds,
                   OS_CLOUD='scheduler-split')

        def cli(*args):
            result = subprocess.run([_openstack_cli(), *args], env=env,
                                    capture_output=True, text=True,
                                    timeout=120)
            assert result.returncode == 0, result.stderr
            return result.stdout
        return cli
    return bind


def test_openstacksdk_boots_lists_shows_and_deletes(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    conn = openstack.connect(
        auth_type='none',
        compute_endpoint_override=system.base_url + '/v2.1',
        image_endpoint_override=system.base_url + '/image',
        identity_endpoint_override=system.base_url + '/identity')
    flavor = conn.compute.find_flavor('m1.tiny', ignore_missing=False)
    image = conn.image.find_image('cirros', ignore_missing=False)
    server = conn.compute.create_server(name='sdk-vm', flavor_id=flavor.id,
                                        image_id=image.id, networks='none')
    server = conn.compute.wait_for_server(server, status='ACTIVE', wait=30,
                                          interval=0.1)
    assert server.status == 'ACTIVE'
    assert server.name == 'sdk-vm'
    assert [s.id for s in conn.compute.servers()] == [server.id]
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=30, interval=0.1)
    assert list(conn.compute.servers()) == []


def test_openstack_cli_creates_lists_shows_and_deletes(start_system,
                                                       openstack_cli):
    cli = openstack_cli(start_system(cells=1, hosts_per_cell=2))

    created = json.loads(cli('server', 'create', '--flavor', 'm1.tiny',
                             '--image', 'cirros', '--no-network', '--wait',
                             '-f', 'json', 'vm1'))
    assert created['status'] == 'ACTIVE'
    listed = json.loads(cli('server', 'list', '-f', 'json'))
    assert [(s['Name'], s['Status']) for s in listed] == [('vm1', 'ACTIVE')]
    shown = json.loads(cli('server', 'show', 'vm1', '-f', 'json'))
    assert shown['id'] == created['id']
    assert shown['flavor']['original_name'] == 'm1.tiny' \
        if isinstance(shown['flavor'], dict) else 'm1.tiny' in \
        shown['flavor']
    cli('server', 'delete', '--wait', 'vm1')
    assert json.loads(cli('server', 'list', '-f', 'json')) == []


def test_openstack_cli_keeps_anti_affinity_members_apart(start_system,
                                                         openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)

    group = json.loads(cli('server', 'group', 'create', '--policy',
                           'anti-affinity', '-f', 'json', 'apart'))
    ids, hosts = [], []
    for name in ('a', 'b'):
        cli('server', 'create', '--flavor', 'm1.tiny', '--image', 'cirros',
            '--no-network', '--hint', 'group=%s' % group['id'], name)
        server_id = json.loads(cli('server', 'show', name, '-f',
                                   'json'))['id']
        assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
        ids.append(server_id)
        hosts.append(system.api.server(server_id)['OS-EXT-SRV-ATTR:host'])
    assert sorted(hosts) == ['cell1-compute1', 'cell1-compute2']
    shown = json.loads(cli('server', 'group', 'show', 'apart', '-f', 'json'))
    assert shown['policy'] == 'anti-affinity'
    assert sorted(shown['members']) == sorted(ids)
    cli('server', 'group', 'delete', 'apart')
    assert json.loads(cli('server', 'group', 'list', '-f', 'json')) == []


def test_openstack_cli_lists_disables_enables_forces_down_and_deletes_services(
        start_system, openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)

    listed = json.loads(cli('compute', 'service', 'list', '-f', 'json'))
    assert {'nova-compute', 'nova-conductor', 'nova-scheduler'} <= {
        s['Binary'] for s in listed}
    computes = json.loads(cli('compute', 'service', 'list', '--service',
                              'nova-compute', '-f', 'json'))
    assert sorted((s['Host'], s['Status'], s['State']) for s in computes) \
        == [('cell1-compute1', 'enabled', 'up'),
            ('cell1-compute2', 'enabled', 'up')]

    cli('compute', 'service', 'set', '--disable', '--disable-reason',
        'maintenance', 'cell1-compute1', 'nova-compute')
    shown = json.loads(cli('compute', 'service', 'list', '--host',
                           'cell1-compute1', '--long', '-f', 'json'))
    assert [(s['Status'], s['Disabled Reason']) for s in shown] == [
        ('disabled', 'maintenance')]
    cli('compute', 'service', 'set', '--enable', 'cell1-compute1',
        'nova-compute')
    shown = json.loads(cli('compute', 'service', 'list', '--host',
                           'cell1-compute1', '-f', 'json'))
    assert [s['Status'] for s in shown] == ['enabled']

    cli('compute', 'service', 'set', '--down', 'cell1-compute2',
        'nova-compute')
    shown = json.loads(cli('compute', 'service', 'list', '--host',
                           'cell1-compute2', '-f', 'json'))
    assert [s['State'] for s in shown] == ['down']

    cli('compute', 'service', 'delete', str(shown[0]['ID']))
    remaining = json.loads(cli('compute', 'service', 'list', '--service',
                               'nova-compute', '-f', 'json'))
    assert [s['Host'] for s in remaining] == ['cell1-compute1']


def test_openstack_cli_shows_hypervisors_and_their_statistics(
        start_system, openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    server_id = json.loads(cli('server', 'create', '--flavor', 'm1.tiny',
                               '--image', 'cirros', '--no-network', '-f',
                               'json', 'vm1'))['id']
    assert system.api.wait_for(server_id)['status'] == 'ACTIVE'

    listed = json.loads(cli('hypervisor', 'list', '-f', 'json'))
    assert sorted(h['Hypervisor Hostname'] for h in listed) == [
        'cell1-compute1', 'cell1-compute2']
    assert {h['State'] for h in listed} == {'up'}
    stats = json.loads(cli('--os-compute-api-version', '2.87', 'hypervisor',
                           'stats', 'show', '-f', 'json'))
    assert stats['count'] == 2
    assert stats['vcpus'] == 16
    assert stats['running_vms'] == 1
    assert stats['vcpus_used'] == 1


def test_openstack_cli_shows_a_hypervisor(start_system, openstack_cli):
    cli = openstack_cli(start_system(cells=1, hosts_per_cell=2))
    shown = json.loads(cli('hypervisor', 'show', 'cell1-compute1', '-f',
                           'json'))
    assert shown['hypervisor_hostname'] == 'cell1-compute1'
    assert shown['hypervisor_type'] == 'fake'
    assert shown['host_ip'] == '127.0.0.1'
    assert shown['state'] == 'up'
    assert shown['status'] == 'enabled'
    # The CLI shows the host's aggregates beside it.
    assert shown['aggregates'] == []


def test_openstack_cli_manages_aggregates_and_zones(start_system,
                                                    openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    created = json.loads(cli('aggregate', 'create', '--zone', 'az1',
                             'agg1', '-f', 'json'))
    assert (created['name'], created['availability_zone']) == ('agg1',
                                                               'az1')
    cli('aggregate', 'add', 'host', 'agg1', 'cell1-compute2')
    cli('aggregate', 'set', '--property', 'ssd=true', 'agg1')
    shown = json.loads(cli('aggregate', 'show', 'agg1', '-f', 'json'))
    assert shown['hosts'] == ['cell1-compute2']
    assert shown['properties'] == {'ssd': 'true'}
    listed = json.loads(cli('aggregate', 'list', '--long', '-f', 'json'))
    assert [(a['Name'], a['Availability Zone']) for a in listed] == [
        ('agg1', 'az1')]

    zones = json.loads(cli('availability', 'zone', 'list', '--compute',
                           '-f', 'json'))
    # Admins see the conductors' and schedulers' zone too, as in Nova.
    assert sorted((z['Zone Name'], z['Zone Status']) for z in zones) == [
        ('az1', 'available'), ('internal', 'available'),
        ('nova', 'available')]
    long = json.loads(cli('availability', 'zone', 'list', '--compute',
                          '--long', '-f', 'json'))
    assert ('az1', 'cell1-compute2', 'nova-compute') in {
        (z['Zone Name'], z['Host Name'], z['Service Name']) for z in long}

    created = json.loads(cli('server', 'create', '--flavor', 'm1.tiny',
                             '--image', 'cirros', '--no-network',
                             '--availability-zone', 'az1', '-f', 'json',
                             'vm1'))
    shown = system.api.wait_for(created['id'])
    assert shown['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2'
    assert shown['OS-EXT-AZ:availability_zone'] == 'az1'

    cli('server', 'delete', 'vm1')
    system.api.wait_gone(created['id'])
    cli('aggregate', 'unset', '--property', 'ssd', 'agg1')
    cli('aggregate', 'remove', 'host', 'agg1', 'cell1-compute2')
    cli('aggregate', 'delete', 'agg1')
    assert json.loads(cli('aggregate', 'list', '-f', 'json')) == []


def test_openstack_cli_shows_and_sets_quotas_limits_and_key_pairs(
        start_system, openstack_cli, tmp_path):
    system = start_system(cells=1, hosts_per_cell=2, quotas=True)
    cli = openstack_cli(system)
    shown = json.loads(cli('quota', 'show', '--compute', 'admin', '-f',
                           'json'))
    by_name = {row['Resource']: row['Limit'] for row in shown} \
        if isinstance(shown, list) else shown
    assert by_name['instances'] == 10 and by_name['cores'] == 20
    cli('quota', 'set', '--instances', '5', '--cores', '8', 'admin')
    shown = json.loads(cli('quota', 'show', '--compute', 'admin', '-f',
                           'json'))
    by_name = {row['Resource']: row['Limit'] for row in shown} \
        if isinstance(shown, list) else shown
    assert (by_name['instances'], by_name['cores']) == (5, 8)
    assert system.api.get('/v2.1/os-quota-sets/admin').json()[
        'quota_set']['instances'] == 5
    defaults = json.loads(cli('quota', 'show', '--compute', '--default',
                              'admin', '-f', 'json'))
    by_name = {row['Resource']: row['Limit'] for row in defaults} \
        if isinstance(defaults, list) else defaults
    assert by_name['instances'] == 10
    limits = {row['Name']: row['Value'] for row in json.loads(
        cli('limits', 'show', '--absolute', '-f', 'json'))}
    assert (limits['instances'], limits['total_cores']) == (5, 8)
    assert limits['instances_used'] == 0

    generated = cli('keypair', 'create', 'k1')
    assert 'PRIVATE KEY' in generated
    public = tmp_path / 'k2.pub'
    public.write_text(
        'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDx8nkQv/zgGgB4rMYmIf+6A4l6Rr'
        '+o/6lHmJWWO6aRl/NNpsqgfFB5yOmN5HUBcqJixbFCUcNsMRlSFW3Ix/8i5kM2Sbw'
        'mDIbfRYRZeFOLuIxQQ0lsnqTOpc0xdKZl9/ke6RmXUbYA2TbWFSpc/mjOUdhBHkLc'
        'N+U6KmbRd91Gtw== someone@example\n')
    cli('keypair', 'create', '--public-key', str(public), 'k2')
    listed = json.loads(cli('keypair', 'list', '-f', 'json'))
    assert sorted(k['Name'] for k in listed) == ['k1', 'k2']

    created = json.loads(cli('server', 'create', '--flavor', 'm1.tiny',
                             '--image', 'cirros', '--no-network',
                             '--key-name', 'k1', '-f', 'json', 'vm1'))
    assert created['key_name'] == 'k1'
    assert system.api.wait_for(created['id'])['key_name'] == 'k1'
    cli('keypair', 'delete', 'k2')
    assert [k['Name'] for k in json.loads(
        cli('keypair', 'list', '-f', 'json'))] == ['k1']

    # The running server is billed to the project, by hours.
    usage = json.loads(cli('usage', 'list', '-f', 'json'))
    assert [(u['Project'], [s['name'] for s in u['Servers']])
            for u in usage] == [('admin', ['vm1'])]
    assert float(usage[0]['CPU Hours']) > 0
    shown = json.loads(cli('usage', 'show', '-f', 'json'))
    assert [s['instance_id'] for s in shown['Servers']] == [created['id']]


def test_openstack_cli_places_servers_with_same_and_different_host_hints(
        start_system, openstack_cli):
    system = start_system(cells=2, hosts_per_cell=2)
    cli = openstack_cli(system)

    def create(name, *hint):
        # Without --wait, which polls every five seconds: the API's own
        # poll sees the server ACTIVE within a moment.
        server_id = json.loads(cli('server', 'create', '--flavor',
                                   'm1.tiny', '--image', 'cirros',
                                   '--no-network', *hint, '-f', 'json',
                                   name))['id']
        assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
        return server_id

    def host_of(server_id):
        return system.api.server(server_id)['OS-EXT-SRV-ATTR:host']

    first = create('first')
    together = [create('t%d' % i, '--hint', 'same_host=' + first)
                for i in range(3)]
    assert {host_of(s) for s in together} == {host_of(first)}
    apart = [create('a%d' % i, '--hint', 'different_host=' + first)
             for i in range(3)]
    assert host_of(first) not in {host_of(s) for s in apart}

    # A hint that is no server uuid is refused as Nova refuses it.
    resp = system.api.post('/v2.1/servers', {
        'server': {'name': 'x', 'flavorRef': '1', 'networks': 'none',
                   'imageRef': system.api.server(first)['image']['id']},
        'os:scheduler_hints': {'same_host': 'not-a-uuid'}})
    assert resp.status_code == 400, resp.text
    assert 'same_host' in resp.json()['badRequest']['message']


def test_openstack_cli_creates_sets_unsets_and_deletes_flavors(
        start_system, openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    created = json.loads(cli(
        'flavor', 'create', '--ram', '128', '--vcpus', '2', '--disk', '1',
        '--description', 'for tests', '--property',
        'aggregate_instance_extra_specs:ssd=true', '-f', 'json',
        'm1.custom'))
    assert (created['ram'], created['vcpus'], created['disk']) == (
        128, 2, 1)
    cli('flavor', 'set', '--property', 'hw:numa_nodes=1', 'm1.custom')
    shown = json.loads(cli('flavor', 'show', '-f', 'json', 'm1.custom'))
    assert shown['properties'] == {
        'aggregate_instance_extra_specs:ssd': 'true', 'hw:numa_nodes': '1'}
    assert shown['description'] == 'for tests'
    cli('flavor', 'unset', '--property', 'hw:numa_nodes', 'm1.custom')
    shown = json.loads(cli('flavor', 'show', '-f', 'json', 'm1.custom'))
    assert shown['properties'] == {
        'aggregate_instance_extra_specs:ssd': 'true'}

    # A private flavor of another project: listed for the admin only on
    # request, and bootable by the admin.
    cli('flavor', 'create', '--ram', '64', '--vcpus', '1', '--disk', '1',
        '--private', '--project', 'p1', 'm1.private')
    assert [a['tenant_id'] for a in system.api.get(
        '/v2.1/flavors/%s/os-flavor-access' % json.loads(cli(
            'flavor', 'show', '-f', 'json', 'm1.private'))['id']).json()[
        'flavor_access']] == ['p1']
    assert 'm1.private' not in [f['Name'] for f in json.loads(
        cli('flavor', 'list', '-f', 'json'))]
    assert 'm1.private' in [f['Name'] for f in json.loads(
        cli('flavor', 'list', '--private', '-f', 'json'))]
    server = json.loads(cli('server', 'create', '--flavor', 'm1.private',
                            '--image', 'cirros', '--no-network',
                            '-f', 'json', 'vm1'))
    assert system.api.wait_for(server['id'])['status'] == 'ACTIVE'

    cli('flavor', 'delete', 'm1.custom')
    assert 'm1.custom' not in [f['Name'] for f in json.loads(
        cli('flavor', 'list', '--all', '-f', 'json'))]


def test_noauth_identity_issues_tokens_with_this_apis_catalog(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    url = system.base_url + '/identity/v3/auth/tokens'
    resp = requests.post(url, json={'auth': {
        'identity': {'methods': ['password'], 'password': {'user': {
            'name': 'u1', 'password': 'x', 'domain': {'id': 'default'}}}},
        'scope': {'project': {'name': 'p1',
                              'domain': {'id': 'default'}}}}})
    assert resp.status_code == 201, resp.text
    assert resp.headers['X-Subject-Token'] == 'u1:p1'
    token = resp.json()['token']
    assert (token['user']['id'], token['project']['id']) == ('u1', 'p1')
    assert {e['type']: e['endpoints'][0]['url'] for e in token['catalog']} \
        == {'compute': system.base_url + '/v2.1',
            'placement': system.base_url + '/placement',
            'image': system.base_url + '/image',
            'identity': system.base_url + '/identity'}
    # The token it issued is one noauth2 trusts.
    assert requests.get(system.base_url + '/v2.1/servers', headers={
        'X-Auth-Token': resp.headers['X-Subject-Token']}).status_code == 200
    resp = requests.post(url, json={'auth': {'identity': {
        'methods': ['token'], 'token': {'id': 'admin:admin'}}}})
    assert resp.headers['X-Subject-Token'] == 'admin:admin'
    assert [r['name'] for r in resp.json()['token']['roles']] == [
        'reader', 'member', 'admin']
    nova_error(requests.post(url, json={'nope': 1}), 400, 'badRequest')
    nova_error(requests.post(url, json={'auth': {'identity': {
        'methods': ['totp']}}}), 400, 'badRequest')


def test_openstack_cli_resizes_migrates_confirms_and_reverts(
        start_system, openstack_cli):
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    server_id = json.loads(cli(
        'server', 'create', '--flavor', 'm1.tiny', '--image', 'cirros',
        '--no-network', '--wait', '-f', 'json', 'vm1'))['id']
    small = {'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 20}

    def shown():
        server = json.loads(cli('server', 'show', '-f', 'json', 'vm1'))
        return (server['status'], server['OS-EXT-SRV-ATTR:host'],
                server['flavor'].split(' ')[0] if isinstance(
                    server['flavor'], str) else server['flavor']['name'])

    def settled(status):
        deadline = time.monotonic() + 20
        while True:
            state = shown()
            if state[0] == status or time.monotonic() > deadline:
                return state
            time.sleep(0.2)

    first = system.api.server(server_id)['OS-EXT-SRV-ATTR:host']
    second = ({'cell1-compute1', 'cell1-compute2'} - {first}).pop()

    # Resize, then confirm: the server and its only claim on the other
    # host, with the new flavor.
    cli('server', 'resize', '--flavor', 'm1.small', '--wait', 'vm1')
    assert settled('VERIFY_RESIZE') == ('VERIFY_RESIZE', second, 'm1.small')
    cli('server', 'resize', 'confirm', 'vm1')
    assert settled('ACTIVE') == ('ACTIVE', second, 'm1.small')
    assert system.allocations_after_settling(
        {server_id: {second: small}}) == {server_id: {second: small}}

    # Resize, then revert: back where it was, with its flavor.
    cli('server', 'resize', '--flavor', 'm1.medium', '--wait', 'vm1')
    assert settled('VERIFY_RESIZE') == ('VERIFY_RESIZE', first, 'm1.medium')
    cli('server', 'resize', 'revert', 'vm1')
    assert settled('ACTIVE') == ('ACTIVE', second, 'm1.small')
    assert system.allocations_after_settling(
        {server_id: {second: small}}) == {server_id: {second: small}}

    # Cold migrate, then confirm: same flavor, the other host.
    cli('server', 'migrate', '--wait', 'vm1')
    assert settled('VERIFY_RESIZE') == ('VERIFY_RESIZE', first, 'm1.small')
    cli('server', 'migration', 'confirm', 'vm1')
    assert settled('ACTIVE') == ('ACTIVE', first, 'm1.small')
    assert system.allocations_after_settling(
        {server_id: {first: small}}) == {server_id: {first: small}}

    listed = json.loads(cli('server', 'migration', 'list', '--server',
                            'vm1', '-f', 'json'))
    assert sorted((m['Type'], m['Status']) for m in listed) == [
        ('migration', 'confirmed'), ('resize', 'confirmed'),
        ('resize', 'reverted')]


def test_openstack_cli_live_migrates_and_evacuates(start_system,
                                                   openstack_cli):
    from tests.functional import test_moves
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    tiny = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    server_id = json.loads(cli(
        'server', 'create', '--flavor', 'm1.tiny', '--image', 'cirros',
        '--no-network', '--availability-zone', 'nova:cell1-compute1',
        '--wait', '-f', 'json', 'vm1'))['id']

    def shown():
        server = json.loads(cli('server', 'show', '-f', 'json', 'vm1'))
        return server['status'], server['OS-EXT-SRV-ATTR:host']

    cli('server', 'migrate', '--live-migration', '--wait', 'vm1')
    assert shown() == ('ACTIVE', 'cell1-compute2')
    assert system.allocations_after_settling(
        {server_id: {'cell1-compute2': tiny}}) == {
        server_id: {'cell1-compute2': tiny}}

    # The compute under it stops; the operator marks it down and
    # evacuates the server to the other host.
    system.aio.computes['cell1-compute2'].stop()
    cli('compute', 'service', 'set', '--down', 'cell1-compute2',
        'nova-compute')
    # Without --wait: this CLI's evacuate --wait compares the lowered
    # status with 'ACTIVE' and never returns, against Nova as well.
    cli('--os-compute-api-version', '2.94', 'server', 'evacuate', 'vm1')
    deadline = time.monotonic() + 20
    while shown() != ('ACTIVE', 'cell1-compute1') and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert shown() == ('ACTIVE', 'cell1-compute1')
    listed = json.loads(cli('server', 'migration', 'list', '--server',
                            'vm1', '-f', 'json'))
    assert sorted((m['Type'], m['Status']) for m in listed) == [
        ('evacuation', 'done'), ('live-migration', 'completed')]
    [evacuation] = [m for m in listed if m['Type'] == 'evacuation']

    # Back up, the old host drops its copy and what it still held.
    [service] = [s for s in system.api.get('/v2.1/os-services').json()[
        'services'] if s['host'] == 'cell1-compute2']
    test_moves._start_compute(system, 'cell1-compute2', service['id'])
    assert system.allocations_after_settling(
        {server_id: {'cell1-compute1': tiny}}) == {
        server_id: {'cell1-compute1': tiny}}
    assert evacuation['UUID'] not in system.allocations()
