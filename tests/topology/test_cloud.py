"""The cloud of hosts apart (:mod:`tests.topology`): three controllers
and four compute hosts in network namespaces, a RabbitMQ cluster with
quorum queues, and MariaDB Galera reached through HAProxy or written by
each controller on its own node (multi-writer).

On each: 100 boots through the three APIs all end ACTIVE across both
cells, with every scheduler placing some; every server socket is on its
host's own address; and, in multi-writer mode, three schedulers racing
boots onto room for fewer servers than asked never overcommit a host.
"""

import concurrent.futures
import itertools
import re

import pytest
import requests

from tests.functional import fixtures
from tests.topology import galera

pytestmark = [pytest.mark.integration, pytest.mark.topology,
              pytest.mark.serial]

BOOTS = 100


@pytest.fixture(scope='module', params=galera.MODES)
def cloud(request, shared_cloud):
    """The shared cloud (see conftest) in each Galera mode, with no
    faults configured."""
    shared_cloud.configure({})
    shared_cloud.set_mode(request.param)
    return shared_cloud


def _apis(cloud):
    return [fixtures.Api(url) for url in cloud.api_urls]


def _boot(cloud, count, prefix):
    """``count`` boots spread over every API; their server ids."""
    apis = itertools.cycle(_apis(cloud))
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        return list(pool.map(
            lambda pair: pair[0].boot(name='%s-%d' % (prefix, pair[1])),
            zip(apis, range(count))))


def _placed(cloud, host):
    """How many selects the scheduler of controller ``host`` placed, from
    its metrics (served on its own address)."""
    text = requests.get('http://%s:%d/metrics' % (
        cloud.network.hosts[host], 9771), timeout=10).text
    found = re.search(r'^scheduler_split_scheduler_select_destinations_total'
                      r'\{result="placed"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def _delete(cloud, server_ids):
    api = _apis(cloud)[0]
    for sid in server_ids:
        assert api.delete('/v2.1/servers/%s' % sid).status_code == 204
    for sid in server_ids:
        api.wait_gone(sid, timeout=120)


def _listening(cloud, host):
    """``(address, port, process)`` of every TCP socket listening on
    ``host``."""
    out = cloud.run_on(host, 'ss', '-Hltnp').stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        address, _, port = fields[3].rpartition(':')
        process = re.search(r'\(\("([^"]+)"', line)
        found.append((address.strip('[]'), int(port),
                      process.group(1) if process else '?'))
    return found


def test_a_hundred_boots_through_three_apis_reach_active(cloud):
    before = {host: _placed(cloud, host) for host in cloud.controllers}
    server_ids = _boot(cloud, BOOTS, 'spread')
    api = _apis(cloud)[0]
    servers = {sid: api.wait_for(sid, timeout=300) for sid in server_ids}

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}, {
        sid: s.get('fault') for sid, s in servers.items()
        if s['status'] != 'ACTIVE'}
    hosts = {s['OS-EXT-SRV-ATTR:host'] for s in servers.values()}
    assert hosts == set(cloud.hosts)
    assert {cloud.cell_of(sid) for sid in servers} == set(cloud.CELLS)
    # Every controller's scheduler placed some of them.
    placed = {host: _placed(cloud, host) - before[host]
              for host in cloud.controllers}
    assert all(placed.values()), placed
    claimed = {}
    for consumer, host in cloud.allocations():
        claimed.setdefault(consumer, set()).add(host)
    for sid, server in servers.items():
        assert claimed[sid] == {server['OS-EXT-SRV-ATTR:host']}
    _delete(cloud, server_ids)
    assert cloud.allocations() == []


def test_every_server_listens_on_its_own_hosts_address_only(cloud):
    for host, address in cloud.network.hosts.items():
        listening = _listening(cloud, host)
        assert listening or host not in cloud.controllers
        elsewhere = [(a, port, process) for a, port, process in listening
                     if a != address and
                     # epmd, the Erlang port mapper RabbitMQ starts,
                     # always adds the loopback address to its own.
                     not (process == 'epmd' and a in ('127.0.0.1', '::1'))]
        assert not elsewhere, (host, address, elsewhere)


def test_three_schedulers_racing_for_too_little_room_never_overcommit(
        cloud):
    """Boots of a flavor that fits ``fits`` servers in all, three times
    as many asked at once through the three APIs: in multi-writer mode
    each controller's scheduler claims on its own Galera node."""
    api = _apis(cloud)[0]
    # 7 servers of 2 GiB fit on each host (15 GiB free).
    resp = api.post('/v2.1/flavors', {'flavor': {
        'name': 'race', 'ram': 2048, 'vcpus': 1, 'disk': 1}})
    assert resp.status_code == 200, resp.text
    flavor = resp.json()['flavor']['id']
    fits = 7 * len(cloud.hosts)
    apis = itertools.cycle(_apis(cloud))
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        server_ids = list(pool.map(
            lambda pair: pair[0].boot(name='race-%d' % pair[1],
                                      flavor=flavor),
            zip(apis, range(3 * fits))))
    servers = {sid: api.wait_for(sid, timeout=300) for sid in server_ids}

    active = {sid for sid, s in servers.items() if s['status'] == 'ACTIVE'}
    errors = [s for s in servers.values() if s['status'] == 'ERROR']
    assert len(active) + len(errors) == len(servers)
    assert all('No valid host' in s['fault']['message'] for s in errors), [
        s['fault'] for s in errors]
    # Capacity is the only limit: every host ends full, none over.
    assert len(active) == fits
    for host, rc, amount, capacity in cloud.usage():
        assert amount <= capacity, (host, rc, amount, capacity)
    assert {consumer for consumer, _ in cloud.allocations()} == active
    _delete(cloud, server_ids)
    assert api.delete('/v2.1/flavors/%s' % flavor).status_code == 202
