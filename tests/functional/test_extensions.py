"""``/extensions``: the fixed list of Nova's v2 extensions that clients
written for v2 look up, in Nova's shapes."""

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional


def test_every_user_lists_novas_v2_extensions_and_shows_one_by_alias(
        start_system):
    api = start_system(cells=1, hosts_per_cell=1).api
    user = api.as_user('u1:p1')

    resp = user.get('/v2.1/extensions')

    assert resp.status_code == 200, resp.text
    extensions = resp.json()['extensions']
    assert len(extensions) == 99
    hosts = next(e for e in extensions if e['name'] == 'Hosts')
    assert hosts == {
        'alias': 'os-hosts', 'name': 'Hosts',
        'description': 'Admin-only host administration.', 'links': [],
        'namespace': 'http://docs.openstack.org/compute/ext/fake_xml',
        'updated': '2014-12-03T00:00:00Z'}
    resp = user.get('/v2.1/extensions/os-consoles')
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'extension': next(
        e for e in extensions if e['alias'] == 'os-consoles')}
    # The list does not change with the microversion.
    assert user.at('2.1').get('/v2.1/extensions').json()['extensions'] == \
        extensions


def test_an_unknown_extension_alias_is_a_404_in_novas_shape(start_system):
    api = start_system(cells=1, hosts_per_cell=1).api

    resp = api.get('/v2.1/extensions/os-no-such-thing')

    assert nova_error(resp, 404, 'itemNotFound') == (
        'The resource could not be found.')
