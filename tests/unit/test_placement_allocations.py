"""Allocations written through the Placement API for consumers that are
not the scheduler's servers (scheduler RPC 1.11): checked against the
inventory, guarded by the providers' and the consumer's generations,
honoured by the scheduler's claims and never reconciled away."""

import threading

from oslo_utils import uuidutils
import pytest

from scheduler_split import context
from scheduler_split import exception
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import placement_allocations
from scheduler_split.scheduler import process as scheduler_process
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
PORT = '5d6e0c1f-2b3a-4c5d-8e9f-0a1b2c3d4e5f'


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def scheduler(scheduler_db):
    return scheduler_process.Scheduler(scheduler_db)


def _host(scheduler, host='h1'):
    return scheduler.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(vcpus=4, memory_mb=4096,
                                             local_gb=40))


def _spec(allocations, generation='unset', **owner):
    spec = {'allocations': allocations, 'project_id': 'p', 'user_id': 'u',
            'consumer_type': owner.get('consumer_type')}
    if generation != 'unset':
        spec['generation'] = generation
    return spec


def test_a_written_allocation_is_honoured_by_claims(scheduler, ctx,
                                                    scheduler_db):
    h1 = _host(scheduler)
    scheduler.write_allocations(ctx, {PORT: _spec({h1: {'VCPU': 3}}, None)})
    # One VCPU left, in the database and in the scheduler's memory.
    assert scheduler.host_manager.get(h1).free('VCPU') == 1
    with pytest.raises(exception.ClaimCapacityExceeded):
        claims.claim(scheduler_db, h1, uuidutils.generate_uuid(),
                     {'VCPU': 2, 'MEMORY_MB': 1, 'DISK_GB': 1})
    claims.claim(scheduler_db, h1, uuidutils.generate_uuid(),
                 {'VCPU': 1, 'MEMORY_MB': 1, 'DISK_GB': 1})
    # And what the claim holds is honoured by the next write.
    with pytest.raises(exception.AllocationCapacityExceeded):
        scheduler.write_allocations(ctx, {PORT: _spec({h1: {'VCPU': 4}},
                                                      1)})
    # The claims' reconciliation never sees the port.
    assert PORT not in claims.consumers_older_than(scheduler_db, -60)


def test_the_consumer_generation_guards_its_writes(scheduler, ctx):
    h1 = _host(scheduler)
    scheduler.write_allocations(ctx, {PORT: _spec({h1: {'VCPU': 1}}, None,
                                                  consumer_type='PORT')})
    assert scheduler.get_consumer(ctx, PORT) == {
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'PORT',
        'generation': 1}
    for stale in (None, 0, 2):
        with pytest.raises(exception.ConsumerGenerationConflict):
            scheduler.write_allocations(ctx, {PORT: _spec(
                {h1: {'VCPU': 2}}, stale)})
    scheduler.write_allocations(ctx, {PORT: _spec({h1: {'VCPU': 2}}, 1)})
    assert scheduler.get_consumer_allocations(ctx, PORT)[h1][
        'resources'] == {'VCPU': 2}
    # Nothing held: the consumer is gone.
    scheduler.write_allocations(ctx, {PORT: _spec({}, 2)})
    assert scheduler.get_consumer(ctx, PORT) is None
    assert scheduler.get_consumer_allocations(ctx, PORT) == {}


def test_bad_amounts_and_providers_are_refused_whole(scheduler, ctx,
                                                     scheduler_db):
    h1 = _host(scheduler)
    other = uuidutils.generate_uuid()
    with pytest.raises(exception.AllocationProviderNotFound):
        scheduler.write_allocations(ctx, {
            PORT: _spec({h1: {'VCPU': 1}}),
            other: _spec({uuidutils.generate_uuid(): {'VCPU': 1}})})
    with pytest.raises(exception.AllocationNoInventory):
        scheduler.write_allocations(ctx, {PORT: _spec({h1: {'VGPU': 1}})})
    with pytest.raises(exception.InventoryClassUnknown):
        scheduler.write_allocations(ctx, {PORT: _spec(
            {h1: {'CUSTOM_NOPE': 1}})})
    # Nothing of the refused writes stays.
    assert scheduler.get_consumer_allocations(ctx, PORT) == {}
    assert claims.consumers_older_than(scheduler_db, -60) == []


def test_racing_writers_never_hand_out_a_unit_twice(scheduler, ctx,
                                                    scheduler_db):
    h1 = _host(scheduler)
    won, lost = [], []
    start = threading.Barrier(8)

    def write(consumer):
        start.wait()
        try:
            placement_allocations.write(scheduler_db, {
                consumer: _spec({h1: {'VCPU': 1}}, None)})
            won.append(consumer)
        except (exception.AllocationCapacityExceeded,
                exception.AllocationsRaced):
            lost.append(consumer)

    threads = [threading.Thread(target=write,
                                args=(uuidutils.generate_uuid(),))
               for _ in range(8)]
    threads += [threading.Thread(
        target=lambda: lost.append(_claim(scheduler_db, h1)))
        for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = scheduler.get_provider_allocations(ctx, h1)['allocations']
    assert sum(r.get('VCPU', 0) for r in held.values()) <= 4
    assert len(won) <= 4


def _claim(url, provider):
    try:
        claims.claim(url, provider, uuidutils.generate_uuid(),
                     {'VCPU': 1, 'MEMORY_MB': 1, 'DISK_GB': 1})
    except exception.SchedulerSplitException:
        return None
    return None


def test_the_reshaper_moves_inventory_and_allocations_at_once(
        scheduler, ctx, scheduler_db):
    from scheduler_split.scheduler import placement_providers
    root = _host(scheduler)
    child = placement_providers.create_provider(scheduler_db, 'vgpus',
                                                parent_uuid=root)
    scheduler.write_allocations(ctx, {PORT: _spec({root: {'VCPU': 2}},
                                                  None)})
    generation = scheduler.get_provider_allocations(ctx, root)['generation']
    inventory = {'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
                 'step_size': 1, 'allocation_ratio': 1.0}
    # VCPU leaves the root while the port holds 2 of it there: refused,
    # unless the port's allocation moves in the same reshape.
    keep = {'MEMORY_MB': dict(inventory, total=4096, max_unit=4096),
            'DISK_GB': dict(inventory, total=40, max_unit=40)}
    with pytest.raises(exception.InventoryInUse):
        placement_allocations.reshape(scheduler_db, {
            root: {'generation': generation, 'inventories': keep}}, {})
    scheduler.reshape(ctx, {
        root: {'generation': generation, 'inventories': keep},
        child: {'generation': 0, 'inventories': {'VCPU': inventory}}},
        {PORT: _spec({child: {'VCPU': 2}}, 1)})
    assert scheduler.get_consumer_allocations(ctx, PORT) == {
        child: {'generation': 2, 'resources': {'VCPU': 2}}}
    assert 'VCPU' not in scheduler.host_manager.get(root).inventory
    # A stale generation moves nothing.
    with pytest.raises(exception.ReshapeGenerationConflict):
        placement_allocations.reshape(scheduler_db, {
            child: {'generation': 0, 'inventories': {}}}, {})
