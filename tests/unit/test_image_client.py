"""The image client: the built-in catalog by default, Glance v2 when
``[glance] source = glance`` (here a small Glance on 127.0.0.1)."""

import json

import pytest
import webob

from scheduler_split.api import image_client
from scheduler_split.api import images
from scheduler_split import context
from scheduler_split import exception
from tests import glance as fake_glance

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


def test_builtin_catalog_does_not_know_other_images():
    with pytest.raises(exception.ImageNotFound):
        image_client.get(context.get_admin_context(), ARM_IMAGE)


def test_builtin_images_show_their_properties_as_glance_does():
    request = webob.Request.blank('/image/v2/images')
    body = json.loads(images.list_images(request, None, None).text)

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
        'min_ram': 256, 'min_disk': 2,
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
