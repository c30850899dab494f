"""Claims against a real SQLite scheduler database."""

import sqlite3
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_manager
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}


def _provider(url, host='host1', **stats):
    return host_manager.HostManager(url).update_from_stats(
        CELL, host, host + '-node', helpers.host_stats(**stats))


def _generation(url, uuid):
    with engines.reader(url) as session:
        rp = scheduler_models.ResourceProvider
        return session.scalar(sa.select(rp.generation)
                              .where(rp.uuid == uuid))


def _allocation_count(url):
    with engines.reader(url) as session:
        return session.scalar(sa.select(sa.func.count())
                              .select_from(scheduler_models.Allocation))


# --- claim ------------------------------------------------------------------

def test_claim_that_fits_writes_allocations_and_bumps_generation(
        scheduler_db):
    rp = _provider(scheduler_db)
    before = _generation(scheduler_db, rp)

    new_generation = claims.claim(scheduler_db, rp, 'consumer-1', SMALL)

    assert new_generation == before + 1
    assert _generation(scheduler_db, rp) == before + 1
    assert claims.allocations_of(scheduler_db, 'consumer-1') == {rp: SMALL}


def test_claim_skips_zero_amounts(scheduler_db):
    rp = _provider(scheduler_db)
    claims.claim(scheduler_db, rp, 'consumer-1',
                 {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 0})
    assert claims.allocations_of(scheduler_db, 'consumer-1') == {
        rp: {'VCPU': 1, 'MEMORY_MB': 512}}


def test_claim_up_to_exact_capacity_with_ratio_and_reserved_succeeds(
        scheduler_db):
    # (2048 - 512) * 1.5 = 2304 MiB allocatable
    rp = _provider(scheduler_db, memory_mb=2048, reserved_memory_mb=512,
                   ram_allocation_ratio=1.5)
    claims.claim(scheduler_db, rp, 'a', {'MEMORY_MB': 2304})
    with pytest.raises(exception.ClaimCapacityExceeded):
        claims.claim(scheduler_db, rp, 'b', {'MEMORY_MB': 1})


def test_claim_beyond_capacity_raises_and_writes_nothing(scheduler_db):
    rp = _provider(scheduler_db, vcpus=2, memory_mb=2048)
    claims.claim(scheduler_db, rp, 'first', {'VCPU': 1, 'MEMORY_MB': 1024})
    generation = _generation(scheduler_db, rp)

    with pytest.raises(exception.ClaimCapacityExceeded) as info:
        claims.claim(scheduler_db, rp, 'second',
                     {'VCPU': 1, 'MEMORY_MB': 1025})

    assert 'MEMORY_MB' in info.value.format_message()
    assert claims.allocations_of(scheduler_db, 'second') == {}
    assert helpers.provider_usage(scheduler_db, rp) == {
        'VCPU': 1, 'MEMORY_MB': 1024}
    assert _generation(scheduler_db, rp) == generation


def test_claim_of_resource_class_the_provider_lacks_is_capacity_exceeded(
        scheduler_db):
    rp = _provider(scheduler_db)
    with pytest.raises(exception.ClaimCapacityExceeded):
        claims.claim(scheduler_db, rp, 'c', {'VGPU': 1})
    assert claims.allocations_of(scheduler_db, 'c') == {}


def test_claim_on_unknown_provider_raises_compute_host_not_found(
        scheduler_db):
    with pytest.raises(exception.ComputeHostNotFound):
        claims.claim(scheduler_db, 'e3c9a1f0-0000-4000-8000-000000000000',
                     'c', SMALL)


def test_failed_claim_keeps_the_consumers_existing_allocations(scheduler_db):
    a = _provider(scheduler_db, 'a')
    full = _provider(scheduler_db, 'full', vcpus=1)
    claims.claim(scheduler_db, a, 'consumer', SMALL)

    with pytest.raises(exception.ClaimCapacityExceeded):
        claims.claim(scheduler_db, full, 'consumer', {'VCPU': 2})

    assert claims.allocations_of(scheduler_db, 'consumer') == {a: SMALL}


def test_second_claim_by_same_consumer_moves_its_allocations(scheduler_db):
    a = _provider(scheduler_db, 'a', vcpus=1)
    b = _provider(scheduler_db, 'b', vcpus=1)
    claims.claim(scheduler_db, a, 'consumer', SMALL)
    generation_a = _generation(scheduler_db, a)

    claims.claim(scheduler_db, b, 'consumer', SMALL)

    assert claims.allocations_of(scheduler_db, 'consumer') == {b: SMALL}
    assert helpers.provider_usage(scheduler_db, a) == {}
    # Releasing on a is a change of a: claims that read a before must fail.
    assert _generation(scheduler_db, a) == generation_a + 1
    # a's only vCPU is free again for somebody else.
    claims.claim(scheduler_db, a, 'other', SMALL)


def test_second_claim_by_same_consumer_on_same_provider_replaces_allocations(
        scheduler_db):
    rp = _provider(scheduler_db, vcpus=4)
    claims.claim(scheduler_db, rp, 'consumer', SMALL)

    bigger = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}
    claims.claim(scheduler_db, rp, 'consumer', bigger)

    assert claims.allocations_of(scheduler_db, 'consumer') == {rp: bigger}
    assert helpers.provider_usage(scheduler_db, rp) == bigger


# --- release ----------------------------------------------------------------

def test_release_returns_what_was_released_and_frees_the_capacity(
        scheduler_db):
    rp = _provider(scheduler_db, vcpus=1)
    claims.claim(scheduler_db, rp, 'consumer', SMALL)
    generation = _generation(scheduler_db, rp)

    released = claims.release(scheduler_db, 'consumer')

    assert released == {rp: SMALL}
    assert claims.allocations_of(scheduler_db, 'consumer') == {}
    assert _generation(scheduler_db, rp) == generation + 1
    claims.claim(scheduler_db, rp, 'next', SMALL)


def test_repeated_release_returns_empty_dict(scheduler_db):
    rp = _provider(scheduler_db)
    claims.claim(scheduler_db, rp, 'consumer', SMALL)
    claims.release(scheduler_db, 'consumer')
    generation = _generation(scheduler_db, rp)

    assert claims.release(scheduler_db, 'consumer') == {}
    assert _generation(scheduler_db, rp) == generation


def test_release_only_drops_that_consumers_allocations(scheduler_db):
    rp = _provider(scheduler_db)
    claims.claim(scheduler_db, rp, 'keep', SMALL)
    claims.claim(scheduler_db, rp, 'drop', SMALL)
    claims.release(scheduler_db, 'drop')
    assert claims.allocations_of(scheduler_db, 'keep') == {rp: SMALL}
    assert helpers.provider_usage(scheduler_db, rp) == SMALL


# --- the generation check ---------------------------------------------------

@pytest.fixture
def concurrent_bump(scheduler_db):
    """``concurrent_bump(table)``: another writer bumps the generation of
    ``table`` right before a claim's guarded UPDATE of it; returns the
    statements it fired before (one at most).

    SQLite serializes writers (``BEGIN IMMEDIATE``), so no second
    connection can write between the claim's read and its write; the other
    writer's effect is injected instead on the claim's own connection, just
    before ``UPDATE ... WHERE generation = :seen`` runs.
    """
    engine = engines.get_engine(scheduler_db, writer=True)
    armed = []
    fired = []

    def _before(conn, cursor, statement, parameters, context, executemany):
        if (armed and not fired
                and statement.lstrip().upper().startswith('UPDATE')
                and '%s.generation = ' % armed[0] in statement):
            cursor.connection.execute(
                'UPDATE %s SET generation = generation + 1' % armed[0])
            fired.append(statement)

    def arm(table='resource_providers'):
        armed.append(table)
        return fired

    event.listen(engine, 'before_cursor_execute', _before)
    yield arm
    event.remove(engine, 'before_cursor_execute', _before)


def test_claim_whose_generation_update_matches_no_row_raises_conflict(
        scheduler_db, concurrent_bump):
    rp = _provider(scheduler_db)
    seen = _generation(scheduler_db, rp)
    fired = concurrent_bump()

    with pytest.raises(exception.ClaimConflict) as info:
        claims.claim(scheduler_db, rp, 'consumer', SMALL)

    assert fired, 'the guarded generation UPDATE never ran'
    assert str(seen) in info.value.format_message()
    assert claims.allocations_of(scheduler_db, 'consumer') == {}
    assert _allocation_count(scheduler_db) == 0


def test_conflicting_claim_keeps_consumers_previous_allocations(
        scheduler_db, concurrent_bump):
    a = _provider(scheduler_db, 'a')
    b = _provider(scheduler_db, 'b')
    claims.claim(scheduler_db, a, 'consumer', SMALL)
    fired = concurrent_bump()

    with pytest.raises(exception.ClaimConflict):
        claims.claim(scheduler_db, b, 'consumer', SMALL)

    assert fired
    assert claims.allocations_of(scheduler_db, 'consumer') == {a: SMALL}


# --- a race -----------------------------------------------------------------

def test_concurrent_claims_never_exceed_capacity(scheduler_db):
    capacity_instances = 3
    rp = _provider(scheduler_db, vcpus=capacity_instances,
                   memory_mb=512 * capacity_instances,
                   local_gb=10 * capacity_instances)
    threads_count = 8
    barrier = threading.Barrier(threads_count)
    results = {}
    done = threading.Event()
    observed = []

    def _claim(index):
        consumer = 'consumer-%d' % index
        barrier.wait()
        try:
            claims.claim(scheduler_db, rp, consumer, SMALL)
            results[consumer] = 'claimed'
        except (exception.ClaimCapacityExceeded,
                exception.ClaimConflict) as exc:
            results[consumer] = type(exc).__name__
        except Exception as exc:   # reported by the assertion below
            results[consumer] = repr(exc)

    def _watch():
        while not done.is_set():
            observed.append(
                helpers.provider_usage(scheduler_db, rp).get('VCPU', 0))

    workers = [threading.Thread(target=_claim, args=(i,))
               for i in range(threads_count)]
    watcher = threading.Thread(target=_watch)
    watcher.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)
    done.set()
    watcher.join(30)

    assert len(results) == threads_count
    claimed = [c for c, r in results.items() if r == 'claimed']
    failed = {r for r in results.values() if r != 'claimed'}
    assert len(claimed) == capacity_instances, results
    assert failed <= {'ClaimCapacityExceeded', 'ClaimConflict'}, results
    assert max(observed) <= capacity_instances
    assert helpers.provider_usage(scheduler_db, rp) == {
        rc: amount * capacity_instances for rc, amount in SMALL.items()}
    for consumer in results:
        expected = {rp: SMALL} if consumer in claimed else {}
        assert claims.allocations_of(scheduler_db, consumer) == expected


# --- server group policies --------------------------------------------------

ANTI = {'uuid': '0c5f0e1a-3b7d-4e49-8f2a-6d1c9b8a7e01',
        'policy': 'anti-affinity', 'max_per_host': 1}
AFFINITY = {'uuid': '1d6a1f2b-4c8e-4f5a-9a3b-7e2d0c9b8f02',
            'policy': 'affinity', 'max_per_host': 1}


def test_anti_affinity_member_is_refused_where_another_member_is(
        scheduler_db):
    a = _provider(scheduler_db, 'a')
    b = _provider(scheduler_db, 'b')
    claims.claim(scheduler_db, a, 'm1', SMALL, group=ANTI)

    with pytest.raises(exception.ClaimGroupPolicyViolation) as info:
        claims.claim(scheduler_db, a, 'm2', SMALL, group=ANTI)
    claims.claim(scheduler_db, b, 'm2', SMALL, group=ANTI)
    # Anybody outside the group still fits beside m1.
    claims.claim(scheduler_db, a, 'outsider', SMALL)

    assert 'anti-affinity' in info.value.format_message()
    assert claims.group_hosts(scheduler_db, ANTI['uuid']) == ['a', 'b']


def test_anti_affinity_rule_allows_max_per_host_members(scheduler_db):
    a = _provider(scheduler_db, 'a')
    two = dict(ANTI, max_per_host=2)
    claims.claim(scheduler_db, a, 'm1', SMALL, group=two)
    claims.claim(scheduler_db, a, 'm2', SMALL, group=two)
    with pytest.raises(exception.ClaimGroupPolicyViolation):
        claims.claim(scheduler_db, a, 'm3', SMALL, group=two)
    assert claims.group_hosts(scheduler_db, two['uuid']) == ['a', 'a']


def test_affinity_members_follow_the_first_one(scheduler_db):
    a = _provider(scheduler_db, 'a')
    b = _provider(scheduler_db, 'b')
    claims.claim(scheduler_db, b, 'm1', SMALL, group=AFFINITY)

    with pytest.raises(exception.ClaimGroupPolicyViolation):
        claims.claim(scheduler_db, a, 'm2', SMALL, group=AFFINITY)
    claims.claim(scheduler_db, b, 'm2', SMALL, group=AFFINITY)

    assert claims.allocations_of(scheduler_db, 'm2') == {b: SMALL}


def test_a_member_can_move_its_own_claim(scheduler_db):
    a = _provider(scheduler_db, 'a')
    b = _provider(scheduler_db, 'b')
    claims.claim(scheduler_db, a, 'only', SMALL, group=AFFINITY)
    # Its own allocation does not pin the only member of an affinity group
    # (a reschedule to an alternate moves it).
    claims.claim(scheduler_db, b, 'only', SMALL, group=AFFINITY)
    assert claims.allocations_of(scheduler_db, 'only') == {b: SMALL}


def test_released_member_no_longer_counts(scheduler_db):
    a = _provider(scheduler_db, 'a')
    claims.claim(scheduler_db, a, 'm1', SMALL, group=ANTI)
    claims.release(scheduler_db, 'm1')
    claims.claim(scheduler_db, a, 'm2', SMALL, group=ANTI)
    assert claims.group_hosts(scheduler_db, ANTI['uuid']) == ['a']


def test_soft_policies_are_not_enforced_by_claims(scheduler_db):
    a = _provider(scheduler_db, 'a')
    soft = dict(ANTI, policy='soft-anti-affinity')
    claims.claim(scheduler_db, a, 'm1', SMALL, group=soft)
    claims.claim(scheduler_db, a, 'm2', SMALL, group=soft)
    assert helpers.provider_usage(scheduler_db, a)['VCPU'] == 2


def test_member_claim_losing_the_group_generation_raises_conflict(
        scheduler_db, concurrent_bump):
    a = _provider(scheduler_db, 'a')
    claims.claim(scheduler_db, a, 'm1', SMALL, group=AFFINITY)
    fired = concurrent_bump('consumer_groups')

    with pytest.raises(exception.ClaimConflict):
        claims.claim(scheduler_db, a, 'm2', SMALL, group=AFFINITY)

    assert fired
    assert claims.allocations_of(scheduler_db, 'm2') == {}
    assert claims.group_hosts(scheduler_db, AFFINITY['uuid']) == ['a']


@pytest.mark.parametrize('group', [ANTI, AFFINITY],
                         ids=['anti-affinity', 'affinity'])
def test_members_racing_on_every_host_never_break_the_policy(scheduler_db,
                                                             group):
    members = 8
    # Room for every member on any one host: only the policy limits.
    hosts = {_provider(scheduler_db, 'host%d' % i, vcpus=members,
                       memory_mb=512 * members): 'host%d' % i
             for i in range(4)}
    barrier = threading.Barrier(members)
    results = {}

    def _claim(index):
        consumer = 'member-%d' % index
        barrier.wait()
        # Each member tries every host, starting from a different one.
        order = list(hosts)[index % 4:] + list(hosts)[:index % 4]
        for rp in order:
            for _ in range(20):
                try:
                    claims.claim(scheduler_db, rp, consumer, SMALL,
                                 group=group)
                    results[consumer] = hosts[rp]
                    return
                except exception.ClaimConflict:
                    continue
                except exception.ClaimGroupPolicyViolation:
                    break
        results[consumer] = None

    workers = [threading.Thread(target=_claim, args=(i,))
               for i in range(members)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)

    placed = sorted(h for h in results.values() if h)
    assert len(results) == members
    assert placed == claims.group_hosts(scheduler_db, group['uuid'])
    if group['policy'] == 'anti-affinity':
        assert placed == sorted(hosts.values())
    else:
        assert len(placed) == members and len(set(placed)) == 1


def test_claim_the_database_aborts_for_a_deadlock_is_a_conflict(
        scheduler_db):
    """PostgreSQL breaks a deadlock between two claims moving consumers in
    opposite directions by aborting one; that one lost a race."""
    rp = _provider(scheduler_db)
    engine = engines.get_engine(scheduler_db, writer=True)

    class Deadlock(sqlite3.OperationalError):
        pgcode = '40P01'     # what psycopg2 says of PostgreSQL's abort

    def _execute(cursor, statement, parameters, context):
        if 'resource_providers.generation = ' in statement:
            raise Deadlock('deadlock detected')

    event.listen(engine, 'do_execute', _execute)
    try:
        with pytest.raises(exception.ClaimConflict) as info:
            claims.claim(scheduler_db, rp, 'consumer', SMALL)
    finally:
        event.remove(engine, 'do_execute', _execute)

    assert 'deadlock' in info.value.format_message()
    assert claims.allocations_of(scheduler_db, 'consumer') == {}


# --- moves: a migration holds the source while the instance claims the
# destination ----------------------------------------------------------------

def test_a_move_hands_the_source_to_the_migration_and_bumps_it(
        scheduler_db):
    source, dest = _provider(scheduler_db, 'src'), _provider(scheduler_db,
                                                             'dst')
    claims.claim(scheduler_db, source, 'instance', SMALL)
    before = _generation(scheduler_db, source)

    moved, dropped = claims.move(scheduler_db, 'instance', 'migration')

    assert (moved, dropped) == ({source: SMALL}, {})
    assert _generation(scheduler_db, source) == before + 1
    assert claims.allocations_of(scheduler_db, 'migration') == {
        source: SMALL}
    assert claims.allocations_of(scheduler_db, 'instance') == {}
    # The instance claims its destination: both hosts are accounted for.
    claims.claim(scheduler_db, dest, 'instance', SMALL)
    assert claims.allocations_of(scheduler_db, 'migration') == {
        source: SMALL}
    assert claims.allocations_of(scheduler_db, 'instance') == {dest: SMALL}
    assert helpers.provider_usage(scheduler_db, source) == SMALL
    assert helpers.provider_usage(scheduler_db, dest) == SMALL


def test_a_revert_gives_the_source_back_and_drops_the_destination(
        scheduler_db):
    source, dest = _provider(scheduler_db, 'src'), _provider(scheduler_db,
                                                             'dst')
    claims.claim(scheduler_db, source, 'instance', SMALL)
    claims.move(scheduler_db, 'instance', 'migration')
    claims.claim(scheduler_db, dest, 'instance', SMALL)
    dest_generation = _generation(scheduler_db, dest)

    moved, dropped = claims.move(scheduler_db, 'migration', 'instance')

    assert (moved, dropped) == ({source: SMALL}, {dest: SMALL})
    assert claims.allocations_of(scheduler_db, 'instance') == {
        source: SMALL}
    assert claims.allocations_of(scheduler_db, 'migration') == {}
    assert helpers.provider_usage(scheduler_db, dest) == {}
    assert _generation(scheduler_db, dest) == dest_generation + 1


def test_a_move_from_a_consumer_holding_nothing_changes_nothing(
        scheduler_db):
    dest = _provider(scheduler_db, 'dst')
    claims.claim(scheduler_db, dest, 'instance', SMALL)
    assert claims.move(scheduler_db, 'migration', 'instance') == ({}, {})
    assert claims.allocations_of(scheduler_db, 'instance') == {dest: SMALL}


def test_moves_racing_claims_never_overcommit_nor_lose_a_host(scheduler_db):
    """Two instances move off a full-ish source while six new consumers
    race for its room: the migrations keep the source's room taken, so
    exactly the two free slots go, and the destination is never over its
    capacity either, reverts included."""
    source = _provider(scheduler_db, 'src', vcpus=4, memory_mb=2048,
                       local_gb=40)
    dest = _provider(scheduler_db, 'dst', vcpus=4, memory_mb=2048,
                     local_gb=40)
    for name in ('i0', 'i1'):
        claims.claim(scheduler_db, source, name, SMALL)
    barrier = threading.Barrier(8)
    results = {}
    observed = []
    done = threading.Event()

    def _move(name):
        barrier.wait()
        claims.move(scheduler_db, name, 'migration-' + name)
        claims.claim(scheduler_db, dest, name, SMALL)
        results[name] = 'moved'

    def _boot(index):
        consumer = 'new-%d' % index
        barrier.wait()
        for _ in range(10):
            try:
                claims.claim(scheduler_db, source, consumer, SMALL)
                results[consumer] = 'claimed'
                return
            except exception.ClaimConflict:
                continue
            except exception.ClaimCapacityExceeded:
                results[consumer] = 'full'
                return

    def _watch():
        while not done.is_set():
            observed.append(
                (helpers.provider_usage(scheduler_db, source).get('VCPU', 0),
                 helpers.provider_usage(scheduler_db, dest).get('VCPU', 0)))

    threads = ([threading.Thread(target=_move, args=(n,))
                for n in ('i0', 'i1')] +
               [threading.Thread(target=_boot, args=(i,)) for i in range(6)])
    watcher = threading.Thread(target=_watch)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    assert sorted(results.values()).count('claimed') == 2, results
    assert sorted(results.values()).count('full') == 4, results
    assert [results['i0'], results['i1']] == ['moved', 'moved']
    assert helpers.provider_usage(scheduler_db, source)['VCPU'] == 4
    assert helpers.provider_usage(scheduler_db, dest)['VCPU'] == 2

    # Reverts race claims for the destination's room: whatever wins, the
    # destination never holds more than it has, and each instance is back
    # on the source, held once.
    barrier = threading.Barrier(6)
    taken = []

    def _revert(name):
        barrier.wait()
        claims.move(scheduler_db, 'migration-' + name, name)

    def _take(index):
        barrier.wait()
        for _ in range(10):
            try:
                claims.claim(scheduler_db, dest, 'late-%d' % index, SMALL)
                taken.append(index)
                return
            except exception.ClaimConflict:
                continue
            except exception.ClaimCapacityExceeded:
                return

    threads = ([threading.Thread(target=_revert, args=(n,))
                for n in ('i0', 'i1')] +
               [threading.Thread(target=_take, args=(i,)) for i in range(4)])
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    done.set()
    watcher.join(30)

    assert max(s for s, _ in observed) <= 4
    assert max(d for _, d in observed) <= 4
    for name in ('i0', 'i1'):
        assert claims.allocations_of(scheduler_db, name) == {source: SMALL}
        assert claims.allocations_of(scheduler_db, 'migration-' + name) == {}
    assert helpers.provider_usage(scheduler_db, source)['VCPU'] == 4
    assert helpers.provider_usage(scheduler_db, dest).get('VCPU', 0) == \
        len(taken)
    assert len(taken) >= 2


# --- provider trees ---------------------------------------------------------

GPUS = [{'name': 'host1-node_pgpu%d' % i, 'parent': None,
         'resources': {'VGPU': 1}, 'traits': ['CUSTOM_GPU_%d' % i]}
        for i in range(2)]


def _children(url, root_uuid):
    rp = scheduler_models.ResourceProvider
    root = sa.orm.aliased(rp)
    with engines.reader(url) as session:
        return dict(session.execute(sa.select(rp.name, rp.uuid).join(
            root, root.id == rp.root_provider_id).where(
            root.uuid == root_uuid)).all())


def test_concurrent_claims_of_childs_units_never_hand_one_out_twice(
        scheduler_db):
    """Eight threads race for two VGPUs on two GPUs below one compute
    node: two win, each on a GPU of its own, and the losers hold
    nothing."""
    rp = _provider(scheduler_db, vcpus=16, memory_mb=16 * 512,
                   local_gb=160, providers=GPUS)
    gpus = _children(scheduler_db, rp)
    assert sorted(gpus) == ['host1-node_pgpu0', 'host1-node_pgpu1']
    wanted = dict(SMALL, VGPU=1)
    barrier = threading.Barrier(8)
    results = {}

    def _claim(index):
        consumer = 'consumer-%d' % index
        barrier.wait()
        try:
            claims.claim(scheduler_db, rp, consumer, wanted)
            results[consumer] = 'claimed'
        except (exception.ClaimCapacityExceeded,
                exception.ClaimConflict) as exc:
            results[consumer] = type(exc).__name__

    workers = [threading.Thread(target=_claim, args=(i,)) for i in range(8)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)
    claimed = sorted(c for c, r in results.items() if r == 'claimed')
    assert len(results) == 8 and len(claimed) == 2, results
    held = [claims.allocations_of(scheduler_db, c) for c in claimed]
    assert sorted(gpu for allocation in held for gpu in allocation
                  if gpu != rp) == sorted(gpus.values())
    for allocation in held:
        assert allocation[rp] == SMALL
    for uuid in gpus.values():
        assert helpers.provider_usage(scheduler_db, uuid) == {'VGPU': 1}
    for consumer in set(results) - set(claimed):
        assert claims.allocations_of(scheduler_db, consumer) == {}


def test_a_numbered_group_claims_the_child_with_its_trait(scheduler_db):
    from scheduler_split.objects import resource_request
    rp = _provider(scheduler_db, providers=GPUS)
    gpus = _children(scheduler_db, rp)
    request = resource_request.ResourceRequest.from_primitive({'groups': [
        {'suffix': '', 'resources': SMALL},
        {'suffix': '1', 'resources': {'VGPU': 1},
         'required': ['CUSTOM_GPU_1']}]})
    _, allocation = claims.claim_allocation(
        scheduler_db, rp, 'consumer', dict(SMALL, VGPU=1), request=request)
    assert allocation == {rp: SMALL, gpus['host1-node_pgpu1']: {'VGPU': 1}}
    with pytest.raises(exception.ClaimTreeRefused):
        claims.claim(scheduler_db, rp, 'other', dict(SMALL, VGPU=1),
                     request=request)
    # Releasing gives the child's unit back.
    released = claims.release(scheduler_db, 'consumer')
    assert released[gpus['host1-node_pgpu1']] == {'VGPU': 1}
    assert helpers.provider_usage(scheduler_db,
                                  gpus['host1-node_pgpu1']) == {}


def test_a_proposed_placement_that_no_longer_fits_is_placed_again(
        scheduler_db):
    """Memory proposes GPU 0, which another claim just took: the claim
    places the request itself, on GPU 1; a proposal naming a provider
    outside the tree is not taken either."""
    rp = _provider(scheduler_db, providers=GPUS)
    gpus = _children(scheduler_db, rp)
    wanted = dict(SMALL, VGPU=1)
    on_gpu0 = {rp: SMALL, gpus['host1-node_pgpu0']: {'VGPU': 1}}
    _, first = claims.claim_allocation(scheduler_db, rp, 'first', wanted,
                                       proposed=on_gpu0)
    assert first == on_gpu0
    _, second = claims.claim_allocation(scheduler_db, rp, 'second', wanted,
                                        proposed=on_gpu0)
    assert second == {rp: SMALL, gpus['host1-node_pgpu1']: {'VGPU': 1}}
    claims.release(scheduler_db, 'second')
    _, third = claims.claim_allocation(
        scheduler_db, rp, 'third', wanted,
        proposed={rp: SMALL, 'not-in-the-tree': {'VGPU': 1}})
    assert third == {rp: SMALL, gpus['host1-node_pgpu1']: {'VGPU': 1}}
