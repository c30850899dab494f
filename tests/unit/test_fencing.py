"""A compute cut off from its conductor powers off the VMs of the builds
it could not confirm before the conductor could move them on, and once
it hears from the conductor again runs, or destroys, each as the
instance's record says (``scheduler_split.compute.fencing``).

A real cell conductor on an in-memory bus and a compute with the fake
driver; the cut is the compute's calls to its conductor going
unanswered.
"""

import logging
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler_split.compute import fencing
from scheduler_split.compute import manager as compute_manager
from scheduler_split.compute.virt import fake
from scheduler_split import context
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from tests.unit import helpers
from tests.unit.test_compute_indirection import _create
from tests.unit.test_compute_indirection import _row
from tests.unit.test_compute_indirection import cell  # noqa: F401
from tests.unit.test_compute_indirection import HOST
from tests.unit.test_compute_indirection import UUID

SERVICE_DOWN_TIME = 4


@pytest.fixture
def compute(cell, override, monkeypatch):  # noqa: F811
    """A compute with the fake driver whose conductor can be cut off:
    ``compute.cut(True)`` and every call to the conductor times out."""
    override('service_down_time', SERVICE_DOWN_TIME)
    override('spawn_delay', 0, group='fake_driver')
    # One try a step, so that a cut build gives up at once.
    monkeypatch.setattr(compute_manager, 'BUILD_SAVE_TRIES', 1)
    manager = compute_manager.ComputeManager(
        HOST, cell.transport, driver=fake.FakeDriver(HOST))
    cut = {'on': False, 'after_write': False}
    conductor = manager.conductor

    def guarded(real):
        def call(ctx, *args, **kwargs):
            if cut['on']:
                if cut['after_write'] and real.__name__ == 'instance_save':
                    # The save arrives and is written; its answer is
                    # lost with the link.
                    real(ctx, *args, **kwargs)
                raise messaging.MessagingTimeout('no answer: link cut')
            return real(ctx, *args, **kwargs)
        return call

    for name in ('instance_save', 'instance_get', 'instance_get_all_by_host',
                 'give_back_build'):
        monkeypatch.setattr(conductor, name, guarded(getattr(conductor,
                                                             name)))
    monkeypatch.setattr(manager.resource_tracker, 'heartbeat',
                        guarded(lambda ctx: None))

    def set_cut(on, after_write=False):
        cut.update(on=on, after_write=after_write)

    manager.cut = set_cut
    return manager


def _build_cut_after_spawn(cell, compute, after_write):  # noqa: F811
    """A build whose ACTIVE save goes unanswered: the link goes as the
    VM spawned."""
    instance = _create(cell.url)
    real_spawn = compute.driver.spawn

    def spawn(context, instance):
        real_spawn(context, instance)
        compute.cut(True, after_write=after_write)

    compute.driver.spawn = spawn
    compute.build_and_run_instance(
        context.get_admin_context(), instance, helpers.make_spec(UUID), [],
        objects.SchedulerRetries(num_attempts=1, hosts=[HOST]), HOST)
    return instance


def _silence(compute, seconds):
    """As if the conductor had last answered ``seconds`` ago."""
    compute._last_heard = time.monotonic() - seconds


def _unanswered_for(compute, seconds):
    """The conductor last answered ``seconds`` ago, a heartbeat goes
    unanswered now, and the fence takes its look."""
    _silence(compute, seconds)
    with pytest.raises(messaging.MessagingTimeout):
        compute.heartbeat()
    compute.fence()


def _power(compute):
    return compute.driver._running.get(UUID)


def test_an_unconfirmed_vm_runs_until_the_silence_passes_half_the_down_time(
        cell, compute, caplog):  # noqa: F811
    _build_cut_after_spawn(cell, compute, after_write=False)
    assert _power(compute) == fake.RUNNING

    _silence(compute, fencing.fence_after() - 1)
    with pytest.raises(messaging.MessagingTimeout):
        compute.heartbeat()
    compute.fence()
    assert _power(compute) == fake.RUNNING

    caplog.set_level(logging.WARNING)
    _silence(compute, fencing.fence_after() + 0.5)
    with pytest.raises(messaging.MessagingTimeout):
        compute.heartbeat()
    compute.fence()
    assert _power(compute) == fake.SHUTDOWN
    warnings = [r.getMessage() for r in caplog.records
                if r.levelname == 'WARNING' and 'powered off' in
                r.getMessage()]
    assert len(warnings) == 1 and UUID in warnings[0], warnings
    # A second look powers off nothing more and says nothing more.
    with pytest.raises(messaging.MessagingTimeout):
        compute.heartbeat()
    compute.fence()
    assert len([r for r in caplog.records
                if 'powered off' in r.getMessage()]) == 1


def test_a_fenced_vm_whose_build_was_written_runs_again_once_heard(
        cell, compute):  # noqa: F811
    _build_cut_after_spawn(cell, compute, after_write=True)
    _unanswered_for(compute, fencing.fence_after() + 1)
    assert _power(compute) == fake.SHUTDOWN
    assert _row(cell.url).vm_state == instance_obj.ACTIVE

    compute.cut(False)
    compute.heartbeat()
    compute.settle_instances()

    assert _power(compute) == fake.RUNNING
    row = _row(cell.url)
    assert (row.vm_state, row.host) == (instance_obj.ACTIVE, HOST)
    assert cell.scheduler.released == []


def test_a_fenced_vm_whose_build_moved_on_is_destroyed_once_heard(
        cell, compute):  # noqa: F811
    _build_cut_after_spawn(cell, compute, after_write=False)
    _unanswered_for(compute, fencing.fence_after() + 1)
    # Meanwhile the conductor took the build on to another host, which
    # runs it now.
    with engines.writer(cell.url) as session:
        session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == UUID).values(
                host='host2', vm_state=instance_obj.ACTIVE,
                task_state=None))

    compute.cut(False)
    compute.settle_instances()

    assert compute.driver.list_instances() == []
    assert _row(cell.url).host == 'host2'
    # The claim is the other host's now.
    assert cell.scheduler.released == []


def test_an_unconfirmed_build_still_here_is_given_up_here_once_heard(
        cell, compute):  # noqa: F811
    """Its ACTIVE save never arrived: the VM goes, and the build is
    settled as any this process no longer runs (without a plan, ERROR
    with a fault, its claim given back)."""
    _build_cut_after_spawn(cell, compute, after_write=False)
    assert _row(cell.url).task_state == instance_obj.SPAWNING

    compute.cut(False)
    compute.settle_instances()

    assert compute.driver.list_instances() == []
    row = _row(cell.url)
    assert row.vm_state == instance_obj.ERROR
    assert cell.scheduler.released == [UUID]


def test_a_build_confirmed_in_time_is_never_fenced(cell, compute):  # noqa
    instance = _create(cell.url)
    compute.build_and_run_instance(
        context.get_admin_context(), instance, helpers.make_spec(UUID), [],
        objects.SchedulerRetries(num_attempts=1, hosts=[HOST]), HOST)
    compute.cut(True)
    _unanswered_for(compute, fencing.fence_after() + 1)
    assert _power(compute) == fake.RUNNING
    assert _row(cell.url).vm_state == instance_obj.ACTIVE


def test_a_save_written_whose_resend_is_refused_keeps_its_vm_and_claim(
        cell, compute, monkeypatch):  # noqa: F811
    """The ACTIVE save is written but its answer lost, and so is the
    read that would have shown it: the save sent again is refused
    (Conflict) because it was written. The build is done: its VM runs
    and its claim stays."""
    monkeypatch.setattr(compute_manager, 'BUILD_SAVE_TRIES', 2)
    conductor = compute.conductor
    real_save, real_get = conductor.instance_save, conductor.instance_get
    lost = []

    def instance_save(ctx, instance, **kwargs):
        if kwargs['expected_task_states'] == [instance_obj.SPAWNING] and \
                not lost:
            real_save(ctx, instance.obj_clone(), **kwargs)
            lost.append('save')
            raise messaging.MessagingTimeout('answer lost')
        return real_save(ctx, instance, **kwargs)

    def instance_get(ctx, uuid, **kwargs):
        if lost == ['save']:
            lost.append('read')
            raise messaging.MessagingTimeout('answer lost')
        return real_get(ctx, uuid, **kwargs)

    monkeypatch.setattr(conductor, 'instance_save', instance_save)
    monkeypatch.setattr(conductor, 'instance_get', instance_get)
    instance = _create(cell.url)
    compute.build_and_run_instance(
        context.get_admin_context(), instance, helpers.make_spec(UUID), [],
        objects.SchedulerRetries(num_attempts=1, hosts=[HOST]), HOST)

    assert lost == ['save', 'read']
    assert _power(compute) == fake.RUNNING
    row = _row(cell.url)
    assert (row.vm_state, row.host) == (instance_obj.ACTIVE, HOST)
    assert cell.scheduler.released == []
