"""``/servers/{id}/os-server-password``: the password a Windows guest's
users log in with, encrypted for the server's key pair as cloudbase-init
encrypts it, and empty for every other server."""

import base64

from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import serialization
import pytest

from scheduler_split.image import catalog as images
from scheduler_split.image import client as image_client
from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

WINDOWS = 'd3f6b5d9-3c7b-4fbd-8a4b-6f4e1c5dab04'


@pytest.fixture
def windows_image(monkeypatch):
    """A Windows image in the image service, beside the catalog's."""
    served = image_client.get

    def get(ctx, image_ref):
        if image_ref in (WINDOWS, 'windows-2022'):
            return {'id': WINDOWS, 'name': 'windows-2022',
                    'status': 'active', 'min_ram': 0, 'min_disk': 0,
                    'properties': {'os_type': 'windows',
                                   'os_distro': 'windows',
                                   'hypervisor_type': 'fake'}}
        return served(ctx, image_ref)

    monkeypatch.setattr(image_client, 'get', get)
    return WINDOWS


@pytest.fixture
def system(start_system, windows_image):
    return start_system(cells=1, hosts_per_cell=1)


@pytest.fixture
def api(system):
    return system.api


def _import_key(api, name, private_key):
    public = private_key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    resp = api.post('/v2.1/os-keypairs', {'keypair': {
        'name': name, 'public_key': public}})
    assert resp.status_code in (200, 201), resp.text
    return private_key


def _rsa_key(api, name='rsa'):
    return _import_key(api, name, rsa.generate_private_key(
        public_exponent=65537, key_size=2048))


def _boot(api, image, admin_pass, key_name=None):
    body = {'name': 'vm', 'flavorRef': '1', 'imageRef': image,
            'networks': 'none', 'adminPass': admin_pass}
    if key_name:
        body['key_name'] = key_name
    resp = api.post('/v2.1/servers', {'server': body})
    assert resp.status_code == 202, resp.text
    server_id = resp.json()['server']['id']
    api.wait_for(server_id, ('ACTIVE',))
    return server_id


def _password(api, server_id):
    resp = api.get('/v2.1/servers/%s/os-server-password' % server_id)
    assert resp.status_code == 200, resp.text
    assert list(resp.json()) == ['password']
    return resp.json()['password']


def _decrypt(private_key, password):
    return private_key.decrypt(base64.b64decode(password),
                               padding.PKCS1v15()).decode()


def test_a_windows_server_keeps_its_password_encrypted_for_its_key(api):
    key = _rsa_key(api)

    server_id = _boot(api, WINDOWS, 'Secret-1234', key_name='rsa')

    # What `nova get-password SERVER PRIVATE_KEY` decrypts.
    assert _decrypt(key, _password(api, server_id)) == 'Secret-1234'


@pytest.mark.parametrize('image, key_name', [
    # Not a Windows image: no guest posts a password.
    (images.find('cirros')[0], 'rsa'),
    # No key pair, or one that cannot encrypt: cloudbase-init posts none.
    (WINDOWS, None),
    (WINDOWS, 'ed25519'),
])
def test_any_other_servers_password_is_empty(api, image, key_name):
    _rsa_key(api)
    _import_key(api, 'ed25519', ed25519.Ed25519PrivateKey.generate())

    server_id = _boot(api, image, 'Secret-1234', key_name=key_name)

    assert _password(api, server_id) == ''


def test_clearing_the_password_forgets_it(api):
    _rsa_key(api)
    server_id = _boot(api, WINDOWS, 'Secret-1234', key_name='rsa')
    assert _password(api, server_id)

    resp = api.delete('/v2.1/servers/%s/os-server-password' % server_id)

    assert resp.status_code == 204, resp.text
    assert resp.text == ''
    assert _password(api, server_id) == ''
    # Clearing nothing is a 204 too.
    assert api.delete('/v2.1/servers/%s/os-server-password'
                      % server_id).status_code == 204


def test_a_rebuild_keeps_the_new_password_only_for_a_windows_image(api):
    key = _rsa_key(api)
    server_id = _boot(api, WINDOWS, 'Secret-1234', key_name='rsa')

    def rebuild(image, admin_pass):
        resp = api.post('/v2.1/servers/%s/action' % server_id, {
            'rebuild': {'imageRef': image, 'adminPass': admin_pass}})
        assert resp.status_code == 202, resp.text
        api.wait_for(server_id, ('ACTIVE',))

    rebuild(WINDOWS, 'Other-5678')
    assert _decrypt(key, _password(api, server_id)) == 'Other-5678'
    rebuild(images.find('cirros')[0], 'Third-9012')
    assert _password(api, server_id) == ''


def test_the_password_is_for_the_servers_project(system):
    mine = system.api.as_user('u1:p1')
    _rsa_key(mine)
    server_id = _boot(mine, WINDOWS, 'Secret-1234', key_name='rsa')
    path = '/v2.1/servers/%s/os-server-password' % server_id

    # Another project does not see the server at all.
    other = system.api.as_user('u2:p2')
    nova_error(other.get(path), 404, 'itemNotFound')
    nova_error(other.delete(path), 404, 'itemNotFound')
    # A reader of its project reads it; clearing it takes a member.
    reader = system.as_keystone_user('u3', 'p1', ['reader'])
    assert reader.get(path).status_code == 200
    nova_error(reader.delete(path), 403, 'forbidden')
    assert _password(mine, server_id)
    assert system.api.delete(path).status_code == 204
