"""SIGTERM stops every service within 2 s while RabbitMQ or PostgreSQL
is down: what ``systemctl stop`` or ``restart`` of a unit does during an
outage, whether the service was running or still starting."""

import os
import signal
import time

import pytest

from tests.integration import deployment as deployment_mod

# The 2 s bound is the operator's: measured with the machine to itself.
pytestmark = [pytest.mark.integration, pytest.mark.serial]

# What an operator's ``systemctl stop`` may take, broker and databases
# reachable or not.
STOP_SECONDS = 2
# How long a service that has not stopped is given before it is killed:
# long enough to tell a slow stop from one that never ends.
KILL_AFTER = 20
# One process of each kind (and both cell conductors).
EVERY_KIND = ('api', 'super-conductor', 'scheduler', 'conductor-cell1',
              'conductor-cell2', 'cell1-compute1', 'cell2-compute1')
# Those that connect to the bus or a database before they serve.
STARTING = ('super-conductor', 'scheduler', 'conductor-cell1',
            'cell1-compute1')


def _sigterm_all(dep, names):
    """SIGTERM to each of ``names`` at once; name -> (exit code, seconds
    it took), code None for one killed after KILL_AFTER seconds."""
    sent = {}
    for name in names:
        dep.procs[name].send_signal(signal.SIGTERM)
        sent[name] = time.monotonic()
    stopped = {}
    while len(stopped) < len(names):
        for name in names:
            if name in stopped:
                continue
            code = dep.procs[name].poll()
            took = time.monotonic() - sent[name]
            if code is None and took > KILL_AFTER:
                os.killpg(dep.procs[name].pid, signal.SIGKILL)
                dep.procs[name].wait()
            elif code is None:
                continue
            stopped[name] = (code, round(took, 2))
            dep.procs.pop(name)
        time.sleep(0.02)
    print('\nSIGTERM -> exit (code, seconds): %s' % stopped)
    return stopped


def _assert_quick_and_clean(stopped):
    slow = {name: result for name, result in stopped.items()
            if result[0] != 0 or result[1] >= STOP_SECONDS}
    assert not slow, 'not stopped with 0 within %d s (None: killed after ' \
        '%d s): %s' % (STOP_SECONDS, KILL_AFTER, slow)


def _wait_for_any_log(dep, names, texts, timeout=30):
    """Until one of ``texts`` shows in the log of each of ``names``."""
    deadline = time.monotonic() + timeout
    waiting = set(names)
    while waiting:
        for name in list(waiting):
            try:
                with open(dep.log_of(name)) as f:
                    log = f.read()
            except OSError:
                continue
            if any(text in log for text in texts):
                waiting.discard(name)
        assert time.monotonic() < deadline, (
            'no sign of the outage in the log of %s' % sorted(waiting))
        time.sleep(0.2)


def _deployment(tmp_path_factory, name):
    return deployment_mod.Deployment(tmp_path_factory.mktemp(name),
                                     hosts_per_cell=1)


@pytest.fixture(scope='module')
def broker_down(tmp_path_factory):
    """A deployment whose RabbitMQ stopped after every service came up."""
    dep = _deployment(tmp_path_factory, 'broker-down')
    try:
        dep.bring_up()
        dep.rabbit.stop()
        yield dep
    finally:
        dep.teardown()


@pytest.fixture(scope='module')
def database_down(tmp_path_factory):
    """A deployment whose PostgreSQL stopped after every service came
    up."""
    dep = _deployment(tmp_path_factory, 'database-down')
    try:
        dep.bring_up()
        dep.database.stop()
        yield dep
    finally:
        dep.teardown()


# Computes and conductors retry the broker; the API notices nothing
# until a request comes.
BROKER_AWAY = ('is unreachable', 'Connection failed')
DATABASE_AWAY = ('refuses connections', 'cannot run',
                 'a database is unavailable')


def test_every_kind_of_service_stops_quickly_while_rabbitmq_is_down(
        broker_down):
    _wait_for_any_log(broker_down, ['cell1-compute1', 'conductor-cell1',
                                    'scheduler', 'super-conductor'],
                      BROKER_AWAY)
    # A periodic report or two in the middle of its retries.
    time.sleep(2)

    _assert_quick_and_clean(_sigterm_all(broker_down, EVERY_KIND))


def _start_waiting(dep, names, text):
    """Start ``names`` again (their earlier processes are gone, or
    killed now if a test that failed left them) and wait until each
    logs ``text``: its start waits for what is away."""
    for name in names:
        proc = dep.procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    since = {name: dep.log_size(name) for name in names}
    dep.start(*names)
    for name in names:
        dep.wait_for_log(name, text, since[name])


def test_a_service_starting_while_rabbitmq_is_down_stops_quickly(
        broker_down):
    _start_waiting(broker_down, STARTING, 'Connection failed')

    _assert_quick_and_clean(_sigterm_all(broker_down, STARTING))


def test_every_kind_of_service_stops_quickly_while_postgresql_is_down(
        database_down):
    _wait_for_any_log(database_down, ['conductor-cell1', 'scheduler',
                                      'super-conductor'], DATABASE_AWAY)
    time.sleep(2)

    _assert_quick_and_clean(_sigterm_all(database_down, EVERY_KIND))


def test_a_service_starting_while_postgresql_is_down_stops_quickly(
        database_down):
    names = ('super-conductor', 'scheduler', 'conductor-cell1')
    _start_waiting(database_down, names, 'refuses connections')

    _assert_quick_and_clean(_sigterm_all(database_down, names))
