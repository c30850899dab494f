"""Evacuation: a server whose compute is down is rebuilt on the host the
scheduler claims; with no host it stays as it was."""

import pytest

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import evacuate
from scheduler_split import exception
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import migration as migration_obj
from tests.unit.conductor import fakes


@pytest.fixture
def stranded(cloud):
    """A server in ERROR on the dead host ``src``."""
    return cloud.moving(migration_obj.EVACUATION, instance_obj.REBUILDING,
                        vm_state=instance_obj.ERROR)


def _task(cloud, stranded, scheduler, computes):
    return cloud.move_task(evacuate.EvacuateTask, stranded, scheduler,
                           computes)


def test_the_server_is_rebuilt_on_the_host_the_scheduler_claimed(
        cloud, computes, stranded):
    instance, migration = stranded
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    _task(cloud, stranded, scheduler, computes).execute()

    assert scheduler.calls == [('hold_by_migration', instance.uuid),
                               ('select', [instance.uuid])]
    # No alternates: a rebuild that fails leaves the server in ERROR.
    assert computes.sent == [('rebuild_instance', 'h1')]
    # The migration holds the dead source until its compute cleans up.
    assert scheduler.held == {migration.uuid: 'src', instance.uuid: 'h1'}
    recorded = cloud.migration(migration.uuid)
    assert (recorded.status, recorded.dest_compute, recorded.dest_node) == (
        migration_obj.PRE_MIGRATING, 'h1', 'h1-node')
    assert cloud.events(instance.uuid) == [
        ('conductor_evacuate_instance', 'Success', 'conductor-1')]


def test_no_valid_host_leaves_the_server_as_it_was(cloud, computes,
                                                   stranded):
    instance, migration = stranded
    scheduler = fakes.Scheduler(exception.NoValidHost(reason='all full'))
    task = _task(cloud, stranded, scheduler, computes)

    base.run_cast(task)

    assert task.rolled_back
    assert computes.sent == []
    assert scheduler.held == {instance.uuid: 'src'}
    # Still in ERROR on its dead host, with no new fault.
    assert cloud.after_move(instance, migration) == (
        migration_obj.ERROR, instance_obj.ERROR, None, 'src', None)
    assert cloud.events(instance.uuid) == [
        ('conductor_evacuate_instance', 'Error', 'conductor-1')]
