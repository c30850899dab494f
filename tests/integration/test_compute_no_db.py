"""Computes hold no database credentials: each compute process reads only
its cell's bus from its configuration, opens no connection to PostgreSQL,
and still boots, reschedules, deletes and heartbeats, through its cell
conductor."""

import configparser
import time

import psutil
import pytest

from scheduler_split.objects import service as service_obj
from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

# Ranked first by the weighers, and failing every spawn: its builds are
# rescheduled to the other host of cell2.
FAILING = 'cell2-compute1'
ALTERNATE = 'cell2-compute2'


@pytest.fixture(scope='module')
def no_db(tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('no-db'))
    try:
        dep.setup()
        dep.add_config([FAILING], 'failing.conf', """\
            [fake_driver]
            fail_hosts = %s
            memory_mb = %d
            vcpus = 16
            """ % (FAILING, dep.host_memory_mb + 8192))
        dep.start_and_map()
        yield dep
    finally:
        dep.teardown()


def _config_files(command):
    return [command[i + 1] for i, arg in enumerate(command)
            if arg == '--config-file']


def _postgres_connections(pid, port):
    return [c for c in psutil.Process(pid).net_connections(kind='tcp')
            if c.raddr and c.raddr.port == port]


def test_a_compute_reads_no_database_credentials(no_db):
    commands = no_db._commands()
    for host in no_db.hosts:
        files = _config_files(commands[host]) + no_db.extra_conf.get(
            host, [])
        assert no_db.main_conf not in files
        for path in files:
            parser = configparser.ConfigParser()
            parser.read(path)
            assert not {'database', 'api_database',
                        'scheduler_database'} & set(parser.sections()), path
            with open(path) as f:
                assert 'postgresql' not in f.read(), path


def test_boot_reschedule_and_delete_work_without_a_database(no_db):
    api = fixtures.Api(no_db.base_url)
    ids = [api.boot(name='no-db-%d' % i) for i in range(2)]
    ids.append(api.boot(name='edge', availability_zone='edge'))
    servers = {sid: api.wait_for(sid, timeout=120) for sid in ids}

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}, servers
    hosts = sorted(s['OS-EXT-SRV-ATTR:host'] for s in servers.values())
    assert FAILING not in hosts
    assert no_db.EDGE_HOST in hosts
    # The first boot went to the failing host and was rescheduled in its
    # cell: the compute recorded its failure and the conductor the move.
    events = [(e['event'], e['result'], e.get('host'))
              for e in api.events(ids[0])]
    assert ('compute_build_and_run_instance', 'Error', FAILING) in events
    assert ('conductor_build_instances', 'Success', ALTERNATE) in events
    assert ('compute_build_and_run_instance', 'Success', ALTERNATE) in events

    for sid in ids:
        assert api.delete('/v2.1/servers/%s' % sid).status_code == 204
    for sid in ids:
        api.wait_gone(sid, timeout=60)
    deadline = time.monotonic() + 30
    while no_db.allocations():
        assert time.monotonic() < deadline, no_db.allocations()
        time.sleep(0.5)


def test_compute_processes_hold_no_connection_to_postgresql(no_db):
    port = no_db.postgres.port
    for host in no_db.hosts:
        proc = no_db.procs[host]
        assert proc.poll() is None, host
        assert _postgres_connections(proc.pid, port) == [], host
    # The check sees connections where there are some: a cell conductor
    # keeps its pool to the cell database.
    conductor = no_db.procs['conductor-cell1']
    assert _postgres_connections(conductor.pid, port)


def test_computes_heartbeat_with_their_version_through_the_conductor(
        no_db):
    for cell in no_db.CELLS:
        expected = [(host, service_obj.SERVICE_VERSION, True)
                    for host in no_db.hosts_of(cell)]
        deadline = time.monotonic() + 15
        while True:
            rows = no_db.query(
                no_db.cells[cell][1],
                "SELECT host, version, last_seen_up > (now() at time zone "
                "'utc') - interval '6 seconds' FROM services WHERE "
                '"binary" = :b', b=service_obj.COMPUTE)
            if sorted(rows) == expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sorted(rows) == expected
