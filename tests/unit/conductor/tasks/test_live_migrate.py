"""Live migration: the first destination ready to take the running server
gets it; none ready, and the server keeps running where it is."""

import pytest

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import live_migrate
from scheduler_split import exception
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import migration as migration_obj
from tests.unit.conductor import fakes


@pytest.fixture
def moving(cloud):
    return cloud.moving(migration_obj.LIVE_MIGRATION,
                        instance_obj.MIGRATING)


def _task(cloud, moving, scheduler, computes):
    return cloud.move_task(live_migrate.LiveMigrateTask, moving, scheduler,
                           computes)


def test_the_first_destination_ready_gets_the_server(cloud, moving):
    instance, migration = moving
    computes = fakes.Computes(refusing={'h1'})
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2', 'h3')],
                                full={'h2'})

    _task(cloud, moving, scheduler, computes).execute()

    # h1 said no, h2 was full: h3 took it, and the source sends it there.
    assert computes.sent == [('pre_live_migration', 'h1'),
                             ('pre_live_migration', 'h3'),
                             ('live_migration', 'src')]
    assert computes.args[-1] == {'dest': 'h3'}
    assert scheduler.tried() == ['h2', 'h3']
    assert scheduler.held == {migration.uuid: 'src', instance.uuid: 'h3'}
    recorded = cloud.migration(migration.uuid)
    assert (recorded.status, recorded.dest_compute) == (
        migration_obj.PREPARING, 'h3')
    assert cloud.events(instance.uuid) == [
        ('conductor_live_migrate_instance', 'Error', 'h1'),
        ('conductor_live_migrate_instance', 'Success', 'conductor-1')]
    assert cloud.event_details(instance.uuid)[-1] == (
        'h3 claimed and ready (hosts tried: h1, h3)')


def test_with_no_destination_ready_the_move_is_rolled_back(cloud, moving):
    instance, migration = moving
    computes = fakes.Computes(refusing={'h1', 'h2'})
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])
    task = _task(cloud, moving, scheduler, computes)

    base.run_cast(task)

    assert task.rolled_back
    assert computes.sent == [('pre_live_migration', 'h1'),
                             ('pre_live_migration', 'h2')]
    assert scheduler.held == {instance.uuid: 'src'}
    assert cloud.after_move(instance, migration) == (
        migration_obj.ERROR, instance_obj.ACTIVE, None, 'src', None)
    assert cloud.events(instance.uuid)[-1] == (
        'conductor_live_migrate_instance', 'Error', 'conductor-1')
    assert 'Exhausted all hosts available for live migrating' in \
        cloud.event_details(instance.uuid)[-1]


def test_a_server_deleted_before_the_cast_arrived_is_left_alone(
        cloud, computes, moving):
    instance, _ = moving
    instance.destroy(cloud.in_cell())
    scheduler = fakes.Scheduler()

    _task(cloud, moving, scheduler, computes).execute()

    assert scheduler.calls == []
    assert computes.sent == []


def test_a_move_handed_to_its_source_is_not_rolled_back_by_a_lost_cast(
        cloud, moving):
    instance, migration = moving
    computes = fakes.Computes(unreachable={'live_migration'})
    scheduler = fakes.Scheduler([cloud.hosts('h1')])
    task = _task(cloud, moving, scheduler, computes)

    with pytest.raises(Exception):
        base.run_cast(task)

    # The conductor cannot tell a lost cast from a slow host: the
    # lost-moves sweep settles it if nobody advances it.
    assert not task.rolled_back
    assert scheduler.held == {migration.uuid: 'src', instance.uuid: 'h1'}
    assert cloud.after_move(instance, migration) == (
        migration_obj.PREPARING, instance_obj.ACTIVE, instance_obj.MIGRATING,
        'src', None)


def test_no_valid_host_at_all_is_rolled_back_the_same_way(cloud, moving):
    instance, migration = moving
    computes = fakes.Computes()
    scheduler = fakes.Scheduler(exception.NoValidHost(reason='none'))

    base.run_cast(_task(cloud, moving, scheduler, computes))

    assert computes.sent == []
    assert scheduler.held == {instance.uuid: 'src'}
    assert cloud.after_move(instance, migration) == (
        migration_obj.ERROR, instance_obj.ACTIVE, None, 'src', None)
