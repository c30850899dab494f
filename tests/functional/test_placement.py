"""The read-only Placement API under ``/placement``: what the scheduler
holds, in Placement's shapes and microversions, for admins; every write
refused; and the unmodified osc-placement plugin reading it."""

import json

import pytest
import requests

from tests.functional.test_clients import openstack_cli  # noqa: F401

pytestmark = pytest.mark.functional

NEWEST = '1.39'


class Placement:
    """Requests to ``/placement`` as one user, at a microversion."""

    def __init__(self, base_url, token='admin:admin'):
        self.base_url = base_url + '/placement'
        self.token = token

    def request(self, method, path, version='1.0', **kwargs):
        headers = {'OpenStack-API-Version': 'placement %s' % version}
        if self.token is not None:
            headers['X-Auth-Token'] = self.token
        headers.update(kwargs.pop('headers', {}))
        return requests.request(method, self.base_url + path,
                                headers=headers, timeout=30, **kwargs)

    def get(self, path, version='1.0', **kwargs):
        return self.request('GET', path, version, **kwargs)

    def read(self, path, version='1.0'):
        resp = self.get(path, version)
        assert resp.status_code == 200, resp.text
        assert resp.headers['OpenStack-API-Version'] == (
            'placement %s' % version)
        return resp.json()


def placement_error(resp, status, version=None):
    """The detail of an error in Placement's shape (with a ``code`` from
    1.23), checking the rest of it."""
    assert resp.status_code == status, resp.text
    [error] = resp.json()['errors']
    assert error['status'] == status
    assert error['title']
    assert error['request_id'] == resp.headers['x-openstack-request-id']
    newer = version is not None and tuple(
        int(part) for part in version.split('.')) >= (1, 23)
    if newer:
        assert error['code'] == 'placement.undefined_code'
    else:
        assert 'code' not in error
    # Nothing of the compute API's error shape or headers.
    assert 'X-OpenStack-Nova-API-Version' not in resp.headers
    return error['detail']


def _resources(api, flavor_id='1'):
    flavor = api.get('/v2.1/flavors/%s' % flavor_id).json()['flavor']
    return {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['ram'],
            'DISK_GB': flavor['disk']}


def _providers(placement, query='', version='1.14'):
    return {p['name']: p for p in placement.read(
        '/resource_providers' + query, version)['resource_providers']}


def _booted(system, name='vm1', flavor='1'):
    server_id = system.api.boot(name=name, flavor=flavor)
    server = system.api.wait_for(server_id)
    assert server['status'] == 'ACTIVE'
    return server_id, server['OS-EXT-SRV-ATTR:host']


def test_the_version_document_answers_without_a_token(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    # A token noauth2 refuses: everything else answers 401.
    anonymous = Placement(system.base_url, token=':nobody')
    assert anonymous.get('/resource_providers').status_code == 401
    for path in ('', '/'):
        body = anonymous.read(path)
        assert body == {'versions': [{
            'id': 'v1.0', 'min_version': '1.0', 'max_version': NEWEST,
            'status': 'CURRENT', 'links': [{'rel': 'self', 'href': ''}]}]}
    assert Placement(system.base_url, token=None).read('') == body
    latest = anonymous.get('', 'latest')
    assert latest.headers['OpenStack-API-Version'] == 'placement ' + NEWEST
    assert latest.headers['Vary'] == 'openstack-api-version'
    # What osc-placement falls back to when it asks for too new a version.
    too_new = anonymous.get('', '1.40')
    placement_error(too_new, 406)
    assert too_new.json()['errors'][0]['max_version'] == NEWEST
    assert too_new.json()['errors'][0]['min_version'] == '1.0'
    placement_error(anonymous.get('', 'one'), 400)


def test_a_booted_server_is_its_flavor_in_every_read(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    placement = Placement(system.base_url)
    server_id, host = _booted(system)
    flavor = _resources(system.api)

    providers = _providers(placement)
    assert sorted(providers) == ['cell1-compute1', 'cell1-compute2']
    used = providers[host]
    idle = [p for name, p in providers.items() if name != host][0]
    uuid = used['uuid']
    assert used['parent_provider_uuid'] is None
    assert used['root_provider_uuid'] == uuid
    assert [link['rel'] for link in used['links']] == [
        'self', 'inventories', 'usages', 'aggregates', 'traits',
        'allocations']
    assert 'root_provider_uuid' not in placement.read(
        '/resource_providers/%s' % uuid, '1.13')
    shown = placement.read('/resource_providers/%s' % uuid, '1.14')
    assert shown['generation'] == used['generation']

    assert placement.read('/resource_providers/%s/usages' % uuid) == {
        'resource_provider_generation': used['generation'],
        'usages': flavor}
    assert placement.read('/resource_providers/%s/usages' % idle['uuid'])[
        'usages'] == {rc: 0 for rc in flavor}
    inventories = placement.read('/resource_providers/%s/inventories'
                                 % uuid)
    assert inventories['resource_provider_generation'] == used['generation']
    vcpu = inventories['inventories']['VCPU']
    assert sorted(vcpu) == ['allocation_ratio', 'max_unit', 'min_unit',
                            'reserved', 'step_size', 'total']
    assert placement.read('/resource_providers/%s/inventories/VCPU'
                          % uuid) == dict(
        vcpu, resource_provider_generation=used['generation'])

    on_provider = placement.read('/resource_providers/%s/allocations'
                                 % uuid, '1.28')
    assert on_provider == {
        'resource_provider_generation': used['generation'],
        'allocations': {server_id: {'resources': flavor,
                                    'consumer_generation': None}}}
    assert placement.read('/resource_providers/%s/allocations' % uuid,
                          '1.27')['allocations'] == {
        server_id: {'resources': flavor}}

    held = {uuid: {'generation': used['generation'], 'resources': flavor}}
    assert placement.read('/allocations/%s' % server_id, '1.11') == {
        'allocations': held}
    assert placement.read('/allocations/%s' % server_id, '1.12') == {
        'allocations': held, 'project_id': 'admin', 'user_id': 'admin'}
    assert placement.read('/allocations/%s' % server_id, NEWEST) == {
        'allocations': held, 'project_id': 'admin', 'user_id': 'admin',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'}

    assert placement.read('/usages?project_id=admin', '1.9') == {
        'usages': flavor}
    assert placement.read('/usages?project_id=admin&user_id=admin',
                          '1.9') == {'usages': flavor}
    assert placement.read('/usages?project_id=other', '1.9') == {
        'usages': {}}
    grouped = dict(flavor, consumer_count=1)
    assert placement.read('/usages?project_id=admin', '1.38') == {
        'usages': {'INSTANCE': grouped}}
    assert placement.read('/usages?project_id=admin&consumer_type=all',
                          '1.38') == {'usages': {'all': grouped}}
    assert placement.read(
        '/usages?project_id=admin&consumer_type=MIGRATION', '1.38') == {
        'usages': {}}
    placement_error(placement.get('/usages?project_id=admin', '1.8'), 404,
                    '1.8')
    placement_error(placement.get('/usages', '1.9'), 400, '1.9')

    system.api.delete('/v2.1/servers/%s' % server_id)
    system.api.wait_gone(server_id)
    assert placement.read('/allocations/%s' % server_id, '1.12') == {
        'allocations': {}}
    assert placement.read('/resource_providers/%s/usages' % uuid)[
        'usages'] == {rc: 0 for rc in flavor}


def test_allocation_candidates_are_the_providers_with_room(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    placement = Placement(system.base_url)
    providers = _providers(placement, version='1.0')
    memory = placement.read('/resource_providers/%s/inventories/MEMORY_MB'
                            % providers['cell1-compute1']['uuid'])
    whole = int((memory['total'] - memory['reserved']) *
                memory['allocation_ratio'])
    query = '/allocation_candidates?resources=MEMORY_MB:%d' % whole
    assert len(placement.read(query, '1.10')['allocation_requests']) == 2

    _, host = _booted(system)
    [free] = [p['uuid'] for name, p in providers.items() if name != host]
    used = providers[host]['uuid']

    old = placement.read(query, '1.10')
    assert old == {
        'allocation_requests': [{'allocations': [{
            'resource_provider': {'uuid': free},
            'resources': {'MEMORY_MB': whole}}]}],
        'provider_summaries': {free: {'resources': {
            'MEMORY_MB': {'capacity': whole, 'used': 0}}}}}
    body = placement.read(query.replace(str(whole), '512'), '1.34')
    in_order = [p['uuid'] for p in placement.read(
        '/resource_providers')['resource_providers']]
    assert [list(r['allocations']) for r in body['allocation_requests']] \
        == [[uuid] for uuid in in_order]
    assert body['allocation_requests'][in_order.index(used)] == {
        'allocations': {used: {'resources': {'MEMORY_MB': 512}}},
        'mappings': {'': [used]}}
    summary = body['provider_summaries'][used]
    assert summary['resources']['MEMORY_MB'] == {'capacity': whole,
                                                 'used': 512}
    assert sorted(summary['resources']) == ['DISK_GB', 'MEMORY_MB', 'VCPU']
    assert summary['traits'] == []
    assert summary['parent_provider_uuid'] is None
    assert summary['root_provider_uuid'] == used
    assert 'traits' not in placement.read(query, '1.16')[
        'provider_summaries'][free]
    limited = placement.read('/allocation_candidates?resources=VCPU:1'
                             '&limit=1', '1.16')
    assert len(limited['allocation_requests']) == 1

    # Request groups land on the one provider of a candidate, summed.
    groups = placement.read(
        '/allocation_candidates?resources=VCPU:1&resources1=VCPU:1'
        '&resources_X=MEMORY_MB:%d&group_policy=none' % whole, NEWEST)
    assert groups['allocation_requests'] == [{
        'allocations': {free: {'resources': {'VCPU': 2,
                                             'MEMORY_MB': whole}}},
        'mappings': {'': [free], '1': [free], '_X': [free]}}]
    isolated = placement.read(
        '/allocation_candidates?resources1=VCPU:1&resources2=VCPU:1'
        '&group_policy=isolate', NEWEST)
    assert isolated == {'allocation_requests': [],
                        'provider_summaries': {}}

    for bad, version in (
            ('resources1=VCPU:1&resources2=VCPU:1', NEWEST),
            ('resources=VCPU:1&resources1=VCPU:1', '1.24'),
            ('resources=CUSTOM_GOLD:1', NEWEST),
            ('resources=VCPU:0', NEWEST),
            ('resources=VCPU', NEWEST),
            ('resources=VCPU:1&required=CUSTOM_UNKNOWN', NEWEST),
            ('resources=VCPU:1&limit=0', NEWEST),
            ('resources=VCPU:1&limit=1', '1.15'),
            ('resources=VCPU:1&member_of=nope', NEWEST),
            ('limit=1', NEWEST)):
        placement_error(placement.get('/allocation_candidates?' + bad,
                                      version), 400, version)
    placement_error(placement.get(query, '1.9'), 404, '1.9')


def _aggregate(api, name, host):
    created = api.post('/v2.1/os-aggregates', {'aggregate': {
        'name': name}}).json()['aggregate']
    resp = api.post('/v2.1/os-aggregates/%s/action' % created['id'],
                    {'add_host': {'host': host}})
    assert resp.status_code == 200, resp.text
    return created['uuid']


def test_providers_are_filtered_as_placement_filters_them(start_system):
    system = start_system(cells=1, hosts_per_cell=3)
    placement = Placement(system.base_url)
    every = _providers(placement, version='1.0')
    first = every['cell1-compute1']['uuid']
    fast = _aggregate(system.api, 'fast', 'cell1-compute1')
    slow = _aggregate(system.api, 'slow', 'cell1-compute2')

    def names(query, version=NEWEST):
        return sorted(_providers(placement, query, version))

    assert names('?name=cell1-compute2') == ['cell1-compute2']
    assert names('?uuid=%s' % first) == ['cell1-compute1']
    assert names('?in_tree=%s' % first, '1.14') == ['cell1-compute1']
    assert names('?member_of=%s' % fast, '1.3') == ['cell1-compute1']
    assert names('?member_of=in:%s,%s' % (fast, slow), '1.3') == [
        'cell1-compute1', 'cell1-compute2']
    assert names('?member_of=!%s' % fast) == ['cell1-compute2',
                                              'cell1-compute3']
    assert names('?member_of=in:%s,%s&member_of=%s' % (fast, slow, slow),
                 '1.24') == ['cell1-compute2']
    assert names('?resources=VCPU:1,DISK_GB:1', '1.4') == sorted(every)
    assert names('?resources=DISK_GB:100000', '1.4') == []
    assert placement.read('/resource_providers/%s/aggregates' % first,
                          '1.1') == {'aggregates': [fast]}
    assert placement.read('/resource_providers/%s/aggregates' % first,
                          '1.19') == {
        'aggregates': [fast],
        'resource_provider_generation': every['cell1-compute1'][
            'generation']}
    assert placement.read('/resource_providers/%s/traits' % first,
                          '1.6')['traits'] == []
    # The catalog: every standard trait, none a provider has here.
    catalog = placement.read('/traits', '1.6')['traits']
    assert 'HW_CPU_X86_AVX512F' in catalog and catalog == sorted(catalog)
    assert placement.read('/traits?associated=true', '1.6') == {
        'traits': []}
    classes = [c['name'] for c in placement.read(
        '/resource_classes', '1.2')['resource_classes']]
    assert classes[:3] == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    assert 'PCPU' in classes and 'VGPU' in classes

    for query, version in (('?resources=VCPU:1', '1.3'),
                           ('?member_of=%s' % fast, '1.2'),
                           ('?member_of=!%s' % fast, '1.31'),
                           ('?member_of=%s&member_of=%s' % (fast, slow),
                            '1.23'),
                           ('?member_of=%s,%s' % (fast, slow), NEWEST),
                           ('?uuid=nope', NEWEST),
                           ('?required=CUSTOM_UNKNOWN', NEWEST),
                           ('?required=!COMPUTE_STATUS_DISABLED', '1.21'),
                           ('?color=blue', NEWEST)):
        placement_error(placement.get('/resource_providers' + query,
                                      version), 400, version)
    # A standard trait no provider has: nothing to list.
    assert placement.read('/resource_providers?required=HW_CPU_X86_AVX',
                          NEWEST) == {'resource_providers': []}
    assert len(placement.read(
        '/resource_providers?required=!HW_CPU_X86_AVX', NEWEST)[
        'resource_providers']) == 3
    unknown = '00000000-0000-0000-0000-000000000000'
    for path in ('', '/inventories', '/usages', '/aggregates', '/traits',
                 '/allocations'):
        assert 'No resource provider with uuid %s found' % unknown in \
            placement_error(placement.get(
                '/resource_providers/%s%s' % (unknown, path), NEWEST), 404,
                NEWEST)
    assert placement_error(placement.get(
        '/resource_providers/%s/inventories/PCI_DEVICE' % first), 404) == (
        'No inventory of class PCI_DEVICE for %s' % first)
    placement_error(placement.get('/resource_providers/%s/aggregates'
                                  % first, '1.0'), 404)


def test_only_an_admin_reads_or_writes_and_other_writes_are_refused(
        start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    admin = Placement(system.base_url)
    member = Placement(system.base_url, token='demo:demo')
    [uuid] = [p['uuid'] for p in admin.read(
        '/resource_providers')['resource_providers']]
    for path, rule in (
            ('/resource_providers', 'resource_providers:list'),
            ('/resource_providers/%s' % uuid, 'resource_providers:show'),
            ('/resource_providers/%s/usages' % uuid,
             'resource_providers:usages'),
            ('/usages?project_id=admin', 'usages'),
            ('/resource_classes', 'resource_classes:list'),
            ('/allocation_candidates?resources=VCPU:1',
             'allocation_candidates:list')):
        assert placement_error(member.get(path, NEWEST), 403, NEWEST) == (
            "Policy doesn't allow placement:%s to be performed." % rule)
    # A project's members read its own usages.
    assert member.read('/usages?project_id=demo', NEWEST) == {
        'usages': {}}
    assert member.read('', NEWEST)['versions'][0]['max_version'] == NEWEST

    for user in (admin, member):
        resp = user.request('PATCH', '/resource_providers', NEWEST, json={})
        assert placement_error(resp, 405, NEWEST) == (
            'The method PATCH is not allowed for this resource.')
    # The writes of providers, inventories, aggregates, allocations (and
    # the reshaper), traits and resource classes are served, for admins.
    provider = '/resource_providers/%s' % uuid
    for method, path, rule in (
            ('POST', '/allocations', 'allocations:manage'),
            ('POST', '/reshaper', 'reshaper:reshape'),
            ('PUT', '/allocations/%s' % uuid, 'allocations:update'),
            ('DELETE', '/allocations/%s' % uuid, 'allocations:delete'),
            ('POST', '/resource_providers', 'resource_providers:create'),
            ('PUT', provider, 'resource_providers:update'),
            ('DELETE', provider, 'resource_providers:delete'),
            ('PUT', provider + '/inventories',
             'resource_providers:inventories:update'),
            ('POST', provider + '/inventories',
             'resource_providers:inventories:create'),
            ('DELETE', provider + '/inventories',
             'resource_providers:inventories:delete'),
            ('PUT', provider + '/inventories/VCPU',
             'resource_providers:inventories:update'),
            ('DELETE', provider + '/inventories/VCPU',
             'resource_providers:inventories:delete'),
            ('PUT', provider + '/aggregates',
             'resource_providers:aggregates:update'),
            ('PUT', provider + '/traits', 'resource_providers:traits:update'),
            ('DELETE', provider + '/traits',
             'resource_providers:traits:delete'),
            ('PUT', '/traits/CUSTOM_GOLD', 'traits:update'),
            ('DELETE', '/traits/CUSTOM_GOLD', 'traits:delete'),
            ('POST', '/resource_classes', 'resource_classes:create'),
            ('PUT', '/resource_classes/CUSTOM_GOLD',
             'resource_classes:update'),
            ('DELETE', '/resource_classes/CUSTOM_GOLD',
             'resource_classes:delete')):
        assert placement_error(member.request(method, path, NEWEST,
                                              json={}), 403, NEWEST) == (
            "Policy doesn't allow placement:%s to be performed." % rule)
    resp = admin.get('/allocations', NEWEST)
    placement_error(resp, 405, NEWEST)
    assert resp.headers['Allow'] == 'POST'
    resp = admin.request('PATCH', '/resource_providers', NEWEST, json={})
    assert resp.headers['Allow'] == 'GET, POST'


def test_a_scheduler_older_than_the_reads_makes_them_503(start_system):
    from scheduler_split import conf
    conf.CONF.set_override('scheduler', '1.8', group='upgrade_levels')
    system = start_system(cells=1, hosts_per_cell=1)
    placement = Placement(system.base_url)
    resp = placement.get('/resource_providers', NEWEST)
    assert 'capped at 1.8' in placement_error(resp, 503, NEWEST)
    assert resp.headers['Retry-After']
    # The version document needs no scheduler.
    assert placement.read('', NEWEST)['versions']


def _osc_placement_installed():
    try:
        import osc_placement  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _osc_placement_installed(),
                    reason='osc-placement is not installed')
def test_osc_placement_shows_what_was_booted(start_system,
                                             openstack_cli):  # noqa: F811
    system = start_system(cells=1, hosts_per_cell=2)
    cli = openstack_cli(system)
    first, host = _booted(system, 'vm1')
    second, second_host = _booted(system, 'vm2')
    flavor = _resources(system.api)

    listed = json.loads(cli('resource', 'provider', 'list', '-f', 'json'))
    by_name = {p['name']: p for p in listed}
    assert sorted(by_name) == ['cell1-compute1', 'cell1-compute2']
    # osc-placement negotiates 1.29: the tree columns are there.
    assert all(p['root_provider_uuid'] == p['uuid'] and
               p['parent_provider_uuid'] is None for p in listed)

    shown = json.loads(cli('resource', 'provider', 'allocation', 'show',
                           first, '-f', 'json'))
    assert shown == [{'resource_provider': by_name[host]['uuid'],
                      'generation': by_name[host]['generation'],
                      'resources': flavor, 'project_id': 'admin',
                      'user_id': 'admin'}]

    # A provider's usage is the sum of the servers on it.
    on_host = [flavor] + ([flavor] if second_host == host else [])
    usage = json.loads(cli('resource', 'provider', 'usage', 'show',
                           by_name[host]['uuid'], '-f', 'json'))
    assert {u['resource_class']: u['usage'] for u in usage} == {
        rc: sum(f[rc] for f in on_host) for rc in flavor}
    inventory = json.loads(cli('resource', 'provider', 'inventory', 'list',
                               by_name[host]['uuid'], '-f', 'json'))
    assert sorted(i['resource_class'] for i in inventory) == sorted(flavor)
    project = json.loads(cli('resource', 'usage', 'show', 'admin', '-f',
                             'json'))
    assert {u['resource_class']: u['usage'] for u in project} == {
        rc: 2 * amount for rc, amount in flavor.items()}

    candidates = json.loads(cli('allocation', 'candidate', 'list',
                                '--resource', 'VCPU=1', '-f', 'json'))
    assert sorted(c['resource provider'] for c in candidates) == sorted(
        p['uuid'] for p in listed)
    assert all(c['allocation'] == 'VCPU=1' for c in candidates)
    summary = {c['resource provider']: c['inventory used/capacity']
               for c in candidates}[by_name[host]['uuid']]
    assert 'VCPU=%d/' % sum(f['VCPU'] for f in on_host) in summary
    assert len(json.loads(cli(
        '--os-placement-api-version', '1.16', 'allocation', 'candidate',
        'list', '--resource', 'VCPU=1', '--limit', '1', '-f',
        'json'))) == 1
