"""The hypervisor owns a server's power: a guest that stopped on its own
makes its server SHUTOFF at the next sync, one started from outside is
stopped again, and what an action runs on is left to the action."""

import pytest

from scheduler_split.compute import manager as compute_manager
from scheduler_split.compute.virt import fake
from scheduler_split import context
from scheduler_split.objects import instance as instance_obj
from tests.unit.test_compute_indirection import _create
from tests.unit.test_compute_indirection import _events
from tests.unit.test_compute_indirection import _row
from tests.unit.test_compute_indirection import cell  # noqa: F401
from tests.unit.test_compute_indirection import HOST
from tests.unit.test_compute_indirection import no_database_in_this_thread
from tests.unit.test_compute_indirection import UUID

SYNC = ('compute_sync_power_state', 'Success', HOST)


@pytest.fixture
def compute(cell, override):  # noqa: F811
    override('spawn_delay', 0, group='fake_driver')
    return compute_manager.ComputeManager(HOST, cell.transport,
                                          driver=fake.FakeDriver(HOST))


def _running(a_cell, compute, vm_state=instance_obj.ACTIVE,
             task_state=None):
    instance = _create(a_cell.url, vm_state=vm_state,
                       task_state=task_state, host=HOST)
    compute.driver.spawn(None, instance)
    return instance


def test_a_guest_that_stopped_on_its_own_makes_its_server_shutoff(
        cell, compute, monkeypatch):  # noqa: F811
    instance = _running(cell, compute)
    # Its QEMU died: the hypervisor holds it shut off.
    compute.driver._running[UUID] = fake.SHUTDOWN

    with no_database_in_this_thread(monkeypatch):
        compute.sync_power_states()

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.power_state) == (
        instance_obj.STOPPED, None, instance_obj.SHUTDOWN)
    assert _events(cell.url) == [SYNC]
    # Started from outside while SHUTOFF: the next sync stops it again.
    compute.driver.power_on(instance)
    compute.sync_power_states()
    assert _row(cell.url).vm_state == instance_obj.STOPPED
    assert compute.driver.get_power_state(instance) == fake.SHUTDOWN


def test_a_guest_started_from_outside_is_powered_off_again(
        cell, compute):  # noqa: F811
    _running(cell, compute, vm_state=instance_obj.STOPPED)

    compute.sync_power_states()

    assert compute.driver._running[UUID] == fake.SHUTDOWN
    assert _row(cell.url).vm_state == instance_obj.STOPPED
    assert _events(cell.url) == [SYNC]


def test_a_server_an_action_runs_on_is_left_to_the_action(
        cell, compute):  # noqa: F811
    _running(cell, compute, task_state=instance_obj.POWERING_OFF)
    compute.driver._running[UUID] = fake.SHUTDOWN

    compute.sync_power_states()
    compute.sync_power_state(UUID)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == (instance_obj.ACTIVE,
                                              instance_obj.POWERING_OFF)
    assert _events(cell.url) == []


def test_a_paused_guest_only_updates_the_power_state(
        cell, compute):  # noqa: F811
    _running(cell, compute)
    compute.driver._running[UUID] = fake.PAUSED

    compute.sync_power_state(UUID)

    row = _row(cell.url)
    assert (row.vm_state, row.power_state) == (instance_obj.ACTIVE,
                                               instance_obj.PAUSED_POWER)
    assert _events(cell.url) == []


@pytest.mark.parametrize('action, left', [
    ('log', fake.RUNNING), ('shutdown', fake.SHUTDOWN), ('reap', None)])
def test_a_guest_no_server_owns_is_handled_as_configured(
        cell, compute, override, action, left):  # noqa: F811
    override('running_deleted_instance_action', action)
    instance = _running(cell, compute)
    ctx = context.targeted(context.get_admin_context(), cell.url)
    instance.destroy(ctx)

    compute.reap_unowned_guests()

    assert compute.driver._running.get(UUID) == left
