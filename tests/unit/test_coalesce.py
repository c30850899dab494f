"""Coalesced selects: boots that find the schedulers busy share one call,
and each is placed, claimed and failed on its own, as if alone.

A real scheduler (its endpoint, manager and SQLite database) answers on
the in-memory bus; the super-conductor's client is the library's own.
"""

import concurrent.futures
import threading

import oslo_messaging as messaging
from oslo_utils import uuidutils
import pytest

from scheduler_split import context
from scheduler_split import exception
from scheduler_split import memory_bus
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split.scheduler import process as scheduler_process
from tests.unit import helpers

CELL = '0f5b3a3e-7a1d-4d2b-9a0c-aaaaaaaaaaaa'
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 10}
WAIT = 30


class Bus:
    """A scheduler on the bus whose selects of ``held`` instances wait
    until ``release`` is set, and which records every batch it takes."""

    def __init__(self, scheduler_db):
        self.url = scheduler_db
        self.hosts = {}
        self.scheduler = scheduler_process.Scheduler(scheduler_db)
        self.held = set()
        self.holding = threading.Event()
        self.release = threading.Event()
        self.batches = []
        self.failing = set()
        manager = self.scheduler.manager
        select = manager.select_destinations
        select_batch = manager.select_batch

        def held_select(ctx, spec_obj, uuids, *args):
            if self.held.intersection(uuids):
                self.holding.set()
                assert self.release.wait(WAIT)
            if self.failing.intersection(uuids):
                raise RuntimeError('the scheduler broke on %s' % uuids)
            return select(ctx, spec_obj, uuids, *args)

        def recorded_batch(requests):
            self.batches.append([uuid for _, _, uuids, _, _ in requests
                                 for uuid in uuids])
            return select_batch(requests)

        manager.select_destinations = held_select
        manager.select_batch = recorded_batch
        self.transport = rpc.get_transport('memory:///coalesce')
        self.server = rpc.get_server(
            self.transport, 'scheduler', [self.scheduler.endpoint()],
            'scheduler-1')
        self.server.start()

    def add_host(self, name, instances):
        stats = helpers.host_stats(vcpus=instances,
                                   memory_mb=512 * instances,
                                   local_gb=10 * instances)
        self.hosts[name] = self.scheduler.host_manager.update_from_stats(
            CELL, name, name + '-node', stats)

    def used(self):
        """{host: instances claimed on it}, read from the database."""
        return {name: helpers.provider_usage(self.url, uuid).get('VCPU', 0)
                for name, uuid in self.hosts.items()}

    def client(self, window, in_flight=1):
        return scheduler_client.SchedulerClient(
            self.transport, batch_window=window, in_flight=in_flight)

    def claims(self):
        """The instances holding claims in the database."""
        return set(self.scheduler.get_consumers(
            context.get_admin_context(), older_than=-60))

    def stop(self):
        self.release.set()
        self.server.stop()
        self.server.wait()


@pytest.fixture
def bus(scheduler_db):
    memory_bus.reset()
    bus = Bus(scheduler_db)
    yield bus
    bus.stop()
    rpc.cleanup()
    memory_bus.reset()


def _select(client, uuid, num_alternates=2):
    ctx = context.RequestContext(user_id='user', project_id='project',
                                 request_id='req-' + uuid)
    spec = helpers.make_spec(instance_uuid=uuid, **FLAVOR)
    [host_list] = client.select_destinations(ctx, spec, [uuid],
                                             num_alternates=num_alternates)
    return host_list


def _wait_for_queue(client, length):
    coalescer = client._coalescer
    for _ in range(WAIT * 100):
        with coalescer._cond:
            if len(coalescer._queue) == length:
                return
        threading.Event().wait(0.01)
    raise AssertionError('the selects did not queue')


def _queued_behind_a_held_call(bus, client, uuids):
    """Select ``uuids`` from threads while a first select is held at the
    scheduler; release it once all of them wait; their outcomes (a host
    list or the exception), by uuid."""
    first = uuidutils.generate_uuid()
    bus.held.add(first)
    pool = concurrent.futures.ThreadPoolExecutor(len(uuids) + 1)
    try:
        held = pool.submit(_select, client, first)
        assert bus.holding.wait(WAIT)
        futures = {}
        for count, uuid in enumerate(uuids, 1):
            futures[uuid] = pool.submit(_select, client, uuid)
            # Queued behind the held call, in this order.
            _wait_for_queue(client, count)
        bus.release.set()
        held.result(WAIT)
        outcomes = {}
        for uuid, future in futures.items():
            try:
                outcomes[uuid] = future.result(WAIT)
            except Exception as exc:
                outcomes[uuid] = exc
        return outcomes
    finally:
        bus.release.set()
        pool.shutdown()


def test_selects_queued_behind_a_busy_scheduler_share_one_call(bus):
    # Room for 4 instances on two hosts: the held one and three of five
    # queued ones fit.
    bus.add_host('h1', 2)
    bus.add_host('h2', 2)
    uuids = [uuidutils.generate_uuid() for _ in range(5)]

    outcomes = _queued_behind_a_held_call(bus, bus.client(window=WAIT),
                                          uuids)

    assert [sorted(batch) for batch in bus.batches] == [sorted(uuids)]
    placed = {u: o for u, o in outcomes.items() if isinstance(o, list)}
    refused = {u: o for u, o in outcomes.items()
               if isinstance(o, exception.NoValidHost)}
    assert len(placed) == 3 and len(refused) == 2
    # In arrival order, each on its own: the first three are placed.
    assert set(placed) == set(uuids[:3])
    # Each placed one holds its own claim, the refused ones none, and
    # the four claims fill the two hosts without overcommitting either.
    assert bus.claims() - set(uuids) == bus.held
    assert bus.claims() & set(uuids) == set(placed)
    assert bus.used() == {'h1': 2, 'h2': 2}
    for host_list in placed.values():
        chosen = host_list[0].service_host
        # Its own alternates: never its own host.
        assert chosen not in [s.service_host for s in host_list[1:]]
    assert 'No valid host was found' in str(next(iter(refused.values())))


def test_a_select_that_breaks_in_a_batch_fails_alone(bus):
    bus.add_host('h1', 8)
    uuids = [uuidutils.generate_uuid() for _ in range(3)]
    bus.failing.add(uuids[1])

    outcomes = _queued_behind_a_held_call(bus, bus.client(window=WAIT),
                                          uuids)

    assert len(bus.batches) == 1
    assert isinstance(outcomes[uuids[1]], messaging.RemoteError)
    assert 'the scheduler broke' in str(outcomes[uuids[1]])
    assert isinstance(outcomes[uuids[0]], list)
    assert isinstance(outcomes[uuids[2]], list)
    assert bus.claims() == bus.held | {uuids[0], uuids[2]}


def test_one_client_at_a_time_never_waits_for_a_batch(bus):
    bus.add_host('h1', 8)
    client = bus.client(window=WAIT)

    for _ in range(4):
        # With the window at 30 s, a select that waited for company
        # would take 30 s: each answers at once, alone.
        host_list = concurrent.futures.ThreadPoolExecutor(1).submit(
            _select, client, uuidutils.generate_uuid()).result(WAIT / 2)
        assert host_list[0].service_host == 'h1'

    assert bus.batches == []


def test_a_queued_select_waits_no_longer_than_the_window(bus):
    bus.add_host('h1', 8)
    client = bus.client(window=0.05)
    first, second = (uuidutils.generate_uuid() for _ in range(2))
    bus.held.add(first)
    pool = concurrent.futures.ThreadPoolExecutor(2)
    try:
        held = pool.submit(_select, client, first)
        assert bus.holding.wait(WAIT)

        # The call in flight is still held, and the second went anyway.
        host_list = pool.submit(_select, client, second).result(WAIT)

        assert not held.done()
        assert host_list[0].service_host == 'h1'
    finally:
        bus.release.set()
        pool.shutdown()
    assert held.result(WAIT)[0].service_host == 'h1'


@pytest.mark.parametrize('window,cap', [(0, None), (WAIT, '1.6')])
def test_without_a_window_or_before_1_7_selects_go_alone(bus, override,
                                                         window, cap):
    if cap:
        override('scheduler', cap, group='upgrade_levels')
    bus.add_host('h1', 8)
    client = bus.client(window=window)
    first = uuidutils.generate_uuid()
    bus.held.add(first)
    pool = concurrent.futures.ThreadPoolExecutor(4)
    try:
        held = pool.submit(_select, client, first)
        assert bus.holding.wait(WAIT)
        others = [pool.submit(_select, client, uuidutils.generate_uuid())
                  for _ in range(3)]
        # Sent alone, each is answered while the first is still held.
        for future in others:
            assert future.result(WAIT)[0].service_host == 'h1'
        assert not held.done()
    finally:
        bus.release.set()
        pool.shutdown()
    assert bus.batches == []
