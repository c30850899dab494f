"""A build whose cast or host was lost goes on from its plan: cast again
to the host holding its claim, or on to its next alternate, and ends in
ERROR only when none is left. A build starts only on the host its plan
names, and only one conductor moves a plan on."""

import datetime
import threading

import pytest
import sqlalchemy as sa

from scheduler_split.conductor import cell_periodic
from scheduler_split.conductor import records
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import memory_bus
from scheduler_split import objects
from scheduler_split.objects import build_plan
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from tests.unit.conductor import fakes
from tests.unit import helpers


@pytest.fixture
def sweeps(cloud, computes, override):
    override('build_redrive_interval', 60, group='conductor')
    override('build_redrive_limit', 2, group='conductor')
    override('lost_build_timeout', 600, group='conductor')
    override('service_down_time', 60)
    memory_bus.reset()
    transport = rpc.get_transport('kombu+memory:////recover-cell')
    sweeps = cell_periodic.CellConductorPeriodics(
        cloud.cell1.database_connection, transport)
    sweeps.scheduler = fakes.Scheduler()
    sweeps.compute = computes
    yield sweeps
    rpc.cleanup()
    memory_bus.reset()


def _compute(cloud, host, seconds_ago=0):
    """The service record of ``host``'s compute, last heard of then."""
    seen = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds_ago)
    with engines.writer(cloud.cell1.database_connection) as session:
        session.add(cell_models.Service(host=host, binary=service_obj.COMPUTE,
                                        topic='compute', report_count=1,
                                        last_seen_up=seen, version=14))


def _age(cloud, uuid, seconds):
    """Nothing touched the build or its plan for ``seconds``."""
    then = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds)
    with engines.writer(cloud.cell1.database_connection) as session:
        for model, column in ((cell_models.Instance,
                               cell_models.Instance.uuid),
                              (cell_models.BuildPlan,
                               cell_models.BuildPlan.instance_uuid)):
            session.execute(sa.update(model).where(column == uuid).values(
                created_at=then, updated_at=then))


def _handed_over(cloud, scheduler, hosts, task_state=instance_obj.SCHEDULING,
                 host=None, age=120):
    """A build the super-conductor handed to ``hosts[0]`` with the rest
    as alternates, as its plan records it, ``age`` seconds ago."""
    instance = cloud.server(host=host, vm_state=instance_obj.BUILDING,
                            task_state=task_state)
    chosen, *alternates = cloud.hosts(*hosts)
    build_plan.BuildPlan(
        instance.uuid, chosen.service_host, chosen.nodename,
        helpers.make_spec(instance.uuid), alternates,
        objects.SchedulerRetries(num_attempts=1,
                                 hosts=[chosen.service_host])).create(
        cloud.in_cell())
    scheduler.held[instance.uuid] = chosen.service_host
    _age(cloud, instance.uuid, age)
    return instance


def _looks(cloud, sweeps, uuid, times):
    """``times`` looks of the sweep, each followed by two minutes in
    which nothing touched the build."""
    for _ in range(times):
        sweeps.recover_builds()
        _age(cloud, uuid, 120)


def _plan(cloud, uuid):
    return build_plan.BuildPlan.get(cloud.in_cell(), uuid)


def test_a_build_no_compute_took_is_cast_again_to_its_host(
        cloud, sweeps, computes):
    _compute(cloud, 'h1')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])

    assert sweeps.recover_builds() == [instance.uuid]

    assert computes.sent == [('build_and_run_instance', 'h1')]
    assert computes.args[0]['alternates'] == ['h2']
    assert computes.args[0]['tried'] == ['h1']
    assert _plan(cloud, instance.uuid).recasts == 1
    assert sweeps.scheduler.held == {instance.uuid: 'h1'}
    assert ('conductor_recover_build', 'Success', 'h1') in cloud.events(
        instance.uuid)
    # Cast again just now: the next look leaves it alone.
    assert sweeps.recover_builds() == []
    assert len(computes.sent) == 1


def test_after_its_casts_a_build_goes_on_to_its_next_alternate(
        cloud, sweeps, computes):
    for host in ('h1', 'h2', 'h3'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    _looks(cloud, sweeps, instance.uuid, 2)
    sweeps.scheduler.full.add('h2')

    sweeps.recover_builds()

    assert computes.sent == [('build_and_run_instance', 'h1')] * 2 + [
        ('build_and_run_instance', 'h3')]
    assert computes.args[-1]['alternates'] == []
    assert computes.args[-1]['tried'] == ['h1', 'h3']
    assert sweeps.scheduler.held == {instance.uuid: 'h3'}
    plan = _plan(cloud, instance.uuid)
    assert (plan.host, plan.recasts, plan.alternates) == ('h3', 0, [])
    assert plan.retry.hosts == ['h1', 'h3']


def test_a_build_whose_host_is_down_goes_straight_to_an_alternate(
        cloud, sweeps, computes):
    _compute(cloud, 'h1', seconds_ago=600)
    _compute(cloud, 'h2')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])

    sweeps.recover_builds()

    assert computes.sent == [('build_and_run_instance', 'h2')]
    assert sweeps.scheduler.held == {instance.uuid: 'h2'}


def test_a_build_with_no_alternate_left_ends_in_error(cloud, sweeps,
                                                      computes):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1'])

    sweeps.recover_builds()

    assert computes.sent == []
    current = cloud.instance(instance.uuid)
    assert current.vm_state == instance_obj.ERROR
    assert 'Exhausted all hosts' in current.fault.message
    assert sweeps.scheduler.held == {}


def test_a_build_with_nowhere_else_to_go_waits_for_its_host(
        cloud, sweeps, computes):
    # Its host is up but took nothing (cut off for a while, its queue
    # kept): cast again past build_redrive_limit, for as many looks as
    # fit in lost_build_timeout (600 s / 60 s), then ERROR.
    _compute(cloud, 'h1')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1'])
    for _ in range(10):
        sweeps.recover_builds()
        assert cloud.instance(instance.uuid).vm_state == \
            instance_obj.BUILDING
        _age(cloud, instance.uuid, 120)

    assert computes.sent == [('build_and_run_instance', 'h1')] * 10
    assert _plan(cloud, instance.uuid).recasts == 10
    assert sweeps.scheduler.held == {instance.uuid: 'h1'}

    sweeps.recover_builds()

    assert len(computes.sent) == 10
    current = cloud.instance(instance.uuid)
    assert current.vm_state == instance_obj.ERROR
    assert 'Exhausted all hosts' in current.fault.message
    assert sweeps.scheduler.held == {}


def test_a_build_with_an_alternate_left_does_not_wait_past_the_limit(
        cloud, sweeps, computes):
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    _looks(cloud, sweeps, instance.uuid, 3)

    assert computes.sent == [('build_and_run_instance', 'h1')] * 2 + [
        ('build_and_run_instance', 'h2')]


def _wait_line(uuid, refused, host):
    return ('WARNING', 'Instance %s: no alternate took its claim (refused '
            'by %s); it waits for %s, claimed again' % (uuid, refused,
                                                        host), False)


def test_a_build_whose_alternates_are_full_waits_for_its_host(
        cloud, sweeps, computes, log_of):
    # Its host is up, holds the claim and took nothing (cut off for a
    # while); its one alternate is full: back to waiting for its host,
    # claimed again, as a build with no alternate left does, rather
    # than ERROR.
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    sweeps.scheduler.full.add('h2')
    _looks(cloud, sweeps, instance.uuid, 3)

    assert computes.sent == [('build_and_run_instance', 'h1')] * 2
    assert sweeps.scheduler.calls == [('claim', 'h2'), ('claim_own', 'h1')]
    assert cloud.instance(instance.uuid).vm_state == instance_obj.BUILDING
    assert sweeps.scheduler.held == {instance.uuid: 'h1'}
    plan = _plan(cloud, instance.uuid)
    assert (plan.host, plan.alternates, plan.retry.hosts) == ('h1', [],
                                                              ['h1'])
    assert cloud.events(instance.uuid)[-1] == (
        'conductor_recover_build', 'Success', 'h1')
    assert cloud.event_details(instance.uuid)[-1] == (
        'no alternate took its claim (refused by h2); it waits for h1, '
        'claimed again')
    assert _wait_line(instance.uuid, 'h2', 'h1') in log_of(instance.uuid)

    # Cast again for as many looks as fit in lost_build_timeout, the
    # look that went back counted as one: then ERROR.
    _looks(cloud, sweeps, instance.uuid, 7)
    assert computes.sent == [('build_and_run_instance', 'h1')] * 9
    assert cloud.instance(instance.uuid).vm_state == instance_obj.BUILDING
    sweeps.recover_builds()
    assert computes.sent == [('build_and_run_instance', 'h1')] * 9
    current = cloud.instance(instance.uuid)
    assert current.vm_state == instance_obj.ERROR
    assert 'Exhausted all hosts' in current.fault.message
    assert sweeps.scheduler.held == {}


def test_a_build_whose_alternate_refused_after_claiming_waits_claimed(
        cloud, sweeps, computes):
    # The alternate's claim was written, then refused (run again after
    # a lost commit): the build holds it there, not on its own host,
    # until its own host is claimed again.
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    sweeps.scheduler.refused_late.add('h2')
    _looks(cloud, sweeps, instance.uuid, 3)

    assert sweeps.scheduler.held == {instance.uuid: 'h1'}
    assert _plan(cloud, instance.uuid).host == 'h1'
    assert cloud.instance(instance.uuid).vm_state == instance_obj.BUILDING
    sweeps.recover_builds()
    assert computes.sent[-1] == ('build_and_run_instance', 'h1')


def test_a_build_whose_own_host_refuses_it_again_ends_in_error(
        cloud, sweeps, computes):
    # Every alternate refused, and so does its own host (its claim was
    # gone and another build took the room): ERROR, no claim left.
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    _looks(cloud, sweeps, instance.uuid, 2)
    sweeps.scheduler.full.update(('h1', 'h2'))

    sweeps.recover_builds()

    assert sweeps.scheduler.calls[-3:] == [
        ('claim', 'h2'), ('claim_own', 'h1'), ('release', instance.uuid)]
    current = cloud.instance(instance.uuid)
    assert current.vm_state == instance_obj.ERROR
    assert 'Exhausted all hosts' in current.fault.message
    assert sweeps.scheduler.held == {}
    assert computes.sent == [('build_and_run_instance', 'h1')] * 2


def test_a_build_whose_alternates_are_full_and_host_down_ends_in_error(
        cloud, sweeps, computes):
    _compute(cloud, 'h1', seconds_ago=600)
    _compute(cloud, 'h2')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    sweeps.scheduler.full.add('h2')

    sweeps.recover_builds()

    assert computes.sent == []
    assert ('claim_own', 'h1') not in sweeps.scheduler.calls
    assert cloud.instance(instance.uuid).vm_state == instance_obj.ERROR
    assert sweeps.scheduler.held == {}


def test_a_build_with_no_recasts_allowed_does_not_go_back_to_wait(
        cloud, sweeps, computes, override):
    # With build_redrive_limit = 0 nothing is cast again: going back
    # to its host would only wait for nothing.
    override('build_redrive_limit', 0, group='conductor')
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    sweeps.scheduler.full.add('h2')

    sweeps.recover_builds()

    assert computes.sent == []
    assert sweeps.scheduler.calls == [('claim', 'h2'),
                                      ('release', instance.uuid)]
    assert cloud.instance(instance.uuid).vm_state == instance_obj.ERROR


@pytest.mark.parametrize('unanswered,full', [(['h2', 'h3'], []),
                                             (['h2'], ['h3']),
                                             (['h3'], ['h2'])])
def test_a_build_whose_alternate_claim_went_unanswered_does_not_wait(
        cloud, sweeps, computes, unanswered, full):
    # A claim the scheduler did not answer may have been written on that
    # alternate: the build does not go back to wait on its own host (it
    # would then hold claims on two), and ends in ERROR with none.
    for host in ('h1', 'h2', 'h3'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    sweeps.scheduler.unreachable.update(unanswered)
    sweeps.scheduler.full.update(full)
    _looks(cloud, sweeps, instance.uuid, 3)

    assert computes.sent == [('build_and_run_instance', 'h1')] * 2
    assert ('claim_own', 'h1') not in sweeps.scheduler.calls
    assert _plan(cloud, instance.uuid).host == 'h3'
    assert not any('waits' in (d or '')
                   for d in cloud.event_details(instance.uuid))
    assert cloud.instance(instance.uuid).vm_state == instance_obj.ERROR
    assert sweeps.scheduler.held == {}


def test_a_conductor_that_read_the_plan_before_it_went_back_moves_nothing(
        cloud, sweeps, computes):
    for host in ('h1', 'h2'):
        _compute(cloud, host)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    sweeps.scheduler.full.add('h2')
    _looks(cloud, sweeps, instance.uuid, 2)
    stale = _plan(cloud, instance.uuid)

    sweeps.recover_builds()

    assert not stale.note_recast(cloud.in_cell())
    assert not stale.move_to(cloud.in_cell(), cloud.hosts('h2')[0], [],
                             stale.retry)
    plan = _plan(cloud, instance.uuid)
    assert (plan.host, plan.recasts) == ('h1', 3)


def test_a_build_the_sweep_finds_no_alternate_for_is_one_warning(
        cloud, sweeps, log_of):
    # An outcome the sweep expects, not a crash: no traceback.
    instance = _handed_over(cloud, sweeps.scheduler, ['h1'])
    uuid = instance.uuid

    sweeps.recover_builds()

    assert log_of(uuid) == [
        ('WARNING', 'Instance %s: Exceeded maximum number of retries. '
         'Exhausted all hosts available for retrying build failures for '
         'instance %s.' % (uuid, uuid), False)]


def test_a_build_on_a_dead_host_with_no_alternate_left_logs_no_traceback(
        cloud, sweeps, log_of):
    _compute(cloud, 'h1', seconds_ago=600)
    instance = _handed_over(cloud, sweeps.scheduler, ['h1'],
                            task_state=instance_obj.SPAWNING, host='h1',
                            age=900)

    sweeps.fail_lost_builds()

    assert cloud.instance(instance.uuid).vm_state == instance_obj.ERROR
    lines = log_of(instance.uuid)
    # Why it left its host, then why it stops there.
    assert [(level, traceback) for level, _, traceback in lines] == [
        ('WARNING', False), ('WARNING', False)]
    assert 'has been down' in lines[0][1]
    assert 'Exceeded maximum number of retries' in lines[1][1]


def test_a_build_on_a_dead_host_goes_on_to_an_alternate_not_to_error(
        cloud, sweeps, computes):
    _compute(cloud, 'h1', seconds_ago=600)
    _compute(cloud, 'h2')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'],
                            task_state=instance_obj.SPAWNING, host='h1',
                            age=900)

    sweeps.fail_lost_builds()

    current = cloud.instance(instance.uuid)
    assert (current.vm_state, current.task_state, current.host) == (
        instance_obj.BUILDING, instance_obj.SCHEDULING, None)
    assert current.fault is None
    assert computes.sent == [('build_and_run_instance', 'h2')]
    assert sweeps.scheduler.held == {instance.uuid: 'h2'}
    assert ('conductor_recover_build', 'Error', 'h1') in cloud.events(
        instance.uuid)


def test_a_build_without_a_plan_still_ends_in_error_when_lost(
        cloud, sweeps, computes):
    instance = cloud.server(host=None, vm_state=instance_obj.BUILDING,
                            task_state=instance_obj.SCHEDULING)
    _age(cloud, instance.uuid, 900)

    assert sweeps.recover_builds() == []
    sweeps.fail_lost_builds()

    assert cloud.instance(instance.uuid).vm_state == instance_obj.ERROR


def test_a_build_starts_only_on_the_host_its_plan_names(cloud, sweeps):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'])
    endpoint = records.ComputeRecords(cloud.cell1.database_connection)

    def start_on(host):
        copy = cloud.instance(instance.uuid)
        copy.host = host
        copy.task_state = instance_obj.SPAWNING
        return endpoint.instance_save(
            cloud.ctx, copy,
            expected_task_states=[instance_obj.SCHEDULING])

    # A cast overtaken by a move of the plan to h2 does not start it.
    with pytest.raises(Exception) as info:
        start_on('h2')
    assert 'Conflict' in type(info.value.exc_info[1]).__name__
    assert start_on('h1').host == 'h1'


def test_a_host_that_gives_a_build_back_clears_its_plan(cloud, sweeps):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2'],
                            task_state=instance_obj.SPAWNING, host='h1')
    endpoint = records.ComputeRecords(cloud.cell1.database_connection)
    copy = cloud.instance(instance.uuid)
    copy.host = copy.node = None
    copy.task_state = instance_obj.SCHEDULING

    endpoint.instance_save(cloud.ctx, copy,
                           expected_task_states=[instance_obj.SPAWNING])

    # A cast to h1 now would not start it: h1 gave its claim away.
    assert _plan(cloud, instance.uuid).host is None


def test_one_of_many_conductors_moves_a_plan_on(cloud, sweeps):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    plans = [_plan(cloud, instance.uuid) for _ in range(8)]
    start = threading.Barrier(len(plans))
    moved = []

    def move(plan, index):
        selection = cloud.hosts('h%d' % (index % 2 + 2))[0]
        start.wait()
        moved.append(plan.move_to(
            cloud.in_cell(), selection, [],
            objects.SchedulerRetries(num_attempts=2, hosts=['h1'])))

    threads = [threading.Thread(target=move, args=(plan, index))
               for index, plan in enumerate(plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(moved) == [False] * 7 + [True]


def _galera_refuses_the_first_commit(monkeypatch, before=None):
    """The first write of a plan fails as a Galera node refuses a commit
    whose rows another node committed first (error 1213 at commit);
    ``before()`` is that other node's write."""
    import pymysql
    real = build_plan.BuildPlan._update_once
    calls = []

    def update_once(self, ctx, values):
        calls.append(values)
        if len(calls) == 1:
            if before is not None:
                # Another conductor's, in a thread of its own.
                other = threading.Thread(target=before)
                other.start()
                other.join()
            raise sa.exc.OperationalError(
                'COMMIT', {}, pymysql.err.OperationalError(
                    1213, 'Deadlock found when trying to get lock; try '
                          'restarting transaction'))
        return real(self, ctx, values)

    monkeypatch.setattr(build_plan.BuildPlan, '_update_once', update_once)
    return calls


def test_a_plan_move_refused_at_commit_for_anothers_is_overtaken(
        cloud, sweeps, monkeypatch):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    mine, theirs = _plan(cloud, instance.uuid), _plan(cloud, instance.uuid)
    retry = objects.SchedulerRetries(num_attempts=2, hosts=['h1', 'h2'])
    real = build_plan.BuildPlan._update_once
    calls = _galera_refuses_the_first_commit(
        monkeypatch, before=lambda: real(
            theirs, cloud.in_cell(), dict(host='h3', node='h3-node')))

    # Run again, the update finds the plan moved: this conductor lost.
    assert mine.move_to(cloud.in_cell(), cloud.hosts('h2')[0], [],
                        retry) is False
    assert len(calls) == 2
    assert _plan(cloud, instance.uuid).host == 'h3'


def test_a_plan_move_refused_at_commit_for_nothing_is_run_again(
        cloud, sweeps, monkeypatch):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    plan = _plan(cloud, instance.uuid)
    _galera_refuses_the_first_commit(monkeypatch)
    retry = objects.SchedulerRetries(num_attempts=2, hosts=['h1', 'h2'])

    assert plan.move_to(cloud.in_cell(), cloud.hosts('h2')[0], [], retry)
    assert _plan(cloud, instance.uuid).host == 'h2'


def test_the_plans_of_finished_builds_go(cloud, sweeps):
    active = _handed_over(cloud, sweeps.scheduler, ['h1'])
    building = _handed_over(cloud, sweeps.scheduler, ['h1'], age=0)
    copy = cloud.instance(active.uuid)
    copy.vm_state = instance_obj.ACTIVE
    copy.task_state = None
    copy.save(cloud.in_cell())

    sweeps.recover_builds()

    assert _plan(cloud, active.uuid) is None
    assert _plan(cloud, building.uuid) is not None


def test_a_plan_survives_the_trip_through_its_row(cloud, sweeps):
    instance = _handed_over(cloud, sweeps.scheduler, ['h1', 'h2', 'h3'])
    plan = _plan(cloud, instance.uuid)
    assert (plan.host, plan.node) == ('h1', 'h1-node')
    assert [s.service_host for s in plan.alternates] == ['h2', 'h3']
    assert plan.alternates[0].resources == {'VCPU': 1, 'MEMORY_MB': 512,
                                            'DISK_GB': 1}
    assert plan.request_spec.instance_uuid == instance.uuid
    assert plan.retry.hosts == ['h1']
    started = cloud.instance(instance.uuid)
    started.host = 'h2'
    started.task_state = instance_obj.SPAWNING
    with pytest.raises(exception.Conflict):
        started.save(cloud.in_cell(),
                     expected_task_state=instance_obj.SCHEDULING,
                     build_host='h2')


def test_a_sweep_that_trips_on_a_bug_logs_its_traceback(
        cloud, sweeps, log_of, monkeypatch):
    _compute(cloud, 'h1')
    instance = _handed_over(cloud, sweeps.scheduler, ['h1'])

    def crash(*args):
        raise RuntimeError('bug')

    monkeypatch.setattr(build_plan.BuildPlan, 'note_recast', crash)

    sweeps.recover_builds()

    assert log_of(instance.uuid) == [
        ('ERROR', 'Going on with the build of %s failed' % instance.uuid,
         True)]
