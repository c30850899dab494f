"""Lists page and filter as Nova's do (what Tempest's flavor and server
list tests check)."""

import pytest

pytestmark = pytest.mark.functional


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    from tests.functional import fixtures
    system = fixtures.System(tmp_path_factory.mktemp('listing'), 1, 1).start()
    yield system.api
    system.stop()


@pytest.mark.parametrize('path', ['/v2.1/flavors', '/v2.1/flavors/detail'])
def test_flavors_page_by_limit_and_marker(api, path):
    everything = [f['id'] for f in api.get(path).json()['flavors']]
    assert everything == ['1', '2', '3', '4', '5']

    page = api.get(path, params={'limit': 2}).json()
    assert [f['id'] for f in page['flavors']] == ['1', '2']
    [link] = page['flavors_links']
    assert link['rel'] == 'next'
    assert 'marker=2' in link['href'] and 'limit=2' in link['href']

    after = api.get(path, params={'marker': '2'}).json()
    assert [f['id'] for f in after['flavors']] == ['3', '4', '5']
    assert 'flavors_links' not in after
    last = api.get(path, params={'marker': '3', 'limit': 5}).json()
    assert [f['id'] for f in last['flavors']] == ['4', '5']
    assert 'flavors_links' not in last


@pytest.mark.parametrize('params', [{'marker': 'nope'}, {'limit': -1},
                                    {'limit': 'x'}])
def test_a_bad_flavor_marker_or_limit_is_a_bad_request(api, params):
    resp = api.get('/v2.1/flavors', params=params)
    assert resp.status_code == 400
    assert resp.json()['badRequest']['code'] == 400


def test_servers_filter_by_image_and_flavor(api):
    from scheduler_split.image import catalog as images
    tiny_cirros = api.boot(name='tiny-cirros', flavor='1', image='cirros')
    small_ubuntu = api.boot(name='small-ubuntu', flavor='2',
                            image='ubuntu-24.04')
    for server_id in (tiny_cirros, small_ubuntu):
        assert api.wait_for(server_id)['status'] == 'ACTIVE'
    cirros = images.find('cirros')[0]

    def names(path='/v2.1/servers/detail', **params):
        resp = api.get(path, params=params)
        assert resp.status_code == 200, resp.text
        return {s['name'] for s in resp.json()['servers']}

    assert names(image=cirros) == {'tiny-cirros'}
    assert names('/v2.1/servers', image=cirros) == {'tiny-cirros'}
    assert names(flavor='2') == {'small-ubuntu'}
    # A link names the same flavor or image as its id.
    assert names(flavor=api.base_url + '/flavors/2') == {'small-ubuntu'}
    assert names(image=api.base_url + '/images/' + cirros) == {
        'tiny-cirros'}
    assert names(image=cirros, flavor='2') == set()
    assert names(flavor='999') == set()


def test_servers_filter_by_reservation_id(api):
    resp = api.post('/v2.1/servers', {'server': {
        'name': 'pair', 'flavorRef': '1', 'imageRef': 'cirros',
        'networks': 'none', 'min_count': 2, 'max_count': 2,
        'return_reservation_id': True}})
    assert resp.status_code == 202, resp.text
    reservation_id = resp.json()['reservation_id']
    alone = api.boot(name='alone')
    pair = api.servers(reservation_id=reservation_id)
    assert len(pair) == 2
    assert {s['name'] for s in pair} == {'pair-1', 'pair-2'}
    assert alone not in {s['id'] for s in pair}
    assert api.servers(reservation_id='r-unknown') == []


def test_servers_page_sort_and_narrow_by_host_and_project(api):
    ids = [api.boot(name='page-%d' % n) for n in range(3)]
    for server_id in ids:
        assert api.wait_for(server_id)['status'] == 'ACTIVE'

    def page(**params):
        params.setdefault('name', '^page-')
        return api.get('/v2.1/servers', params=params).json()

    # A full page links to the next one, with the same query.
    first = page(limit=2, sort_key='display_name', sort_dir='desc')
    assert [s['name'] for s in first['servers']] == ['page-2', 'page-1']
    link = first['servers_links'][0]
    assert link['rel'] == 'next' and 'marker=%s' % ids[1] in link['href']
    rest = api.get(link['href'][len(api.base_url):]).json()
    assert [s['name'] for s in rest['servers']] == ['page-0']
    assert 'servers_links' not in rest

    assert [s['name'] for s in page(sort_key='display_name',
                                    sort_dir='asc')['servers']] == [
        'page-0', 'page-1', 'page-2']
    assert api.get('/v2.1/servers', params={
        'sort_key': 'nonsense'}).status_code == 400
    assert api.get('/v2.1/servers', params={
        'sort_key': 'display_name', 'sort_dir': 'up'}).status_code == 400

    # Admins narrow by host (and, with all_tenants, by project); others
    # may not sort by host and their host filter is ignored.
    assert len(page(host='cell1-compute1')['servers']) == 3
    assert page(host='elsewhere')['servers'] == []
    user = api.as_user('u9:p9')
    mine = user.boot(name='page-user')
    assert user.wait_for(mine)['status'] == 'ACTIVE'
    assert [s['id'] for s in user.get('/v2.1/servers', params={
        'host': 'elsewhere'}).json()['servers']] == [mine]
    assert user.get('/v2.1/servers', params={
        'sort_key': 'host'}).status_code == 403
    everyone = api.get('/v2.1/servers', params={
        'all_tenants': 1, 'tenant_id': 'p9'}).json()['servers']
    assert [s['id'] for s in everyone] == [mine]
