"""The scheduler at large sizes: a request looks at a sample of hosts
(``hosts_to_score``) but never chooses one a filter refuses, and reports
that say nothing new stay in memory while the rest go in group commits.
"""

import threading

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import manager as scheduler_manager
from tests.unit import helpers

CELL = '0f5b3a3e-7a1d-4d2b-9a0c-aaaaaaaaaaaa'
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 10}


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def manager(scheduler_db):
    return scheduler_manager.SchedulerManager(scheduler_db)


def _add_hosts(manager, count, prefix='h', instances=4, **extra):
    for i in range(count):
        host = '%s%03d' % (prefix, i)
        manager.host_manager.update_from_stats(
            CELL, host, host, helpers.host_stats(
                vcpus=instances, memory_mb=512 * instances,
                local_gb=10 * instances, **extra))


def _select(manager, ctx, **spec_fields):
    uuid = uuidutils.generate_uuid()
    spec = helpers.make_spec(instance_uuid=uuid, **FLAVOR)
    for name, value in spec_fields.items():
        setattr(spec, name, value)
    [host_list] = manager.select_destinations(ctx, spec, [uuid],
                                              return_alternates=True,
                                              num_alternates=2)
    return host_list


class _CountingFilter(filters.BaseHostFilter):
    """Passes every host and counts the hosts it was shown."""

    def __init__(self):
        self.seen = 0

    def host_passes(self, host_state, spec_obj):
        return True

    def filter_all(self, host_states, spec_obj):
        self.seen += len(host_states)
        return list(host_states)


def test_a_large_cloud_stops_filtering_once_enough_hosts_passed(
        manager, ctx, override):
    override('hosts_to_score', 10, group='filter_scheduler')
    _add_hosts(manager, 200)
    counting = _CountingFilter()
    manager.filters.append(counting)

    host_list = _select(manager, ctx)

    assert host_list[0].service_host.startswith('h')
    # One batch of the filter phase, not the 200 hosts.
    assert counting.seen == scheduler_manager.MIN_FILTER_BATCH


def test_a_small_cloud_weighs_every_host_and_picks_the_best(
        manager, ctx, override):
    override('hosts_to_score', 100, group='filter_scheduler')
    _add_hosts(manager, 30)
    # One host with much more room: spreading must find it every time.
    manager.host_manager.update_from_stats(
        CELL, 'roomy', 'roomy', helpers.host_stats(
            vcpus=64, memory_mb=512 * 64, local_gb=10 * 64))
    counting = _CountingFilter()
    manager.filters.append(counting)

    chosen = [_select(manager, ctx)[0].service_host for _ in range(5)]

    assert chosen == ['roomy'] * 5
    assert counting.seen == 31 * 5


def test_a_sample_never_holds_a_host_a_filter_refuses(
        manager, ctx, override):
    override('hosts_to_score', 5, group='filter_scheduler')
    # 300 hosts in zone "edge", 3 in zone "core": the requests for "core"
    # scan past the edge hosts and only ever get core hosts, alternates
    # included.
    _add_hosts(manager, 300, prefix='edge', availability_zone='edge')
    _add_hosts(manager, 3, prefix='core', availability_zone='core')

    for _ in range(6):
        host_list = _select(manager, ctx, availability_zone='core')
        assert {s.service_host[:4] for s in host_list} == {'core'}


def test_when_every_sampled_host_refuses_every_host_is_considered(
        manager, ctx, override, scheduler_db):
    override('hosts_to_score', 3, group='filter_scheduler')
    override('enabled_filters', ['ComputeFilter'],
             group='filter_scheduler')
    manager.filters = filters.load(['ComputeFilter'])
    _add_hosts(manager, 40, prefix='full', instances=1)
    _add_hosts(manager, 1, prefix='free', instances=1)
    # Every "full" host is full in the database, which the scheduler's
    # memory does not know: only the claim can tell.
    rp, alloc = scheduler_models.ResourceProvider, scheduler_models.Allocation
    with engines.writer(scheduler_db) as session:
        for row in session.scalars(sa.select(rp).where(
                rp.host.like('full%'))):
            session.add(alloc(resource_provider_id=row.id,
                              consumer_id=uuidutils.generate_uuid(),
                              resource_class='VCPU', used=1))

    host_list = _select(manager, ctx)

    assert host_list[0].service_host == 'free000'
    with pytest.raises(exception.NoValidHost):
        _select(manager, ctx)


def test_a_report_that_says_nothing_new_only_moves_the_time(
        manager, scheduler_db):
    stats = helpers.host_stats()
    uuid = manager.host_manager.update_from_stats(CELL, 'h1', 'h1', stats)
    rp, inv = scheduler_models.ResourceProvider, scheduler_models.Inventory

    def written():
        with engines.reader(scheduler_db) as session:
            provider = session.execute(sa.select(
                rp.last_report_at, rp.generation).where(
                rp.uuid == uuid)).one()
            inventory = sorted(session.execute(sa.select(
                inv.resource_class, inv.total, inv.updated_at)).all())
            return provider, inventory

    first, first_inventory = written()
    manager.host_manager.update_from_stats(CELL, 'h1', 'h1', dict(stats))
    again, again_inventory = written()
    # The time is in the database for the other schedulers at once;
    # nothing else was written.
    assert again.last_report_at > first.last_report_at
    assert again.last_report_at == \
        manager.host_manager.get(uuid).last_report_at
    assert again.generation == first.generation
    assert again_inventory == first_inventory

    manager.host_manager.update_from_stats(
        CELL, 'h1', 'h1', dict(stats, memory_mb=8192))
    # A new inventory is written before the report returns, and fails
    # claims that read the old one.
    now, _ = written()
    assert now.generation == first.generation + 1
    assert manager.host_manager.get(uuid).capacity('MEMORY_MB') == 8192


def test_a_burst_of_first_reports_from_many_threads_loses_none(
        manager, scheduler_db):
    threads, per_thread = 16, 50

    def report(index):
        for i in range(per_thread):
            host = 't%02d-h%03d' % (index, i)
            manager.host_manager.update_from_stats(
                CELL, host, host, helpers.host_stats())

    workers = [threading.Thread(target=report, args=(n,))
               for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    rp, inv = scheduler_models.ResourceProvider, scheduler_models.Inventory
    with engines.reader(scheduler_db) as session:
        assert session.scalar(sa.select(sa.func.count(rp.id))) == \
            threads * per_thread
        assert session.scalar(sa.select(sa.func.count(inv.id))) == \
            threads * per_thread * 3
    assert len(manager.host_manager.host_states()) == threads * per_thread


def test_a_bad_report_in_a_burst_fails_alone(manager, scheduler_db):
    errors = []

    def report(index, stats):
        try:
            manager.host_manager.update_from_stats(
                CELL, 'b%02d' % index, 'b%02d' % index, stats)
        except Exception as exc:
            errors.append((index, exc))

    bad = helpers.host_stats()
    del bad['vcpus']
    workers = [threading.Thread(target=report, args=(
        n, bad if n == 7 else helpers.host_stats())) for n in range(24)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert [(index, type(exc)) for index, exc in errors] == [(7, KeyError)]
    rp = scheduler_models.ResourceProvider
    with engines.reader(scheduler_db) as session:
        assert session.scalar(sa.select(sa.func.count(rp.id))) == 23
