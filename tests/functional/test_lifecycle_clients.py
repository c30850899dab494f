"""The unmodified openstack CLI drives a server's life after boot."""

import json
import time

import pytest

from scheduler_split import conf
from tests.functional.test_clients import openstack_cli  # noqa: F401

pytestmark = pytest.mark.functional


def _show(cli, name, *version):
    return json.loads(cli(*version, 'server', 'show', name, '-f', 'json'))


def _wait(cli, name, status, timeout=60):
    """``server show`` once the server is ``status`` with no task."""
    deadline = time.monotonic() + timeout
    while True:
        shown = _show(cli, name)
        if (shown['status'] == status and
                not shown.get('OS-EXT-STS:task_state')):
            return shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.2)


def _boot(cli, name='vm1'):
    cli('server', 'create', '--flavor', 'm1.tiny', '--image', 'cirros',
        '--no-network', name)
    # Not --wait, which polls every five seconds.
    _wait(cli, name, 'ACTIVE')


@pytest.fixture
def cli(start_system, openstack_cli):  # noqa: F811
    return openstack_cli(start_system(cells=1, hosts_per_cell=1))


def test_openstack_server_stop_start_and_reboot(cli):
    _boot(cli)
    cli('server', 'stop', 'vm1')
    shown = _wait(cli, 'vm1', 'SHUTOFF')
    assert shown['OS-EXT-STS:power_state'] in ('Shutdown', 4)
    cli('server', 'start', 'vm1')
    shown = _wait(cli, 'vm1', 'ACTIVE')
    assert shown['OS-EXT-STS:power_state'] in ('Running', 1)
    cli('server', 'reboot', '--soft', '--wait', 'vm1')
    assert _show(cli, 'vm1')['status'] == 'ACTIVE'
    cli('server', 'reboot', '--hard', 'vm1')
    _wait(cli, 'vm1', 'ACTIVE')
    actions = json.loads(cli('server', 'event', 'list', 'vm1', '-f',
                             'json'))
    assert sorted(a['Action'] for a in actions) == [
        'create', 'reboot', 'reboot', 'start', 'stop']


def test_openstack_server_pause_unpause_suspend_resume(cli):
    _boot(cli)
    cli('server', 'pause', 'vm1')
    _wait(cli, 'vm1', 'PAUSED')
    cli('server', 'unpause', 'vm1')
    _wait(cli, 'vm1', 'ACTIVE')
    cli('server', 'suspend', 'vm1')
    _wait(cli, 'vm1', 'SUSPENDED')
    cli('server', 'resume', 'vm1')
    _wait(cli, 'vm1', 'ACTIVE')


def test_openstack_server_lock_and_unlock(cli):
    _boot(cli)
    cli('--os-compute-api-version', '2.73', 'server', 'lock', '--reason',
        'maintenance', 'vm1')
    shown = _show(cli, 'vm1', '--os-compute-api-version', '2.73')
    assert shown['locked'] is True
    assert shown['locked_reason'] == 'maintenance'
    cli('server', 'unlock', 'vm1')
    shown = _show(cli, 'vm1', '--os-compute-api-version', '2.73')
    assert shown['locked'] is False
    assert shown['locked_reason'] is None


def test_openstack_server_set_and_unset_name_properties_and_tags(cli):
    _boot(cli)
    cli('server', 'set', '--name', 'renamed', 'vm1')
    assert _show(cli, 'renamed')['name'] == 'renamed'
    cli('server', 'set', '--property', 'k=v', '--property', 'k2=v2',
        'renamed')
    properties = _show(cli, 'renamed')['properties']
    assert properties in ({'k': 'v', 'k2': 'v2'}, "k='v', k2='v2'")
    cli('server', 'unset', '--property', 'k', 'renamed')
    assert _show(cli, 'renamed')['properties'] in ({'k2': 'v2'},
                                                   "k2='v2'")
    v226 = ('--os-compute-api-version', '2.26')
    cli(*v226, 'server', 'set', '--tag', 'red', '--tag', 'blue', 'renamed')
    assert sorted(_show(cli, 'renamed', *v226)['tags']) == ['blue', 'red']
    cli(*v226, 'server', 'unset', '--tag', 'red', 'renamed')
    assert _show(cli, 'renamed', *v226)['tags'] == ['blue']
    listed = json.loads(cli(*v226, 'server', 'list', '--tags', 'blue',
                            '-f', 'json'))
    assert [s['Name'] for s in listed] == ['renamed']
    listed = json.loads(cli(*v226, 'server', 'list', '--tags', 'red',
                            '-f', 'json'))
    assert listed == []


def test_openstack_server_rebuild_with_another_image(cli):
    _boot(cli)
    before = _show(cli, 'vm1')
    answer = json.loads(cli('server', 'rebuild', '--image', 'ubuntu-24.04',
                            '--property', 'role=db', 'vm1', '-f', 'json'))
    # The CLI prints the server with its new admin password.
    assert answer['adminPass'] and answer['adminPass'] != 'not-set'
    shown = _wait(cli, 'vm1', 'ACTIVE')
    assert shown['image'].startswith('ubuntu-24.04')
    assert shown['properties'] in ({'role': 'db'}, "role='db'")
    assert shown['OS-EXT-SRV-ATTR:host'] == before['OS-EXT-SRV-ATTR:host']
    actions = json.loads(cli('server', 'event', 'list', 'vm1', '-f',
                             'json'))
    assert sorted(a['Action'] for a in actions) == ['create', 'rebuild']


def test_openstack_server_delete_then_restore(start_system,
                                              openstack_cli):  # noqa: F811
    conf.CONF.set_override('reclaim_instance_interval', 3600)
    try:
        cli = openstack_cli(start_system(cells=1, hosts_per_cell=1))
        _boot(cli)
        cli('server', 'delete', 'vm1')
        _wait(cli, 'vm1', 'SOFT_DELETED')
        cli('server', 'restore', 'vm1')
        shown = _wait(cli, 'vm1', 'ACTIVE')
        assert shown['OS-EXT-STS:power_state'] in ('Running', 1)
    finally:
        conf.CONF.clear_override('reclaim_instance_interval')


def test_openstack_console_log_show(cli):
    _boot(cli)
    server_id = _show(cli, 'vm1')['id']
    output = cli('console', 'log', 'show', 'vm1')
    assert 'booting %s' % server_id in output
    assert cli('console', 'log', 'show', '--lines', '1',
               'vm1').strip().endswith('login:')


def test_openstack_server_shelve_and_unshelve_to_a_host(
        start_system, openstack_cli):  # noqa: F811
    cli = openstack_cli(start_system(cells=1, hosts_per_cell=2))
    _boot(cli)
    first = _show(cli, 'vm1')['OS-EXT-SRV-ATTR:host']
    other = ({'cell1-compute1', 'cell1-compute2'} - {first}).pop()
    cli('server', 'shelve', 'vm1')
    shown = _wait(cli, 'vm1', 'SHELVED_OFFLOADED')
    assert not shown['OS-EXT-SRV-ATTR:host']
    images = json.loads(cli('image', 'list', '--name', 'vm1-shelved',
                            '-f', 'json'))
    assert [i['Name'] for i in images] == ['vm1-shelved']

    cli('--os-compute-api-version', '2.91', 'server', 'unshelve',
        '--host', other, 'vm1')
    shown = _wait(cli, 'vm1', 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == other
    actions = json.loads(cli('server', 'event', 'list', 'vm1', '-f',
                             'json'))
    assert sorted(a['Action'] for a in actions) == [
        'create', 'shelve', 'unshelve']
