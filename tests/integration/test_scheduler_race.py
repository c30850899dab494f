"""Several scheduler processes claiming on one PostgreSQL database never
overcommit a host nor break a server group's policy, however the boots
race; nor on one MariaDB database."""

import collections
import concurrent.futures
import random
import time

import pytest

from tests.functional import fixtures
from tests.integration import conftest
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

# Each fake host has room for 30 m1.tiny (512 MiB each, 512 MiB reserved):
# 4 hosts hold 120, fewer than the 200 boots.
PER_HOST = 30
BOOTS = 200
# On MariaDB, the race alone, at half the size: the same contention on
# each host for half the time.
SIZES = {'postgresql': (PER_HOST, BOOTS), 'mariadb': (15, 100)}
ON_POSTGRESQL = pytest.mark.parametrize('crowded', [conftest.POSTGRESQL],
                                        indirect=True)


@pytest.fixture(scope='module')
def crowded(request, tmp_path_factory):
    database = conftest.database(request)
    per_host, _ = SIZES[database]
    dep = deployment_mod.Deployment(
        tmp_path_factory.mktemp('race'), schedulers=3,
        host_memory_mb=512 * (per_host + 1), database=database)
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


def _create_group(api, policy):
    resp = api.at('2.64').post('/v2.1/os-server-groups', {
        'server_group': {'name': policy, 'policy': policy}})
    assert resp.status_code == 200, resp.text
    return resp.json()['server_group']['id']


def _wait_for_task(api, server_id, status, timeout=120):
    """The server once it shows ``status`` with no task running (or
    ERROR)."""
    deadline = time.monotonic() + timeout
    while True:
        server = api.server(server_id)
        if server['status'] == 'ERROR' or (
                server['status'] == status and
                server['OS-EXT-STS:task_state'] is None):
            return server
        if time.monotonic() > deadline:
            raise AssertionError('server %s is %s/%s, not %s' % (
                server_id, server['status'],
                server['OS-EXT-STS:task_state'], status))
        time.sleep(0.1)


def _delete_all(crowded, api, server_ids):
    """Delete the servers; return once they are gone and, within 30 s,
    no claim is left."""
    for sid in server_ids:
        assert api.delete('/v2.1/servers/%s' % sid).status_code == 204
    for sid in server_ids:
        api.wait_gone(sid, timeout=120)
    deadline = time.monotonic() + 30
    while crowded.allocations():
        assert time.monotonic() < deadline, crowded.allocations()
        time.sleep(0.2)


@ON_POSTGRESQL
def test_draining_a_host_while_boots_run_moves_every_server(crowded):
    """Two schedulers: an operator disables a host and cold migrates
    every server off it while 24 boots race for the same hosts. Every
    server ends ACTIVE off the host, no host is over capacity, and the
    allocations left are exactly one per server (no migration keeps
    any)."""
    # Two of the three schedulers; the third is back for the next tests.
    crowded.stop('scheduler-3')
    try:
        _drain(crowded)
    finally:
        crowded.start('scheduler-3')


def _drain(crowded):
    api = fixtures.Api(crowded.base_url)
    # In zone nova, as the other host of its cell (cell1-compute1 is the
    # only host of zone edge: a server booted there cannot leave it).
    source = 'cell2-compute1'
    drained = [api.boot(name='drain-%d' % i,
                        availability_zone='nova:' + source)
               for i in range(10)]
    for sid in drained:
        assert api.wait_for(sid, timeout=120)['OS-EXT-SRV-ATTR:host'] == \
            source
    [service] = [s for s in api.get('/v2.1/os-services').json()[
        'services'] if s['host'] == source]
    assert api.put('/v2.1/os-services/%s' % service['id'],
                   {'status': 'disabled'}).status_code == 200

    def migrate(sid):
        resp = api.post('/v2.1/servers/%s/action' % sid, {'migrate': None})
        assert resp.status_code == 202, resp.text
        server = _wait_for_task(api, sid, 'VERIFY_RESIZE')
        assert server['status'] == 'VERIFY_RESIZE', server.get('fault')
        resp = api.post('/v2.1/servers/%s/action' % sid,
                        {'confirmResize': None})
        assert resp.status_code == 204, resp.text
        return _wait_for_task(api, sid, 'ACTIVE')

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        boots = [pool.submit(api.boot, name='during-%d' % i)
                 for i in range(24)]
        moves = {sid: pool.submit(migrate, sid) for sid in drained}
        booted = [f.result() for f in boots]
        moved = {sid: f.result() for sid, f in moves.items()}
    servers = {sid: api.wait_for(sid, timeout=120) for sid in booted}
    servers.update(moved)

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    hosts = {sid: s['OS-EXT-SRV-ATTR:host'] for sid, s in servers.items()}
    assert source not in hosts.values()
    # A move stays in its cell.
    assert {hosts[sid] for sid in drained} == {'cell2-compute2'}
    for host, rc, amount, capacity in crowded.usage():
        assert amount <= capacity, (host, rc, amount, capacity)
    claimed = {}
    for consumer, host in set(crowded.allocations()):
        claimed.setdefault(consumer, set()).add(host)
    assert claimed == {sid: {host} for sid, host in hosts.items()}
    migrations = api.get('/v2.1/os-migrations').json()['migrations']
    assert sorted(m['instance_uuid'] for m in migrations) == sorted(drained)
    assert {m['status'] for m in migrations} == {'confirmed'}

    # Leave the hosts empty and enabled for the tests that follow.
    _delete_all(crowded, api, servers)
    assert api.put('/v2.1/os-services/%s' % service['id'],
                   {'status': 'enabled'}).status_code == 200


@ON_POSTGRESQL
def test_server_group_policies_hold_across_three_schedulers(crowded):
    """Members of anti-affinity and affinity groups, all booted at once,
    are spread over three scheduler processes; the policies hold."""
    api = fixtures.Api(crowded.base_url)
    hosts = len(crowded.hosts)
    anti = {_create_group(api, 'anti-affinity'): hosts + 2
            for _ in range(4)}
    affinity = {_create_group(api, 'affinity'): 5 for _ in range(3)}
    boots = [(group, index) for group, count in
             list(anti.items()) + list(affinity.items())
             for index in range(count)]
    random.Random(4).shuffle(boots)     # the groups' members interleave

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        server_ids = list(pool.map(
            lambda boot: api.boot(name='member-%d' % boot[1],
                                  hints={'group': boot[0]}), boots))
    group_of = {sid: group for sid, (group, _) in zip(server_ids, boots)}
    servers = {sid: api.wait_for(sid, timeout=120) for sid in server_ids}

    # Where the scheduler database holds each group's members: the host
    # of every consumer (one row per resource class).
    claimed = {}
    for consumer, host in set(crowded.allocations()):
        claimed.setdefault(group_of.get(consumer), []).append(host)
    assert None not in claimed, 'allocations of servers never booted'
    for group, count in anti.items():
        members = [s for sid, s in servers.items() if group_of[sid] == group]
        active = [s for s in members if s['status'] == 'ACTIVE']
        shown = sorted(s['OS-EXT-SRV-ATTR:host'] for s in active)
        # One member on every host, never two; the rest find no host.
        assert shown == sorted(crowded.hosts), (group, shown)
        assert sorted(claimed[group]) == shown
        errors = [s for s in members if s['status'] == 'ERROR']
        assert len(errors) == count - hosts
        assert all('No valid host' in s['fault']['message'] for s in errors)
    for group, count in affinity.items():
        members = [s for sid, s in servers.items() if group_of[sid] == group]
        assert {s['status'] for s in members} == {'ACTIVE'}
        shown = {s['OS-EXT-SRV-ATTR:host'] for s in members}
        assert len(shown) == 1, (group, shown)
        assert len(claimed[group]) == count
        assert set(claimed[group]) == shown

    # Leave the hosts empty for the race below.
    for sid in server_ids:
        assert api.delete('/v2.1/servers/%s' % sid).status_code == 204
    for sid in server_ids:
        api.wait_gone(sid, timeout=60)
    assert crowded.allocations() == []


@ON_POSTGRESQL
def test_servers_offloaded_while_boots_race_are_unshelved_within_capacity(
        crowded):
    """Two schedulers: 20 servers are shelved and offloaded (each gives
    its host back) while 80 boots race for the hosts they free, then all
    20 are unshelved at once, placed again through the schedulers. Every
    server ends ACTIVE, no host is over capacity, and the claims left are
    exactly one per live server."""
    crowded.stop('scheduler-3')
    try:
        _shelve_while_booting(crowded)
    finally:
        crowded.start('scheduler-3')


def _shelve_while_booting(crowded):
    api = fixtures.Api(crowded.base_url)
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        shelved = list(pool.map(lambda i: api.boot(name='shelf-%d' % i),
                                range(20)))
    for sid in shelved:
        assert api.wait_for(sid, timeout=120)['status'] == 'ACTIVE'

    def shelve(sid):
        # [DEFAULT] shelved_offload_time is 0: offloaded at once.
        resp = api.post('/v2.1/servers/%s/action' % sid, {'shelve': None})
        assert resp.status_code == 202, resp.text
        return _wait_for_task(api, sid, 'SHELVED_OFFLOADED')

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        boots = [pool.submit(api.boot, name='racer-%d' % i)
                 for i in range(80)]
        offloaded = {sid: pool.submit(shelve, sid) for sid in shelved}
        racers = [f.result() for f in boots]
        offloaded = {sid: f.result() for sid, f in offloaded.items()}
    assert {s['status'] for s in offloaded.values()} == {
        'SHELVED_OFFLOADED'}
    assert all(s['OS-EXT-SRV-ATTR:host'] is None
               for s in offloaded.values())
    servers = {sid: api.wait_for(sid, timeout=300) for sid in racers}
    # An offloaded server holds nothing.
    assert not {c for c, _ in crowded.allocations()} & set(shelved)

    def unshelve(sid):
        resp = api.post('/v2.1/servers/%s/action' % sid, {'unshelve': None})
        assert resp.status_code == 202, resp.text
        return _wait_for_task(api, sid, 'ACTIVE')

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        servers.update(zip(shelved, pool.map(unshelve, shelved)))

    assert {s['status'] for s in servers.values()} == {'ACTIVE'}, {
        sid: (s['status'], s.get('fault')) for sid, s in servers.items()
        if s['status'] != 'ACTIVE'}
    for host, rc, amount, capacity in crowded.usage():
        assert amount <= capacity, (host, rc, amount, capacity)
    claimed = {}
    for consumer, host in set(crowded.allocations()):
        claimed.setdefault(consumer, set()).add(host)
    assert claimed == {sid: {s['OS-EXT-SRV-ATTR:host']}
                       for sid, s in servers.items()}
    # The unshelved servers are who they were.
    for sid in shelved:
        assert servers[sid]['name'].startswith('shelf-')

    # Leave the hosts empty for the race below.
    _delete_all(crowded, api, servers)


@pytest.mark.parametrize('crowded', [conftest.POSTGRESQL, conftest.MARIADB],
                         indirect=True)
def test_three_schedulers_and_200_racing_boots_never_overcommit(crowded):
    assert sum(name.startswith('scheduler') for name in crowded.procs) == 3
    per_host, boots = SIZES[crowded.database.name]
    api = fixtures.Api(crowded.base_url)
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        server_ids = list(pool.map(
            lambda i: api.boot(name='race-%d' % i), range(boots)))
    servers = {sid: api.wait_for(sid, timeout=300) for sid in server_ids}

    active = {sid for sid, s in servers.items() if s['status'] == 'ACTIVE'}
    errors = {sid: s for sid, s in servers.items()
              if s['status'] == 'ERROR'}
    assert len(active) + len(errors) == boots
    assert all(s['fault']['message'] for s in errors.values())
    # Capacity is the only limit: every host ends full.
    assert len(active) == per_host * len(crowded.hosts), (
        collections.Counter(s['fault']['message'] for s in errors.values()),
        crowded.usage())

    # What the scheduler database shows: no provider is over capacity...
    used = crowded.usage()
    assert used
    for host, rc, amount, capacity in used:
        assert amount <= capacity, (host, rc, amount, capacity)
    # ...and the allocations left are exactly those of the ACTIVE servers.
    consumers = {consumer for consumer, _ in crowded.allocations()}
    assert consumers == active
    for sid in active:
        host = servers[sid]['OS-EXT-SRV-ATTR:host']
        assert {h for c, h in crowded.allocations() if c == sid} == {host}
