"""The built-in image catalog through its Image API v2 (``/image``): what
Tempest's image client and ``openstack image ...`` see."""

import hashlib
import json
import os

import pytest

from scheduler_split import conf
from scheduler_split import context
from scheduler_split import exception
from scheduler_split.image import catalog as images
from scheduler_split.image import client as image_client

CONF = conf.CONF
pytestmark = pytest.mark.functional

PATCH = 'application/openstack-images-v2.1-json-patch'
CIRROS = images.find('cirros')[0]


def _create(api, **fields):
    body = {'name': 'mine', 'disk_format': 'raw',
            'container_format': 'bare'}
    body.update(fields)
    resp = api.post('/image/v2/images', body)
    assert resp.status_code == 201, resp.text
    return resp.json()


def _upload(api, image_id, data=b'*' * 1024):
    return api.request('PUT', '/image/v2/images/%s/file' % image_id,
                       data=data,
                       headers={'Content-Type': 'application/octet-stream'})


def _patch(api, image_id, changes, content_type=PATCH):
    return api.request('PATCH', '/image/v2/images/%s' % image_id,
                       data=json.dumps(changes),
                       headers={'Content-Type': content_type})


def _names(api, **params):
    resp = api.get('/image/v2/images', params=params)
    assert resp.status_code == 200, resp.text
    return [i['name'] for i in resp.json()['images']]


def _glance_error(resp, status):
    """The message of an error in Glance's (webob's JSON) shape."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body['code'].startswith(str(status)), body
    return body['message']


@pytest.fixture
def api(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    # Glance's errors come in the format the request accepts.
    system.api.session.headers['Accept'] = 'application/json'
    return system.api


def test_an_image_is_queued_until_its_data_is_uploaded(api):
    image = _create(api, visibility='private', os_distro='mine')
    assert (image['status'], image['size'], image['owner']) == (
        'queued', None, 'admin')
    assert image['os_distro'] == 'mine'
    assert api.get('/image/v2/images/%s/file' % image['id']).status_code \
        == 204

    resp = _upload(api, image['id'])

    assert resp.status_code == 204, resp.text
    shown = api.get('/image/v2/images/%s' % image['id']).json()
    assert shown['status'] == 'active'
    assert shown['size'] == 1024
    assert shown['checksum'] == hashlib.md5(b'*' * 1024).hexdigest()
    assert shown['os_hash_value'] == hashlib.sha512(
        b'*' * 1024).hexdigest()
    assert 'not allowed' in _glance_error(_upload(api, image['id']), 409)
    assert api.request('PUT', '/image/v2/images/%s/file' % image['id'],
                       data=b'x', headers={
                           'Content-Type': 'text/plain'}).status_code == 415


def test_a_private_image_is_seen_by_its_project_and_the_admins_only(api):
    alice, bob = api.as_user('alice:p1'), api.as_user('bob:p2')
    for user in (alice, bob):
        user.session.headers['Accept'] = 'application/json'
    private = _create(alice, name='private', visibility='private')
    shared = _create(alice, name='shared')
    community = _create(alice, name='community', visibility='community')

    assert shared['visibility'] == 'shared'
    assert set(_names(alice)) >= {'private', 'shared', 'community'}
    assert not {'private', 'shared', 'community'} & set(_names(bob))
    assert _names(bob, visibility='community') == ['community']
    assert set(_names(api)) >= {'private', 'shared'}
    for image in (private, shared):
        path = '/image/v2/images/%s' % image['id']
        _glance_error(bob.get(path), 404)
        _glance_error(bob.delete(path), 404)
        _glance_error(_patch(bob, image['id'], [
            {'op': 'replace', 'path': '/name', 'value': 'x'}]), 404)
        assert api.get(path).status_code == 200
    # A community image is seen by all, changed by its project only.
    _glance_error(_patch(bob, community['id'], [
        {'op': 'replace', 'path': '/name', 'value': 'x'}]), 403)
    # Only an admin makes an image public, or one of another project.
    _glance_error(bob.post('/image/v2/images', {'visibility': 'public'}),
                  403)
    _glance_error(bob.post('/image/v2/images', {'owner': 'p1'}), 403)
    _glance_error(_patch(alice, private['id'], [
        {'op': 'replace', 'path': '/visibility', 'value': 'public'}]), 403)
    assert _create(api, name='public', visibility='public',
                   owner='p1')['owner'] == 'p1'
    assert 'public' in _names(bob)


def test_a_patch_adds_replaces_and_removes_fields_and_properties(api):
    image = _create(api, flavour='vanilla')

    resp = _patch(api, image['id'], [
        {'op': 'replace', 'path': '/name', 'value': 'renamed'},
        {'op': 'add', 'path': '/min_ram', 'value': 512},
        {'op': 'replace', 'path': '/min_disk', 'value': 2},
        {'op': 'add', 'path': '/os_distro', 'value': 'cirros'},
        {'op': 'remove', 'path': '/flavour'},
        {'op': 'replace', 'path': '/tags', 'value': ['a', 'b']}])

    assert resp.status_code == 200, resp.text
    patched = resp.json()
    assert (patched['name'], patched['min_ram'], patched['min_disk'],
            patched['os_distro'], patched['tags']) == (
        'renamed', 512, 2, 'cirros', ['a', 'b'])
    assert 'flavour' not in patched
    assert api.get('/image/v2/images/%s' % image['id']).json() == patched
    for changes, status in (
            ([{'op': 'remove', 'path': '/name'}], 403),
            ([{'op': 'replace', 'path': '/status', 'value': 'active'}], 403),
            ([{'op': 'replace', 'path': '/nothing', 'value': 'x'}], 409),
            ([{'op': 'remove', 'path': '/nothing'}], 409),
            ([{'op': 'add', 'path': '/min_ram', 'value': -1}], 400),
            ([{'op': 'add', 'path': '/custom', 'value': 1}], 400),
            ([{'op': 'move', 'path': '/name'}], 400),
            ({'op': 'add'}, 400)):
        _glance_error(_patch(api, image['id'], changes), status)
    resp = _patch(api, image['id'], [], content_type='application/json')
    assert resp.status_code == 415
    assert PATCH in resp.headers['Accept-Patch']


def test_a_protected_image_is_deleted_only_once_unprotected(api):
    image = _create(api, protected=True)
    path = '/image/v2/images/%s' % image['id']

    assert 'protected' in _glance_error(api.delete(path), 403)
    assert _patch(api, image['id'], [
        {'op': 'replace', 'path': '/protected', 'value': False}
    ]).status_code == 200
    assert api.delete(path).status_code == 204

    _glance_error(api.get(path), 404)
    _glance_error(api.delete(path), 404)
    assert 'mine' not in _names(api)
    # Its id is never given again.
    _glance_error(api.post('/image/v2/images', {'id': image['id']}), 409)


def test_the_built_in_images_are_listed_and_read_only(api):
    path = '/image/v2/images/%s' % CIRROS

    assert {'cirros', 'ubuntu-24.04', 'fedora-41'} <= set(
        _names(api.as_user('bob:p2')))
    assert 'built-in' in _glance_error(api.delete(path), 403)
    _glance_error(_patch(api, CIRROS, [
        {'op': 'replace', 'path': '/name', 'value': 'x'}]), 403)
    _glance_error(api.put(path + '/tags/x'), 403)
    _glance_error(_upload(api, CIRROS), 403)
    _glance_error(api.post('/image/v2/images', {'id': CIRROS}), 409)
    assert api.get(path).json()['name'] == 'cirros'


def test_tags_are_added_and_removed_one_by_one(api):
    image = _create(api)
    path = '/image/v2/images/%s/tags/' % image['id']

    assert api.put(path + 'x86').status_code == 204
    assert api.put(path + 'x86').status_code == 204
    assert api.put(path + 'gpu').status_code == 204
    assert sorted(api.get('/image/v2/images/%s' % image['id']).json()[
        'tags']) == ['gpu', 'x86']
    assert _names(api, tag='gpu') == ['mine']
    assert api.delete(path + 'gpu').status_code == 204
    _glance_error(api.delete(path + 'gpu'), 404)
    assert _names(api, tag='gpu') == []


def test_a_listing_filters_sorts_and_pages_as_glance(api):
    for name in ('b', 'a', 'c'):
        image = _create(api, name=name, os_distro='distro-' + name)
        if name != 'c':
            _upload(api, image['id'])

    assert _names(api, status='queued') == ['c']
    assert _names(api, name='a') == ['a']
    assert _names(api, name='in:a,b', sort='name:asc') == ['a', 'b']
    assert _names(api, os_distro='distro-b') == ['b']
    # Newest first by default; the built-in images are the oldest.
    assert _names(api)[:3] == ['c', 'a', 'b']
    assert _names(api, sort_key='name', sort_dir='asc') == [
        'a', 'b', 'c', 'cirros', 'fedora-41', 'ubuntu-24.04']

    first = api.get('/image/v2/images', params={
        'sort_key': 'name', 'sort_dir': 'asc', 'limit': 4}).json()
    assert [i['name'] for i in first['images']] == ['a', 'b', 'c', 'cirros']
    second = api.get('/image' + first['next']).json()
    assert [i['name'] for i in second['images']] == [
        'fedora-41', 'ubuntu-24.04']
    assert 'next' not in second
    for params in ({'sort_key': 'owner'}, {'limit': 'x'},
                   {'marker': 'no-such-image'}, {'visibility': 'x'},
                   {'changes-since': '2026-01-01T00:00:00Z'},
                   {'created_at': 'soon:2026-01-01T00:00:00Z'}):
        _glance_error(api.get('/image/v2/images', params=params), 400)


def test_schemas_describe_an_image_and_a_listing(api):
    image = api.get('/image/v2/schemas/image').json()
    listing = api.get('/image/v2/schemas/images').json()

    assert image['name'] == 'image'
    assert image['additionalProperties'] == {'type': 'string'}
    assert listing['properties']['images']['items'] == image


# --- image data --------------------------------------------------------------

DATA = bytes(range(256)) * 20


def _file(api, image_id):
    return api.get('/image/v2/images/%s/file' % image_id)


def _stored(image_id=None):
    """The files of the all-in-one's image store (its temporary ones
    too), or the data of image ``image_id`` there."""
    store = CONF.glance.builtin_store_dir
    if image_id is None:
        return sorted(os.listdir(store))
    with open(os.path.join(store, image_id), 'rb') as f:
        return f.read()


@pytest.fixture
def compute_ctx(api, override):
    """What a compute host has: no database, the API's /image as its
    Image API (``[glance] api_servers``), and the user's token."""
    override('api_servers', [api.base_url + '/image'], group='glance')
    return context.RequestContext(user_id='admin', project_id='admin',
                                  auth_token='admin:admin',
                                  request_id='req-compute')


def test_uploaded_data_is_served_back_with_glances_headers_until_deleted(
        api, tmp_path):
    image = _create(api)
    assert _upload(api, image['id'], DATA).status_code == 204

    resp = _file(api, image['id'])

    assert resp.status_code == 200
    assert resp.content == DATA
    assert (resp.headers['Content-Type'], resp.headers['Content-Length'],
            resp.headers['Content-MD5']) == (
        'application/octet-stream', str(len(DATA)),
        hashlib.md5(DATA).hexdigest())
    # Kept beside the all-in-one's databases, under the image's id.
    assert CONF.glance.builtin_store_dir == str(tmp_path / 'state' /
                                                'images')
    assert _stored() == [image['id']]
    assert _file(api, CIRROS).status_code == 204

    assert api.delete('/image/v2/images/%s' % image['id']).status_code \
        == 204

    _glance_error(_file(api, image['id']), 404)
    assert _stored() == []


def test_a_compute_host_downloads_and_uploads_image_data_over_the_api(
        api, compute_ctx, tmp_path):
    image = _create(api)
    _upload(api, image['id'], DATA)
    disk = tmp_path / 'disk'

    downloaded = image_client.download(compute_ctx, image['id'], str(disk))

    assert disk.read_bytes() == DATA
    assert (downloaded['id'], downloaded['status'], downloaded['size']) == (
        image['id'], 'active', len(DATA))

    snapshot = _create(api, name='snapshot')
    uploaded = image_client.upload(compute_ctx, snapshot['id'], str(disk))

    assert (uploaded['status'], uploaded['size']) == ('active', len(DATA))
    shown = api.get('/image/v2/images/%s' % snapshot['id']).json()
    assert (shown['checksum'], shown['os_hash_value']) == (
        hashlib.md5(DATA).hexdigest(), hashlib.sha512(DATA).hexdigest())
    assert _file(api, snapshot['id']).content == DATA
    assert _stored() == sorted([image['id'], snapshot['id']])


def test_a_download_unlike_its_image_record_is_refused(api, compute_ctx,
                                                       tmp_path):
    image = _create(api)
    _upload(api, image['id'], DATA)
    path = os.path.join(CONF.glance.builtin_store_dir, image['id'])
    disks = tmp_path / 'compute'
    disks.mkdir()
    disk = disks / 'disk'

    for corrupt, wrong in ((DATA[:-10], 'its data is 5110 bytes, its '
                                        'record says 5120'),
                           (DATA[::-1], 'the md5 of its data is')):
        with open(path, 'wb') as f:
            f.write(corrupt)
        with pytest.raises(exception.ImageUnacceptable, match=wrong):
            image_client.download(compute_ctx, image['id'], str(disk))
        assert os.listdir(disks) == []
    with pytest.raises(exception.ImageUnacceptable, match='has no data'):
        image_client.download(compute_ctx, CIRROS, str(disk))
