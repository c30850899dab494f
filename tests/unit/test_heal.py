"""What the scheduler answers the reconciliation of claims: the
consumers holding allocations older than an age, a page at a time, from
its own database alone.

The scheduler here has its own database and nothing else: no API
database, no cell database, and no client of any other service.
"""

import pytest

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_manager
from scheduler_split.scheduler import process as scheduler_process
from tests.unit import helpers

CONF = conf.CONF
CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
CONSUMERS = ['%d1111111-1111-4111-8111-111111111111' % n for n in range(5)]
BIG = helpers.host_stats(vcpus=16, memory_mb=16384)


@pytest.fixture
def endpoint(scheduler_db):
    # Only the scheduler's own database is configured.
    assert CONF.api_database.connection is None
    assert CONF.database.connection is None
    scheduler = scheduler_process.Scheduler(scheduler_db)
    provider = host_manager.HostManager(scheduler_db).update_from_stats(
        CELL, 'host1', 'host1-node', BIG)
    for consumer in reversed(CONSUMERS):
        claims.claim(scheduler_db, provider, consumer, SMALL)
    return scheduler.endpoint(None)


def test_consumers_come_in_uuid_order_a_page_after_the_marker(endpoint):
    ctx = ss_context.get_admin_context()
    assert endpoint.get_consumers(ctx, 0, limit=2) == CONSUMERS[:2]
    assert endpoint.get_consumers(ctx, 0, marker=CONSUMERS[1],
                                  limit=2) == CONSUMERS[2:4]
    assert endpoint.get_consumers(ctx, 0, marker=CONSUMERS[3],
                                  limit=2) == CONSUMERS[4:]
    assert endpoint.get_consumers(ctx, 0, marker=CONSUMERS[4]) == []


def test_young_allocations_are_not_listed(endpoint):
    ctx = ss_context.get_admin_context()
    assert endpoint.get_consumers(ctx, 3600) == []
    assert endpoint.get_consumers(ctx, 0) == CONSUMERS


def test_a_consumer_holding_several_hosts_is_listed_once(endpoint,
                                                         scheduler_db):
    provider = host_manager.HostManager(scheduler_db).update_from_stats(
        CELL, 'host2', 'host2-node', BIG)
    # A move: the migration holds the source, the instance the
    # destination; a consumer with two allocations is one consumer.
    claims.claim(scheduler_db, provider, CONSUMERS[0] + '-x', SMALL)
    ctx = ss_context.get_admin_context()
    assert endpoint.get_consumers(ctx, 0) == sorted(
        CONSUMERS + [CONSUMERS[0] + '-x'])
