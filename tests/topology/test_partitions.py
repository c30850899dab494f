"""Cut links of the clustered cloud (:mod:`tests.topology`), each held
in the middle of a burst of boots and then healed: what the fault rounds
assert holds (:mod:`.rounds`), and no server ever runs on two hosts at
once, counted from every fake host's record of what it runs.

The cuts (:data:`CUTS`): a compute host's link down; a compute host's
packets to and from RabbitMQ dropped; a controller's packets to every
Galera node and HAProxy dropped; a controller's packets to every
RabbitMQ node dropped; one RabbitMQ node's clustering packets to and
from the other two dropped. Packets are dropped with iptables in the
host's namespace, so a peer meets silence, not a refusal.

Each round prints its figures, the seconds from the cut to the first
boot that succeeds again on the rest of the cloud (``recovered``), and
from the heal to the cut host taking a build again (``rejoined``).

CI runs the bounded set: a compute host cut from everything for 30 s.
``SCHEDULER_SPLIT_PARTITIONS=all`` runs every cut, each held for 30 s
and for 120 s (past ``service_down_time``).
"""

import os
import time

import pytest

from scheduler_split.image import catalog as images
from tests.integration import faults
from tests.topology import galera
from tests.topology import rabbit
from tests.topology import rounds

pytestmark = [pytest.mark.integration, pytest.mark.topology,
              pytest.mark.faults, pytest.mark.serial]

# The compute host cut: a host of the second cell, in no zone of its own.
CUT_HOST = 'cell2-compute2'
# The controller cut: not the one whose API the burst goes through, nor
# (through HAProxy) the Galera node every HAProxy writes to.
CUT_CONTROLLER = 'ctl2'
# The RabbitMQ node cut from the other two.
MINORITY = 'ctl3'
# What each cut is, in words.
CUTS = {
    'compute': 'a compute host cut from everything (its link down)',
    'compute-bus': 'a compute host cut from RabbitMQ but not its peers',
    'controller-db': 'a controller cut from the database only',
    'controller-bus': 'a controller cut from RabbitMQ only',
    'rabbit-minority': 'one RabbitMQ node cut from the other two',
}
# (what is cut, seconds it stays cut)
BOUNDED = (('compute', 30),)
ALL = tuple((what, held) for what in CUTS for held in (30, 120))
ROUNDS = ALL if os.environ.get('SCHEDULER_SPLIT_PARTITIONS') == 'all' \
    else BOUNDED
# How long a healed host is given to take a build again.
REJOIN_TIMEOUT = 180


@pytest.fixture(scope='module')
def cloud(shared_cloud):
    """The shared cloud with the fault rounds' timers (see rounds)."""
    return rounds.configure(shared_cloud)


def _both_ways(port):
    """Rules for every packet to or from TCP ``port``."""
    return [('OUTPUT', '-p', 'tcp', '--dport', str(port)),
            ('OUTPUT', '-p', 'tcp', '--sport', str(port)),
            ('INPUT', '-p', 'tcp', '--dport', str(port)),
            ('INPUT', '-p', 'tcp', '--sport', str(port))]


def _cut(cloud, what):
    """Cut ``what``: the host cut, and how to heal it."""
    net = cloud.network
    if what == 'compute':
        net.link(CUT_HOST, False)
        return CUT_HOST, lambda: net.link(CUT_HOST, True)
    if what == 'compute-bus':
        net.drop(CUT_HOST, *_both_ways(rabbit.PORT))
        return CUT_HOST, lambda: net.undrop(CUT_HOST)
    if what == 'controller-db':
        # Its services and its HAProxy lose every Galera node and
        # HAProxy; its own Galera node stays in the cluster, and the
        # others' HAProxies still reach it.
        net.drop(CUT_CONTROLLER,
                 ('OUTPUT', '-p', 'tcp', '--dport', str(galera.PORT)),
                 ('OUTPUT', '-p', 'tcp', '--dport',
                  str(galera.HAPROXY_PORT)))
        return CUT_CONTROLLER, lambda: net.undrop(CUT_CONTROLLER)
    if what == 'controller-bus':
        # Its services lose every RabbitMQ node; its own node stays in
        # the cluster and serves the others.
        net.drop(CUT_CONTROLLER,
                 ('OUTPUT', '-p', 'tcp', '--dport', str(rabbit.PORT)))
        return CUT_CONTROLLER, lambda: net.undrop(CUT_CONTROLLER)
    if what == 'rabbit-minority':
        others = [net.hosts[host] for host in cloud.controllers
                  if host != MINORITY]
        rules = []
        for address in others:
            for port in (rabbit.DIST_PORT, rabbit.EPMD_PORT):
                rules += [('OUTPUT', '-d', address, '-p', 'tcp',
                           '--dport', str(port)),
                          ('OUTPUT', '-d', address, '-p', 'tcp',
                           '--sport', str(port))]
        net.drop(MINORITY, *rules)
        return MINORITY, lambda: net.undrop(MINORITY)
    raise ValueError(what)


def _rejoined(cloud, host, healed):
    """Seconds from ``healed`` until ``host`` takes a build again: a boot
    asked onto it (a compute) or through its API (a controller) is
    ACTIVE. One is tried every few seconds: the scheduler takes a
    compute back once it reports again."""
    image = images.find('cirros')[0]
    server = {'flavorRef': '1', 'imageRef': image, 'networks': 'none'}
    if host in cloud.controllers:
        client = faults.Client(cloud.api_urls[cloud.controllers.index(
            host)])
    else:
        client = faults.Client(cloud.api_urls[0])
        zone = 'edge' if host == cloud.EDGE_HOST else 'nova'
        server['availability_zone'] = '%s:%s' % (zone, host)
    deadline = healed + REJOIN_TIMEOUT
    number = 0
    while time.monotonic() < deadline:
        number += 1
        resp = client.request('POST', '/v2.1/servers', json={'server': dict(
            server, name='rejoin-%d' % number)})
        if resp is not None and resp.status_code == 202:
            server_id = resp.json()['server']['id']
            while time.monotonic() < deadline:
                got = client.request('GET', '/v2.1/servers/%s' % server_id)
                status = got.json()['server']['status'] \
                    if got is not None and got.status_code == 200 else None
                if status == 'ACTIVE':
                    return time.monotonic() - healed
                if status == 'ERROR':
                    break
                time.sleep(0.5)
        time.sleep(2)
    return None


@pytest.mark.parametrize('what,held', ROUNDS,
                         ids=['%s-%ds' % r for r in ROUNDS])
def test_a_cut_link_mid_burst_runs_no_server_twice(cloud, what, held,
                                                   capsys):
    found = {}

    def fault():
        found['host'], heal = _cut(cloud, what)
        time.sleep(held)
        heal()
        found['healed'] = time.monotonic()
        return '%s (%s) cut %ds' % (found['host'], CUTS[what], held)

    def after():
        found['rejoined'] = _rejoined(cloud, found['host'], found['healed'])

    figures, line = rounds.run(cloud, 'haproxy', 'cut-' + what, fault,
                               seed=ROUNDS.index((what, held)), after=after)
    rejoined = found.get('rejoined')
    line += ' rejoined=%s' % ('never' if rejoined is None
                              else '%.1fs' % rejoined)
    with capsys.disabled():
        print('\n' + line)

    assert figures.accepted, line
    assert rejoined is not None, line
    found = rounds.problems(figures)
    assert not found, '%s\n%s' % (line, '\n'.join(figures.details))
