"""Rescheduling a failed build in its cell: the next alternate the
scheduler lets the instance claim, or ERROR when none is left."""

import pytest

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import reschedule
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from tests.unit.conductor import fakes


@pytest.fixture
def failed_build(cloud):
    """An instance whose build failed on h0, the first of its hosts."""
    return cloud.server(host=None, vm_state=instance_obj.BUILDING,
                        task_state=instance_obj.SCHEDULING)


def _task(cloud, scheduler, computes, instance, host_list):
    return reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), instance,
        objects.RequestSpec(instance_uuid=instance.uuid, project_id='p',
                            flavor=instance.flavor),
        host_list, objects.SchedulerRetries(num_attempts=1, hosts=['h0']))


def test_reschedule_stays_in_the_cell_on_the_first_alternate_that_claims(
        cloud, computes, failed_build):
    uuid = failed_build.uuid
    scheduler = fakes.Scheduler(full={'h1'})

    _task(cloud, scheduler, computes, failed_build,
          cloud.hosts('h1', 'h2', 'h3')).execute()

    assert scheduler.tried() == ['h1', 'h2']
    assert scheduler.held == {uuid: 'h2'}
    assert computes.sent == [('build_and_run_instance', 'h2')]
    assert computes.args == [{'node': 'h2-node', 'alternates': ['h3'],
                              'attempts': 2, 'tried': ['h0', 'h2']}]
    instance = cloud.instance(uuid)
    assert instance.vm_state == instance_obj.BUILDING
    assert instance.availability_zone == 'nova'
    assert cloud.events(uuid) == [
        ('conductor_build_instances', 'Success', 'h2')]
    assert cloud.event_details(uuid) == [
        'rescheduled to h2 (attempt 2; hosts tried: h0, h2)']


def test_with_every_alternate_full_the_build_ends_in_error_without_a_claim(
        cloud, computes, failed_build):
    uuid = failed_build.uuid
    scheduler = fakes.Scheduler(full={'h1', 'h2'})
    scheduler.held[uuid] = 'h0'
    task = _task(cloud, scheduler, computes, failed_build,
                 cloud.hosts('h1', 'h2'))

    with pytest.raises(exception.MaxRetriesExceeded):
        task.execute()

    assert task.rolled_back
    assert scheduler.tried() == ['h1', 'h2']
    assert scheduler.calls[-1] == ('release', uuid)
    assert scheduler.held == {}
    assert computes.sent == []
    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        instance_obj.ERROR, None, None)
    assert 'Exhausted all hosts available for retrying build failures' in \
        instance.fault.message
    assert cloud.events(uuid) == [('conductor_build_instances', 'Error',
                                   None)]


def test_an_instance_deleted_before_its_reschedule_only_gives_its_claim_back(
        cloud, computes, failed_build):
    uuid = failed_build.uuid
    failed_build.destroy(cloud.in_cell())
    scheduler = fakes.Scheduler()
    scheduler.held[uuid] = 'h0'

    _task(cloud, scheduler, computes, failed_build,
          cloud.hosts('h1')).execute()

    assert scheduler.calls == [('release', uuid)]
    assert computes.sent == []


def test_a_reschedule_that_cannot_be_handed_over_ends_in_error(
        cloud, failed_build):
    uuid = failed_build.uuid
    computes = fakes.Computes(unreachable={'build_and_run_instance'})
    scheduler = fakes.Scheduler()

    base.run_cast(_task(cloud, scheduler, computes, failed_build,
                        cloud.hosts('h1', 'h2')))

    # Not the next alternate: the bus, not the host, failed.
    assert computes.sent == [('build_and_run_instance', 'h1')]
    assert scheduler.tried() == ['h1']
    assert scheduler.held == {}
    instance = cloud.instance(uuid)
    assert instance.vm_state == instance_obj.ERROR
    assert instance.fault.details == 'the bus lost it'


def test_an_instance_deleted_during_its_reschedule_logs_no_traceback(
        cloud, computes, failed_build, log_of):
    uuid = failed_build.uuid

    class DeletedWhileClaiming(fakes.Scheduler):
        def claim_resources(self, ctx, selection, instance_uuid):
            cloud.instance(uuid).destroy(cloud.in_cell())
            return super().claim_resources(ctx, selection, instance_uuid)

    scheduler = DeletedWhileClaiming()

    base.run_cast(_task(cloud, scheduler, computes, failed_build,
                        cloud.hosts('h1', 'h2')))

    assert computes.sent == []
    assert scheduler.held == {}
    assert log_of(uuid) == [
        ('INFO', 'Rescheduling instance %s failed: Instance %s could not '
         'be found.' % (uuid, uuid), False)]


def test_a_reschedule_with_every_alternate_full_is_one_warning(
        cloud, computes, failed_build, log_of):
    uuid = failed_build.uuid

    base.run_cast(_task(cloud, fakes.Scheduler(full={'h1'}), computes,
                        failed_build, cloud.hosts('h1')))

    assert [(level, traceback) for level, _, traceback in log_of(uuid)] == [
        ('WARNING', False)]
    assert 'Exhausted all hosts' in log_of(uuid)[0][1]


def test_a_reschedule_that_lost_a_race_at_commit_leaves_the_build_be(
        cloud, computes, failed_build, monkeypatch, log_of):
    # Another conductor (on another Galera node) took the build on and
    # claimed for it; this one's write of the instance was refused at
    # commit. The winner's claim and build stay.
    import pymysql
    import sqlalchemy as sa

    from scheduler_split.objects import build_plan
    uuid = failed_build.uuid
    chosen, *alternates = cloud.hosts('h0', 'h1', 'h2')
    # h0 gave the build back (its plan names no host).
    plan = build_plan.BuildPlan(
        uuid, None, None,
        objects.RequestSpec(instance_uuid=uuid, project_id='p',
                            flavor=failed_build.flavor), alternates,
        objects.SchedulerRetries(num_attempts=1, hosts=['h0']))
    plan.create(cloud.in_cell())
    scheduler = fakes.Scheduler()
    scheduler.held[uuid] = 'h2'

    def refused(*args, **kwargs):
        raise sa.exc.OperationalError('COMMIT', {}, pymysql.err.
                                      OperationalError(1213, 'Deadlock'))

    monkeypatch.setattr(objects.Instance, 'save', refused)
    monkeypatch.setattr(reschedule.build, 'take_host_zone',
                        lambda *args: True)
    task = reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), failed_build, None, [],
        objects.SchedulerRetries(num_attempts=1, hosts=['h0']))

    base.run_cast(task)

    assert computes.sent == []
    assert ('release', uuid) not in scheduler.calls
    assert cloud.instance(uuid).vm_state == instance_obj.BUILDING
    assert [(level, 'changed by another conductor' in message)
            for level, message, _ in log_of(uuid)] == [('INFO', True)]


def _planned(cloud, instance, hosts, tried, given_back=False):
    """The build's plan: on ``hosts[0]`` with the rest as alternates,
    ``tried`` so far; with ``given_back``, its host gave it back (a
    reschedule clears the plan's host)."""
    from scheduler_split.objects import build_plan
    chosen, *alternates = cloud.hosts(*hosts)
    build_plan.BuildPlan(
        instance.uuid, None if given_back else chosen.service_host,
        None if given_back else chosen.nodename,
        objects.RequestSpec(instance_uuid=instance.uuid, project_id='p',
                            flavor=instance.flavor), alternates,
        objects.SchedulerRetries(num_attempts=len(tried),
                                 hosts=tried)).create(cloud.in_cell())


def test_a_reschedule_that_arrives_after_the_build_went_on_changes_nothing(
        cloud, computes, failed_build, log_of):
    # h0 failed the build and cast its reschedule, which a conductor held
    # up; the sweep of stalled builds took the build on to h1 meanwhile,
    # its last alternate. The late reschedule finds no alternate left:
    # it must not end the build that h1 spawns.
    uuid = failed_build.uuid
    _planned(cloud, failed_build, ['h1'], ['h0', 'h1'])
    scheduler = fakes.Scheduler()
    scheduler.held[uuid] = 'h1'
    task = reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), failed_build, None,
        cloud.hosts('h1'), objects.SchedulerRetries(num_attempts=1,
                                                    hosts=['h0']))

    base.run_cast(task)

    assert computes.sent == []
    assert scheduler.calls == []
    assert scheduler.held == {uuid: 'h1'}
    assert cloud.instance(uuid).vm_state == instance_obj.BUILDING
    assert log_of(uuid) == [(
        'INFO', 'The build of instance %s went on from h0 before its '
        'reschedule from there arrived; leaving it to h1' % uuid, False)]


def test_a_late_reschedule_after_the_next_host_gave_it_back_too_is_ignored(
        cloud, computes, failed_build):
    # h0's reschedule was held up; the build went on to h1, which failed
    # and gave it back too: h1's reschedule goes on, h0's changes nothing.
    _planned(cloud, failed_build, ['h1', 'h2'], ['h0', 'h1'],
             given_back=True)
    scheduler = fakes.Scheduler()

    base.run_cast(reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), failed_build, None,
        cloud.hosts('h1', 'h2'), objects.SchedulerRetries(num_attempts=1,
                                                          hosts=['h0'])))
    assert computes.sent == []

    base.run_cast(reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), failed_build, None,
        cloud.hosts('h2'), objects.SchedulerRetries(num_attempts=2,
                                                    hosts=['h0', 'h1'])))
    assert computes.sent == [('build_and_run_instance', 'h2')]


def test_a_reschedule_from_the_host_its_plan_names_goes_on_from_the_plan(
        cloud, computes, failed_build):
    uuid = failed_build.uuid
    _planned(cloud, failed_build, ['h0', 'h1', 'h2'], ['h0'],
             given_back=True)
    scheduler = fakes.Scheduler(full={'h1'})
    task = reschedule.RescheduleBuildTask(
        scheduler, computes, cloud.in_cell(), failed_build, None,
        cloud.hosts('h1', 'h2'), objects.SchedulerRetries(num_attempts=1,
                                                          hosts=['h0']))

    base.run_cast(task)

    assert computes.sent == [('build_and_run_instance', 'h2')]
    assert scheduler.held == {uuid: 'h2'}
