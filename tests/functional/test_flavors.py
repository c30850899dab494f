"""Flavor management: admins create and delete flavors, set the extra
specs the scheduler reads, and give projects private flavors."""

import pytest

from scheduler_split import conf
from tests.functional.fixtures import nova_error

CONF = conf.CONF
pytestmark = pytest.mark.functional


def _create(api, **values):
    flavor = {'name': 'f', 'ram': 64, 'vcpus': 1, 'disk': 1}
    flavor.update(values)
    resp = api.post('/v2.1/flavors', {'flavor': flavor})
    assert resp.status_code == 200, resp.text
    return resp.json()['flavor']


def _specs(api, flavor_id, suffix=''):
    return '/v2.1/flavors/%s/os-extra_specs%s' % (flavor_id, suffix)


def test_flavor_create_show_update_delete_in_novas_shapes(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u1:p1')

    created = _create(api, name='m1.custom', id='custom', ram='256',
                      vcpus=2, disk=3, swap=512, rxtx_factor=2.0,
                      description='for tests')
    assert {k: created[k] for k in (
        'id', 'name', 'ram', 'vcpus', 'disk', 'swap', 'rxtx_factor',
        'OS-FLV-EXT-DATA:ephemeral', 'os-flavor-access:is_public',
        'OS-FLV-DISABLED:disabled', 'description', 'extra_specs')} == {
        'id': 'custom', 'name': 'm1.custom', 'ram': 256, 'vcpus': 2,
        'disk': 3, 'swap': 512, 'rxtx_factor': 2.0,
        'OS-FLV-EXT-DATA:ephemeral': 0, 'os-flavor-access:is_public': True,
        'OS-FLV-DISABLED:disabled': False, 'description': 'for tests',
        'extra_specs': {}}
    assert user.get('/v2.1/flavors/custom').json()['flavor']['ram'] == 256

    # No id (or null) makes a uuid; an integer id is kept as a string.
    assert len(_create(api, name='auto')['id']) == 36
    assert _create(api, name='int', id=77)['id'] == '77'
    # Before 2.75 a flavor without swap says "".
    assert api.at('2.1').get('/v2.1/flavors/77').json()['flavor'][
        'swap'] == ''

    assert nova_error(api.post('/v2.1/flavors', {'flavor': {
        'name': 'm1.custom', 'ram': 64, 'vcpus': 1, 'disk': 1}}), 409,
        'conflictingRequest') == 'Flavor with name m1.custom already exists.'
    assert nova_error(api.post('/v2.1/flavors', {'flavor': {
        'name': 'other', 'id': 'custom', 'ram': 64, 'vcpus': 1,
        'disk': 1}}), 409, 'conflictingRequest') == (
        'Flavor with ID custom already exists.')
    for bad in ({'name': 'x', 'ram': 0, 'vcpus': 1, 'disk': 1},
                {'name': 'x', 'ram': 64, 'vcpus': -1, 'disk': 1},
                {'name': 'x', 'ram': 'lots', 'vcpus': 1, 'disk': 1},
                {'name': ' x', 'ram': 64, 'vcpus': 1, 'disk': 1},
                {'ram': 64, 'vcpus': 1, 'disk': 1},
                {'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1,
                 'rxtx_factor': 0},
                {'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1,
                 'cpu': 1}):
        nova_error(api.post('/v2.1/flavors', {'flavor': bad}), 400,
                   'badRequest')
    # The description is 2.55's.
    nova_error(api.at('2.54').post('/v2.1/flavors', {'flavor': {
        'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1,
        'description': 'd'}}), 400, 'badRequest')
    assert "os_compute_api:os-flavor-manage:create" in nova_error(
        user.post('/v2.1/flavors', {'flavor': {
            'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1}}), 403,
        'forbidden')

    resp = api.put('/v2.1/flavors/custom',
                   {'flavor': {'description': 'changed'}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['flavor']['description'] == 'changed'
    nova_error(api.put('/v2.1/flavors/custom', {'flavor': {'ram': 1}}), 400,
               'badRequest')
    nova_error(api.at('2.54').put('/v2.1/flavors/custom', {
        'flavor': {'description': 'old'}}), 404, 'itemNotFound')

    # A server keeps the flavor it was built from after the flavor goes.
    server = api.boot(flavor='custom')
    assert api.wait_for(server)['status'] == 'ACTIVE'
    nova_error(user.delete('/v2.1/flavors/custom'), 403, 'forbidden')
    assert api.delete('/v2.1/flavors/custom').status_code == 202
    nova_error(api.get('/v2.1/flavors/custom'), 404, 'itemNotFound')
    nova_error(api.delete('/v2.1/flavors/custom'), 404, 'itemNotFound')
    kept = api.server(server)['flavor']
    assert (kept['original_name'], kept['ram'], kept['vcpus']) == (
        'm1.custom', 256, 2)
    assert 'custom' not in [
        f['id'] for f in api.get('/v2.1/flavors').json()['flavors']]


def test_extra_specs_crud_and_validation(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u1:p1')
    flavor_id = _create(api, name='specs', id='specs')['id']

    resp = api.post(_specs(api, flavor_id), {'extra_specs': {
        'hw:numa_nodes': '1', 'hw:cpu_policy': 'shared',
        'aggregate_instance_extra_specs:ssd': True, 'mine': 5}})
    assert resp.status_code == 200, resp.text
    stored = {'hw:numa_nodes': '1', 'hw:cpu_policy': 'shared',
              'aggregate_instance_extra_specs:ssd': 'True', 'mine': '5'}
    assert resp.json() == {'extra_specs': stored}
    assert user.get(_specs(api, flavor_id)).json() == {'extra_specs': stored}
    assert api.get('/v2.1/flavors/specs').json()['flavor'][
        'extra_specs'] == stored
    assert user.get(_specs(api, flavor_id, '/hw:numa_nodes')).json() == {
        'hw:numa_nodes': '1'}

    resp = api.put(_specs(api, flavor_id, '/hw:numa_nodes'),
                   {'hw:numa_nodes': '2'})
    assert (resp.status_code, resp.json()) == (200, {'hw:numa_nodes': '2'})
    assert nova_error(api.put(_specs(api, flavor_id, '/hw:numa_nodes'),
                              {'hw:cpu_policy': 'shared'}), 400,
                      'badRequest') == 'Request body and URI mismatch'
    nova_error(api.put(_specs(api, flavor_id, '/hw:numa_nodes'),
                       {'hw:numa_nodes': '1', 'mine': '1'}), 400,
               'badRequest')
    nova_error(user.post(_specs(api, flavor_id),
                         {'extra_specs': {'a': 'b'}}), 403, 'forbidden')

    assert api.delete(_specs(api, flavor_id, '/mine')).status_code == 200
    assert nova_error(api.get(_specs(api, flavor_id, '/mine')), 404,
                      'itemNotFound') == (
        'Flavor specs has no extra specs with key mine.')
    nova_error(api.delete(_specs(api, flavor_id, '/mine')), 404,
               'itemNotFound')
    nova_error(api.get(_specs(api, 'nope')), 404, 'itemNotFound')

    # Dedicated CPUs are asked of the scheduler as PCPU, at every
    # microversion.
    for at in ('2.1', '2.96'):
        assert api.at(at).post(_specs(api, flavor_id), {'extra_specs': {
            'hw:cpu_policy': 'dedicated'}}).status_code == 200
    assert api.delete(_specs(api, flavor_id,
                             '/hw:cpu_policy')).status_code == 200
    # From 2.86 keys in this cloud's namespaces are checked; an
    # operator's own namespace is free.
    assert 'hw:no_such' in nova_error(api.post(
        _specs(api, flavor_id), {'extra_specs': {'hw:no_such': '1'}}), 400,
        'badRequest')
    nova_error(api.post(_specs(api, flavor_id),
                        {'extra_specs': {'hw:numa_nodes': 'x'}}), 400,
               'badRequest')
    assert api.post(_specs(api, flavor_id), {'extra_specs': {
        'foo:bar': 'baz', 'resources:VCPU': '1',
        'trait:HW_CPU_X86_AVX': 'required'}}).status_code == 200
    assert api.at('2.85').post(_specs(api, flavor_id), {'extra_specs': {
        'hw:no_such': '1'}}).status_code == 200
    nova_error(api.post(_specs(api, flavor_id),
                        {'extra_specs': {'bad/key': '1'}}), 400,
               'badRequest')


def test_private_flavor_only_for_projects_given_access(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u1:p1')
    other = api.as_user('u2:p2')
    _create(api, name='private', id='private',
            **{'os-flavor-access:is_public': False})

    def listed(who, path='/v2.1/flavors'):
        return [f['id'] for f in who.get(path).json()['flavors']]

    assert 'private' not in listed(user)
    assert 'private' not in listed(api)
    assert 'private' in listed(api, '/v2.1/flavors?is_public=false')
    assert 'private' in listed(api, '/v2.1/flavors/detail?is_public=None')
    nova_error(api.get('/v2.1/flavors?is_public=maybe'), 400, 'badRequest')
    nova_error(user.get('/v2.1/flavors/private'), 404, 'itemNotFound')
    resp = user.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': 'private', 'networks': 'none',
        'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01'}})
    nova_error(resp, 400, 'badRequest')

    access = '/v2.1/flavors/private/os-flavor-access'
    action = '/v2.1/flavors/private/action'
    assert api.get(access).json() == {'flavor_access': []}
    resp = api.post(action, {'addTenantAccess': {'tenant': 'p1'}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'flavor_access': [
        {'flavor_id': 'private', 'tenant_id': 'p1'}]}
    nova_error(api.post(action, {'addTenantAccess': {'tenant': 'p1'}}), 409,
               'conflictingRequest')
    nova_error(user.post(action, {'addTenantAccess': {'tenant': 'p1'}}),
               403, 'forbidden')
    nova_error(user.get(access), 403, 'forbidden')

    assert 'private' in listed(user)
    assert 'private' not in listed(other)
    assert user.get('/v2.1/flavors/private').status_code == 200
    server = user.boot(flavor='private')
    assert user.wait_for(server)['status'] == 'ACTIVE'

    assert api.post(action, {'removeTenantAccess': {
        'tenant': 'p1'}}).json() == {'flavor_access': []}
    nova_error(api.post(action, {'removeTenantAccess': {'tenant': 'p1'}}),
               404, 'itemNotFound')
    assert 'private' not in listed(user)
    nova_error(api.get('/v2.1/flavors/1/os-flavor-access'), 404,
               'itemNotFound')
    nova_error(api.post('/v2.1/flavors/1/action',
                        {'addTenantAccess': {'tenant': 'p1'}}), 409,
               'conflictingRequest')
    nova_error(api.post(action, {'grant': {'tenant': 'p1'}}), 400,
               'badRequest')


def test_flavor_extra_specs_steer_servers_to_an_aggregate(start_system):
    CONF.set_override('enabled_filters',
                      ['ComputeFilter', 'AggregateInstanceExtraSpecsFilter',
                       'RamFilter'], group='filter_scheduler')
    system = start_system(cells=1, hosts_per_cell=3)
    api = system.api
    resp = api.post('/v2.1/os-aggregates', {'aggregate': {'name': 'ssd'}})
    aggregate = resp.json()['aggregate']['id']
    for body in ({'add_host': {'host': 'cell1-compute2'}},
                 {'set_metadata': {'metadata': {'ssd': 'true'}}}):
        resp = api.post('/v2.1/os-aggregates/%d/action' % aggregate, body)
        assert resp.status_code == 200, resp.text
    _create(api, name='fast', id='fast')
    assert api.post(_specs(api, 'fast'), {'extra_specs': {
        'aggregate_instance_extra_specs:ssd': 'true'}}).status_code == 200

    servers = [api.boot(name='f%d' % i, flavor='fast') for i in range(4)]
    assert {api.wait_for(s)['OS-EXT-SRV-ATTR:host'] for s in servers} == {
        'cell1-compute2'}
