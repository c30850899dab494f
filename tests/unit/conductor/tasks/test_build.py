"""Schedule and build: the super-conductor places one boot's instances in
the cells the scheduler chose, or in cell0 in ERROR."""

import datetime

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import build
from scheduler_split.conductor.tasks import unplaced
from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import build_plan
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_sweeps
from scheduler_split.objects import service as service_obj
from tests.unit.conductor import fakes
from tests.unit import helpers


def _task(cloud, scheduler, computes, boots, conductors=None):
    return build.ScheduleAndBuildTask(
        scheduler, unplaced.CellMappings(), cloud.ctx,
        [br for br, _ in boots], [spec for _, spec in boots],
        computes=computes.for_cell, conductors=conductors)


def _cell_of(cloud, uuid):
    cell = objects.InstanceMapping.get_by_instance_uuid(
        cloud.ctx, uuid).cell_mapping
    return cell and cell.name


def _build_request_left(cloud, uuid):
    try:
        objects.BuildRequest.get_by_instance_uuid(cloud.ctx, uuid)
    except exception.BuildRequestNotFound:
        return False
    return True


def test_each_instance_goes_to_its_chosen_host_with_its_alternates(
        cloud, computes):
    boots = [cloud.boot('a'), cloud.boot('b')]
    uuids = [br.instance_uuid for br, _ in boots]
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2', 'h3'),
                                 cloud.hosts('h2', 'h3')])

    _task(cloud, scheduler, computes, boots).execute()

    # One question for the whole boot, no claim of an alternate.
    assert scheduler.calls == [('select', uuids)]
    assert computes.sent == [('build_and_run_instance', 'h1'),
                             ('build_and_run_instance', 'h2')]
    assert computes.args[0] == {'node': 'h1-node', 'alternates': ['h2', 'h3'],
                                'attempts': 1, 'tried': ['h1']}
    for uuid, host in zip(uuids, ['h1', 'h2']):
        instance = cloud.instance(uuid)
        assert (instance.vm_state, instance.task_state) == (
            instance_obj.BUILDING, instance_obj.SCHEDULING)
        # The user asked for no zone: the instance is in its host's.
        assert instance.availability_zone == 'nova'
        assert _cell_of(cloud, uuid) == 'cell1'
        assert not _build_request_left(cloud, uuid)
        assert cloud.events(uuid) == [
            ('conductor_schedule_and_build_instances', 'Success', host)]
    # What the cell's conductor goes on with should a cast be lost.
    plans = [build_plan.BuildPlan.get(cloud.in_cell(), uuid)
             for uuid in uuids]
    assert [(p.host, p.node, [s.service_host for s in p.alternates],
             p.retry.hosts, p.recasts) for p in plans] == [
        ('h1', 'h1-node', ['h2', 'h3'], ['h1'], 0),
        ('h2', 'h2-node', ['h3'], ['h2'], 0)]
    assert plans[0].request_spec.instance_uuid == uuids[0]
    assert scheduler.held == dict(zip(uuids, ['h1', 'h2']))


def test_no_valid_host_puts_every_instance_in_cell0_in_error(
        cloud, computes):
    boots = [cloud.boot('a'), cloud.boot('b')]
    scheduler = fakes.Scheduler(exception.NoValidHost(reason='all full'))
    task = _task(cloud, scheduler, computes, boots)

    with pytest.raises(exception.NoValidHost):
        task.execute()

    assert task.rolled_back
    assert computes.sent == []
    for build_request, _ in boots:
        uuid = build_request.instance_uuid
        instance = cloud.instance(uuid, cloud.cell0)
        assert instance.vm_state == instance_obj.ERROR
        assert 'No valid host was found' in instance.fault.message
        assert _cell_of(cloud, uuid) == 'cell0'
        assert not _build_request_left(cloud, uuid)
        assert cloud.events(uuid, cloud.cell0) == [
            ('conductor_schedule_and_build_instances', 'Error', None)]
    # The scheduler claimed nothing: nothing to release.
    assert [c for c in scheduler.calls if c[0] == 'release'] == []


def test_a_scheduler_that_failed_has_what_it_may_have_claimed_released(
        cloud, computes):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler(RuntimeError('scheduler crashed'))

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert scheduler.calls == [('select', [uuid]), ('release', uuid)]
    assert cloud.instance(uuid, cloud.cell0).vm_state == instance_obj.ERROR
    assert _cell_of(cloud, uuid) == 'cell0'


def test_a_question_the_bus_lost_leaves_the_boot_for_a_redrive(
        cloud, computes):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler(messaging.MessagingTimeout('no answer'))

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert scheduler.calls == [('select', [uuid]), ('release', uuid)]
    assert _build_request_left(cloud, uuid)
    assert _cell_of(cloud, uuid) is None
    # Given back: the next delivery of the boot takes it.
    assert objects.BuildRequest.get_by_instance_uuid(
        cloud.ctx, uuid).take(cloud.ctx)


def test_a_boot_is_in_hand_until_its_rollback_is_over(cloud, computes):
    # Its claim is released and it is given back while in hand: the
    # sweep of boots this process dropped never takes it meanwhile.
    boots = [cloud.boot('a'), cloud.boot('b')]
    uuids = [br.instance_uuid for br, _ in boots]
    held = []

    class Releasing(fakes.Scheduler):
        def release_resources(self, ctx, consumer):
            held.append(unplaced.HELD.uuids())
            return super().release_resources(ctx, consumer)

        try_release_resources = release_resources

    scheduler = Releasing(messaging.MessagingTimeout('no answer'))
    base.run_cast(_task(cloud, scheduler, computes, boots))

    assert held == [sorted(uuids)] * 2
    assert unplaced.HELD.uuids() == []


def test_a_boot_taken_back_meanwhile_is_not_given_back_by_its_rollback(
        cloud, computes):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid

    def taken_back_then_no_answer():
        # Meanwhile another host took the boot (after a take-back).
        found = objects.BuildRequest.get_by_instance_uuid(cloud.ctx, uuid)
        assert found.give_back(cloud.ctx)
        assert found.take(cloud.ctx)
        with engines.writer(conf.CONF.api_database.connection) as session:
            session.execute(sa.update(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid).values(
                taken_by='conductor-2'))
        return messaging.MessagingTimeout('no answer')

    scheduler = fakes.Scheduler(taken_back_then_no_answer)
    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    with engines.reader(conf.CONF.api_database.connection) as session:
        row = session.scalars(sa.select(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid)).one()
    assert row.taken_by == 'conductor-2' and row.taken_at is not None


def test_a_boot_deleted_before_it_was_scheduled_asks_nothing(
        cloud, computes):
    build_request, spec = cloud.boot()
    build_request.destroy(cloud.ctx)
    scheduler = fakes.Scheduler()

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    assert scheduler.calls == []
    assert computes.sent == []


def test_a_server_deleted_while_it_was_scheduled_gives_its_claim_back(
        cloud, computes):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid

    def deleted_meanwhile():
        objects.BuildRequest.get_by_instance_uuid(cloud.ctx,
                                                  uuid).destroy(cloud.ctx)
        return [cloud.hosts('h1', 'h2')]

    scheduler = fakes.Scheduler(deleted_meanwhile)

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    assert scheduler.calls == [('select', [uuid]), ('release', uuid)]
    assert scheduler.held == {}
    assert computes.sent == []
    with pytest.raises(exception.InstanceNotFound):
        cloud.instance(uuid)


def test_a_build_whose_cast_was_not_sent_waits_for_its_cell_conductor(
        cloud):
    """The cell's bus could not be reached (the cast gave up unsent):
    the build keeps its claim and its plan, for the cell's conductor to
    cast once its bus answers, and this thread does not wait for it."""
    computes = fakes.Computes(unreachable={'build_and_run_instance'})
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        instance_obj.BUILDING, instance_obj.SCHEDULING, None)
    assert _cell_of(cloud, uuid) == 'cell1'
    assert not _build_request_left(cloud, uuid)
    assert scheduler.held == {uuid: 'h1'}
    plan = build_plan.BuildPlan.get(cloud.in_cell(), uuid)
    assert (plan.host, [s.service_host for s in plan.alternates]) == (
        'h1', ['h2'])


def test_a_build_with_no_plan_whose_cast_was_not_sent_ends_in_error(
        cloud, monkeypatch):
    def no_plan(self, ctx):
        raise exception.ServiceUnavailable()

    monkeypatch.setattr(build_plan.BuildPlan, 'create', no_plan)
    computes = fakes.Computes(unreachable={'build_and_run_instance'})
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    instance = cloud.instance(uuid)
    assert instance.vm_state == instance_obj.ERROR
    assert (instance.fault.message, instance.fault.details) == (
        'MessageDeliveryFailure', 'the bus lost it')
    assert _cell_of(cloud, uuid) == 'cell1'
    assert not _build_request_left(cloud, uuid)
    assert scheduler.held == {}


def _hand_over_fails(monkeypatch, committed):
    """The database goes away as a hand-over ends: after its
    transaction committed, or before."""
    real = objects.BuildRequest.hand_over

    def hand_over(self, ctx, cell):
        if committed:
            real(self, ctx, cell)
        raise exception.ServiceUnavailable()

    monkeypatch.setattr(objects.BuildRequest, 'hand_over', hand_over)


def test_a_hand_over_that_committed_before_it_failed_ends_in_its_cell(
        cloud, computes, monkeypatch):
    _hand_over_fails(monkeypatch, committed=True)
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    assert _cell_of(cloud, uuid) == 'cell1'
    assert cloud.instance(uuid).vm_state == instance_obj.ERROR
    assert not _build_request_left(cloud, uuid)
    assert scheduler.held == {}
    assert computes.sent == []


def test_a_hand_over_that_did_not_commit_leaves_the_server_listed_in_cell0(
        cloud, computes, monkeypatch):
    _hand_over_fails(monkeypatch, committed=False)
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    _task(cloud, scheduler, computes, [(build_request, spec)]).execute()

    # The server is not lost: its mapping names cell0, where it is in
    # ERROR with the reason, and cell1 keeps no live row of it.
    assert _cell_of(cloud, uuid) == 'cell0'
    buried = cloud.instance(uuid, cloud.cell0)
    assert buried.vm_state == instance_obj.ERROR
    assert buried.fault is not None
    with pytest.raises(exception.InstanceNotFound):
        cloud.instance(uuid)
    assert not _build_request_left(cloud, uuid)
    assert scheduler.held == {}
    assert computes.sent == []


def test_a_boot_no_host_can_take_is_one_warning_without_a_traceback(
        cloud, computes, log_of):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler(exception.NoValidHost(reason='all full'))

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert [(level, traceback) for level, _, traceback in log_of(uuid)] == [
        ('WARNING', False)]
    assert 'No valid host was found. all full' in log_of(uuid)[0][1]


def test_a_server_deleted_right_after_its_hand_over_logs_no_traceback(
        cloud, computes, monkeypatch, log_of):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    real = objects.BuildRequest.hand_over

    def renamed_then_deleted(self, ctx, cell):
        # The user renamed the server while it was scheduled, and deleted
        # it as soon as it reached its cell.
        placed, recorded = real(self, ctx, cell)
        recorded.display_name = 'renamed'
        cloud.instance(uuid).destroy(cloud.in_cell())
        return placed, recorded

    monkeypatch.setattr(objects.BuildRequest, 'hand_over',
                        renamed_then_deleted)
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert computes.sent == []
    assert scheduler.held == {}
    assert log_of(uuid) == [
        ('INFO', 'Handing instance %s to h1 failed: Instance %s could not '
         'be found.' % (uuid, uuid), False)]


def test_a_scheduler_that_crashed_is_logged_with_its_traceback(
        cloud, computes, log_of):
    # Not an outcome anyone expects: a bug to look into.
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler(RuntimeError('scheduler crashed'))

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert log_of(uuid) == [('ERROR', "Scheduling ['%s'] failed" % uuid,
                             True)]


@pytest.fixture
def cell_away(cloud, override, tmp_path):
    """A second cell whose database cannot be opened (its directory is
    gone), and no wait for it: an outage that outlasted [database]
    retry_timeout."""
    from scheduler_split import cells
    from scheduler_split.db import engines
    from tests.unit import helpers
    (tmp_path / 'cell2').mkdir()
    path = tmp_path / 'cell2' / 'cell2.sqlite'
    helpers.database_at_head('cell', path)
    cell = cells.create_cell('cell2', 'fake:///cell2', 'sqlite:///%s' % path,
                             echo=lambda *args: None)
    engines.dispose_all()
    (tmp_path / 'cell2').rename(tmp_path / 'gone')
    override('retry_timeout', 0, group='database')
    return cell


def test_a_boot_whose_cell_is_away_is_scheduled_again_elsewhere(
        cloud, computes, cell_away, log_of):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h3', 'h4', cell=cell_away)],
                                [cloud.hosts('h1', 'h2')])

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    # The claim in the cell that is away went before the second question.
    assert scheduler.calls == [('select', [uuid]), ('release', uuid),
                               ('select', [uuid])]
    assert scheduler.held == {uuid: 'h1'}
    assert computes.sent == [('build_and_run_instance', 'h1')]
    assert _cell_of(cloud, uuid) == 'cell1'
    assert cloud.instance(uuid).vm_state == instance_obj.BUILDING
    assert not _build_request_left(cloud, uuid)
    # What failed, once, and what was done about it; no traceback.
    assert [(level, traceback) for level, _, traceback in log_of(uuid)] == [
        ('WARNING', False), ('INFO', False)]
    failed, then = [message for _, message, _ in log_of(uuid)]
    assert failed.startswith('Creating instance %s in its cell failed: a '
                             'database is unavailable' % uuid)
    assert then == ('Instance %s could not be created in cell %s: '
                    'scheduling it again' % (uuid, cell_away.uuid))


def test_a_boot_away_once_and_then_without_a_host_ends_in_cell0(
        cloud, computes, cell_away):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler(
        [cloud.hosts('h3', cell=cell_away)],
        exception.NoValidHost(reason='Cell cell2 cannot be reached (its '
                                     'database or bus).'))

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert computes.sent == []
    assert scheduler.held == {}
    assert _cell_of(cloud, uuid) == 'cell0'
    fault = cloud.instance(uuid, cloud.cell0).fault
    assert 'Cell cell2 cannot be reached' in fault.message


def test_a_boot_whose_second_cell_is_away_too_ends_in_cell0(
        cloud, computes, cell_away):
    # Asked once more, not for ever.
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    scheduler = fakes.Scheduler([cloud.hosts('h3', cell=cell_away)],
                                [cloud.hosts('h4', cell=cell_away)])

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert [c[0] for c in scheduler.calls] == ['select', 'release', 'select',
                                               'release']
    assert scheduler.held == {}
    assert _cell_of(cloud, uuid) == 'cell0'
    assert computes.sent == []


class _Conductors:
    """The super-conductors' client: the boots cast to them."""

    def __init__(self, fails=None):
        self.cast = []
        self.fails = fails

    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        if self.fails is not None:
            raise self.fails
        self.cast.append(([br.instance_uuid for br in build_requests],
                          [spec.instance_uuid for spec in request_specs]))


def _build_request_row(uuid):
    with engines.reader(conf.CONF.api_database.connection) as session:
        return session.scalars(sa.select(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid)).one()


@pytest.fixture
def takes_failing(monkeypatch):
    """The takes of the build requests named fail as a database cut from
    this process fails them: ``cut`` is the set of those uuids."""
    cut = set()
    take = objects.BuildRequest.take

    def failing(self, ctx):
        if self.instance_uuid in cut:
            raise exception.DatabaseUnavailable(
                reason='Lost connection to server during query')
        return take(self, ctx)

    monkeypatch.setattr(objects.BuildRequest, 'take', failing)
    return cut


@pytest.fixture
def aside():
    """This process stands aside for its database."""
    outage.stand_aside('test', True)
    yield
    outage.stand_aside('test', False)


def test_a_boot_a_process_standing_aside_cannot_take_goes_to_its_peers(
        cloud, computes, takes_failing, aside):
    boots = [cloud.boot('a'), cloud.boot('b')]
    uuids = [br.instance_uuid for br, _ in boots]
    takes_failing.update(uuids)
    conductors = _Conductors()
    scheduler = fakes.Scheduler([cloud.hosts('h1')])

    base.run_cast(_task(cloud, scheduler, computes, boots,
                        conductors=lambda: conductors))

    # Cast once more, whole, to the queue its peers consume; nothing
    # asked or placed here, and no re-drive spent on it.
    assert conductors.cast == [(uuids, uuids)]
    assert scheduler.calls == []
    for uuid in uuids:
        row = _build_request_row(uuid)
        assert (row.taken_by, row.redrives) == (None, 0)
        assert _cell_of(cloud, uuid) is None
    assert unplaced.HELD.uuids() == []


def test_only_the_instances_not_taken_yet_are_passed_on_the_rest_wait(
        cloud, computes, takes_failing, aside):
    boots = [cloud.boot('a'), cloud.boot('b')]
    uuids = [br.instance_uuid for br, _ in boots]
    takes_failing.add(uuids[1])
    conductors = _Conductors()
    scheduler = fakes.Scheduler([cloud.hosts('h1')])

    base.run_cast(_task(cloud, scheduler, computes, boots,
                        conductors=lambda: conductors))

    assert conductors.cast == [([uuids[1]], [uuids[1]])]
    # The one taken is not placed while the database is away: it stays
    # taken by this host, for its sweep of orphaned boots.
    assert scheduler.calls == []
    assert _cell_of(cloud, uuids[0]) is None
    assert _build_request_row(uuids[0]).taken_by == conf.CONF.host
    assert _build_request_row(uuids[1]).taken_by is None


def test_a_process_that_does_not_stand_aside_passes_nothing_on(
        cloud, computes, takes_failing):
    # Its peers lost the database too, or it waits the outage out: the
    # boot waits for a re-drive, as before.
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    takes_failing.add(uuid)
    conductors = _Conductors()

    with pytest.raises(exception.DatabaseUnavailable):
        base.run_cast(_task(cloud, fakes.Scheduler(), computes,
                            [(build_request, spec)],
                            conductors=lambda: conductors))

    assert conductors.cast == []
    assert _build_request_row(uuid).taken_by is None


def test_a_boot_its_bus_would_not_pass_on_waits_for_a_redrive(
        cloud, computes, takes_failing, aside, caplog):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    takes_failing.add(uuid)
    conductors = _Conductors(
        fails=messaging.MessageDeliveryFailure('bus away'))

    base.run_cast(_task(cloud, fakes.Scheduler(), computes,
                        [(build_request, spec)],
                        conductors=lambda: conductors))

    row = _build_request_row(uuid)
    assert (row.taken_by, row.redrives) == (None, 0)
    assert 'it waits for a re-drive' in caplog.text
    assert 'Traceback' not in caplog.text


def _left_in_cell(cloud, build_request):
    """A row an earlier placement of the boot left in cell1, which the
    cell's sweep then ended as a lost build."""
    instance = build_request.instance.obj_clone()
    instance.create(cloud.in_cell())
    instance.save_error(cloud.in_cell(), exception.BuildAbortException(
        instance_uuid=instance.uuid, reason='the build was lost'))


def test_a_row_an_earlier_placement_left_in_the_cell_gives_way(
        cloud, computes, caplog):
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    _left_in_cell(cloud, build_request)
    scheduler = fakes.Scheduler([cloud.hosts('h1', 'h2')])

    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state, instance.fault) == (
        instance_obj.BUILDING, instance_obj.SCHEDULING, None)
    assert _cell_of(cloud, uuid) == 'cell1'
    assert computes.sent == [('build_and_run_instance', 'h1')]
    assert scheduler.held == {uuid: 'h1'}
    assert 'had a row in cell cell1 already' in caplog.text


def test_a_row_of_a_boot_another_host_holds_now_is_left_to_it(
        cloud, computes):
    # Taken back from this host meanwhile, and placed by another: its
    # row is that placement's, not a leftover.
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid

    def taken_back_and_placed_meanwhile():
        with engines.writer(conf.CONF.api_database.connection) as session:
            session.execute(sa.update(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid).values(
                taken_by='conductor-2'))
        other = build_request.instance.obj_clone()
        other.create(cloud.in_cell())
        return [cloud.hosts('h1')]

    scheduler = fakes.Scheduler(taken_back_and_placed_meanwhile)
    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state) == (
        instance_obj.BUILDING, instance_obj.SCHEDULING)
    assert computes.sent == []
    # Neither buried nor its claim (the instance's) released.
    assert _cell_of(cloud, uuid) is None
    assert _build_request_left(cloud, uuid)
    assert scheduler.held == {uuid: 'h1'}


def test_a_create_unsure_of_its_commit_is_not_fooled_by_a_leftover(
        cloud, computes, monkeypatch):
    # The database goes away as the create commits, and comes back: the
    # row found then is the earlier placement's, ended meanwhile.
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    _left_in_cell(cloud, build_request)
    create = objects.Instance.create
    failures = []

    def away_once(self, ctx, **kwargs):
        if not failures:
            failures.append(uuid)
            # As a writer does before its commit, which is unanswered.
            outage.note_effect()
            raise exception.DatabaseUnavailable(reason='commit unanswered')
        return create(self, ctx, **kwargs)

    monkeypatch.setattr(objects.Instance, 'create', away_once)
    scheduler = fakes.Scheduler([cloud.hosts('h1')])
    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    instance = cloud.instance(uuid)
    assert (instance.vm_state, instance.task_state, instance.fault) == (
        instance_obj.BUILDING, instance_obj.SCHEDULING, None)
    assert computes.sent == [('build_and_run_instance', 'h1')]


def test_a_boot_accepted_long_ago_is_no_lost_build_before_its_plan(
        cloud, computes, monkeypatch):
    # Re-driven after lost_build_timeout: its cell's sweep of lost builds
    # runs between its hand-over and its plan, and finds nothing lost.
    timeout = conf.CONF.conductor.lost_build_timeout
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    build_request.instance.created_at = helpers.naive_utcnow() - (
        datetime.timedelta(seconds=timeout + 60))
    lost = []
    record = build.ScheduleAndBuildTask._record_plan

    def swept_first(cctx, *args, **kwargs):
        lost.append([i.uuid for i, _ in instance_sweeps.get_unhandled_builds(
            cctx, timeout, service_obj.COMPUTE,
            conf.CONF.service_down_time)])
        return record(cctx, *args, **kwargs)

    monkeypatch.setattr(build.ScheduleAndBuildTask, '_record_plan',
                        staticmethod(swept_first))
    scheduler = fakes.Scheduler([cloud.hosts('h1')])
    base.run_cast(_task(cloud, scheduler, computes, [(build_request, spec)]))

    assert lost == [[]]
    assert computes.sent == [('build_and_run_instance', 'h1')]
    assert cloud.instance(uuid).vm_state == instance_obj.BUILDING
