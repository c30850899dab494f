"""A server's power actions on its compute (compute RPC 1.3): through
the cell conductor only, guarded by the task state the API set, keeping
the claim; and what older services are sent."""

import oslo_messaging as messaging
import pytest

from scheduler_split.compute import manager as compute_manager
from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.compute.virt import fake
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import context
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split import rpc
from tests.unit.test_compute_indirection import _create
from tests.unit.test_compute_indirection import _events
from tests.unit.test_compute_indirection import _row
from tests.unit.test_compute_indirection import cell  # noqa: F401
from tests.unit.test_compute_indirection import HOST
from tests.unit.test_compute_indirection import no_database_in_this_thread
from tests.unit.test_compute_indirection import UUID


def _data(primitive):
    return primitive['scheduler_split_object.data']


def test_instance_backported_to_1_2_drops_the_lock_and_tags():
    instance = objects.Instance(uuid=UUID, locked=True, locked_by='owner',
                                locked_reason='why', tags=['a'])

    primitive = instance.obj_to_primitive(target_version='1.2')

    for name in ('locked', 'locked_by', 'locked_reason', 'tags'):
        assert name not in _data(primitive)
    assert _data(instance.obj_to_primitive())['locked_reason'] == 'why'


def test_rpc_1_3_carries_instance_1_3_and_1_7_too():
    assert compute_rpcapi.OBJECT_VERSIONS['1.3']['Instance'] == '1.3'
    assert conductor_rpcapi.OBJECT_VERSIONS['1.5']['Instance'] == '1.3'
    assert compute_rpcapi.OBJECT_VERSIONS['1.2']['Instance'] == '1.2'


def test_computes_capped_below_1_3_are_sent_no_lifecycle_cast(override,
                                                              tmp_path):
    override('compute', '1.2', group='upgrade_levels')
    transport = rpc.get_transport('kombu+memory:////lifecycle-cap')
    client = compute_rpcapi.ComputeAPI(transport, 'sqlite://')
    try:
        with pytest.raises(messaging.RPCVersionCapError):
            client.can_send_lifecycle()
        with pytest.raises(messaging.RPCVersionCapError):
            client.stop_instance(context.get_admin_context(), HOST,
                                 objects.Instance(uuid=UUID))
    finally:
        rpc.cleanup()


@pytest.fixture
def compute(cell):  # noqa: F811
    """A compute with the fake driver on the cell's bus."""
    return compute_manager.ComputeManager(HOST, cell.transport,
                                          driver=fake.FakeDriver(HOST))


def _active(cell, task_state):  # noqa: F811
    return _create(cell.url, vm_state=instance_obj.ACTIVE,
                   task_state=task_state, host=HOST)


def test_a_compute_stops_through_its_conductor_and_keeps_the_claim(
        cell, compute, monkeypatch):  # noqa: F811
    instance = _active(cell, instance_obj.POWERING_OFF)

    with no_database_in_this_thread(monkeypatch):
        compute.stop_instance(context.get_admin_context(), instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.power_state) == (
        instance_obj.STOPPED, None, instance_obj.SHUTDOWN)
    assert _events(cell.url) == [('compute_stop_instance', 'Success',
                                  HOST)]
    assert cell.scheduler.released == []


def test_a_cast_whose_task_state_was_taken_over_does_nothing(
        cell, compute):  # noqa: F811
    instance = _active(cell, instance_obj.DELETING)

    compute.pause_instance(context.get_admin_context(), instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == (instance_obj.ACTIVE,
                                              instance_obj.DELETING)
    assert _events(cell.url) == []


def test_a_failed_action_keeps_the_state_with_a_fault(
        cell, compute, override):  # noqa: F811
    override('fail_actions', ['pause'], group='fake_driver')
    instance = _active(cell, instance_obj.PAUSING)

    compute.pause_instance(context.get_admin_context(), instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == (instance_obj.ACTIVE, None)
    assert 'injected pause failure' in row.fault.message
    assert _events(cell.url) == [('compute_pause_instance', 'Error', HOST)]
    assert cell.scheduler.released == []


def test_a_failed_reboot_that_leaves_the_vm_down_is_an_error(
        cell, compute, override):  # noqa: F811
    override('fail_actions', ['reboot'], group='fake_driver')
    instance = _create(cell.url, vm_state=instance_obj.STOPPED,
                       task_state=instance_obj.REBOOTING_HARD, host=HOST)

    compute.reboot_instance(context.get_admin_context(), instance,
                            reboot_type='HARD')

    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == (instance_obj.ERROR, None)
    assert 'injected reboot failure' in row.fault.message


def test_settling_leaves_actions_alone_and_clears_them_after_a_restart(
        cell, compute):  # noqa: F811
    _active(cell, instance_obj.SUSPENDING)

    compute.settle_instances()          # the first run after a start
    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == (instance_obj.ACTIVE, None)

    _create(cell.url, uuid='6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c03',
            vm_state=instance_obj.STOPPED,
            task_state=instance_obj.POWERING_ON, host=HOST,
            seconds_ago=3600)
    compute.settle_instances()          # a later, periodic run
    row = _row(cell.url, '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c03')
    assert (row.vm_state, row.task_state) == (instance_obj.STOPPED,
                                              instance_obj.POWERING_ON)
    assert cell.scheduler.released == []
