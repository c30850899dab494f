"""One cell's database stopped, in a deployment of separate processes on
PostgreSQL: the unmodified openstack CLI lists, within 5 s, the other
cell's servers and, at 2.69, the stopped cell's as UNKNOWN; a boot lands
in the cell that is up; an API restarted meanwhile serves; the scheduler
logs the cell going and coming back once each."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from scheduler_split.cmd import all_in_one
from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

# The 5 s bound is the operator's: measured with the machine to itself.
pytestmark = [pytest.mark.integration, pytest.mark.serial]

DOWN = 'cell2'


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('down-cell'),
                                    hosts_per_cell=1)
    yield from deployment_mod.running_with_cell_checks(dep)


def _accepting(dep, cell, allow):
    """Let the database of ``cell`` take connections, or stop it taking
    any and end those it has: what the services meet when that database
    (and it alone) is stopped."""
    engine = sa.create_engine(dep.database.stats_url(),
                              isolation_level='AUTOCOMMIT')
    name = 'ss_%s' % cell
    try:
        with engine.connect() as conn:
            conn.execute(sa.text('ALTER DATABASE %s WITH ALLOW_CONNECTIONS '
                                 '%s' % (name, 'true' if allow else 'false')))
            if not allow:
                conn.execute(sa.text(
                    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                    'WHERE datname = :name'), {'name': name})
    finally:
        engine.dispose()


def _openstack(dep, tmp_path, *args):
    cli = shutil.which('openstack', path=os.path.dirname(sys.executable))
    if cli is None:
        pytest.skip('python-openstackclient is not installed')
    clouds = all_in_one.write_clouds_yaml(str(tmp_path), dep.base_url)
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=clouds,
               OS_CLOUD='scheduler-split')
    started = time.monotonic()
    result = subprocess.run([cli, *args], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout, time.monotonic() - started


@pytest.fixture(scope='module')
def servers(deployment):
    api = fixtures.Api(deployment.base_url)
    host = deployment.EDGE_HOST
    found = {cell: api.boot(name='on-' + cell, availability_zone='%s:%s' % (
        'edge' if '%s-compute1' % cell == host else 'nova',
        '%s-compute1' % cell)) for cell in deployment.CELLS}
    for server_id in found.values():
        assert api.wait_for(server_id, timeout=60)['status'] == 'ACTIVE'
    return found


def test_a_stopped_cell_database_fails_nothing_else(
        deployment, servers, tmp_path):
    dep = deployment
    api = fixtures.Api(dep.base_url)
    since = dep.log_size('scheduler')
    _accepting(dep, DOWN, False)
    try:
        dep.wait_for_log('scheduler', 'Cell %s (' % DOWN, since, timeout=15)

        out, took = _openstack(dep, tmp_path, '--os-compute-api-version',
                               '2.69', 'server', 'list', '--all-projects',
                               '-f', 'json')
        assert took < 5, took
        listed = {s['ID']: s for s in json.loads(out)}
        assert set(listed) == set(servers.values())
        assert listed[servers[DOWN]]['Status'] == 'UNKNOWN'
        assert listed[servers['cell1']]['Status'] == 'ACTIVE'
        assert listed[servers['cell1']]['Name'] == 'on-cell1'

        booted = api.boot(name='while-%s-is-down' % DOWN)
        server = api.wait_for(booted, timeout=60)
        assert server['status'] == 'ACTIVE', server
        assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'

        # A restarted API serves while the cell is still down.
        dep.stop('api')
        dep.start('api')
        dep.wait_for_api(timeout=30)
        out, took = _openstack(dep, tmp_path, '--os-compute-api-version',
                               '2.69', 'server', 'list', '--all-projects',
                               '-f', 'json')
        assert took < 5, took
        assert {s['ID']: s['Status'] for s in json.loads(out)}[
            servers[DOWN]] == 'UNKNOWN'
    finally:
        _accepting(dep, DOWN, True)

    dep.wait_for_log('scheduler', 'Cell %s (' % DOWN, since, timeout=15)
    dep.wait_for_log('scheduler', 'answers again', since, timeout=15)
    with open(dep.log_of('scheduler')) as f:
        f.seek(since)
        log = f.read()
    assert log.count('cannot be confirmed') == 1, log
    assert log.count('answers again') == 1, log
    assert 'Traceback' not in log
    out, _ = _openstack(dep, tmp_path, 'server', 'list', '--all-projects',
                        '-f', 'json')
    assert {s['Status'] for s in json.loads(out)} == {'ACTIVE'}
