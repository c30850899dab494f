"""The scheduler's heal asks the super-conductor, reads no other database.

The scheduler here has its own database and nothing else: no API
database, no cell database. What the super-conductor answers decides what
is released; no answer releases nothing.
"""

import oslo_messaging as messaging
import pytest

from scheduler_split import conf
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import endpoint as scheduler_endpoint
from scheduler_split.scheduler import heal
from scheduler_split.scheduler import host_manager
from tests.unit import helpers

CONF = conf.CONF
CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
LIVE = '11111111-1111-4111-8111-111111111111'
ORPHAN = '22222222-2222-4222-8222-222222222222'
PENDING = '33333333-3333-4333-8333-333333333333'


class SuperConductor:
    """The super-conductor's side of the call, as the bus delivers it."""

    def __init__(self, needed=(), error=None):
        self.needed = set(needed)
        self.error = error
        self.asked = []

    def consumers_needing_claims(self, ctx, consumer_uuids):
        self.asked.append(list(consumer_uuids))
        if self.error is not None:
            raise self.error
        return [u for u in consumer_uuids if u in self.needed]


@pytest.fixture
def scheduler(scheduler_db):
    # Only the scheduler's own database is configured.
    assert CONF.api_database.connection is None
    assert CONF.database.connection is None
    manager = scheduler_endpoint.Scheduler(scheduler_db)
    provider = host_manager.HostManager(scheduler_db).update_from_stats(
        CELL, 'host1', 'host1-node', helpers.host_stats())
    for consumer in (LIVE, ORPHAN, PENDING):
        claims.claim(scheduler_db, provider, consumer, SMALL)
    return manager


def _consumers(manager):
    return set(claims.consumers_older_than(manager.db_url, -60))


def test_heal_releases_what_the_super_conductor_says_nobody_needs(
        scheduler):
    scheduler._conductor = SuperConductor(needed={LIVE, PENDING})
    assert scheduler.heal_allocations(grace=0) == [ORPHAN]
    assert _consumers(scheduler) == {LIVE, PENDING}
    assert scheduler._conductor.asked == [sorted([LIVE, ORPHAN, PENDING])]
    # Nothing left to heal.
    assert scheduler.heal_allocations(grace=0) == []


@pytest.mark.parametrize('error', [
    messaging.MessagingTimeout('no super-conductor answered'),
    messaging.RemoteError('OperationalError', 'cell database down'),
])
def test_heal_releases_nothing_when_the_super_conductor_cannot_answer(
        scheduler, error):
    scheduler._conductor = SuperConductor(error=error)
    assert scheduler.heal_allocations(grace=0) == []
    assert _consumers(scheduler) == {LIVE, ORPHAN, PENDING}


def test_heal_asks_nothing_about_young_allocations(scheduler):
    scheduler._conductor = SuperConductor()
    assert scheduler.heal_allocations(grace=3600) == []
    assert scheduler._conductor.asked == []
    assert _consumers(scheduler) == {LIVE, ORPHAN, PENDING}


def test_heal_asks_in_chunks(scheduler, monkeypatch):
    monkeypatch.setattr(heal, 'HEAL_CHUNK', 2)
    scheduler._conductor = SuperConductor(needed={PENDING})
    assert sorted(scheduler.heal_allocations(grace=0)) == sorted(
        [LIVE, ORPHAN])
    assert [len(chunk) for chunk in scheduler._conductor.asked] == [2, 1]
    assert _consumers(scheduler) == {PENDING}
