"""Several scheduler processes claiming on one PostgreSQL database never
overcommit a host, however the boots race."""

import concurrent.futures

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
    used = crowded.query(
        crowded.scheduler_db,
        "SELECT p.host, a.resource_class, sum(a.used), "
        "(i.total - i.reserved) * i.allocation_ratio "
        "FROM allocations a "
        "JOIN resource_providers p ON p.id = a.resource_provider_id "
        "JOIN inventories i ON i.resource_provider_id = p.id "
        "AND i.resource_class = a.resource_class "
        "GROUP BY p.host, a.resource_class, i.total, i.reserved, "
        "i.allocation_ratio")
    assert used
    for host, rc, amount, capacity in used:
        assert amount <= capacity, (host, rc, amount, capacity)
    # ...and the allocations left are exactly those of the ACTIVE servers.
    consumers = {consumer for consumer, _ in crowded.allocations()}
    assert consumers == active
    for sid in active:
        host = servers[sid]['OS-EXT-SRV-ATTR:host']
        assert {h for c, h in crowded.allocations() if c == sid} == {host}
