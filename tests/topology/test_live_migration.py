"""A block live migration of a real guest between two compute hosts of
the cloud of hosts apart (:mod:`tests.topology`).

cell2's two compute hosts run the libvirt driver, installed as an
operator installs it (the wheel with its libvirt extra), each with a
libvirtd of its own in its namespaces (:mod:`.hypervisors`); guests run
under qemu (TCG). The test guest (:mod:`scheduler_split.image.guest`)
is uploaded through the API and booted on cell2-compute1; its console
prints a tick every 2 s. Live migrated to cell2-compute2, it goes on
running: the destination's console carries on counting where the
source's stopped, with no boot in between, and nothing of it is left on
the source. Deleted, nothing is left on the destination.
"""

import os
import re
import time

import pytest

from scheduler_split.image import guest
from tests.functional import fixtures
from tests.topology import hypervisors

pytestmark = [pytest.mark.integration, pytest.mark.topology,
              pytest.mark.libvirt, pytest.mark.serial]

SOURCE, DEST = 'cell2-compute1', 'cell2-compute2'
GUESTS_CONF = """\
[DEFAULT]
compute_driver = libvirt.LibvirtDriver
instances_path = %s
sync_power_state_interval = 5
[libvirt]
virt_type = qemu
# Two hosts and their guests on one machine.
host_share = 0.25
shutdown_timeout = 10
""" % hypervisors.INSTANCES_PATH
TICK = re.compile(r'^%s tick (\d+)' % guest.MARKER, re.M)
BOOTED = re.compile(r'^%s booted .*' % guest.MARKER, re.M)


@pytest.fixture(scope='module')
def cloud(shared_cloud, libvirt_venv):
    shared_cloud.configure({})
    shared_cloud.set_mode('haproxy')
    shared_cloud.run_guests((SOURCE, DEST), libvirt_venv, GUESTS_CONF)
    try:
        yield shared_cloud
    finally:
        shared_cloud.stop_guests()


def _upload(api, name, path, disk_format, **properties):
    resp = api.post('/image/v2/images', dict(
        name=name, disk_format=disk_format,
        container_format='bare' if disk_format == 'qcow2' else disk_format,
        visibility='public', **properties))
    assert resp.status_code == 201, resp.text
    image_id = resp.json()['id']
    with open(path, 'rb') as f:
        resp = api.request(
            'PUT', '/image/v2/images/%s/file' % image_id, data=f,
            headers={'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 204, resp.text
    return image_id


@pytest.fixture(scope='module')
def guest_image(cloud, tmp_path_factory):
    """The test guest in the built-in catalog: its disk image's id."""
    api = fixtures.Api(cloud.base_url)
    paths = guest.build(str(tmp_path_factory.mktemp('guest')))
    kernel = _upload(api, 'guest-kernel', paths['kernel'], 'aki')
    ramdisk = _upload(api, 'guest-ramdisk', paths['ramdisk'], 'ari')
    return _upload(api, 'guest', paths['disk'], 'qcow2', kernel_id=kernel,
                   ramdisk_id=ramdisk)


def _console(api, server_id):
    resp = api.post('/v2.1/servers/%s/action' % server_id,
                    {'os-getConsoleOutput': {}})
    assert resp.status_code == 200, resp.text
    return resp.json()['output']


def _ticks(api, server_id):
    return [int(n) for n in TICK.findall(_console(api, server_id))]


def _wait(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        assert time.monotonic() < deadline, 'no %s within %d s' % (
            what, timeout)
        time.sleep(1)


def _settled_on(api, server_id, host):
    server = api.server(server_id)
    assert server['status'] != 'ERROR', server
    if (server['OS-EXT-SRV-ATTR:host'] == host and
            server['status'] == 'ACTIVE' and
            server['OS-EXT-STS:task_state'] is None):
        return server
    return None


def _domains(cloud, host):
    return cloud.guest_hosts[host][0].virsh('list', '--all', '--uuid')


def _has_files(cloud, host, server_id):
    path = os.path.join(hypervisors.INSTANCES_PATH, server_id)
    return cloud.guest_hosts[host][0].run(
        'sh', '-c', 'test -e %s && echo yes || true' % path).strip() == 'yes'


def test_block_live_migration_keeps_the_guest_running(cloud, guest_image):
    api = fixtures.Api(cloud.base_url)
    resp = api.post('/v2.1/servers', {'server': {
        'name': 'travels', 'flavorRef': '1', 'imageRef': guest_image,
        'networks': 'none', 'availability_zone': 'nova:%s' % SOURCE}})
    assert resp.status_code == 202, resp.text
    server_id = resp.json()['server']['id']
    try:
        _wait('ACTIVE server', lambda: _settled_on(api, server_id, SOURCE),
              240)
        assert server_id in _domains(cloud, SOURCE)
        booted = _wait('boot line', lambda: BOOTED.findall(
            _console(api, server_id)), 120)
        assert 'boots=1' in booted[0], booted
        # The last tick before the move (its console is not shown while
        # it migrates).
        before = max(_wait('tick', lambda: _ticks(api, server_id), 60))
        resp = api.post('/v2.1/servers/%s/action' % server_id, {
            'os-migrateLive': {'host': DEST, 'block_migration': True}})
        assert resp.status_code == 202, resp.text
        _wait('server live migrated to %s' % DEST,
              lambda: _settled_on(api, server_id, DEST), 300)

        # The guest counts on where it was: the same boot, running.
        after = _wait('tick on %s' % DEST, lambda: [
            n for n in _ticks(api, server_id) if n > before], 60)
        console = _console(api, server_id)
        assert not BOOTED.findall(console), console
        # Ticks every 2 s: no long pause, and none counted twice.
        assert min(after) <= before + 30, (before, after)
        dest = cloud.guest_hosts[DEST][0]
        assert dest.virsh('domstate', server_id) == 'running'
        assert server_id not in _domains(cloud, SOURCE)
        assert not _has_files(cloud, SOURCE, server_id)
        resp = api.get('/v2.1/os-migrations', params={
            'instance_uuid': server_id})
        assert resp.status_code == 200, resp.text
        assert [(m['migration_type'], m['status'], m['dest_compute'])
                for m in resp.json()['migrations']] == [
            ('live-migration', 'completed', DEST)]
    finally:
        api.delete('/v2.1/servers/%s' % server_id)
        api.wait_gone(server_id, timeout=120)
    _wait('the guest gone from %s' % DEST, lambda: server_id not in
          _domains(cloud, DEST) and not _has_files(cloud, DEST, server_id),
          60)
