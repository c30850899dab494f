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

from tests.topology import rounds

pytestmark = [pytest.mark.integration, pytest.mark.topology,
              pytest.mark.faults, pytest.mark.serial]

# Seconds a victim stays dead, the burst going on meanwhile.
DOWN = 5
# (Galera mode, victim)
ROUNDS = (('haproxy', 'rabbitmq-leader'), ('haproxy', 'galera-writer'),
          ('haproxy', 'controller'), ('haproxy', 'rabbitmq-rolling'),
          ('multi-writer', 'galera-writer'))


@pytest.fixture(scope='module')
def cloud(shared_cloud):
    """The shared cloud (see conftest) with the rounds' short timers and
    injected failures."""
    return rounds.configure(shared_cloud)


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
    figures, line = rounds.run(
        cloud, mode, victim, lambda: _fault(cloud, victim),
        seed=ROUNDS.index((mode, victim)))
    with capsys.disabled():
        print('\n' + line)

    assert figures.accepted, line
    found = rounds.problems(figures)
    assert not found, '%s\n%s' % (line, '\n'.join(figures.details))
