"""Faults of the clustered cloud (:mod:`tests.topology`), each in the
middle of a burst of boots, as the fault-injection rounds of one host
are: once the victim is back, every accepted server is ACTIVE (but
those the fake driver failed on every host; the cloud has room for all
of them), no build is left in BUILD, claims follow the live servers, no
host is over capacity and no request was answered with a 500.

The rounds, on Galera through HAProxy: SIGKILL of the RabbitMQ node
that leads the most topic queues; SIGKILL of the Galera node HAProxy
sends every connection to; SIGKILL of every process of a controller
(its services, RabbitMQ and Galera nodes and HAProxy); and the three
RabbitMQ nodes restarted one after the other. In multi-writer mode:
SIGKILL of the Galera node the second controller's scheduler and
conductors write to. Each prints its figures, and the seconds from the
fault to the first boot that succeeds again.
"""

import time

import pytest

from tests.integration import faults

pytestmark = [pytest.mark.integration, pytest.mark.topology,
              pytest.mark.faults, pytest.mark.serial]

# Longer than a controller takes to come back (its RabbitMQ and Galera
# nodes rejoin their clusters first): a build it held is re-driven,
# not given up.
LOST_BUILD_TIMEOUT = 60
REDRIVE_INTERVAL = 3
HEAL_INTERVAL = 3
HEAL_GRACE = 5
HEAL_WINDOW = HEAL_GRACE + 2 * HEAL_INTERVAL + 15
# Seconds a victim stays dead, the burst going on meanwhile.
DOWN = 5
SETTLE = 180
SPAWN_DELAY = 1.0
FAILURE_RATE = 0.2
# (Galera mode, victim)
ROUNDS = (('haproxy', 'rabbitmq-leader'), ('haproxy', 'galera-writer'),
          ('haproxy', 'controller'), ('haproxy', 'rabbitmq-rolling'),
          ('multi-writer', 'galera-writer'))


@pytest.fixture(scope='module')
def cloud(shared_cloud):
    """The shared cloud (see conftest) with the rounds' short timers and
    injected failures."""
    shared_cloud.configure({'faults.conf': faults.timers_conf(
        LOST_BUILD_TIMEOUT, REDRIVE_INTERVAL, HEAL_INTERVAL, HEAL_GRACE, 3,
        SPAWN_DELAY, FAILURE_RATE)})
    return shared_cloud


def _fault(cloud, victim):
    """Inflict the fault and end it; what was hit."""
    if victim == 'rabbitmq-leader':
        node = cloud.rabbit_leader()
        node.kill_and_restart(down=DOWN)
        return node.name
    if victim == 'galera-writer':
        # Through HAProxy, the node every HAProxy sends its connections
        # to; in multi-writer mode, the second controller's own node.
        node = cloud.database.nodes[0 if cloud.mode == 'haproxy' else 1]
        node.kill_and_restart(down=DOWN)
        return node.host
    if victim == 'controller':
        host = cloud.controllers[-1]
        cloud.kill_host(host)
        time.sleep(DOWN)
        cloud.start_host(host)
        return host
    for node in cloud.rabbit.nodes:
        node.stop()
        node._launch('a')
    return 'every RabbitMQ node in turn'


@pytest.mark.parametrize('mode,victim', ROUNDS, ids=[
    victim if mode == 'haproxy' else '%s-%s' % (mode, victim)
    for mode, victim in ROUNDS])
def test_a_fault_mid_burst_leaves_no_build_stuck_and_no_claim_astray(
        cloud, mode, victim, capsys):
    client = faults.Client(cloud.api_urls[0])
    cloud.set_mode(mode)
    faults.healthy(cloud, client, HEAL_WINDOW)
    burst = faults.Burst(client, victim, seed=ROUNDS.index(
        (mode, victim))).start()
    try:
        burst.wait_for_busy_moment(after=6)
        struck = time.monotonic()
        hit = _fault(cloud, victim)
        back = time.monotonic()
        cloud.wait_for_hosts(cloud.hosts, timeout=120)
        time.sleep(2)
    finally:
        burst.stop()
    figures = faults.verify(cloud, client, burst, HEAL_WINDOW, back,
                            settle_timeout=SETTLE, struck=struck)
    line = '%s %s %s down=%.1fs %s' % (
        figures.line(victim), mode, hit, back - struck,
        figures.timing_line())
    with capsys.disabled():
        print('\n' + line)

    assert figures.accepted, line
    # The cloud has room for every server a burst can ask for (36
    # requests of at most 3 servers, ROOM_PER_HOST on each of 4 hosts):
    # a boot that found no host did not lack room.
    problems = ['failed', 'no_room', 'stuck', 'lost', 'undeleted',
                'ghosts', 'leaked_claims', 'unclaimed', 'overcommitted',
                'http_500', 'malformed', 'unreachable']
    found = [p for p in problems if getattr(figures, p)]
    assert not found, '%s\n%s' % (line, '\n'.join(figures.details))
