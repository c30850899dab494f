"""A super-conductor that restarts places again the boots its previous
run had taken and not handed to a cell, and one that lives on those its
own placements dropped; it leaves alone the boots of other hosts, those
it has in hand, and those placed already."""

import datetime

import pytest
import sqlalchemy as sa

from scheduler_split.conductor import super_periodic
from scheduler_split.conductor.tasks import build
from scheduler_split.conductor.tasks import unplaced
from scheduler_split import conf
from scheduler_split import context
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import service as service_obj
from tests.unit.conductor import fakes
from tests.unit import helpers


class SuperConductors:
    """The super-conductors' client: records the boots cast again."""

    def __init__(self):
        self.cast = []

    def schedule_and_build_instances(self, ctx, build_requests, specs):
        self.cast.append([br.instance_uuid for br in build_requests])


def _sweeps():
    sweeps = super_periodic.SuperConductorPeriodics()
    sweeps.scheduler = fakes.Scheduler()
    sweeps._conductor = SuperConductors()
    return sweeps


def _taken(cloud, host, seconds_ago):
    """A boot a super-conductor of ``host`` took ``seconds_ago``."""
    build_request, _ = cloud.boot()
    then = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds_ago)
    _write(build_request, taken_at=then, taken_by=host)
    return build_request


def _api_url():
    return conf.CONF.api_database.connection


def _write(build_request, **values):
    """Set ``values`` in the row of ``build_request``, as time or another
    host left it."""
    with engines.writer(_api_url()) as session:
        session.execute(sa.update(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid ==
            build_request.instance_uuid).values(**values))


def _row_in_cell(cloud, build_request):
    """What a placement that died left in cell1: the instance waiting
    for its first host."""
    instance = build_request.instance
    instance.vm_state = instance_obj.BUILDING
    instance.task_state = instance_obj.SCHEDULING
    instance.create(cloud.in_cell())


def _untaken(cloud, uuid):
    with engines.reader(_api_url()) as session:
        row = session.scalars(sa.select(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid)).one()
    return row.taken_at is None and row.taken_by is None


def test_a_boot_the_previous_run_was_placing_is_placed_again(cloud):
    sweeps = _sweeps()
    orphan = _taken(cloud, 'conductor-1', seconds_ago=30)
    uuid = orphan.instance_uuid
    _row_in_cell(cloud, orphan)
    sweeps.scheduler.held[uuid] = 'h1'

    assert sweeps.resume_orphaned_boots() == [uuid]

    assert sweeps._conductor.cast == [[uuid]]
    assert sweeps.scheduler.held == {}
    assert _untaken(cloud, uuid)
    # The dead run's row is gone: the new placement may use its uuid.
    try:
        cloud.instance(uuid)
    except exception.InstanceNotFound:
        pass
    else:
        raise AssertionError('the row of the dead placement is still there')
    _row_in_cell(cloud, orphan)
    # Once only.
    assert sweeps.resume_orphaned_boots() == []


def test_boots_of_other_hosts_of_this_run_or_placed_stay(cloud):
    sweeps = _sweeps()
    other_host = _taken(cloud, 'conductor-2', seconds_ago=30)
    this_run = cloud.boot()[0]
    assert this_run.take(cloud.ctx)
    placed = _taken(cloud, 'conductor-1', seconds_ago=30)
    _row_in_cell(cloud, placed)
    objects.InstanceMapping.get_by_instance_uuid(
        cloud.ctx, placed.instance_uuid).set_cell(cloud.ctx, cloud.cell1)

    assert sweeps.resume_orphaned_boots() == []

    assert sweeps._conductor.cast == []
    for build_request in (other_host, this_run, placed):
        assert not _untaken(cloud, build_request.instance_uuid)
    assert cloud.instance(placed.instance_uuid).task_state == (
        instance_obj.SCHEDULING)


def _assert_buried(cloud, uuid):
    """The lost-build sweep ended the boot: its build request is gone."""
    with pytest.raises(exception.BuildRequestNotFound):
        objects.BuildRequest.get_by_instance_uuid(cloud.ctx, uuid)


def _abandoned(cloud, host, redrives=0):
    """A boot a super-conductor of ``host`` took and stopped renewing
    (it died, or was cut from the API database) longer ago than
    ``lost_build_timeout``."""
    build_request = _taken(cloud, host, seconds_ago=0)
    then = helpers.naive_utcnow() - datetime.timedelta(
        seconds=conf.CONF.conductor.lost_build_timeout + 30)
    _write(build_request, taken_at=then, created_at=then, updated_at=then,
           redrives=redrives)
    return build_request


def test_a_boot_another_host_stopped_placing_is_cast_again_not_buried(
        cloud):
    sweeps = _sweeps()
    abandoned = _abandoned(cloud, 'conductor-2')
    uuid = abandoned.instance_uuid
    _row_in_cell(cloud, abandoned)
    sweeps.scheduler.held[uuid] = 'h1'

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == [[uuid]]
    assert sweeps.scheduler.held == {}
    assert _untaken(cloud, uuid)
    # Still a boot to place, not a server in ERROR.
    assert objects.BuildRequest.get_by_instance_uuid(cloud.ctx, uuid)
    try:
        cloud.instance(uuid)
    except exception.InstanceNotFound:
        pass
    else:
        raise AssertionError('the row of the abandoned placement is there')


def test_a_boot_abandoned_with_its_re_drives_spent_is_buried(cloud):
    sweeps = _sweeps()
    limit = conf.CONF.conductor.build_redrive_limit
    abandoned = _abandoned(cloud, 'conductor-2', redrives=limit)
    uuid = abandoned.instance_uuid

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == []
    _assert_buried(cloud, uuid)


def test_a_boot_its_taker_renews_is_left_to_it(cloud):
    sweeps = _sweeps()
    working = _taken(cloud, 'conductor-2', seconds_ago=600)

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == []
    assert not _untaken(cloud, working.instance_uuid)


def test_a_boot_of_a_live_super_conductor_is_not_cast_again_by_another(
        cloud):
    """Its record in cell0 is fresh: the super-conductor is up and a bus
    outage holds its placement up (its renewals wait in a sweep that
    waits for the bus). It may still give its claim back as it gives
    up, which would take a new placement's: no other super-conductor
    casts the boot again; the lost-build sweep ends it as before."""
    sweeps = _sweeps()
    held_up = _abandoned(cloud, 'conductor-2')
    objects.Service.heartbeat(
        context.target_cell(cloud.ctx, cloud.cell0), 'conductor-2',
        service_obj.CONDUCTOR, 'conductor')

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == []
    _assert_buried(cloud, held_up.instance_uuid)


def test_a_second_sweeper_that_read_the_same_boot_undoes_nothing(cloud):
    """Two super-conductors read the same abandoned boot: the first gives
    it back and casts it again, and a third takes it and claims; the
    second, acting on what it read before, neither casts it again nor
    touches the new placement's row or claim."""
    first, second = _sweeps(), _sweeps()
    abandoned = _abandoned(cloud, 'conductor-2')
    uuid = abandoned.instance_uuid
    [(read, host, seen)] = objects.BuildRequest.get_abandoned(
        cloud.ctx, conf.CONF.conductor.lost_build_timeout)

    first.fail_lost_builds()
    assert first._conductor.cast == [[uuid]]
    # The re-driven boot is taken, its row written, its host claimed.
    with engines.writer(_api_url()) as session:
        session.execute(sa.update(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == uuid).values(
            taken_at=helpers.naive_utcnow(), taken_by='conductor-3'))
    _row_in_cell(cloud, abandoned)
    second.scheduler.held[uuid] = 'h2'

    assert not second._take_back(cloud.ctx, read, host, seen, 'stale')

    assert second._conductor.cast == []
    assert second.scheduler.held == {uuid: 'h2'}
    assert cloud.instance(uuid).task_state == instance_obj.SCHEDULING


def _sweeps_of_a_run_started_long_ago():
    sweeps = _sweeps()
    sweeps.started_at = helpers.naive_utcnow() - datetime.timedelta(
        hours=1)
    return sweeps


def _idle(build_request, seconds):
    """Nothing touched the build request for ``seconds``."""
    then = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds)
    _write(build_request, taken_at=then, updated_at=then)


def test_a_boot_this_run_took_and_dropped_is_placed_again(
        cloud, computes, monkeypatch, caplog):
    # The take is written, but its answer is lost with the database, and
    # the placement gives up (its process stood aside): the process
    # lives on, taken for up by every peer, and nobody places the boot.
    sweeps = _sweeps_of_a_run_started_long_ago()
    build_request, spec = cloud.boot()
    uuid = build_request.instance_uuid
    seen_held = []
    take = objects.BuildRequest.take

    def written_unanswered(self, ctx):
        assert take(self, ctx)
        seen_held.append(unplaced.HELD.uuids())
        raise exception.DatabaseUnavailable(reason='cut off')

    monkeypatch.setattr(objects.BuildRequest, 'take', written_unanswered)
    task = build.ScheduleAndBuildTask(
        fakes.Scheduler(), unplaced.CellMappings(), cloud.ctx,
        [build_request], [spec], computes=computes.for_cell)
    with pytest.raises(exception.DatabaseUnavailable):
        task.execute()
    monkeypatch.undo()
    # In hand while its take was under way, not after.
    assert seen_held == [[uuid]]
    assert unplaced.HELD.uuids() == []
    assert not _untaken(cloud, uuid)

    # Taken just now: a thread may be about to place it.
    assert sweeps.resume_orphaned_boots() == []
    _idle(build_request, conf.CONF.conductor.build_redrive_interval + 1)

    assert sweeps.resume_orphaned_boots() == [uuid]

    assert sweeps._conductor.cast == [[uuid]]
    assert 'Boot of instance %s was taken by this super-conductor, which ' \
        'is not placing it; casting it again (1 of 3)' % uuid in caplog.text
    assert _untaken(cloud, uuid)
    # Still a boot to place, not a server in ERROR.
    assert objects.BuildRequest.get_by_instance_uuid(cloud.ctx, uuid)
    assert sweeps.resume_orphaned_boots() == []


def test_a_boot_a_thread_of_this_run_has_in_hand_is_left_to_it(cloud):
    sweeps = _sweeps_of_a_run_started_long_ago()
    build_request = cloud.boot()[0]
    assert build_request.take(cloud.ctx)
    _idle(build_request, conf.CONF.conductor.build_redrive_interval + 1)
    uuid = build_request.instance_uuid
    unplaced.HELD.add([uuid])
    try:
        assert sweeps.resume_orphaned_boots() == []
    finally:
        unplaced.HELD.discard([uuid])

    assert sweeps._conductor.cast == []
    assert not _untaken(cloud, uuid)


def test_a_dropped_boot_with_its_re_drives_spent_stays_for_the_sweep(
        cloud):
    sweeps = _sweeps_of_a_run_started_long_ago()
    build_request = cloud.boot()[0]
    assert build_request.take(cloud.ctx)
    _idle(build_request, conf.CONF.conductor.build_redrive_interval + 1)
    _write(build_request,
           redrives=conf.CONF.conductor.build_redrive_limit)

    assert sweeps.resume_orphaned_boots() == []

    assert sweeps._conductor.cast == []
    assert not _untaken(cloud, build_request.instance_uuid)


def _left_in_cell(cloud, build_request, how):
    """A row a placement left in cell1 and what became of it since: the
    cell's sweep ended it as a lost build (ERROR, with a fault and an
    event), or the placement's rollback marked it deleted."""
    _row_in_cell(cloud, build_request)
    uuid = build_request.instance_uuid
    instance = cloud.instance(uuid)
    if how == 'ended':
        instance.save_error(cloud.in_cell(), exception.BuildAbortException(
            instance_uuid=uuid, reason='the build was lost'))
        instance_action.record_event(
            cloud.in_cell(), uuid, 'conductor_fail_lost_builds',
            result=instance_action.ERROR)
    else:
        instance.destroy(cloud.in_cell())


@pytest.mark.parametrize('how', ['ended', 'rolled_back'])
def test_a_row_left_by_the_placement_goes_whatever_became_of_it(cloud, how):
    # Its cell's sweep, or its own rollback, changed it before the boot
    # was taken back: the boot's new placement may still come back to
    # this cell with its uuid.
    sweeps = _sweeps()
    abandoned = _abandoned(cloud, 'conductor-2')
    uuid = abandoned.instance_uuid
    _left_in_cell(cloud, abandoned, how)

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == [[uuid]]
    with pytest.raises(exception.InstanceNotFound):
        objects.Instance.get_by_uuid(cloud.in_cell(), uuid,
                                     read_deleted=True)
    assert instance_action.get_actions(cloud.in_cell(), uuid) == []
    _row_in_cell(cloud, abandoned)
    assert cloud.instance(uuid).fault is None


def test_a_row_on_a_host_is_never_taken_for_a_placement_s_leftover(cloud):
    build_request = cloud.boot()[0]
    uuid = build_request.instance_uuid
    build_request.instance.host = 'h1'
    _row_in_cell(cloud, build_request)

    assert not objects.Instance.delete_unplaced(cloud.in_cell(), uuid)

    assert cloud.instance(uuid).host == 'h1'


def test_a_row_in_cell0_is_a_burial_s_and_stays(cloud):
    # A burial writes the ERROR row, then points the mapping at it: a
    # take-back in between leaves that row alone.
    sweeps = _sweeps()
    abandoned = _abandoned(cloud, 'conductor-2')
    uuid = abandoned.instance_uuid
    instance = abandoned.instance.obj_clone()
    instance.vm_state = instance_obj.ERROR
    instance.task_state = None
    instance.create(cloud.in_cell(cloud.cell0))

    sweeps.fail_lost_builds()

    assert sweeps._conductor.cast == [[uuid]]
    assert cloud.instance(uuid, cloud.cell0).vm_state == instance_obj.ERROR
