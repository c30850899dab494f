"""No build stays in BUILD after a database outage or a compute that dies
mid-build. An outage shorter than ``[database] retry_timeout`` is waited
for and the build ends ACTIVE; a longer one ends it in ERROR with a
fault, and its claim is released, within a bounded time. A build whose
compute died goes on to its next alternate."""

import contextlib
import threading
import time

import pytest
import sqlalchemy as sa

from scheduler_split.compute.virt import fake
from scheduler_split import conf
from scheduler_split.db import engines

pytestmark = pytest.mark.functional

CONF = conf.CONF


def _cell_db(system, name='cell1'):
    [cell] = [c for c in system.aio.cells if c.name == name]
    return cell.database_connection


@pytest.mark.parametrize('retry_timeout,status',
                         [(30, 'ACTIVE'), (0.5, 'ERROR')])
def test_a_build_whose_database_went_away_mid_spawn(
        start_system, monkeypatch, retry_timeout, status):
    CONF.set_override('unfinished_build_check_interval', 1, group='compute')
    CONF.set_override('retry_timeout', retry_timeout, group='database')
    CONF.set_override('retry_interval', 0.1, group='database')
    system = start_system(cells=1, hosts_per_cell=1)
    cell_db = _cell_db(system)
    down = threading.Event()
    outage = {}
    real_writer = engines.writer

    @contextlib.contextmanager
    def writer(url):
        if down.is_set() and url == cell_db:
            raise sa.exc.OperationalError(
                'UPDATE instances', {},
                Exception('could not connect to the cell database'))
        with real_writer(url) as session:
            yield session

    real_spawn = fake.FakeDriver.spawn

    def spawn_during_an_outage(self, context, instance):
        if not outage:
            # The database goes away as the spawn starts and comes back
            # three seconds later: ACTIVE cannot be saved, nor the ERROR
            # the compute's error path tries next.
            down.set()
            outage['end'] = time.monotonic() + 3
            threading.Timer(3, down.clear).start()
        return real_spawn(self, context, instance)

    monkeypatch.setattr(engines, 'writer', writer)
    monkeypatch.setattr(fake.FakeDriver, 'spawn', spawn_during_an_outage)

    server_id = system.api.boot(name='outage')
    server = system.api.wait_for(server_id, timeout=30)

    assert server['status'] == status
    if status == 'ACTIVE':
        assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
        # The conductor ran the compute's save again once the database
        # was back: the build waited for it.
        assert time.monotonic() >= outage['end']
        assert list(system.allocations()) == [server_id]
        assert list(system.allocations()[server_id]) == ['cell1-compute1']
        return
    # Its conductor answered every try of the ACTIVE save that the
    # database is unavailable: the build went unconfirmed, and was given
    # back once the database answered again, for its next alternate:
    # this cell has none.
    assert 'Exhausted all hosts' in server['fault']['message']
    # Settled by the compute's next look after the database came back
    # (every second here), not by a restart.
    settled_after = time.monotonic() - outage['end']
    assert settled_after < 10, settled_after
    assert system.allocations_after_settling({}) == {}
    # And a user can delete it.
    assert system.api.delete('/v2.1/servers/%s' % server_id) \
        .status_code == 204
    system.api.wait_gone(server_id)


@pytest.mark.parametrize('hosts', [2, 1])
def test_a_build_on_a_compute_that_died_mid_spawn_goes_on_elsewhere(
        start_system, monkeypatch, hosts):
    """With an alternate, the build ends ACTIVE there; without one, in
    ERROR, its hosts exhausted."""
    CONF.set_override('report_interval', 1)
    CONF.set_override('service_down_time', 3)
    CONF.set_override('lost_build_check_interval', 1, group='conductor')
    CONF.set_override('lost_build_timeout', 10, group='conductor')
    system = start_system(cells=1, hosts_per_cell=hosts)
    hang = threading.Event()
    spawning = []
    real_spawn = fake.FakeDriver.spawn

    def spawn_that_hangs(self, context, instance):
        if not spawning:
            spawning.append(self.host)
            hang.wait(60)
        return real_spawn(self, context, instance)

    monkeypatch.setattr(fake.FakeDriver, 'spawn', spawn_that_hangs)
    try:
        server_id = system.api.boot(name='orphan')
        deadline = time.monotonic() + 10
        while not spawning:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [host] = spawning
        # The compute dies: no heartbeat, no periodic look, no messages.
        system.aio.computes[host].stop(graceful=False)
        died = time.monotonic()

        server = system.api.wait_for(server_id, timeout=30)
        assert time.monotonic() - died < 25
        events = system.api.get(
            '/v2.1/servers/%s/os-instance-actions' % server_id).json()
        request_id = events['instanceActions'][0]['request_id']
        details = [e.get('details') for e in system.api.get(
            '/v2.1/servers/%s/os-instance-actions/%s' % (
                server_id, request_id)).json()['instanceAction']['events']
            if e['event'] == 'conductor_recover_build']
        assert details == [
            'the compute service of %s, where it was building, has been '
            'down for longer than [DEFAULT] service_down_time; '
            'rescheduling' % host]
        if hosts == 1:
            assert server['status'] == 'ERROR'
            assert 'Exhausted all hosts' in server['fault']['message']
            assert system.allocations_after_settling({}) == {}
        else:
            assert server['status'] == 'ACTIVE'
            other = server['OS-EXT-SRV-ATTR:host']
            assert other != host
            assert {h for held in system.allocations().values()
                    for h in held} == {other}
    finally:
        hang.set()
    # The spawn that comes back late finds the build gone on without it
    # and leaves it so: its VM goes, the claim stays where the build is.
    time.sleep(1)
    after = system.api.server(server_id)
    assert after['status'] == server['status']
    assert after['OS-EXT-SRV-ATTR:host'] == server['OS-EXT-SRV-ATTR:host']
    if hosts == 1:
        assert system.allocations() == {}
    else:
        assert list(system.allocations()) == [server_id]
