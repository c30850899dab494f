"""The operator's status of hosts, as the scheduler keeps and obeys it:
a disabled or forced-down host is skipped and refused, whatever its
compute reports, in every scheduler process that shares the database."""

import datetime
import threading
import time

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import process as scheduler_process
from scheduler_split.scheduler import service as scheduler_service
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
RESOURCES = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def manager(scheduler_db):
    return scheduler_process.Scheduler(scheduler_db)


def _add_host(manager, host, **extra):
    stats = dict({'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}, **extra)
    return manager.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(**stats))


def _iso(delta=0):
    return (helpers.naive_utcnow() +
            datetime.timedelta(seconds=delta)).isoformat()


def _status(disabled=False, forced_down=False, reason=None, at=None):
    return {'disabled': disabled, 'forced_down': forced_down,
            'disabled_reason': reason, 'updated_at': at or _iso()}


def _chosen(manager, ctx, count=1):
    spec = helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    lists = manager.select_destinations(
        ctx, spec, [uuidutils.generate_uuid() for _ in range(count)],
        return_alternates=True, num_alternates=3)
    return [[s.service_host for s in host_list] for host_list in lists]


def _state(manager, uuid):
    return {s.uuid: s for s in manager.host_manager.host_states()}[uuid]


def test_compute_filter_skips_a_disabled_and_a_forced_down_host(
        manager, ctx):
    _add_host(manager, 'h1')
    _add_host(manager, 'h2')
    _add_host(manager, 'h3')
    manager.update_host_status(ctx, 'h1', _status(disabled=True,
                                                  reason='maintenance'))
    manager.update_host_status(ctx, 'h2', _status(forced_down=True))
    states = manager.host_manager.host_states()
    passing = filters.ComputeFilter().filter_all(states, None)
    assert [s.host for s in passing] == ['h3']
    assert _chosen(manager, ctx, count=2) == [['h3'], ['h3']]


def test_claims_refuse_an_operator_disabled_or_forced_down_host(
        manager, ctx, scheduler_db):
    disabled = _add_host(manager, 'h1')
    down = _add_host(manager, 'h2')
    manager.update_host_status(ctx, 'h1', _status(disabled=True))
    manager.update_host_status(ctx, 'h2', _status(forced_down=True))
    for uuid in (disabled, down):
        with pytest.raises(exception.ComputeHostDisabled):
            claims.claim(scheduler_db, uuid, 'consumer', RESOURCES)
    assert claims.allocations_of(scheduler_db, 'consumer') == {}


def test_an_alternate_disabled_after_the_choice_is_refused(
        manager, ctx, scheduler_db):
    _add_host(manager, 'h1')
    _add_host(manager, 'h2')
    uuid = uuidutils.generate_uuid()
    [host_list] = manager.select_destinations(
        ctx, helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10), [uuid],
        return_alternates=True, num_alternates=1)
    alternate = host_list[1]
    manager.update_host_status(ctx, alternate.service_host,
                               _status(disabled=True))
    assert manager.claim_resources(ctx, alternate, uuid) is False
    # Even a scheduler whose memory still has it enabled: the claim reads
    # the database.
    other = scheduler_process.Scheduler(scheduler_db)
    other.host_manager._hosts = {}
    assert other.claim_resources(ctx, alternate, uuid) is False
    assert list(claims.allocations_of(scheduler_db, uuid)) == [
        host_list[0].compute_node_uuid]


def test_the_computes_report_cannot_enable_an_operator_disabled_host(
        manager, ctx):
    uuid = _add_host(manager, 'h1')
    manager.update_host_status(ctx, 'h1', _status(disabled=True))
    # The compute says it is fine, and carries a reading of its record
    # older than the operator's change.
    _add_host(manager, 'h1', disabled=False,
              service_status=_status(at=_iso(-60)))
    assert _state(manager, uuid).disabled is True
    _add_host(manager, 'h1', disabled=False)
    assert _state(manager, uuid).disabled is True
    with pytest.raises(exception.NoValidHost):
        _chosen(manager, ctx)


def test_the_computes_report_carries_a_status_the_scheduler_missed(
        manager, ctx):
    uuid = _add_host(manager, 'h1')
    # The API wrote the cell record but its call never arrived: the
    # compute's report carries the record.
    _add_host(manager, 'h1', service_status=_status(
        disabled=True, reason='maintenance', at=_iso()))
    state = _state(manager, uuid)
    assert (state.disabled, state.disabled_reason) == (True, 'maintenance')
    manager.update_host_status(ctx, 'h1', _status(at=_iso(1)))
    assert _state(manager, uuid).disabled is False


@pytest.fixture
def two_schedulers(scheduler_db, override):
    """Two scheduler processes' managers on one database, each keeping
    its host states cached for an hour."""
    override('host_state_refresh_interval', 3600, group='filter_scheduler')
    return (scheduler_process.Scheduler(scheduler_db),
            scheduler_process.Scheduler(scheduler_db))


def test_every_scheduler_sees_a_status_on_its_next_select(two_schedulers,
                                                          ctx):
    first, second = two_schedulers
    _add_host(first, 'h1')
    _add_host(first, 'h2')
    assert sorted(_chosen(second, ctx)[0]) == ['h1', 'h2']

    first.update_host_status(ctx, 'h1', _status(disabled=True))
    assert _chosen(second, ctx) == [['h2']]
    first.update_host_status(ctx, 'h1', _status(at=_iso(1)))
    assert sorted(_chosen(second, ctx)[0]) == ['h1', 'h2']


def test_every_scheduler_chooses_a_new_host_on_its_next_select(
        two_schedulers, ctx):
    # The report of a new compute reaches one scheduler; the other
    # chooses the host all the same.
    first, second = two_schedulers
    _add_host(first, 'h1')
    assert _chosen(second, ctx) == [['h1']]
    _add_host(first, 'h2')
    assert sorted(_chosen(second, ctx)[0]) == ['h1', 'h2']
    # The operator's status of it holds there as well.
    first.update_host_status(ctx, 'h1', _status(disabled=True))
    assert _chosen(second, ctx) == [['h2']]


def test_a_select_waits_for_a_load_under_way_of_a_new_host(
        two_schedulers, ctx):
    # Two selects reach a scheduler that knows no host yet, while the
    # report of the first compute reached the other scheduler: the first
    # select loads the states, the second waits for that load instead of
    # going on with none and answering NoValidHost.
    first, second = two_schedulers
    assert second.host_manager.host_states() == []
    _add_host(first, 'h1')
    reading, release = threading.Event(), threading.Event()
    read_states = second.host_manager._read_states

    def slow_read(*args, **kwargs):
        reading.set()
        assert release.wait(10)
        return read_states(*args, **kwargs)

    second.host_manager._read_states = slow_read
    results = {}

    def select(name):
        try:
            results[name] = _chosen(second, ctx)
        except exception.NoValidHost as exc:
            results[name] = exc

    loading = threading.Thread(target=select, args=('loading',))
    loading.start()
    assert reading.wait(10)
    waiter = threading.Thread(target=select, args=('waiter',))
    waiter.start()
    # Going on without the load would take it a few milliseconds.
    waiter.join(1)
    release.set()
    loading.join(10)
    waiter.join(10)
    assert results == {'loading': [['h1']], 'waiter': [['h1']]}


def test_the_scheduler_service_reloads_host_states_beside_the_selects(
        two_schedulers, ctx, override):
    # A report that reaches one scheduler reaches the other with its
    # periodic reload, which its service does in a thread of its own: no
    # select waits for one, and selects made after it choose by it.
    override('host_state_refresh_interval', 1, group='filter_scheduler')
    first, second = two_schedulers
    _add_host(first, 'h1')
    _add_host(first, 'h2')
    assert sorted(_chosen(second, ctx)[0]) == ['h1', 'h2']
    loads = []
    reload_changes = second.host_manager._reload_changes

    def spy(*args):
        loads.append(threading.current_thread().name)
        reload_changes(*args)

    second.host_manager._reload_changes = spy
    svc = scheduler_service.SchedulerService(second)
    svc.start()
    try:
        # h2 grows: the RAM and CPU weighers put it first, for four boots.
        _add_host(first, 'h2', memory_mb=65536, vcpus=32)
        deadline = time.monotonic() + 10
        while loads.count('scheduler-reload') < 2:
            assert time.monotonic() < deadline, loads
            time.sleep(0.3)
            # What a select reads, more than an interval after the last
            # reload (a select's claims would count builds in flight on
            # its hosts, which only their computes' reports reset).
            second.host_manager.host_states()
        assert [hosts[0] for hosts in _chosen(second, ctx, 4)] == ['h2'] * 4
    finally:
        svc.stop()
    assert set(loads) == {'scheduler-reload'}, loads


def test_hypervisor_details_reach_the_host_state(manager):
    uuid = _add_host(manager, 'h1', host_ip='192.0.2.5',
                     hypervisor_type='fake', hypervisor_version=1000,
                     cpu_arch='aarch64', cpu_info='{"arch": "aarch64"}')
    other = scheduler_process.Scheduler(manager.db_url)
    for state in (_state(manager, uuid), _state(other, uuid)):
        assert (state.host_ip, state.hypervisor_type,
                state.hypervisor_version, state.cpu_arch) == (
            '192.0.2.5', 'fake', 1000, 'aarch64')


def test_a_host_with_allocations_is_not_deleted(manager, ctx,
                                                scheduler_db):
    uuid = _add_host(manager, 'h1')
    claims.claim(scheduler_db, uuid, 'consumer', RESOURCES)
    with pytest.raises(exception.Conflict):
        manager.delete_host(ctx, 'h1')
    claims.release(scheduler_db, 'consumer')
    assert manager.delete_host(ctx, 'h1') == [uuid]
    assert manager.get_compute_nodes(ctx) == []


def test_a_host_goes_with_the_providers_below_it(manager, ctx,
                                                 scheduler_db):
    """A GPU below the compute node and a function below the GPU are
    deleted with the host; while the function is allocated, nothing
    is."""
    uuid = _add_host(manager, 'h1', providers=[
        {'name': 'h1_gpu', 'parent': None, 'resources': {'VGPU': 1},
         'traits': []},
        {'name': 'h1_vf', 'parent': 'h1_gpu',
         'resources': {'SRIOV_NET_VF': 1}, 'traits': []}])
    claims.claim(scheduler_db, uuid, 'consumer',
                 dict(RESOURCES, SRIOV_NET_VF=1))
    with pytest.raises(exception.Conflict):
        manager.delete_host(ctx, 'h1')
    claims.release(scheduler_db, 'consumer')
    assert manager.delete_host(ctx, 'h1') == [uuid]
    with engines.reader(scheduler_db) as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(
            scheduler_models.ResourceProvider)) == 0


def test_a_disable_racing_claims_leaves_no_claim_after_it(scheduler_db,
                                                          ctx):
    """Claims of one scheduler race the disable another writes: none that
    commits after the disable lands on the host."""
    claimer = scheduler_process.Scheduler(scheduler_db)
    operator = scheduler_process.Scheduler(scheduler_db)
    uuid = _add_host(claimer, 'h1', vcpus=1000, memory_mb=512000,
                     local_gb=10000)
    results = []
    disabled = threading.Event()

    def claim_many():
        for index in range(60):
            consumer = 'c%d' % index
            was_disabled = disabled.is_set()
            try:
                claims.claim(scheduler_db, uuid, consumer, RESOURCES)
                results.append((was_disabled, True))
            except exception.ComputeHostDisabled:
                results.append((was_disabled, False))

    thread = threading.Thread(target=claim_many)
    thread.start()
    while len(results) < 10:
        time.sleep(0.001)
    operator.update_host_status(ctx, 'h1', _status(disabled=True))
    disabled.set()
    thread.join()
    # Every claim that started after the disable was written is refused.
    assert all(not ok for was_disabled, ok in results if was_disabled)
    assert any(ok for _, ok in results)


class _Conductor:
    def __init__(self, answer):
        self.answer = answer

    def service_heartbeat(self, ctx, host, binary, topic, version,
                          timeout=None, create=True):
        return self.answer


class _Driver:
    def get_available_resource(self):
        return {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40,
                'hypervisor_type': 'fake', 'hypervisor_version': 1000,
                'cpu_arch': 'x86_64', 'cpu_info': '{}'}

    def nodename(self):
        return 'h1'


def test_a_compute_carries_its_records_status_to_the_scheduler(ctx):
    from scheduler_split.compute import resource_tracker
    status = _status(disabled=True, reason='maintenance')
    tracker = resource_tracker.ResourceTracker(
        'h1', _Driver(), scheduler=None, conductor=_Conductor(status))
    assert tracker.stats()['service_status'] is None
    tracker.heartbeat(ctx)
    stats = tracker.stats()
    assert stats['service_status'] == status
    assert (stats['cpu_arch'], stats['hypervisor_type']) == ('x86_64',
                                                             'fake')
    # A conductor of the release before answers nothing: the last status
    # stays.
    tracker.conductor = _Conductor(None)
    tracker.heartbeat(ctx)
    assert tracker.stats()['service_status'] == status


def test_a_service_sent_to_a_1_1_receiver_drops_the_new_fields():
    from scheduler_split import objects
    service = objects.Service(
        host='h1', binary='scheduler-split-compute', topic='compute',
        disabled=True, last_seen_up=None, version=5, id=3,
        uuid=uuidutils.generate_uuid(), disabled_reason='maintenance',
        forced_down=True)
    primitive = service.obj_to_primitive(target_version='1.1')
    data = primitive[[k for k in primitive if k.endswith('.data')][0]]
    assert 'uuid' not in data and 'forced_down' not in data
    assert data['disabled'] is True and data['version'] == 5
