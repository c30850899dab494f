"""The image client: the built-in catalog by default, Glance v2 when
``[glance] source = glance`` (here a small Glance on 127.0.0.1)."""

import hashlib
import io
import json
import os

import pytest
import webob
import webob.dec

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.image import api as image_api
from scheduler_split.image import catalog as images
from scheduler_split.image import client as image_client
from tests import glance as fake_glance
from tests.unit import helpers

ARM_IMAGE = '0d6f3b5e-6c1a-4e9b-8f3d-7a2c1b0e9d44'


@pytest.fixture
def glance():
    arm = fake_glance.image(
        ARM_IMAGE, 'debian-arm', min_ram=256, min_disk=2, tags=['x'],
        architecture='aarch64', hw_qemu_guest_agent=True,
        os_distro='debian')
    with fake_glance.serving(arm) as app:
        yield app


@pytest.fixture
def api_db(tmp_path, override):
    """An API database at head, where the built-in catalog keeps the
    images users make."""
    url = 'sqlite:///' + str(tmp_path / 'api.sqlite')
    helpers.database_at_head('api', tmp_path / 'api.sqlite')
    override('connection', url, group='api_database')
    yield url
    engines.dispose_all()


@pytest.fixture
def user_ctx():
    return context.RequestContext(user_id='u', project_id='p',
                                  auth_token='user-token',
                                  request_id='req-1')


def test_builtin_catalog_answers_by_id_and_by_name():
    cirros = images.find('cirros')[0]

    by_id = image_client.get(context.get_admin_context(), cirros)
    by_name = image_client.get(context.get_admin_context(), 'fedora-41')

    assert by_id['id'] == cirros
    assert by_id['status'] == 'active'
    assert by_id['properties']['hypervisor_type'] == 'fake'
    assert (by_name['min_ram'], by_name['min_disk']) == (1024, 5)


def test_builtin_catalog_does_not_know_other_images(api_db):
    with pytest.raises(exception.ImageNotFound):
        image_client.get(context.get_admin_context(), ARM_IMAGE)


def test_builtin_images_show_their_properties_as_glance_does(api_db):
    request = webob.Request.blank('/image/v2/images')
    body = json.loads(image_api.index(
        request, context.get_admin_context(), None).text)

    cirros = next(i for i in body['images'] if i['name'] == 'cirros')
    assert cirros['os_distro'] == 'cirros'
    assert cirros['hypervisor_type'] == 'fake'
    assert cirros['min_ram'] == 0


def test_glance_api_servers_answer_with_min_ram_disk_and_properties(
        glance, override, user_ctx):
    override('source', 'glance', group='glance')
    override('api_servers', [glance.url], group='glance')

    image = image_client.get(user_ctx, ARM_IMAGE)

    assert image == {
        'id': ARM_IMAGE, 'name': 'debian-arm', 'status': 'active',
        'min_ram': 256, 'min_disk': 2, 'size': 1024, 'owner': None,
        'visibility': 'public', 'protected': False, 'disk_format': 'qcow2',
        'container_format': 'bare', 'created_at': '2026-01-01T00:00:00Z',
        'updated_at': '2026-01-01T00:00:00Z',
        'properties': {'architecture': 'aarch64', 'os_distro': 'debian',
                       'hw_qemu_guest_agent': 'true'}}
    [request] = glance.requests
    assert request.headers['X-Auth-Token'] == 'user-token'
    assert request.headers['X-OpenStack-Request-ID'] == 'req-1'


def test_glance_unknown_image_is_not_found(glance, override, user_ctx):
    override('source', 'glance', group='glance')
    override('api_servers', [glance.url], group='glance')

    with pytest.raises(exception.ImageNotFound):
        image_client.get(user_ctx, images.find('cirros')[0])


def test_glance_endpoint_comes_from_the_tokens_catalog(glance, override,
                                                       user_ctx):
    override('source', 'glance', group='glance')
    override('region_name', 'RegionTwo', group='glance')
    user_ctx.service_catalog = [
        {'type': 'identity', 'endpoints': [
            {'interface': 'public', 'region_id': 'RegionTwo',
             'url': 'http://127.0.0.1:1/identity'}]},
        {'type': 'image', 'endpoints': [
            {'interface': 'public', 'region_id': 'RegionOne',
             'url': 'http://127.0.0.1:1/'},
            {'interface': 'public', 'region_id': 'RegionTwo',
             'url': glance.url + '/v2'}]},
    ]

    assert image_client.get(user_ctx, ARM_IMAGE)['name'] == 'debian-arm'


def test_api_servers_win_over_the_catalog(glance, override, user_ctx):
    override('source', 'glance', group='glance')
    override('api_servers', ['http://127.0.0.1:1', glance.url],
             group='glance')
    user_ctx.service_catalog = [{'type': 'image', 'endpoints': [
        {'interface': 'public', 'url': 'http://127.0.0.1:1'}]}]

    assert image_client.get(user_ctx, ARM_IMAGE)['min_ram'] == 256
    assert len(glance.requests) == 1


def test_no_image_service_anywhere_is_unavailable(override, user_ctx):
    override('source', 'glance', group='glance')
    with pytest.raises(exception.ImageServiceUnavailable):
        image_client.get(user_ctx, ARM_IMAGE)

    override('api_servers', ['http://127.0.0.1:1'], group='glance')
    with pytest.raises(exception.ImageServiceUnavailable):
        image_client.get(user_ctx, ARM_IMAGE)


def _project_ctx(project_id):
    return context.RequestContext(user_id='u-' + project_id,
                                  project_id=project_id)


def test_builtin_snapshot_record_is_active_private_and_gone_once_deleted(
        api_db):
    mine, theirs = _project_ctx('p1'), _project_ctx('p2')

    image = image_client.create_image(
        mine, 'snap', properties={'image_type': 'snapshot', 'n': 3},
        min_disk=1, min_ram=64)

    assert image['status'] == 'active'
    assert (image['size'], image['owner'], image['visibility']) == (
        0, 'p1', 'private')
    assert image['properties'] == {'image_type': 'snapshot', 'n': '3'}
    assert image_client.get(mine, image['id']) == image
    assert image_client.get(context.get_admin_context(),
                            image['id'])['name'] == 'snap'
    with pytest.raises(exception.ImageNotFound):
        image_client.get(theirs, image['id'])
    with pytest.raises(exception.ImageNotFound):
        image_client.delete_image(theirs, image['id'])

    image_client.delete_image(mine, image['id'])

    with pytest.raises(exception.ImageNotFound):
        image_client.get(mine, image['id'])
    with pytest.raises(exception.ImageNotFound):
        image_client.delete_image(mine, image['id'])


def test_builtin_images_cannot_be_deleted_or_changed(api_db, user_ctx):
    cirros = images.find('cirros')[0]
    with pytest.raises(exception.ImageNotAuthorized):
        image_client.delete_image(context.get_admin_context(), cirros)
    with pytest.raises(exception.ImageNotAuthorized):
        image_client.update_properties(user_ctx, cirros, lambda p: {})
    assert image_client.get(user_ctx, 'cirros')['id'] == cirros


def test_builtin_listing_filters_sorts_and_pages_with_the_builtin_images(
        api_db):
    ctx = _project_ctx('p1')
    made = [image_client.create_image(
        ctx, name, properties={'image_type': kind, 'instance_uuid': 'i-1'})
        for name, kind in (('a', 'backup'), ('b', 'snapshot'),
                           ('c', 'backup'))]

    backups = image_client.get_all(
        ctx, filters={'image_type': 'backup', 'instance_uuid': 'i-1'})
    by_name = image_client.get_all(ctx, sort_key='name', sort_dir='asc')
    page = image_client.get_all(ctx, sort_key='name', sort_dir='asc',
                                limit=2, marker=made[2]['id'])

    # Newest first by default.
    assert [i['name'] for i in backups] == ['c', 'a']
    assert [i['name'] for i in by_name] == [
        'a', 'b', 'c', 'cirros', 'fedora-41', 'ubuntu-24.04']
    assert [i['name'] for i in page] == ['cirros', 'fedora-41']
    with pytest.raises(exception.MarkerNotFound):
        image_client.get_all(_project_ctx('p2'), marker=made[0]['id'])


def test_builtin_properties_change_in_one_step(api_db):
    ctx = _project_ctx('p1')
    image = image_client.create_image(ctx, 'snap',
                                      properties={'a': '1', 'b': '2'})

    changed = image_client.update_properties(
        ctx, image['id'], lambda current: dict(current, c='3', a='0'))

    assert changed['properties'] == {'a': '0', 'b': '2', 'c': '3'}


@pytest.fixture
def glance_source(glance, override):
    override('source', 'glance', group='glance')
    override('api_servers', [glance.url], group='glance')
    return glance


def test_glance_snapshot_record_is_created_then_uploaded_empty(
        glance_source, user_ctx):
    image = image_client.create_image(
        user_ctx, 'snap', properties={'image_type': 'snapshot'}, min_ram=64)

    assert (image['status'], image['size'], image['min_ram']) == (
        'active', 0, 64)
    assert image['properties']['image_type'] == 'snapshot'
    create, upload, show = glance_source.requests
    assert (create.method, create.path) == ('POST', '/v2/images')
    assert json.loads(create.body) == {
        'name': 'snap', 'image_type': 'snapshot', 'min_disk': 0,
        'min_ram': 64, 'disk_format': 'qcow2', 'container_format': 'bare',
        'visibility': 'private'}
    assert (upload.method, upload.path, upload.content_type, upload.body) \
        == ('PUT', '/v2/images/%s/file' % image['id'],
            'application/octet-stream', b'')
    assert upload.headers['X-Auth-Token'] == 'user-token'
    assert (show.method, show.path) == ('GET', '/v2/images/%s' % image['id'])


def test_glance_delete_of_an_image_already_gone_is_not_found(
        glance_source, user_ctx):
    image_client.delete_image(user_ctx, ARM_IMAGE)

    with pytest.raises(exception.ImageNotFound):
        image_client.delete_image(user_ctx, ARM_IMAGE)
    assert [(r.method, r.path) for r in glance_source.requests] == [
        ('DELETE', '/v2/images/%s' % ARM_IMAGE)] * 2


def test_glance_listing_reads_every_page_with_its_filters(glance_source,
                                                          user_ctx):
    for name in ('a', 'b', 'c'):
        image_client.create_image(user_ctx, name,
                                  properties={'image_type': 'backup'})
    glance_source.requests.clear()

    found = image_client.get_all(user_ctx, filters={'image_type': 'backup'})
    limited = image_client.get_all(user_ctx, filters={'image_type':
                                                      'backup'}, limit=2)

    assert [i['name'] for i in found] == ['c', 'b', 'a']
    assert [i['name'] for i in limited] == ['c', 'b']
    assert all(r.GET['image_type'] == 'backup'
               for r in glance_source.requests)


def test_glance_properties_change_as_a_json_patch_of_the_difference(
        glance_source, user_ctx):
    image = image_client.update_properties(
        user_ctx, ARM_IMAGE,
        lambda current: {'os_distro': 'debian', 'new': 'x',
                         'architecture': 'x86_64'})

    patch = glance_source.requests[-1]
    assert patch.method == 'PATCH'
    assert patch.content_type == (
        'application/openstack-images-v2.1-json-patch')
    assert sorted(json.loads(patch.body), key=lambda c: c['path']) == [
        {'op': 'add', 'path': '/architecture', 'value': 'x86_64'},
        {'op': 'remove', 'path': '/hw_qemu_guest_agent'},
        {'op': 'add', 'path': '/new', 'value': 'x'}]
    assert image['properties'] == {'os_distro': 'debian', 'new': 'x',
                                   'architecture': 'x86_64'}


# --- image data: kept by the built-in catalog, moved over HTTP ---------------

DATA = bytes(range(256)) * 10


@pytest.fixture
def store(api_db, tmp_path, override):
    """``[glance] builtin_store_dir``: where the catalog keeps the data."""
    path = tmp_path / 'images'
    override('builtin_store_dir', str(path), group='glance')
    return path


def _queued(ctx, name='disk'):
    return images.create_image(ctx, {'name': name, 'disk_format': 'raw',
                                     'container_format': 'bare'})


def test_builtin_upload_keeps_the_data_under_the_images_id(store):
    ctx = _project_ctx('p1')
    image = _queued(ctx)

    uploaded = images.upload_image(ctx, image['id'], io.BytesIO(DATA))

    assert (uploaded['status'], uploaded['size'], uploaded['checksum']) == (
        'active', len(DATA), hashlib.md5(DATA).hexdigest())
    assert os.listdir(store) == [image['id']]
    path = images.image_data_path(ctx, image['id'])
    assert path == str(store / image['id'])
    with open(path, 'rb') as f:
        assert f.read() == DATA
    with pytest.raises(exception.ImageNotFound):
        images.image_data_path(_project_ctx('p2'), image['id'])

    images.delete_image(ctx, image['id'])

    assert os.listdir(store) == []


def test_builtin_upload_that_fails_leaves_no_file_and_the_image_queued(
        store):
    ctx = _project_ctx('p1')
    image = _queued(ctx)

    class BreaksOff(io.BytesIO):
        def read(self, size=-1):
            if self.tell():
                raise OSError('the client went away')
            return super().read(100)

    with pytest.raises(OSError):
        images.upload_image(ctx, image['id'], BreaksOff(DATA))

    assert os.listdir(store) == []
    assert images.get_image(ctx, image['id'])['status'] == 'queued'
    assert images.image_data_path(ctx, image['id']) is None


def test_builtin_second_upload_is_refused_and_keeps_the_first_data(store):
    ctx = _project_ctx('p1')
    image = _queued(ctx)
    images.upload_image(ctx, image['id'], io.BytesIO(DATA))

    with pytest.raises(exception.ImageStatusConflict):
        images.upload_image(ctx, image['id'], io.BytesIO(b'other'))

    assert os.listdir(store) == [image['id']]
    assert (store / image['id']).read_bytes() == DATA


def test_builtin_upload_of_an_image_deleted_meanwhile_keeps_no_data(
        store, monkeypatch):
    ctx = _project_ctx('p1')
    image = _queued(ctx)
    record = images.image_obj.upload

    def recorded_then_deleted(*args):
        uploaded = record(*args)
        images.delete_image(ctx, image['id'])
        return uploaded
    monkeypatch.setattr(images.image_obj, 'upload', recorded_then_deleted)

    with pytest.raises(exception.ImageNotFound):
        images.upload_image(ctx, image['id'], io.BytesIO(DATA))

    assert os.listdir(store) == []


def test_builtin_data_is_not_kept_without_a_store_and_built_ins_have_none(
        api_db):
    ctx = _project_ctx('p1')
    image = _queued(ctx)

    uploaded = images.upload_image(ctx, image['id'], io.BytesIO(DATA))

    assert uploaded['size'] == len(DATA)
    assert images.image_data_path(ctx, image['id']) is None
    assert images.image_data_path(ctx, images.find('cirros')[0]) is None


def test_image_api_streams_the_file_with_glances_headers(store):
    ctx = _project_ctx('p1')
    image = _queued(ctx)
    data = DATA * 100
    images.upload_image(ctx, image['id'], io.BytesIO(data))

    response = image_api.download(
        webob.Request.blank('/image/v2/images/%s/file' % image['id']), ctx,
        None, image_id=image['id'])

    assert response.status_int == 200
    assert (response.headers['Content-Type'],
            response.headers['Content-Length'],
            response.headers['Content-MD5']) == (
        'application/octet-stream', str(len(data)),
        hashlib.md5(data).hexdigest())
    chunks = list(response.app_iter)
    assert len(chunks) > 1
    assert b''.join(chunks) == data
    response.app_iter.close()
    assert response.app_iter.file.closed


class GlanceWithData(fake_glance.FakeGlance):
    """The small Glance, which also keeps the data uploaded to an image
    and serves it back with Glance's headers (204 before any upload);
    ``data`` may be changed behind the records' back, and
    ``short_by`` makes it send that many bytes fewer than its
    Content-Length says."""

    def __init__(self, *images):
        super().__init__(*images)
        self.data = {}
        self.short_by = 0

    @webob.dec.wsgify
    def __call__(self, req):
        parts = req.path.strip('/').split('/')
        image = self.images.get(parts[2]) if len(parts) == 4 else None
        if image is None or parts[3] != 'file':
            return super().__call__(req)
        self.requests.append(req.copy())
        if req.method == 'PUT':
            if image['status'] != 'queued':
                return webob.Response(status=409, text='409 Conflict')
            self.data[image['id']] = req.body
            image.update(status='active', size=len(req.body),
                         checksum=hashlib.md5(req.body).hexdigest())
            return webob.Response(status=204)
        if image['id'] not in self.data:
            return webob.Response(status=204)
        data = self.data[image['id']]
        response = webob.Response(
            body=data[:len(data) - self.short_by],
            content_type='application/octet-stream')
        response.headers['Content-Length'] = str(len(data))
        if image.get('checksum'):
            response.headers['Content-MD5'] = image['checksum']
        return response


QUEUED_IMAGE = '1e7a4c6f-7d2b-4f0c-9a4e-8b3d2c1f0e55'


@pytest.fixture
def glance_data(override, monkeypatch):
    """``[glance] source = glance`` at a Glance serving the data of image
    ARM_IMAGE (some 1.5 MiB, more than one chunk) and QUEUED_IMAGE, which
    has none yet."""
    monkeypatch.setattr(fake_glance, 'FakeGlance', GlanceWithData)
    data = DATA * 615
    arm = fake_glance.image(ARM_IMAGE, 'debian-arm', size=len(data),
                            checksum=hashlib.md5(data).hexdigest())
    queued = fake_glance.image(QUEUED_IMAGE, 'snap', status='queued',
                               size=None)
    with fake_glance.serving(arm, queued) as app:
        app.data[ARM_IMAGE] = data
        override('source', 'glance', group='glance')
        override('api_servers', [app.url], group='glance')
        yield app


def _leftovers(directory):
    return [name for name in os.listdir(directory) if name.endswith('.part')]


def test_download_writes_the_data_and_returns_the_image(
        glance_data, user_ctx, tmp_path):
    target = tmp_path / 'disk'

    image = image_client.download(user_ctx, ARM_IMAGE, str(target))

    assert target.read_bytes() == glance_data.data[ARM_IMAGE]
    assert (image['id'], image['size']) == (
        ARM_IMAGE, len(glance_data.data[ARM_IMAGE]))
    show, data = glance_data.requests
    assert (data.method, data.path) == ('GET',
                                        '/v2/images/%s/file' % ARM_IMAGE)
    assert data.headers['X-Auth-Token'] == 'user-token'
    assert data.headers['X-OpenStack-Request-ID'] == 'req-1'
    assert _leftovers(tmp_path) == []


def test_download_tries_the_next_endpoint(glance_data, override, user_ctx,
                                          tmp_path):
    override('api_servers', ['http://127.0.0.1:1', glance_data.url],
             group='glance')

    image_client.download(user_ctx, ARM_IMAGE, str(tmp_path / 'disk'))

    assert (tmp_path / 'disk').read_bytes() == glance_data.data[ARM_IMAGE]


@pytest.mark.parametrize('data, wrong', [
    (DATA[:-1], 'is 2559 bytes, its record says 2560'),
    (DATA[::-1], 'the md5 of its data is'),
])
def test_download_of_data_unlike_its_record_is_refused(
        glance_data, user_ctx, tmp_path, data, wrong):
    glance_data.images[ARM_IMAGE].update(
        size=len(DATA), checksum=hashlib.md5(DATA).hexdigest())
    glance_data.data[ARM_IMAGE] = data
    target = tmp_path / 'disk'

    with pytest.raises(exception.ImageUnacceptable) as raised:
        image_client.download(user_ctx, ARM_IMAGE, str(target))

    assert wrong in str(raised.value)
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_download_that_breaks_off_is_unavailable_and_leaves_nothing(
        glance_data, user_ctx, tmp_path):
    glance_data.short_by = 1000

    with pytest.raises(exception.ImageServiceUnavailable) as raised:
        image_client.download(user_ctx, ARM_IMAGE, str(tmp_path / 'disk'))

    assert 'broke off' in str(raised.value)
    assert os.listdir(tmp_path) == []


def test_download_of_an_image_without_data_or_unknown_is_refused(
        glance_data, user_ctx, tmp_path):
    with pytest.raises(exception.ImageUnacceptable, match='has no data'):
        image_client.download(user_ctx, QUEUED_IMAGE, str(tmp_path / 'disk'))
    with pytest.raises(exception.ImageNotFound):
        image_client.download(user_ctx, images.find('cirros')[0],
                              str(tmp_path / 'disk'))
    assert os.listdir(tmp_path) == []


def test_upload_puts_the_file_and_returns_the_active_image(
        glance_data, user_ctx, tmp_path):
    source = tmp_path / 'snapshot'
    source.write_bytes(DATA * 500)

    image = image_client.upload(user_ctx, QUEUED_IMAGE, str(source))

    assert (image['status'], image['size']) == ('active', len(DATA) * 500)
    assert glance_data.data[QUEUED_IMAGE] == DATA * 500
    put = next(r for r in glance_data.requests if r.method == 'PUT')
    assert (put.path, put.content_type, put.content_length) == (
        '/v2/images/%s/file' % QUEUED_IMAGE, 'application/octet-stream',
        len(DATA) * 500)
    assert put.headers['X-Auth-Token'] == 'user-token'
    with pytest.raises(exception.ImageStatusConflict):
        image_client.upload(user_ctx, QUEUED_IMAGE, str(source))
