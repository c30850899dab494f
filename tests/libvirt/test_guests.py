"""A server is a running guest: what the openstack CLI does to it, libvirt
and the guest's own console show."""

import json
import os
import re
import signal
import time

import pytest

from tests.libvirt import conftest

# Serial: ten guests booting under TCG take both cores for a minute,
# which starves the heartbeats of deployments other tests run beside.
pytestmark = [pytest.mark.libvirt, pytest.mark.serial]

IMAGE = 'scheduler-split-guest'
BOOTED = r'^%s booted vcpus=(\d+) memory_mb=(\d+) disk_mb=(\d+) boots=(\d+)' \
    % conftest.MARKER


def _boot(cloud, name, *extra):
    return json.loads(cloud.openstack(
        'server', 'create', '--flavor', 'm1.tiny', '--image', IMAGE,
        '--no-network', '--wait', '-f', 'json', name, *extra,
        timeout=300))


def _boots(cloud, server, count, timeout=90):
    """The console's boot lines once the guest booted ``count`` times
    on its disk."""
    deadline = time.monotonic() + timeout
    while True:
        found = re.findall(BOOTED, cloud.console(server), re.M)
        if found and int(found[-1][3]) >= count:
            return found
        assert time.monotonic() < deadline, (count, found)
        time.sleep(1)


def _state(uuid):
    return conftest.virsh('domstate', uuid, check=False) or 'gone'


def _action(cloud, server, verb, status):
    cloud.openstack('server', *verb.split(), server)
    return cloud.wait_for(server, status)


def test_a_server_is_a_guest_through_its_life(cloud):
    server = _boot(cloud, 'life')
    uuid = server['id']
    assert server['status'] == 'ACTIVE'
    # ACTIVE only once its domain runs, named as Nova names it.
    assert _state(uuid) == 'running'
    assert uuid in conftest.virsh('list', '--uuid').split()
    # Named by [DEFAULT] instance_name_template, as the test sets it.
    assert conftest.virsh('domname', uuid) == 'instance-%s' % uuid
    booted = _boots(cloud, uuid, 1)
    vcpus, memory_mb, disk_mb, boots = map(int, booted[-1])
    assert (vcpus, disk_mb, boots) == (1, 1024, 1)
    # m1.tiny's 512 MiB, less what the guest's kernel keeps.
    assert 400 <= memory_mb <= 512, memory_mb
    assert 'Linux version' in cloud.console(uuid)

    _action(cloud, uuid, 'stop', 'SHUTOFF')
    assert _state(uuid) == 'shut off'
    _action(cloud, uuid, 'start', 'ACTIVE')
    assert _state(uuid) == 'running'
    _boots(cloud, uuid, 2)

    _action(cloud, uuid, 'reboot', 'ACTIVE')
    _boots(cloud, uuid, 3)
    _action(cloud, uuid, 'reboot --hard', 'ACTIVE')
    _boots(cloud, uuid, 4)

    _action(cloud, uuid, 'pause', 'PAUSED')
    assert _state(uuid) == 'paused'
    _action(cloud, uuid, 'unpause', 'ACTIVE')
    assert _state(uuid) == 'running'

    _action(cloud, uuid, 'suspend', 'SUSPENDED')
    # Its memory saved to disk: QEMU is gone.
    assert _state(uuid) == 'shut off'
    ticks = len(re.findall('tick', cloud.console(uuid)))
    _action(cloud, uuid, 'resume', 'ACTIVE')
    assert _state(uuid) == 'running'
    # Resumed, not booted again: it ticks on, no new boot line.
    deadline = time.monotonic() + 30
    while len(re.findall('tick', cloud.console(uuid))) <= ticks:
        assert time.monotonic() < deadline
        time.sleep(1)
    assert int(re.findall(BOOTED, cloud.console(uuid), re.M)[-1][3]) == 4

    # A rebuild is a new disk from the image: its boot count starts over.
    cloud.openstack('server', 'rebuild', '--image', IMAGE, '--wait', uuid,
                    timeout=300)
    cloud.wait_for(uuid, 'ACTIVE')
    deadline = time.monotonic() + 90
    while not re.findall(BOOTED, cloud.console(uuid), re.M)[-1][3] == '1':
        assert time.monotonic() < deadline, cloud.console(uuid)[-2000:]
        time.sleep(1)

    host = cloud.show(uuid)['OS-EXT-SRV-ATTR:host']
    cloud.openstack('server', 'delete', '--wait', uuid)
    assert _state(uuid) == 'gone'
    assert not os.path.exists(os.path.join(cloud.host_dir(host), uuid))
    assert all(not any(used.values())
               for used in cloud.usages().values()), cloud.usages()


def test_a_guest_killed_from_outside_goes_shutoff_and_starts_again(cloud):
    uuid = _boot(cloud, 'killed')['id']
    _boots(cloud, uuid, 1)
    os.kill(conftest.qemu_pid(conftest.virsh('domname', uuid)),
            signal.SIGKILL)
    killed = time.monotonic()
    server = cloud.wait_for(uuid, 'SHUTOFF',
                            timeout=2 * conftest.SYNC_INTERVAL + 15)
    took = time.monotonic() - killed
    actions = json.loads(cloud.openstack(
        'server', 'event', 'list', uuid, '-f', 'json'))
    assert 'stop' in [a['Action'] for a in actions], actions
    assert server['OS-EXT-STS:power_state'] in ('Shutdown', 4), server
    _action(cloud, uuid, 'start', 'ACTIVE')
    assert _state(uuid) == 'running'
    _boots(cloud, uuid, 2)
    cloud.openstack('server', 'delete', '--wait', uuid)
    print('SHUTOFF %.1f s after its QEMU was killed' % took)


def test_a_host_whose_libvirt_refuses_the_guest_sends_it_on(cloud):
    """The first host's cached kernel is not a kernel: its QEMU refuses
    to start, and the build lands on the alternate."""
    image = json.loads(cloud.openstack('image', 'show', IMAGE, '-f',
                                       'json'))
    properties = image['properties']
    if isinstance(properties, str):
        properties = dict(re.findall(r"(\w+)='([^']*)'", properties))
    kernel = cloud.cache_path('cell1-compute1', properties['kernel_id'])
    os.makedirs(os.path.dirname(kernel), exist_ok=True)
    # The other host has less free memory, so this one is tried first.
    other = _boot(cloud, 'elsewhere', '--availability-zone',
                  'nova:cell1-compute2')
    saved = None
    if os.path.exists(kernel):
        with open(kernel, 'rb') as f:
            saved = f.read()
        os.chmod(kernel, 0o644)
    with open(kernel, 'wb') as f:
        f.write(b'not a kernel\n' * 100)
    try:
        server = _boot(cloud, 'refused')
    finally:
        os.unlink(kernel)
        if saved is not None:
            with open(kernel, 'wb') as f:
                f.write(saved)
    uuid = server['id']
    assert server['status'] == 'ACTIVE', server
    assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute2', server
    _boots(cloud, uuid, 1)
    create = [a for a in json.loads(cloud.openstack(
        'server', 'event', 'list', uuid, '-f', 'json'))
        if a['Action'] == 'create'][0]
    events = json.loads(cloud.openstack(
        'server', 'event', 'show', uuid, create['Request ID'], '-f',
        'json'))['events']
    assert [e for e in events if e['result'] == 'Error'], events
    # Nothing of it is left on the host that refused it.
    assert not os.path.exists(os.path.join(
        cloud.host_dir('cell1-compute1'), uuid))
    for domain in conftest.virsh('list', '--all', '--uuid').split():
        assert domain != uuid or _state(uuid) == 'running'
    cloud.openstack('server', 'delete', '--wait', uuid, other['id'])


def test_ten_boots_at_once_end_with_ten_running_guests(cloud):
    cloud.openstack('server', 'create', '--flavor', 'm1.tiny', '--image',
                    IMAGE, '--no-network', '--min', '10', '--max', '10',
                    'ten', timeout=120)
    servers = [s for s in json.loads(cloud.openstack(
        'server', 'list', '--name', '^ten', '-f', 'json'))]
    assert len(servers) == 10, servers
    try:
        for server in servers:
            cloud.wait_for(server['ID'], 'ACTIVE', timeout=300)
        for server in servers:
            assert _state(server['ID']) == 'running'
            _boots(cloud, server['ID'], 1, timeout=180)
    finally:
        cloud.openstack('server', 'delete', '--wait',
                        *[s['ID'] for s in servers], timeout=300)
    for server in servers:
        assert _state(server['ID']) == 'gone'


def test_a_snapshot_and_a_shelve_carry_the_guests_disk(cloud):
    """The guest counts its boots on its disk: a server booted from a
    snapshot, or unshelved, counts on from the disk it was made of."""
    uuid = _boot(cloud, 'snapped')['id']
    _boots(cloud, uuid, 1)
    image = json.loads(cloud.openstack(
        'server', 'image', 'create', '--name', 'snap', '--wait', '-f',
        'json', uuid, timeout=300))
    assert (image['status'], image['disk_format']) == ('active', 'qcow2')
    assert image['size'] > 0, image
    # The snapshot saved its memory and restored it: it ticks on.
    server = cloud.wait_for(uuid, 'ACTIVE')
    ticks = len(re.findall('tick', cloud.console(uuid)))
    deadline = time.monotonic() + 30
    while len(re.findall('tick', cloud.console(uuid))) <= ticks:
        assert time.monotonic() < deadline
        time.sleep(1)
    assert len(re.findall(BOOTED, cloud.console(uuid), re.M)) == 1

    copy = json.loads(cloud.openstack(
        'server', 'create', '--flavor', 'm1.tiny', '--image', 'snap',
        '--no-network', '--wait', '-f', 'json', 'from-snap',
        timeout=300))['id']
    assert int(_boots(cloud, copy, 2)[-1][3]) == 2

    cloud.openstack('server', 'shelve', copy)
    cloud.wait_for(copy, 'SHELVED_OFFLOADED')
    assert _state(copy) == 'gone'
    shelved = json.loads(cloud.openstack(
        'image', 'show', 'from-snap-shelved', '-f', 'json'))
    assert shelved['status'] == 'active' and shelved['size'] > 0
    cloud.openstack('server', 'unshelve', copy)
    cloud.wait_for(copy, 'ACTIVE')
    assert _state(copy) == 'running'
    assert int(_boots(cloud, copy, 3)[-1][3]) == 3
    # The shelved image goes once the server runs again.
    assert cloud.openstack('image', 'show', 'from-snap-shelved',
                           check=False) == ''

    cloud.openstack('server', 'delete', '--wait', uuid, copy)
    cloud.openstack('image', 'delete', 'snap')
    assert server['status'] == 'ACTIVE'


def test_a_resize_comes_back_with_the_new_size_and_reverts(cloud):
    """The disk travels with the move: the guest counts on, and shows the
    new flavor's vCPUs, memory and disk; a revert runs the source's copy
    again; a confirmed migration leaves nothing on the source."""
    server = _boot(cloud, 'resized')
    uuid, source = server['id'], server['OS-EXT-SRV-ATTR:host']
    _boots(cloud, uuid, 1)
    cloud.openstack('server', 'resize', '--flavor', 'm1.medium', '--wait',
                    uuid, timeout=300)
    resized = cloud.wait_for(uuid, 'VERIFY_RESIZE')
    assert resized['OS-EXT-SRV-ATTR:host'] != source
    vcpus, memory_mb, disk_mb, boots = map(int, _boots(cloud, uuid, 2)[-1])
    assert (vcpus, disk_mb, boots) == (2, 40 * 1024, 2)
    assert 3500 <= memory_mb <= 4096, memory_mb
    assert _state(uuid) == 'running'

    cloud.openstack('server', 'resize', 'revert', uuid)
    reverted = cloud.wait_for(uuid, 'ACTIVE')
    assert reverted['OS-EXT-SRV-ATTR:host'] == source
    # The source's own copy, as it was before the move.
    vcpus, _, disk_mb, boots = map(int, _boots(cloud, uuid, 2)[-1])
    assert (vcpus, disk_mb, boots) == (1, 1024, 2)

    cloud.openstack('server', 'migrate', '--wait', uuid, timeout=300)
    moved = cloud.wait_for(uuid, 'VERIFY_RESIZE')
    cloud.openstack('server', 'resize', 'confirm', uuid)
    cloud.wait_for(uuid, 'ACTIVE')
    assert int(_boots(cloud, uuid, 3)[-1][3]) == 3
    target = moved['OS-EXT-SRV-ATTR:host']
    assert target != source
    for leftover in (uuid, uuid + '_resize'):
        assert not os.path.exists(os.path.join(cloud.host_dir(source),
                                               leftover))
    images = cloud.openstack('image', 'list', '-f', 'value', '-c', 'Name')
    assert 'migration-' not in images, images
    cloud.openstack('server', 'delete', '--wait', uuid)
