"""What a user does with the compute API: find a flavor by name and an
image in the built-in catalog, boot a server and wait for it, as
``admin:admin`` through noauth2."""

import time

import requests

from scheduler_split.image import catalog as images

HEADERS = {'X-Auth-Token': 'admin:admin',
           # "networks": "none" needs 2.37.
           'OpenStack-API-Version': 'compute 2.37'}


def _get(url):
    resp = requests.get(url, headers=HEADERS, timeout=30)
    assert resp.status_code == 200, (url, resp.status_code, resp.text)
    return resp.json()


def versions(root):
    """``GET /v2.1``: the version document of the API at ``root``."""
    return _get(root + '/v2.1')['version']


def boot_to_active(root, name, flavor='m1.tiny', image='cirros',
                   timeout=120):
    """Boot ``name`` through the API at ``root`` (``http://host:port``)
    and wait until it rests; the server as the API shows it then."""
    flavors = _get(root + '/v2.1/flavors')['flavors']
    flavor_id = next(f['id'] for f in flavors if f['name'] == flavor)
    # A deployment serves no image catalog: the API checks imageRef
    # against its built-in one ([glance] source = builtin).
    image_id = images.find(image)[0]
    resp = requests.post(
        root + '/v2.1/servers', headers=HEADERS, timeout=30,
        json={'server': {'name': name, 'flavorRef': flavor_id,
                         'imageRef': image_id, 'networks': 'none'}})
    assert resp.status_code == 202, (resp.status_code, resp.text)
    server_id = resp.json()['server']['id']
    deadline = time.monotonic() + timeout
    while True:
        server = _get(root + '/v2.1/servers/' + server_id)['server']
        if server['status'] in ('ACTIVE', 'ERROR') or \
                time.monotonic() > deadline:
            return server
        time.sleep(0.2)
