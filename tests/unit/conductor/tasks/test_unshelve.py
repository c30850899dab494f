"""Unshelving: a shelved server runs again on its host; an offloaded one
is placed by the scheduler in its own cell, with alternates, and an
unshelve that will not happen leaves it offloaded without a claim."""

import pytest

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import unshelve
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from tests.unit.conductor import fakes


@pytest.fixture
def offloaded(cloud):
    return cloud.server(host=None, vm_state=instance_obj.SHELVED_OFFLOADED,
                        task_state=instance_obj.UNSHELVING)


def _task(cloud, scheduler, computes, instance, **kwargs):
    return unshelve.UnshelveTask(scheduler, cloud.ctx, instance,
                                 computes=computes.for_cell, **kwargs)


def test_an_offloaded_server_is_placed_in_its_cell_with_alternates(
        cloud, computes, offloaded):
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2', 'h3')])

    _task(cloud, scheduler, computes, offloaded,
          spec_changes={'availability_zone': 'nova'}).execute()

    [spec] = scheduler.specs
    assert spec.requested_cell == cloud.cell1.uuid
    assert spec.availability_zone == 'nova'
    assert spec.force_hosts is None
    assert scheduler.held == {offloaded.uuid: 'h1'}
    assert computes.sent == [('unshelve_instance', 'h1')]
    [args] = computes.args
    assert (args['node'], args['alternates'], args['tried']) == (
        'h1-node', ['h2', 'h3'], ['h1'])
    # The zone holds for the server's later moves.
    stored = objects.RequestSpec.get_by_instance_uuid(cloud.ctx,
                                                      offloaded.uuid)
    assert stored.availability_zone == 'nova'
    assert cloud.events(offloaded.uuid) == [
        ('conductor_unshelve_instance', 'Success', 'conductor-1')]


def test_a_host_named_by_an_admin_is_still_filtered(cloud, computes,
                                                    offloaded):
    scheduler = fakes.Scheduler([cloud.hosts('h2')])

    _task(cloud, scheduler, computes, offloaded, host='h2').execute()

    assert scheduler.specs[0].force_hosts == ['h2']
    assert computes.sent == [('unshelve_instance', 'h2')]


def test_a_shelved_server_runs_again_where_it_is(cloud, computes):
    shelved = cloud.server(host='h1', vm_state=instance_obj.SHELVED,
                           task_state=instance_obj.UNSHELVING)
    scheduler = fakes.Scheduler()

    _task(cloud, scheduler, computes, shelved).execute()

    assert scheduler.calls == []
    assert computes.sent == [('unshelve_instance', 'h1')]


def test_no_valid_host_leaves_the_server_offloaded_with_its_fault(
        cloud, computes, offloaded):
    scheduler = fakes.Scheduler(exception.NoValidHost(reason='all full'))
    task = _task(cloud, scheduler, computes, offloaded)

    base.run_cast(task)

    assert task.rolled_back
    assert computes.sent == []
    assert scheduler.held == {}
    found = cloud.instance(offloaded.uuid)
    assert (found.vm_state, found.task_state, found.host) == (
        instance_obj.SHELVED_OFFLOADED, None, None)
    assert 'all full' in found.fault.message
    assert cloud.events(offloaded.uuid) == [
        ('conductor_unshelve_instance', 'Error', 'conductor-1')]


def test_a_failed_spawn_goes_to_the_next_alternate_that_claims(
        cloud, computes, offloaded):
    scheduler = fakes.Scheduler(full={'h2'})
    task = unshelve.UnshelveRescheduleTask(
        scheduler, computes, cloud.in_cell(), offloaded,
        objects.RequestSpec(instance_uuid=offloaded.uuid, project_id='p',
                            flavor=offloaded.flavor),
        cloud.hosts('h2', 'h3', 'h4'),
        objects.SchedulerRetries(num_attempts=1, hosts=['h1']))

    task.execute()

    assert scheduler.held == {offloaded.uuid: 'h3'}
    assert computes.sent == [('unshelve_instance', 'h3')]
    assert computes.args[0]['alternates'] == ['h4']
    assert computes.args[0]['tried'] == ['h1', 'h3']


def test_with_no_alternate_left_the_server_is_offloaded_again(
        cloud, computes, offloaded):
    scheduler = fakes.Scheduler(full={'h2'})
    task = unshelve.UnshelveRescheduleTask(
        scheduler, computes, cloud.in_cell(), offloaded,
        objects.RequestSpec(instance_uuid=offloaded.uuid, project_id='p',
                            flavor=offloaded.flavor),
        cloud.hosts('h2'),
        objects.SchedulerRetries(num_attempts=1, hosts=['h1']))

    base.run_cast(task)

    assert computes.sent == []
    assert scheduler.held == {}
    found = cloud.instance(offloaded.uuid)
    assert (found.vm_state, found.task_state, found.host) == (
        instance_obj.SHELVED_OFFLOADED, None, None)
    assert 'Exhausted all hosts' in found.fault.message
    assert 'h1' in found.fault.message
