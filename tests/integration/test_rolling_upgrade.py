"""A rolling upgrade: a compute and a scheduler of the previous release run
beside this release's services, which [upgrade_levels] pins to what the
old ones understand; boots go through old and new alike. Then the old
ones are upgraded, the pins lifted, and ``auto`` moves to the new
version.

"Previous release" is the code at PREVIOUS_RELEASE (every RPC API at 1.0,
Selection 1.0, no service versions), extracted with ``git archive`` and
run from that tree: genuinely old code, not this code pretending.
"""

import concurrent.futures
import os
import subprocess
import sys
import time

import psutil
import pytest

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.objects import service as service_obj
from scheduler_split.scheduler import rpcapi as scheduler_rpcapi
from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

PREVIOUS_RELEASE = 'fb2664b'
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

OLD_COMPUTE = 'cell1-compute2'
OLD_SCHEDULER = 'scheduler-2'
OLD = (OLD_COMPUTE, OLD_SCHEDULER)
NEWEST_COMPUTE_RPC = compute_rpcapi.ComputeAPI.VERSION
NEWEST_SCHEDULER_RPC = scheduler_rpcapi.SchedulerAPI.VERSION
# The zone of every host in this test: cell2's hosts get one of their own,
# so that a boot there has an alternate.
ZONES = {'cell1-compute1': 'edge', 'cell1-compute2': 'nova',
         'cell2-compute1': 'south', 'cell2-compute2': 'south'}

PINNED = """\
    [upgrade_levels]
    compute = auto
    scheduler = 1.0
    """
LIFTED = """\
    [upgrade_levels]
    compute = auto
    scheduler = auto
    conductor = auto
    """
OLD_COMPUTE_DB = 'old-compute-database.conf'
BACKPORT_ERRORS = ('IncompatibleObjectVersion', 'UnsupportedVersion',
                   'Traceback')


@pytest.fixture(scope='module')
def previous_release(tmp_path_factory):
    """The source tree of the previous release."""
    found = subprocess.run(
        ['git', '-C', REPO, 'cat-file', '-e',
         PREVIOUS_RELEASE + '^{commit}'], capture_output=True)
    if found.returncode != 0:
        pytest.skip('commit %s (the previous release) is not in this '
                    'clone (shallow?); there is no older code to run'
                    % PREVIOUS_RELEASE)
    tree = str(tmp_path_factory.mktemp('previous-release'))
    archive = subprocess.Popen(['git', '-C', REPO, 'archive',
                                PREVIOUS_RELEASE], stdout=subprocess.PIPE)
    subprocess.run(['tar', '-x', '-C', tree], stdin=archive.stdout,
                   check=True)
    assert archive.wait() == 0
    return tree


@pytest.fixture(scope='module')
def upgrading(tmp_path_factory, previous_release):
    """Two cells, two schedulers; cell1-compute2 and scheduler-2 run the
    previous release, everything else this one, pinned."""
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('upgrade'),
                                    schedulers=2)
    try:
        dep.setup()
        for name in OLD:
            dep.run_from(name, previous_release)
        new = [name for name in dep._commands() if name not in OLD]
        dep.add_config(new, 'upgrade-levels.conf', PINNED)
        # The previous release's compute writes its cell database itself:
        # it alone gets the credentials, in a file of its own that goes
        # when it is upgraded.
        dep.add_config([OLD_COMPUTE], OLD_COMPUTE_DB, """\
            [database]
            connection = %s
            """ % dep.cells['cell1'][1])
        for host in dep.hosts_of('cell2'):
            dep.add_config([host], 'south.conf', """\
                [compute]
                availability_zone = south
                """)
        # More memory and more vCPUs than the others: the RAM and CPU
        # weighers both rank it first, however many of this test's
        # servers land on it (with more memory alone, the CPU weigher
        # ranks it last once it holds one server more than another host,
        # and the order would depend on which boot came first).
        dep.add_config([OLD_COMPUTE], 'preferred.conf', """\
            [fake_driver]
            memory_mb = %d
            vcpus = 16
            """ % (dep.host_memory_mb + 8192))
        # This release's scheduler tells of each claim at DEBUG.
        dep.add_config(['scheduler'], 'debug.conf', """\
            [DEFAULT]
            debug = true
            """)
        dep.start_and_map()
        _wait_until_every_scheduler_prefers_the_old_compute(dep)
        dep.previous_release = previous_release
        yield dep
    finally:
        dep.teardown()


def _wait_until_every_scheduler_prefers_the_old_compute(dep, timeout=60):
    """A report reaches one scheduler; the others read it from the
    database at their next refresh of host states. Wait for the old
    compute's larger memory in the database, then for one refresh."""
    wanted = dep.host_memory_mb + 8192
    deadline = time.monotonic() + timeout
    while True:
        rows = dep.query(
            dep.scheduler_db,
            "SELECT i.total FROM inventories i JOIN resource_providers p "
            "ON p.id = i.resource_provider_id WHERE p.host = :h AND "
            "i.resource_class = 'MEMORY_MB'", h=OLD_COMPUTE)
        if rows and rows[0][0] == wanted:
            break
        assert time.monotonic() < deadline, (OLD_COMPUTE, rows)
        time.sleep(0.2)
    time.sleep(deployment_mod.HOST_STATE_REFRESH_INTERVAL + 1)


def _log(dep, name):
    with open(os.path.join(dep.log_dir, '%s.log' % name)) as f:
        return f.read()


def _boot_many(api, prefix, zones):
    """One server per entry of ``zones`` (None: no zone asked for)."""
    def boot(index):
        # The access addresses are this release's (Instance 1.2): the new
        # conductors keep them whichever compute builds the server.
        extra = {'accessIPv4': '192.0.2.%d' % (index + 1)}
        if zones[index]:
            extra['availability_zone'] = zones[index]
        return api.boot(name='%s-%d' % (prefix, index), **extra)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(boot, range(len(zones))))
    return {sid: api.wait_for(sid, timeout=120) for sid in ids}


def _postgres_connections(dep, name):
    return [c for c in psutil.Process(dep.procs[name].pid).net_connections(
        kind='tcp') if c.raddr and c.raddr.port == dep.postgres.port]


def _service_versions(dep, db, table='services'):
    return dict(dep.query(db, 'SELECT host, version FROM %s' % table))


def test_the_old_processes_run_the_previous_release(upgrading):
    # What the old processes import, started as they are: the previous
    # release's tree.
    tree = upgrading.previous_release
    where = subprocess.run(
        [sys.executable, '-c', 'import scheduler_split.objects.selection '
         'as s; print(s.__file__); print(s.Selection.VERSION)'],
        env=dict(os.environ, PYTHONPATH=tree), cwd=tree,
        capture_output=True, text=True, check=True).stdout.split()
    assert where[0].startswith(tree)
    assert where[1] == '1.0'
    # And what they did: the old compute's heartbeat records no service
    # version, the old scheduler records no service at all.
    cell1_db = upgrading.cells['cell1'][1]
    computes = _service_versions(upgrading, cell1_db)
    assert computes[OLD_COMPUTE] is None
    assert computes['cell1-compute1'] == service_obj.SERVICE_VERSION
    # The old compute writes its database itself; this release's computes
    # go through their conductor and hold no connection to PostgreSQL.
    assert _postgres_connections(upgrading, OLD_COMPUTE)
    for host in upgrading.hosts:
        if host != OLD_COMPUTE:
            assert _postgres_connections(upgrading, host) == [], host
    schedulers = _service_versions(upgrading, upgrading.scheduler_db)
    assert schedulers == {'scheduler': service_obj.SERVICE_VERSION}


def test_boots_go_through_old_and_new_computes_and_schedulers(upgrading):
    api = fixtures.Api(upgrading.base_url)
    # Five go where the scheduler likes best, the old compute, each with
    # its cell's other host as an alternate; two go to cell2, each with
    # the other cell2 host as an alternate (Selections of a 1.0 answer
    # passed on to computes that take 1.1); one is forced onto the new
    # compute of cell1.
    servers = _boot_many(api, 'mixed', [None] * 5 + [
        'south', 'south', 'edge:cell1-compute1'])

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}, servers
    hosts = [s['OS-EXT-SRV-ATTR:host'] for s in servers.values()]
    assert hosts.count(OLD_COMPUTE) == 5, hosts
    # The old compute got its instances backported to Instance 1.1 and
    # built them without touching what it cannot read.
    assert sorted(s['accessIPv4'] for s in servers.values()) == [
        '192.0.2.%d' % i for i in range(1, 9)]
    assert hosts.count('cell1-compute1') == 1, hosts
    # Both schedulers placed some of them.
    for scheduler in ('scheduler', OLD_SCHEDULER):
        assert ' claimed on ' in _log(upgrading, scheduler), scheduler
    # Scheduler RPC is pinned to 1.0: Selections carry no zone, so a
    # server whose user asked for none shows none, as in the previous
    # release.
    assert {s['OS-EXT-AZ:availability_zone'] for s in servers.values()
            if s['OS-EXT-SRV-ATTR:host'] == OLD_COMPUTE} == {''}

    # The super-conductor capped compute RPC per cell from the service
    # records: 1.0 where the old compute runs, this release's in the
    # other cell.
    conductor_log = _log(upgrading, 'super-conductor')
    assert ('compute_rpc capped at 1.0 for the computes of '
            in conductor_log)
    assert [line for line in conductor_log.splitlines()
            if 'compute_rpc capped at 1.0' in line and
            'ss_cell1' in line and 'service version 0' in line]
    assert [line for line in conductor_log.splitlines()
            if 'compute_rpc capped at %s' % NEWEST_COMPUTE_RPC in line and
            'ss_cell2' in line]

    # The old compute built from backported objects (its alternates are
    # Selections) without a complaint; neither old process logged one.
    on_old = [sid for sid, s in servers.items()
              if s['OS-EXT-SRV-ATTR:host'] == OLD_COMPUTE]
    details = upgrading.query(
        upgrading.cells['cell1'][1],
        "SELECT e.details FROM instance_actions_events e JOIN "
        "instance_actions a ON a.id = e.action_id WHERE "
        "a.instance_uuid = :u AND "
        "e.event = 'conductor_schedule_and_build_instances'", u=on_old[0])
    assert details == [('claimed on %s; alternates: cell1-compute1'
                        % OLD_COMPUTE,)]
    assert 'is ACTIVE on %s' % OLD_COMPUTE in _log(upgrading, OLD_COMPUTE)
    for name in OLD:
        log = _log(upgrading, name)
        for error in BACKPORT_ERRORS:
            assert error not in log, (name, error)


def test_after_the_upgrade_auto_lifts_the_cap_and_servers_get_zones(
        upgrading):
    api = fixtures.Api(upgrading.base_url)
    upgrading.stop(*OLD)
    for name in OLD:
        upgrading.run_from(name, None)
    # Upgraded, the compute reaches its records through its conductor
    # only: its database credentials go.
    upgrading.extra_conf[OLD_COMPUTE] = [
        path for path in upgrading.extra_conf[OLD_COMPUTE]
        if not path.endswith(OLD_COMPUTE_DB)]
    everyone = list(upgrading._commands())
    upgrading.add_config(everyone, 'upgrade-levels.conf', LIFTED)
    mark = len(_log(upgrading, 'super-conductor'))
    upgrading.stop('super-conductor', 'conductor-cell1', 'conductor-cell2',
                   'api')
    upgrading.start(*OLD, 'super-conductor', 'conductor-cell1',
                    'conductor-cell2', 'api')
    upgrading.wait_for_api()
    upgrading.wait_for_hosts(upgrading.hosts)
    cell1_db = upgrading.cells['cell1'][1]
    # Its heartbeat reaches the record through the restarted conductor,
    # a moment after its report reached the scheduler.
    deadline = time.monotonic() + 30
    while _service_versions(upgrading, cell1_db)[OLD_COMPUTE] != (
            service_obj.SERVICE_VERSION):
        assert time.monotonic() < deadline, _service_versions(
            upgrading, cell1_db)
        time.sleep(0.2)
    assert _postgres_connections(upgrading, OLD_COMPUTE) == []

    servers = _boot_many(api, 'upgraded', [None] * 4 + [
        'edge:cell1-compute1', 'south'])

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}, servers
    for server in servers.values():
        host = server['OS-EXT-SRV-ATTR:host']
        # Asked for or not, a server shows its host's zone now.
        assert server['OS-EXT-AZ:availability_zone'] == ZONES[host], server
    pinned = sorted(str(s['pinned_availability_zone'])
                    for s in servers.values())
    assert pinned == ['None'] * 4 + ['edge', 'south']
    conductor_log = _log(upgrading, 'super-conductor')[mark:]
    assert [line for line in conductor_log.splitlines()
            if 'compute_rpc capped at %s' % NEWEST_COMPUTE_RPC in line and
            'ss_cell1' in line]
    assert 'compute_rpc capped at 1.0' not in conductor_log
    assert ('scheduler_rpc capped at %s for the schedulers'
            % NEWEST_SCHEDULER_RPC in conductor_log)
