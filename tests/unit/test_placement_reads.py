"""What the scheduler answers the Placement API (scheduler RPC 1.9): its
providers, inventories, usages and allocations as Placement shows them,
selected and paged by the database, and a clear refusal from a client
capped below 1.9."""

import oslo_messaging as messaging
from oslo_utils import uuidutils
import pytest

from scheduler_split import context
from scheduler_split import memory_bus
from scheduler_split import rpc
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split.scheduler import placement_reads
from scheduler_split.scheduler import process as scheduler_process
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SERVER = '0c1b7a58-5a7e-4a39-b7c4-0f7c0a6d2e11'
OTHER_SERVER = '3f0b9f4e-8a0f-4a7e-9d3c-6c1e2b7a9d22'


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def scheduler(scheduler_db):
    return scheduler_process.Scheduler(scheduler_db)


def _add_host(scheduler, host, **extra):
    stats = dict({'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100,
                  'cpu_allocation_ratio': 4.0, 'reserved_memory_mb': 512},
                 **extra)
    return scheduler.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(**stats))


def _page(scheduler, ctx, detail=True, **filters):
    return scheduler.get_providers(ctx, filters, detail=detail)


def _names(page):
    return [p['name'] for p in page['providers']]


def test_every_compute_node_is_a_provider_with_placements_inventory(
        scheduler, ctx):
    uuid = _add_host(scheduler, 'h1')
    [provider] = _page(scheduler, ctx)['providers']
    assert (provider['uuid'], provider['name']) == (uuid, 'h1')
    assert provider['inventories']['VCPU'] == {
        'total': 8, 'reserved': 0, 'allocation_ratio': 4.0,
        'min_unit': 1, 'max_unit': 32, 'step_size': 1}
    assert provider['inventories']['MEMORY_MB'] == {
        'total': 8192, 'reserved': 512, 'allocation_ratio': 1.0,
        'min_unit': 1, 'max_unit': 7680, 'step_size': 1}
    assert provider['capacity'] == {'VCPU': 32, 'MEMORY_MB': 7680,
                                    'DISK_GB': 100}
    # Every class of the inventory, used or not.
    assert provider['usages'] == {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}
    assert provider['aggregates'] == []


def test_usages_and_allocations_are_what_claims_hold(scheduler, ctx,
                                                     scheduler_db):
    h1 = _add_host(scheduler, 'h1')
    _add_host(scheduler, 'h2')
    resources = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}
    generation = claims.claim(scheduler_db, h1, SERVER, resources)
    claims.claim(scheduler_db, h1, OTHER_SERVER,
                 {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1})

    first, second = _page(scheduler, ctx)['providers']
    assert first['usages'] == {'VCPU': 3, 'MEMORY_MB': 1536, 'DISK_GB': 11}
    assert second['usages'] == {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}
    assert first['generation'] == generation + 1
    assert scheduler.get_provider_allocations(ctx, h1) == {
        'generation': generation + 1,
        'allocations': {
            SERVER: resources,
            OTHER_SERVER: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}}
    assert scheduler.get_consumer_allocations(ctx, SERVER) == {
        h1: {'generation': generation + 1, 'resources': resources}}
    assert scheduler.get_consumer_allocations(
        ctx, uuidutils.generate_uuid()) == {}
    assert scheduler.get_usages(
        ctx, [SERVER, OTHER_SERVER, uuidutils.generate_uuid()]) == {
        'usages': {'VCPU': 3, 'MEMORY_MB': 1536, 'DISK_GB': 11},
        'consumer_count': 2}


def test_an_unknown_provider_has_no_allocations_to_show(scheduler, ctx):
    assert scheduler.get_provider_allocations(
        ctx, uuidutils.generate_uuid()) is None


def test_room_for_resources_is_the_free_capacity_a_claim_counts(
        scheduler, ctx, scheduler_db):
    small = _add_host(scheduler, 'small', vcpus=2, cpu_allocation_ratio=1.0)
    _add_host(scheduler, 'big', vcpus=16, cpu_allocation_ratio=1.0)
    assert _names(_page(scheduler, ctx, resources={'VCPU': 2})) == [
        'small', 'big']
    assert _names(_page(scheduler, ctx, resources={'VCPU': 3})) == ['big']
    # (8192 - 512 reserved) * 1.0: exactly the capacity fits, one more not.
    assert _names(_page(scheduler, ctx,
                        resources={'MEMORY_MB': 7680})) == ['small', 'big']
    assert _names(_page(scheduler, ctx,
                        resources={'MEMORY_MB': 7681})) == []
    claims.claim(scheduler_db, small, SERVER, {'VCPU': 1})
    assert _names(_page(scheduler, ctx, resources={'VCPU': 2})) == ['big']
    assert _names(_page(scheduler, ctx, resources={'VCPU': 1,
                                                   'DISK_GB': 100})) == [
        'small', 'big']
    # Every class must fit on the same provider.
    assert _names(_page(scheduler, ctx, resources={'VCPU': 2,
                                                   'DISK_GB': 101})) == []


def test_host_aggregates_are_provider_aggregates_of_the_same_uuid(
        scheduler, ctx):
    _add_host(scheduler, 'h1')
    _add_host(scheduler, 'h2')
    _add_host(scheduler, 'h3')
    a = scheduler.aggregate_create(ctx, 'a')
    b = scheduler.aggregate_create(ctx, 'b')
    scheduler.aggregate_add_host(ctx, a['uuid'], 'h1')
    scheduler.aggregate_add_host(ctx, b['uuid'], 'h2')
    scheduler.aggregate_add_host(ctx, b['uuid'], 'h1')

    by_name = {p['name']: p for p in _page(scheduler, ctx)['providers']}
    assert by_name['h1']['aggregates'] == sorted([a['uuid'], b['uuid']])
    assert by_name['h2']['aggregates'] == [b['uuid']]
    assert by_name['h3']['aggregates'] == []
    assert _names(_page(scheduler, ctx,
                        member_of=[[a['uuid'], b['uuid']]])) == ['h1', 'h2']
    # Each list is a condition of its own.
    assert _names(_page(scheduler, ctx,
                        member_of=[[a['uuid']], [b['uuid']]])) == ['h1']
    assert _names(_page(scheduler, ctx,
                        forbidden_aggregates=[a['uuid']])) == ['h2', 'h3']
    assert _names(_page(scheduler, ctx, member_of=[[
        uuidutils.generate_uuid()]])) == []


def test_a_provider_is_found_by_uuid_name_or_tree(scheduler, ctx):
    h1 = _add_host(scheduler, 'h1')
    h2 = _add_host(scheduler, 'h2')
    assert _names(_page(scheduler, ctx, uuid=h2)) == ['h2']
    assert _names(_page(scheduler, ctx, name='h1')) == ['h1']
    # Every provider is the root of its own tree.
    assert _names(_page(scheduler, ctx, in_tree=[h1])) == ['h1']
    assert _names(_page(scheduler, ctx, in_tree=[h1, h2])) == []
    assert _names(_page(scheduler, ctx, name='nope')) == []


def test_providers_come_a_page_at_a_time_in_id_order(scheduler, ctx,
                                                     monkeypatch):
    monkeypatch.setattr(placement_reads, 'MAX_PAGE', 2)
    for i in range(5):
        _add_host(scheduler, 'h%d' % i)
    page = scheduler.get_providers(ctx, {}, limit=10)
    assert _names(page) == ['h0', 'h1']
    page = scheduler.get_providers(ctx, {}, marker=page['next'])
    assert _names(page) == ['h2', 'h3']
    page = scheduler.get_providers(ctx, {}, marker=page['next'])
    assert _names(page) == ['h4']
    assert page['next'] is None
    # A page is never read whole to be filtered after.
    page = scheduler.get_providers(ctx, {'name': 'h4'})
    assert (_names(page), page['next']) == (['h4'], None)


def test_usages_of_many_consumers_are_summed_over_every_chunk(
        scheduler, ctx, scheduler_db, monkeypatch):
    monkeypatch.setattr(placement_reads, 'MAX_PAGE', 2)
    host = _add_host(scheduler, 'h1', vcpus=64)
    consumers = [uuidutils.generate_uuid() for _ in range(5)]
    for consumer in consumers:
        claims.claim(scheduler_db, host, consumer, {'VCPU': 1,
                                                    'MEMORY_MB': 10})
    assert scheduler.get_usages(ctx, consumers + consumers[:2]) == {
        'usages': {'VCPU': 5, 'MEMORY_MB': 50}, 'consumer_count': 5}


@pytest.fixture
def client(scheduler):
    """``client()``: the scheduler's client library, talking to
    ``scheduler`` over an in-memory bus, capped as ``[upgrade_levels]``
    says when it is made."""
    memory_bus.reset()
    transport = rpc.get_transport('kombu+memory:////placement-reads')
    server = rpc.get_server(transport, 'scheduler',
                            [scheduler.endpoint(None)], 'sched')
    server.start()
    rpc.reset_auto_caps()
    yield lambda: scheduler_client.SchedulerClient(transport)
    server.stop()
    server.wait()
    rpc.cleanup()
    memory_bus.reset()
    rpc.reset_auto_caps()


def test_the_client_pages_through_every_provider_and_stops_at_a_limit(
        scheduler, client, ctx, monkeypatch):
    monkeypatch.setattr(placement_reads, 'MAX_PAGE', 2)
    for i in range(5):
        _add_host(scheduler, 'h%d' % i)
    client = client()
    found = client.providers(ctx)
    assert [p['name'] for p in found] == ['h0', 'h1', 'h2', 'h3', 'h4']
    assert [p['name'] for p in client.providers(ctx, limit=3)] == [
        'h0', 'h1', 'h2']
    [provider] = client.providers(ctx, {'name': 'h3'}, detail=True)
    assert provider['usages'] == {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}


def test_a_client_capped_below_1_9_is_refused_the_reads_before_sending(
        scheduler, client, ctx, override):
    _add_host(scheduler, 'h1')
    override('scheduler', '1.8', group='upgrade_levels')
    client = client()
    for read in (lambda: client.providers(ctx),
                 lambda: client.provider_allocations(ctx, SERVER),
                 lambda: client.consumer_allocations(ctx, SERVER),
                 lambda: client.usages(ctx, [SERVER])):
        with pytest.raises(messaging.RPCVersionCapError):
            read()
