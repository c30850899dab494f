"""Images of servers (createImage, createBackup) and the compute API's
``/images`` proxy, as Nova's clients see them."""

import json
import time

import pytest

from scheduler_split import conf
from scheduler_split.image import catalog as images
from tests.functional.fixtures import nova_error
from tests.functional.test_clients import openstack_cli  # noqa: F401

CONF = conf.CONF
pytestmark = pytest.mark.functional

CIRROS = images.find('cirros')[0]


def _action(api, server_id, body):
    return api.post('/v2.1/servers/%s/action' % server_id, body)


def _uploaded(api, server_id, image_id, timeout=30):
    """As Nova's clients wait after a createImage: until the server's
    compute uploaded the image's data (the image is active) and the
    server's task (image_snapshot) is done."""
    deadline = time.monotonic() + timeout
    while True:
        image = api.get('/image/v2/images/%s' % image_id).json()
        server = api.get('/v2.1/servers/%s' % server_id).json()['server']
        if image['status'] == 'active' and \
                server['OS-EXT-STS:task_state'] is None:
            return image
        assert time.monotonic() < deadline, (image, server)
        time.sleep(0.1)


def _snapshot(api, server_id, name='snap', **extra):
    resp = _action(api, server_id, {'createImage': dict(name=name,
                                                        **extra)})
    assert resp.status_code == 202, resp.text
    image_id = resp.json()['image_id']
    _uploaded(api, server_id, image_id)
    return image_id


def _image(api, image_id):
    resp = api.get('/image/v2/images/%s' % image_id)
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture
def system(start_system):
    return start_system(cells=1, hosts_per_cell=1)


def test_a_snapshot_is_an_active_image_of_the_server(system):
    api = system.api
    server_id = api.wait_for(api.boot())['id']

    resp = _action(api.at('2.44'), server_id, {'createImage': {
        'name': 'snap', 'metadata': {'purpose': 'test'}}})

    assert resp.status_code == 202, resp.text
    assert resp.text == ''
    location = resp.headers['Location']
    assert location.startswith(system.base_url + '/image/images/')
    # Queued while the server's compute uploads its disk.
    image = _image(api, location.rsplit('/', 1)[1])
    assert image['status'] in ('queued', 'active')
    image = _uploaded(api, server_id, image['id'])
    assert (image['name'], image['status'], image['visibility'],
            image['owner']) == ('snap', 'active', 'private', 'admin')
    assert (image['image_type'], image['instance_uuid'],
            image['base_image_ref'], image['user_id'], image['purpose']) == (
        'snapshot', server_id, CIRROS, 'admin', 'test')
    # What it inherits of the server's image, and the flavor's root disk.
    assert (image['os_distro'], image['min_ram'], image['min_disk']) == (
        'cirros', 0, 1)
    # From 2.45 the id is in the body.
    second = _snapshot(api, server_id, name='snap2')
    assert _image(api, second)['name'] == 'snap2'
    actions = api.get('/v2.1/servers/%s/os-instance-actions'
                      % server_id).json()['instanceActions']
    assert [a['action'] for a in actions].count('createImage') == 2
    # A server booted from the snapshot.
    booted = api.wait_for(api.post('/v2.1/servers', {'server': {
        'name': 'from-snap', 'flavorRef': '1', 'imageRef': second,
        'networks': 'none'}}).json()['server']['id'])
    assert booted['status'] == 'ACTIVE'


def test_a_server_is_imaged_only_in_a_settled_state(system):
    api = system.api
    server_id = api.wait_for(api.boot())['id']

    assert _action(api, server_id, {'os-stop': None}).status_code == 202
    api.wait_for(server_id, statuses=('SHUTOFF',))
    assert _snapshot(api, server_id)
    assert _action(api, server_id, {'lock': None}).status_code == 202
    # As in Nova, a lock does not keep a server from being imaged.
    assert _snapshot(api.as_user('admin:admin'), server_id)

    assert _action(api, server_id, {
        'os-resetState': {'state': 'error'}}).status_code == 202
    message = nova_error(_action(api, server_id, {
        'createImage': {'name': 'x'}}), 409, 'conflictingRequest')
    assert message == ("Cannot 'createImage' instance %s while it is in "
                       "vm_state error" % server_id)
    nova_error(_action(api, server_id, {'createBackup': {
        'name': 'x', 'backup_type': 'daily', 'rotation': 1}}), 409,
        'conflictingRequest')
    nova_error(_action(api, 'no-such-server', {
        'createImage': {'name': 'x'}}), 404, 'itemNotFound')
    for metadata in ({'': 'x'}, {'k' * 256: 'v'}):
        nova_error(_action(api, server_id, {'createImage': {
            'name': 'x', 'metadata': metadata}}), 400, 'badRequest')


def test_image_metadata_counts_against_the_quota_until_2_39(system):
    api = system.api
    server_id = api.wait_for(api.boot())['id']
    CONF.set_override('metadata_items', 1, group='quota')
    metadata = {'a': '1', 'b': '2'}

    message = nova_error(_action(api.at('2.38'), server_id, {'createImage': {
        'name': 'x', 'metadata': metadata}}), 403, 'forbidden')

    assert message == 'Image metadata limit exceeded'
    assert _action(api.at('2.39'), server_id, {'createImage': {
        'name': 'x', 'metadata': metadata}}).status_code == 202


def test_a_backup_keeps_the_newest_rotation_backups_of_its_type(system):
    api = system.api
    server_id = api.wait_for(api.boot())['id']

    def backup(name, backup_type='daily', rotation=2, version='2.96'):
        resp = _action(api.at(version), server_id, {'createBackup': {
            'name': name, 'backup_type': backup_type,
            'rotation': rotation}})
        # Its upload done (or, kept by no rotation, given up), as a
        # client waits before the next action on the server.
        deadline = time.monotonic() + 30
        while api.get('/v2.1/servers/%s' % server_id).json()['server'][
                'OS-EXT-STS:task_state'] is not None:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        return resp

    ids = [backup(name).json()['image_id'] for name in ('b1', 'b2', 'b3')]
    weekly = backup('w1', backup_type='weekly').json()['image_id']

    def kept(backup_type):
        return [i['name'] for i in api.get('/image/v2/images', params={
            'image_type': 'backup', 'backup_type': backup_type,
            'instance_uuid': server_id}).json()['images']]
    assert kept('daily') == ['b3', 'b2']
    assert kept('weekly') == ['w1']
    shown = _image(api, ids[2])
    assert (shown['image_type'], shown['backup_type']) == ('backup',
                                                           'daily')
    assert _image(api, weekly)['backup_type'] == 'weekly'

    resp = backup('b4', version='2.44')
    assert resp.status_code == 202
    assert resp.headers['Location'].startswith(
        system.base_url + '/v2.1/images/')
    assert kept('daily') == ['b4', 'b3']
    # Rotation 0 keeps none, not even the new one (and names no image).
    resp = backup('b5', rotation=0, version='2.44')
    assert resp.status_code == 202
    assert 'Location' not in resp.headers
    assert kept('daily') == []
    assert kept('weekly') == ['w1']


def test_the_compute_proxy_shows_images_in_novas_shapes_until_2_35(system):
    api = system.api
    proxy = api.at('2.35')
    server_id = api.wait_for(api.boot())['id']
    snapshot = _snapshot(api, server_id)
    queued = api.post('/image/v2/images', {'name': 'queued'}).json()

    listed = proxy.get('/v2.1/images').json()['images']
    detail = {i['id']: i for i in proxy.get(
        '/v2.1/images/detail').json()['images']}
    shown = proxy.get('/v2.1/images/%s' % snapshot).json()['image']

    assert [i['name'] for i in listed] == [
        'queued', 'snap', 'fedora-41', 'ubuntu-24.04', 'cirros']
    assert set(listed[0]) == {'id', 'name', 'links'}
    assert shown == detail[snapshot]
    assert (shown['status'], shown['progress'], shown['minDisk'],
            shown['minRam'], shown['OS-EXT-IMG-SIZE:size']) == (
        'ACTIVE', 100, 1, 0, 0)
    assert shown['metadata']['image_type'] == 'snapshot'
    assert shown['server'] == {'id': server_id, 'links': [
        {'rel': 'self',
         'href': '%s/v2.1/servers/%s' % (system.base_url, server_id)},
        {'rel': 'bookmark',
         'href': '%s/servers/%s' % (system.base_url, server_id)}]}
    assert [link['rel'] for link in shown['links']] == [
        'self', 'bookmark', 'alternate']
    assert shown['links'][2]['href'] == '%s/image/images/%s' % (
        system.base_url, snapshot)
    assert (detail[queued['id']]['status'],
            detail[queued['id']]['progress']) == ('SAVING', 25)
    cirros = detail[CIRROS]
    assert (cirros['minRam'], cirros['OS-EXT-IMG-SIZE:size'],
            cirros['created']) == (0, 21430272, '2026-01-01T00:00:00Z')
    assert 'server' not in cirros

    for path in ('/v2.1/images', '/v2.1/images/detail',
                 '/v2.1/images/%s' % CIRROS):
        nova_error(api.at('2.36').get(path), 404, 'itemNotFound')
    nova_error(proxy.get('/v2.1/images/no-such-image'), 404, 'itemNotFound')


def test_the_compute_proxy_filters_and_pages_as_nova(system):
    api = system.api
    proxy = api.at('2.35')
    first = api.wait_for(api.boot(name='first'))
    second_id = api.wait_for(api.boot(name='second'))['id']
    snap1 = _snapshot(api, first['id'], name='s1')
    snap2 = _snapshot(api, second_id, name='s2')

    def names(path='/v2.1/images', **params):
        resp = proxy.get(path, params=params)
        assert resp.status_code == 200, resp.text
        return [i['name'] for i in resp.json()['images']]

    assert names(server=first['id']) == ['s1']
    for link in first['links']:
        assert names('/v2.1/images/detail', server=link['href']) == ['s1']
    assert names(type='snapshot') == ['s2', 's1']
    assert names(name='cirros') == ['cirros']
    assert names(status='ACTIVE')[:2] == ['s2', 's1']
    assert names(minRam='1024') == ['fedora-41']
    assert names(**{'property-os_distro': 'ubuntu'}) == ['ubuntu-24.04']
    shown = proxy.get('/v2.1/images/%s' % snap2).json()['image']
    assert names(**{'changes-since': shown['created']})[0] == 's2'

    page = proxy.get('/v2.1/images', params={'limit': 2}).json()
    assert [i['id'] for i in page['images']] == [snap2, snap1]
    [next_link] = page['images_links']
    assert next_link['rel'] == 'next'
    assert 'marker=%s' % snap1 in next_link['href']
    assert names(limit=2, marker=snap1) == ['fedora-41', 'ubuntu-24.04']
    nova_error(proxy.get('/v2.1/images', params={'limit': 'x'}), 400,
               'badRequest')
    nova_error(proxy.get('/v2.1/images', params={'marker': 'nope'}), 400,
               'badRequest')


def test_the_compute_proxy_changes_metadata_and_deletes_until_2_38(system):
    api = system.api
    proxy = api.at('2.38')
    server_id = api.wait_for(api.boot())['id']
    image_id = _snapshot(api, server_id)
    path = '/v2.1/images/%s/metadata' % image_id

    resp = proxy.put(path, {'metadata': {'os_version': '1', 'a': 'x'}})
    assert resp.json() == {'metadata': {'os_version': '1', 'a': 'x'}}
    resp = proxy.post(path, {'metadata': {'os_distro': 'mine', 'a': 'y'}})
    assert resp.json() == {'metadata': {'os_version': '1', 'a': 'y',
                                        'os_distro': 'mine'}}
    assert proxy.put(path + '/a', {'meta': {'a': 'z'}}).json() == {
        'meta': {'a': 'z'}}
    assert proxy.get(path + '/a').json() == {'meta': {'a': 'z'}}
    assert proxy.delete(path + '/a').status_code == 204
    assert proxy.get(path).json() == {'metadata': {
        'os_version': '1', 'os_distro': 'mine'}}
    assert _image(api, image_id)['os_distro'] == 'mine'
    nova_error(proxy.get(path + '/a'), 404, 'itemNotFound')
    nova_error(proxy.delete(path + '/a'), 404, 'itemNotFound')
    nova_error(proxy.put(path + '/b', {'meta': {'a': 'z'}}), 400,
               'badRequest')
    nova_error(proxy.put('/v2.1/images/%s/metadata' % CIRROS,
                         {'metadata': {}}), 403, 'forbidden')
    nova_error(api.at('2.39').get(path), 404, 'itemNotFound')
    # Another project's user sees none of it.
    nova_error(api.as_user('bob:p2').get(path), 404, 'itemNotFound')
    nova_error(api.as_user('bob:p2').delete(
        '/v2.1/images/%s' % image_id), 404, 'itemNotFound')

    proxy = api.at('2.35')
    nova_error(api.at('2.36').delete('/v2.1/images/%s' % image_id), 404,
               'itemNotFound')
    nova_error(proxy.delete('/v2.1/images/%s' % CIRROS), 403, 'forbidden')
    assert proxy.delete('/v2.1/images/%s' % image_id).status_code == 204
    nova_error(proxy.get('/v2.1/images/%s' % image_id), 404, 'itemNotFound')
    nova_error(proxy.delete('/v2.1/images/%s' % image_id), 404,
               'itemNotFound')


def test_openstack_cli_creates_lists_and_snapshots_images(
        system, openstack_cli, tmp_path):  # noqa: F811
    cli = openstack_cli(system)
    disk = tmp_path / 'disk.img'
    disk.write_bytes(b'\0' * 4096)

    created = json.loads(cli(
        'image', 'create', '--disk-format', 'raw', '--container-format',
        'bare', '--file', str(disk), '--private', '--property',
        'os_distro=mine', '-f', 'json', 'uploaded'))
    assert (created['status'], created['size'], created['visibility']) == (
        'active', 4096, 'private')
    cli('image', 'set', '--name', 'renamed', '--min-ram', '128',
        '--property', 'os_version=1', '--tag', 'blue', 'uploaded')
    shown = json.loads(cli('image', 'show', '-f', 'json', 'renamed'))
    assert (shown['min_ram'], shown['tags'],
            shown['properties']['os_version']) == (128, ['blue'], '1')

    cli('server', 'create', '--flavor', 'm1.tiny', '--image', 'cirros',
        '--no-network', '--wait', 'vm1')
    snapshot = json.loads(cli('server', 'image', 'create', '--name', 'snap',
                              '--wait', '-f', 'json', 'vm1'))
    assert snapshot['status'] == 'active'
    assert snapshot['properties']['image_type'] == 'snapshot'

    listed = json.loads(cli('image', 'list', '-f', 'json'))
    assert sorted(i['Name'] for i in listed) == [
        'cirros', 'fedora-41', 'renamed', 'snap', 'ubuntu-24.04']
    assert [i['Name'] for i in json.loads(cli(
        'image', 'list', '--private', '-f', 'json'))] == ['renamed', 'snap']
    cli('image', 'delete', 'renamed', 'snap')
    assert sorted(i['Name'] for i in json.loads(cli(
        'image', 'list', '-f', 'json'))) == [
        'cirros', 'fedora-41', 'ubuntu-24.04']
