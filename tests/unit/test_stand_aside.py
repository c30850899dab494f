"""A service process whose database does not answer stops taking the
messages of the queue it shares with its peers while another process
consumes it, and takes them again once the database answers; it never
leaves a queue without a consumer. Two real services on one topic of
the in-memory bus, one of them cut from its database."""

from concurrent import futures
import logging
import threading
import time

import oslo_messaging as messaging
import pytest
from sqlalchemy import exc as sa_exc

from scheduler_split import brokers
from scheduler_split import context
from scheduler_split.db import outage
from scheduler_split import memory_bus
from scheduler_split import rpc
from scheduler_split import service
from scheduler_split import stand_aside

URL = 'memory:///stand-aside'
TOPIC = 'conductor'


class Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self, name, took):
        self.name = name
        self.took = took

    @messaging.expose
    def work(self, ctx):
        self.took.append(self.name)
        # Long enough for the calls sent at once to reach every process
        # that consumes.
        time.sleep(0.05)
        return self.name


class Database:
    """A database whose link can be cut."""

    def __init__(self):
        self.cut = False

    def look(self, url):
        if self.cut:
            raise sa_exc.OperationalError(
                'SELECT 1', {}, Exception('Lost connection to server '
                                          'during query (timed out)'))


@pytest.fixture
def bus():
    rpc.cleanup()
    memory_bus.reset()
    yield rpc.get_transport(URL)
    rpc.cleanup()
    memory_bus.reset()
    for owner in list(outage._asides):
        outage.stand_aside(owner, False)


@pytest.fixture
def services(bus):
    took = []
    started = []

    def make(name, database):
        svc = service.Service(name)
        svc.listen(bus, TOPIC, [Endpoint(name, took)], name)
        watch = stand_aside.Watch(svc, ['mysql+pymysql://db/x'],
                                  look=database.look, pause=lambda: 0,
                                  down_for=0)
        svc.start()
        started.append(svc)
        return svc, watch

    yield make, took
    for svc in started:
        svc.stop()


def _send(bus, count):
    """``count`` calls to the topic, four at a time: who answered each,
    in the order they were sent."""
    client = messaging.get_rpc_client(
        bus, messaging.Target(exchange=rpc.EXCHANGE, topic=TOPIC,
                              version='1.0'),
        serializer=rpc.RequestContextSerializer(), timeout=10)
    ctx = context.get_admin_context()
    with futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda _: client.call(ctx, 'work'),
                             range(count)))


def _check(watch, times=stand_aside.DOWN_AFTER):
    for _ in range(times):
        watch.check()


def test_a_process_cut_from_its_database_leaves_the_queue_to_its_peer(
        bus, services, caplog):
    caplog.set_level(logging.INFO)
    make, _ = services
    cut, healthy = Database(), Database()
    first, first_watch = make('ctl1', cut)
    second, second_watch = make('ctl2', healthy)
    assert sorted(set(_send(bus, 20))) == ['ctl1', 'ctl2']
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 2

    cut.cut = True
    # One failed look is waited out.
    first_watch.check()
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 2
    first_watch.check()
    second_watch.check()

    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1
    assert set(_send(bus, 20)) == {'ctl2'}
    # One line, at INFO: the outage itself is the process's WARNING.
    said = [r.getMessage() for r in caplog.records
            if 'cannot reach its database' in r.getMessage()]
    assert len(said) == 1, said
    assert 'ctl1 cannot reach its database' in said[0]
    assert 'stops taking messages of conductor' in said[0]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

    # Looks while it lasts say nothing more.
    _check(first_watch, 3)
    assert len([r for r in caplog.records
                if 'cannot reach its database' in r.getMessage()]) == 1

    cut.cut = False
    first_watch.check()
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 2
    assert sorted(set(_send(bus, 20))) == ['ctl1', 'ctl2']
    assert any('ctl1 takes messages of conductor again: its database '
               'answers again' in r.getMessage() for r in caplog.records
               if r.levelno == logging.INFO)


def test_a_process_alone_on_its_queue_keeps_it(bus, services):
    make, _ = services
    cut = Database()
    only, watch = make('ctl1', cut)
    cut.cut = True
    _check(watch, 3)

    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1
    assert _send(bus, 3) == ['ctl1'] * 3


def test_when_every_process_lost_the_database_one_keeps_the_queue(
        bus, services):
    make, _ = services
    cut = Database()
    watches = [make('ctl%d' % n, cut)[1] for n in (1, 2, 3)]
    cut.cut = True
    for _ in range(3):
        for watch in watches:
            watch.check()

    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1
    assert len(set(_send(bus, 10))) == 1


def test_the_last_one_aside_takes_the_queue_again_when_it_is_empty(
        bus, services, caplog, monkeypatch):
    caplog.set_level(logging.INFO)
    # Its next count is due at once.
    monkeypatch.setattr(stand_aside, 'RECOUNT_INTERVAL', 0)
    make, _ = services
    cut, healthy = Database(), Database()
    first, first_watch = make('ctl1', cut)
    second, _ = make('ctl2', healthy)
    cut.cut = True
    _check(first_watch)
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1

    # Its peer goes (stopped, or cut from the bus).
    second.stop()
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 0
    first_watch.check()

    assert _send(bus, 3) == ['ctl1'] * 3
    assert any('no other process consumes its queue' in r.getMessage()
               for r in caplog.records)


def test_a_message_in_hand_when_it_stands_aside_finishes(bus):
    took = []
    release = threading.Event()

    class Slow(Endpoint):
        @messaging.expose
        def work(self, ctx):
            release.wait(10)
            return super().work(ctx)

    cut = Database()
    first = service.Service('ctl1')
    first.listen(bus, TOPIC, [Slow('ctl1', took)], 'ctl1')
    second = service.Service('ctl2')
    second.listen(bus, TOPIC, [Endpoint('ctl2', took)], 'ctl2')
    first_watch = stand_aside.Watch(first, ['x'], look=cut.look,
                                    pause=lambda: 0, down_for=0)
    first.start()
    held = []
    try:
        # A call the first takes and holds.
        sender = threading.Thread(target=lambda: held.extend(_send(bus, 1)))
        sender.start()
        deadline = time.monotonic() + 5
        while not first.unfinished() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.unfinished()
        second.start()
        cut.cut = True
        _check(first_watch)
        assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1
        # What comes now goes to the other; what it held still ends.
        assert _send(bus, 4) == ['ctl2'] * 4
        release.set()
        sender.join(10)
        assert held == ['ctl1']
    finally:
        release.set()
        first.stop()
        second.stop()


def test_work_that_waits_for_the_database_gives_up_as_the_process_stands_aside(
        override):
    override('retry_timeout', 60.0, group='database')
    override('retry_interval', 0.05, group='database')

    def refused():
        raise sa_exc.OperationalError('SELECT 1', {}, Exception(
            'connection refused'))

    ended = []

    def work():
        try:
            outage.run(refused)
        except Exception as exc:
            ended.append((time.monotonic(), exc))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        time.sleep(0.3)
        assert not ended
        outage.stand_aside('ctl1', True)
        aside = time.monotonic()
        worker.join(5)
        assert ended and ended[0][0] - aside < 0.5
        assert type(ended[0][1]).__name__ == 'DatabaseUnavailable'
        assert outage.wait_seconds() == 0
        # Another service of the process that takes part does not end
        # the first one's standing aside.
        outage.stand_aside('ctl2', False)
        assert outage.wait_seconds() == 0
    finally:
        outage.stand_aside('ctl1', False)
    # Taking part again, it waits for the database as before.
    assert outage.wait_seconds() == 60.0


def test_a_listener_its_bus_refuses_again_stays_aside_until_it_takes_it(
        bus, services, monkeypatch, caplog):
    make, _ = services
    cut, healthy = Database(), Database()
    first, first_watch = make('ctl1', cut)
    make('ctl2', healthy)
    cut.cut = True
    _check(first_watch)
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1

    real = rpc.get_server
    refusals = []

    def refused(*args, **kwargs):
        if not refusals:
            refusals.append(args)
            raise messaging.MessageDeliveryFailure('bus away')
        return real(*args, **kwargs)

    monkeypatch.setattr(rpc, 'get_server', refused)
    cut.cut = False
    first_watch.check()
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 1
    assert any('cannot take messages of conductor again' in r.getMessage()
               for r in caplog.records)

    first_watch.check()
    assert brokers.consumers(URL, rpc.EXCHANGE, TOPIC, 1) == 2
    assert sorted(set(_send(bus, 20))) == ['ctl1', 'ctl2']
