"""Several scheduler processes claiming on one PostgreSQL database never
overcommit a host nor break a server group's policy, however the boots
race."""

import concurrent.futures
import random

import pytest

from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

# Each fake host has room for 30 m1.tiny (512 MiB each, 512 MiB reserved):
# 4 hosts hold 120, fewer than the 200 boots.
PER_HOST = 30
BOOTS = 200


@pytest.fixture(scope='module')
def crowded(tmp_path_factory):
    dep = deployment_mod.Deployment(
        tmp_path_factory.mktemp('race'), schedulers=3,
        host_memory_mb=512 * (PER_HOST + 1))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


def _create_group(api, policy):
    resp = api.at('2.64').post('/v2.1/os-server-groups', {
        'server_group': {'name': policy, 'policy': policy}})
    assert resp.status_code == 200, resp.text
    return resp.json()['server_group']['id']


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


def test_three_schedulers_and_200_racing_boots_never_overcommit(crowded):
    assert sum(name.startswith('scheduler') for name in crowded.procs) == 3
    api = fixtures.Api(crowded.base_url)
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        server_ids = list(pool.map(
            lambda i: api.boot(name='race-%d' % i), range(BOOTS)))
    servers = {sid: api.wait_for(sid, timeout=300) for sid in server_ids}

    active = {sid for sid, s in servers.items() if s['status'] == 'ACTIVE'}
    errors = {sid: s for sid, s in servers.items()
              if s['status'] == 'ERROR'}
    assert len(active) + len(errors) == BOOTS
    assert all(s['fault']['message'] for s in errors.values())
    # Capacity is the only limit: every host ends full.
    assert len(active) == PER_HOST * len(crowded.hosts)

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
