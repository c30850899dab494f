"""Images at boot: the flavor must fit the image's min_ram and min_disk,
and the image's properties steer the scheduler (ImagePropertiesFilter),
with the built-in catalog or an Image service."""

import pytest

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import objects
from tests.functional.fixtures import nova_error
from tests import glance as fake_glance

CONF = conf.CONF
pytestmark = pytest.mark.functional

SPARC_IMAGE = '5f0c9e1d-2b3a-4c5d-8e6f-7a8b9c0d1e2f'
NATIVE_IMAGE = '6a1d0f2e-3c4b-4d6e-9f70-8b9c0d1e2f30'
BIG_IMAGE = '7b2e1a3f-4d5c-4e7f-8a81-9c0d1e2f3a41'


def _boot(api, image, flavor='1'):
    return api.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': flavor, 'imageRef': image,
        'networks': 'none'}})


@pytest.fixture
def glance_source():
    """``[glance] source = glance`` at a small Glance serving ``images``."""
    started = []

    def start(*images):
        serving = fake_glance.serving(*images)
        app = serving.__enter__()
        started.append(serving)
        CONF.set_override('source', 'glance', group='glance')
        CONF.set_override('api_servers', [app.url], group='glance')
        return app

    yield start
    CONF.clear_override('api_servers', group='glance')
    CONF.clear_override('source', group='glance')
    for serving in started:
        serving.__exit__(None, None, None)


def test_a_flavor_below_the_images_min_ram_or_min_disk_is_refused(
        start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    from scheduler_split.image import catalog as images

    # fedora-41 wants 1024 MiB; m1.tiny has 512.
    message = nova_error(_boot(api, images.find('fedora-41')[0]), 400,
                         'badRequest')
    assert message == "Flavor's memory is too small for requested image."
    # fedora-41 also wants a 5 GiB root disk: 2 GiB RAM do not make up
    # for a 1 GiB disk, and a flavor without a root disk (0) takes any.
    for flavorid, root_gb in (('small-disk', 1), ('no-disk', 0)):
        objects.Flavor(flavorid=flavorid, name=flavorid, memory_mb=2048,
                       vcpus=1, root_gb=root_gb, ephemeral_gb=0, swap=0,
                       rxtx_factor=1.0, is_public=True,
                       disabled=False).create(ss_context.get_admin_context())
    message = nova_error(_boot(api, images.find('fedora-41')[0],
                               flavor='small-disk'), 400, 'badRequest')
    assert message == "Flavor's disk is too small for requested image."
    assert nova_error(_boot(api, 'no-such-image'), 400,
                      'badRequest') == 'Can not find requested image'
    assert api.servers() == []

    # m1.small (2048 MiB, 20 GiB) fits; ubuntu-24.04's 512 MiB fit
    # m1.tiny.
    for flavor, image in (('2', 'fedora-41'), ('no-disk', 'fedora-41'),
                          ('1', 'ubuntu-24.04')):
        server = api.wait_for(api.boot(flavor=flavor, image=image))
        assert server['status'] == 'ACTIVE', (flavor, image)


def test_an_image_for_an_architecture_no_host_has_ends_in_no_valid_host(
        start_system, glance_source):
    glance = glance_source(
        fake_glance.image(SPARC_IMAGE, 'sparc', architecture='sparc64'),
        fake_glance.image(NATIVE_IMAGE, 'native',
                          architecture=CONF.fake_driver.cpu_arch,
                          hypervisor_type='fake'))
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api

    resp = _boot(api, SPARC_IMAGE)
    assert resp.status_code == 202, resp.text
    server = api.wait_for(resp.json()['server']['id'])
    assert server['status'] == 'ERROR'
    assert 'No valid host' in server['fault']['message']
    assert system.cell_of(server['id']) == 'cell0'

    resp = _boot(api, NATIVE_IMAGE)
    assert resp.status_code == 202, resp.text
    server = api.wait_for(resp.json()['server']['id'])
    assert server['status'] == 'ACTIVE'
    assert server['image']['id'] == NATIVE_IMAGE
    # The API read each image from the Image service, once.
    assert [r.path for r in glance.requests] == [
        '/v2/images/%s' % SPARC_IMAGE, '/v2/images/%s' % NATIVE_IMAGE]


def test_an_image_services_min_ram_and_unknown_images_are_refused(
        start_system, glance_source):
    glance_source(fake_glance.image(BIG_IMAGE, 'big', min_ram=4096))
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    from scheduler_split.image import catalog as images

    message = nova_error(_boot(api, BIG_IMAGE, flavor='2'), 400,
                         'badRequest')
    assert message == "Flavor's memory is too small for requested image."
    # The built-in catalog is not read once an Image service is.
    assert nova_error(_boot(api, images.find('cirros')[0]), 400,
                      'badRequest') == 'Can not find requested image'
    server = api.wait_for(api.post('/v2.1/servers', {'server': {
        'name': 'vm', 'flavorRef': '3', 'imageRef': BIG_IMAGE,
        'networks': 'none'}}).json()['server']['id'])
    assert server['status'] == 'ACTIVE'
