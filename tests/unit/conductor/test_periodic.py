"""The lost-moves sweep rolls a move back as any move that will not happen
is rolled back; a move that did happen only loses its source's hold."""

import datetime

import pytest
import sqlalchemy as sa

from scheduler_split.conductor import cell_periodic
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import memory_bus
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import migration as migration_obj
from scheduler_split import rpc
from tests.unit.conductor import fakes
from tests.unit import helpers


@pytest.fixture
def sweeps(cloud):
    memory_bus.reset()
    transport = rpc.get_transport('kombu+memory:////periodic-cell')
    sweeps = cell_periodic.CellConductorPeriodics(
        cloud.cell1.database_connection, transport)
    sweeps.scheduler = fakes.Scheduler()
    yield sweeps
    rpc.cleanup()
    memory_bus.reset()


def _moving(cloud, scheduler, task_state, host='src'):
    """A resize from ``src`` to h1 nobody advanced for an hour."""
    instance = cloud.server(host=host, task_state=task_state)
    migration = objects.Migration.for_move(
        cloud.ctx, instance, migration_obj.RESIZE, migration_obj.MIGRATING,
        new_flavor=helpers.make_flavor(vcpus=2, flavorid='2'))
    migration.source_compute = migration.source_node = 'src'
    migration.dest_compute = 'h1'
    migration.create(cloud.in_cell())
    an_hour_ago = helpers.naive_utcnow() - datetime.timedelta(hours=1)
    with engines.writer(cloud.cell1.database_connection) as session:
        session.execute(sa.update(cell_models.Migration).values(
            created_at=an_hour_ago, updated_at=an_hour_ago))
    scheduler.held.update({migration.uuid: 'src', instance.uuid: 'h1'})
    return instance, migration


def test_a_move_nobody_advanced_is_rolled_back_to_its_source(cloud, sweeps):
    instance, migration = _moving(cloud, sweeps.scheduler,
                                  instance_obj.RESIZE_MIGRATING)

    assert sweeps.fail_lost_moves() == [migration.uuid]

    assert sweeps.scheduler.held == {instance.uuid: 'src'}
    status, vm_state, task_state, host, fault = cloud.after_move(
        instance, migration)
    assert (status, vm_state, task_state, host) == (
        migration_obj.ERROR, instance_obj.ACTIVE, None, 'src')
    assert 'it was rolled back to its source' in fault
    assert cloud.instance(instance.uuid).flavor.flavorid == '1'
    assert cloud.events(instance.uuid) == [
        ('conductor_fail_lost_moves', 'Error', None)]
    # Ended: the next sweep leaves it alone.
    assert sweeps.fail_lost_moves() == []


def test_a_move_that_happened_unrecorded_only_releases_the_source(
        cloud, sweeps):
    instance, migration = _moving(cloud, sweeps.scheduler, None, host='h1')

    assert sweeps.fail_lost_moves() == []

    assert sweeps.scheduler.calls == [('release', migration.uuid)]
    assert sweeps.scheduler.held == {instance.uuid: 'h1'}
    assert cloud.instance(instance.uuid).host == 'h1'
    assert cloud.events(instance.uuid) == []


def _an_hour_old(cloud, instance):
    an_hour_ago = helpers.naive_utcnow() - datetime.timedelta(hours=1)
    with engines.writer(cloud.cell1.database_connection) as session:
        session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == instance.uuid).values(
            updated_at=an_hour_ago))


@pytest.mark.parametrize('task_state', [instance_obj.REBUILDING,
                                        instance_obj.REBUILD_SPAWNING])
def test_a_rebuild_nobody_advanced_ends_in_error_without_its_claim(
        cloud, sweeps, task_state):
    instance = cloud.server(host='h1', task_state=task_state)
    fresh = cloud.server(host='h1', task_state=task_state, name='fresh')
    _an_hour_old(cloud, instance)
    sweeps.scheduler.held.update({instance.uuid: 'h1', fresh.uuid: 'h1'})

    assert sweeps.fail_lost_tasks() == [instance.uuid]

    found = cloud.instance(instance.uuid)
    assert (found.vm_state, found.task_state) == (instance_obj.ERROR, None)
    assert 'No service advanced the rebuild' in found.fault.message
    assert [event[:2] for event in cloud.events(instance.uuid)] == [
        ('conductor_fail_lost_tasks', 'Error')]
    # In ERROR it holds no claim; one still rebuilding is left alone.
    assert sweeps.scheduler.held == {fresh.uuid: 'h1'}
    assert cloud.instance(fresh.uuid).task_state == task_state
    assert sweeps.fail_lost_tasks() == []


def test_an_evacuation_is_left_to_the_lost_moves_sweep(cloud, sweeps):
    instance, migration = _moving(cloud, sweeps.scheduler,
                                  instance_obj.REBUILDING)
    _an_hour_old(cloud, instance)

    assert sweeps.fail_lost_tasks() == []
    assert cloud.instance(instance.uuid).task_state == \
        instance_obj.REBUILDING


def test_servers_soft_deleted_longer_than_the_interval_are_reclaimed(
        cloud, sweeps, override):
    override('reclaim_instance_interval', 60)
    sweeps.compute = fakes.Computes(unreachable=['terminate_instance'])
    old = cloud.server(host='h1', vm_state=instance_obj.SOFT_DELETED,
                       name='old')
    fresh = cloud.server(host='h1', vm_state=instance_obj.SOFT_DELETED,
                         name='fresh')
    restoring = cloud.server(host='h1', vm_state=instance_obj.SOFT_DELETED,
                             task_state=instance_obj.RESTORING,
                             name='restoring')
    an_hour_ago = helpers.naive_utcnow() - datetime.timedelta(hours=1)
    now = helpers.naive_utcnow()
    with engines.writer(cloud.cell1.database_connection) as session:
        for instance, when in ((old, an_hour_ago), (fresh, now),
                               (restoring, an_hour_ago)):
            session.execute(sa.update(cell_models.Instance).where(
                cell_models.Instance.uuid == instance.uuid).values(
                deleted_at=when))

    assert sweeps.reclaim_soft_deleted() == [old.uuid]

    # Its compute was told to delete it: when that does not get through,
    # it stays deleting, which the compute finishes when it starts.
    assert sweeps.compute.sent == [('terminate_instance', 'h1')]
    assert cloud.instance(old.uuid).task_state == instance_obj.DELETING
    assert [event[:2] for event in cloud.events(old.uuid)] == [
        ('conductor_reclaim_instance', 'Success')]
    assert cloud.instance(fresh.uuid).task_state is None
    assert cloud.instance(restoring.uuid).task_state == \
        instance_obj.RESTORING
    # Taken: the next sweep does not cast its delete again.
    assert sweeps.reclaim_soft_deleted() == []


def test_lost_shelve_tasks_end_as_the_server_can_be(cloud, sweeps):
    """A shelve, or an unshelve of a server still on its host, is cleared
    with the server keeping its claim; an offload, or an unshelve of an
    offloaded server, ends offloaded without one."""
    shelving = cloud.server(host='h1', task_state=instance_obj.SHELVING,
                            name='shelving')
    offloading = cloud.server(host='h1', vm_state=instance_obj.SHELVED,
                              task_state=instance_obj.SHELVING_OFFLOADING,
                              name='offloading')
    powering_on = cloud.server(host='h1', vm_state=instance_obj.SHELVED,
                               task_state=instance_obj.UNSHELVING,
                               name='powering-on')
    placing = cloud.server(host='h2',
                           vm_state=instance_obj.SHELVED_OFFLOADED,
                           task_state=instance_obj.UNSHELVING,
                           name='placing')
    lost = (shelving, offloading, powering_on, placing)
    for instance in lost:
        _an_hour_old(cloud, instance)
        sweeps.scheduler.held[instance.uuid] = instance.host

    assert sorted(sweeps.fail_lost_tasks()) == sorted(i.uuid for i in lost)

    def state(instance):
        found = cloud.instance(instance.uuid)
        return found.vm_state, found.task_state, found.host

    assert state(shelving) == (instance_obj.ACTIVE, None, 'h1')
    assert state(powering_on) == (instance_obj.SHELVED, None, 'h1')
    assert state(offloading) == (instance_obj.SHELVED_OFFLOADED, None, None)
    assert state(placing) == (instance_obj.SHELVED_OFFLOADED, None, None)
    assert sweeps.scheduler.held == {shelving.uuid: 'h1',
                                     powering_on.uuid: 'h1'}
    assert 'No service advanced the unshelve' in cloud.instance(
        placing.uuid).fault.message
    for instance in lost:
        assert [event[:2] for event in cloud.events(instance.uuid)] == [
            ('conductor_fail_lost_tasks', 'Error')]
    assert sweeps.fail_lost_tasks() == []


def test_servers_shelved_longer_than_the_offload_time_are_offloaded(
        cloud, sweeps, override):
    override('shelved_offload_time', 60)
    sweeps.compute = fakes.Computes()
    old = cloud.server(host='h1', vm_state=instance_obj.SHELVED, name='old')
    fresh = cloud.server(host='h1', vm_state=instance_obj.SHELVED,
                         name='fresh')
    unshelving = cloud.server(host='h1', vm_state=instance_obj.SHELVED,
                              task_state=instance_obj.UNSHELVING,
                              name='unshelving')
    _an_hour_old(cloud, old)
    _an_hour_old(cloud, unshelving)

    assert sweeps.offload_shelved() == [old.uuid]

    assert sweeps.compute.sent == [('shelve_offload_instance', 'h1')]
    assert cloud.instance(old.uuid).task_state == \
        instance_obj.SHELVING_OFFLOADING
    assert cloud.instance(fresh.uuid).task_state is None
    assert cloud.instance(unshelving.uuid).task_state == \
        instance_obj.UNSHELVING
    # Taken: the next sweep does not cast its offload again.
    assert sweeps.offload_shelved() == []
