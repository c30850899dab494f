"""Resize and cold migration: the super-conductor places the move in the
instance's cell; the cell conductor reschedules it when a destination
refuses; a move that finds no host is rolled back."""

import pytest

from scheduler_split.conductor.tasks import migrate
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import migration as migration_obj
from tests.unit.conductor import fakes
from tests.unit import helpers

BIGGER = helpers.make_flavor(vcpus=2, memory_mb=1024, flavorid='2',
                             name='small')


@pytest.fixture
def resizing(cloud):
    """A server on ``src`` the API set in ``resize_prep``."""
    return cloud.server(host='src', task_state=instance_obj.RESIZE_PREP)


def _scheduler(instance, *answers, **kwargs):
    scheduler = fakes.Scheduler(*answers, **kwargs)
    scheduler.held[instance.uuid] = 'src'
    return scheduler


def test_a_resize_claims_a_destination_in_the_cell_and_hands_it_the_move(
        cloud, computes, resizing):
    uuid = resizing.uuid
    scheduler = _scheduler(resizing, [cloud.hosts('h1', 'h2', 'h3')])

    migration = migrate.MigrateTask(
        scheduler, cloud.ctx, resizing, flavor=BIGGER,
        computes=computes.for_cell).execute()

    assert scheduler.calls == [('hold_by_migration', uuid),
                               ('select', [uuid])]
    [spec] = scheduler.specs
    assert (spec.requested_cell, spec.ignore_hosts, spec.force_hosts,
            spec.flavor.flavorid) == (cloud.cell1.uuid, ['src'], None, '2')
    # Both hosts stay accounted for while the move is under way.
    assert scheduler.held == {migration.uuid: 'src', uuid: 'h1'}
    assert computes.sent == [('prep_resize', 'h1')]
    assert computes.args == [{'flavor': '2', 'alternates': ['h2', 'h3'],
                              'attempts': 1, 'tried': ['h1']}]
    recorded = cloud.migration(migration.uuid)
    assert (recorded.migration_type, recorded.status, recorded.source_compute,
            recorded.dest_compute, recorded.dest_node) == (
        'resize', 'pre-migrating', 'src', 'h1', 'h1-node')
    assert (recorded.old_flavor.flavorid, recorded.new_flavor.flavorid) == (
        '1', '2')
    assert cloud.events(uuid) == [
        ('conductor_migrate_server', 'Success', 'conductor-1')]


def test_a_cold_migration_to_a_named_host_keeps_the_flavor(
        cloud, computes, resizing):
    scheduler = _scheduler(resizing, [cloud.hosts('h2')])

    migration = migrate.MigrateTask(
        scheduler, cloud.ctx, resizing, host='h2',
        computes=computes.for_cell).execute()

    [spec] = scheduler.specs
    assert spec.force_hosts == ['h2']
    assert spec.flavor.flavorid == '1'
    assert migration.migration_type == migration_obj.MIGRATION
    assert computes.sent == [('prep_resize', 'h2')]


def test_no_valid_host_puts_the_server_back_as_it_was(
        cloud, computes, resizing):
    uuid = resizing.uuid
    scheduler = _scheduler(resizing,
                           exception.NoValidHost(reason='all full'))
    task = migrate.MigrateTask(scheduler, cloud.ctx, resizing, flavor=BIGGER,
                               computes=computes.for_cell)

    with pytest.raises(exception.NoValidHost):
        task.execute()

    assert task.rolled_back
    assert scheduler.calls == [('hold_by_migration', uuid),
                               ('select', [uuid]),
                               ('give_back_to_instance', uuid)]
    assert scheduler.held == {uuid: 'src'}
    assert computes.sent == []
    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state, instance.host,
            instance.flavor.flavorid) == (instance_obj.ACTIVE, None, 'src',
                                          '1')
    # The user reads why in the actions; the server is not in ERROR.
    assert instance.fault is None
    [migration] = objects.Migration.get_all(cloud.in_cell(),
                                            instance_uuid=uuid)
    assert migration.status == migration_obj.ERROR
    assert cloud.events(uuid) == [
        ('conductor_migrate_server', 'Error', 'conductor-1')]


# --- the cell conductor: a destination refused -------------------------------

def _refused(cloud, instance, scheduler):
    """The move of ``instance`` to h1, which refused it."""
    migration = objects.Migration.for_move(
        cloud.ctx, instance, migration_obj.RESIZE,
        migration_obj.PRE_MIGRATING, new_flavor=BIGGER)
    migration.dest_compute = migration.dest_host = 'h1'
    migration.create(cloud.in_cell())
    scheduler.held.update({migration.uuid: 'src', instance.uuid: 'h1'})
    return migration


def _reschedule(cloud, scheduler, computes, instance, migration, host_list):
    return migrate.MigrateRescheduleTask(
        scheduler, computes, cloud.in_cell(), instance, migration, BIGGER,
        objects.RequestSpec(instance_uuid=instance.uuid, project_id='p',
                            flavor=BIGGER),
        host_list, objects.SchedulerRetries(num_attempts=1, hosts=['h1']),
        'h1 has no room')


def test_a_refused_move_goes_to_the_next_alternate_that_claims(
        cloud, computes, resizing):
    uuid = resizing.uuid
    scheduler = fakes.Scheduler(full={'h2'})
    migration = _refused(cloud, resizing, scheduler)

    _reschedule(cloud, scheduler, computes, resizing, migration,
                cloud.hosts('h2', 'h3', 'h4')).execute()

    assert scheduler.tried() == ['h2', 'h3']
    assert scheduler.held == {migration.uuid: 'src', uuid: 'h3'}
    assert computes.sent == [('prep_resize', 'h3')]
    assert computes.args == [{'flavor': '2', 'alternates': ['h4'],
                              'attempts': 2, 'tried': ['h1', 'h3']}]
    assert cloud.migration(migration.uuid).dest_compute == 'h3'
    assert cloud.events(uuid) == [
        ('conductor_migrate_server', 'Success', 'h3')]


def test_a_move_refused_by_every_alternate_is_rolled_back_with_a_fault(
        cloud, computes, resizing):
    uuid = resizing.uuid
    scheduler = fakes.Scheduler(full={'h2', 'h3'})
    migration = _refused(cloud, resizing, scheduler)
    task = _reschedule(cloud, scheduler, computes, resizing, migration,
                       cloud.hosts('h2', 'h3'))

    with pytest.raises(exception.MaxRetriesExceeded):
        task.execute()

    assert scheduler.tried() == ['h2', 'h3']
    assert scheduler.calls[-1] == ('give_back_to_instance', uuid)
    # The source again, and no longer the refusing destination.
    assert scheduler.held == {uuid: 'src'}
    assert computes.sent == []
    status, vm_state, task_state, host, fault = cloud.after_move(
        resizing, migration)
    assert (status, vm_state, task_state, host) == (
        migration_obj.ERROR, instance_obj.ACTIVE, None, 'src')
    assert 'Exhausted all hosts available for moving' in fault
    assert 'last: h1 has no room' in fault
    assert cloud.events(uuid) == [
        ('conductor_migrate_server', 'Error', None)]
