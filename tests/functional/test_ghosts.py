"""Every listed server can be shown and deleted; one instance, one cell.

A placement interrupted at any step (a crash, a database error) leaves
something the super-conductor's sweeps finish; meanwhile the API lists
each server once, from where GET and DELETE find it.
"""

import datetime
import threading
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import build as build_task
from scheduler_split.conductor.tasks import unplaced
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

pytestmark = pytest.mark.functional

CONF = conf.CONF


@pytest.fixture
def sweeps():
    """The super-conductor's sweeps every second, lost builds at 10 s."""
    CONF.set_override('lost_build_timeout', 10, group='conductor')
    CONF.set_override('lost_build_check_interval', 1, group='conductor')
    CONF.set_override('build_redrive_interval', 1, group='conductor')


def _super_conductor(system):
    return next(svc.manager for svc in system.aio.services
                if svc.name == 'super-conductor')


def _wait_until(predicate, timeout=20, what='condition'):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _api_db(sql, **params):
    with engines.writer(CONF.api_database.connection) as session:
        return session.execute(sa.text(sql), params)


def _build_requests():
    return {row[0] for row in _api_db(
        'SELECT instance_uuid FROM build_requests').all()}


def _rows(system, uuid):
    """``{cell name: deleted}`` of every row of ``uuid`` in every cell."""
    ctx = ss_context.get_admin_context()
    found = {}
    for cell in objects.CellMapping.get_all(ctx):
        with engines.reader(cell.database_connection) as session:
            row = session.execute(sa.text(
                'SELECT deleted FROM instances WHERE uuid = :u'),
                {'u': uuid}).first()
        if row is not None:
            found[cell.name] = bool(row[0])
    return found


def _every_listed_server_is_showable(api):
    listed = [s['id'] for s in api.servers()]
    assert len(listed) == len(set(listed)), listed
    for server_id in listed:
        assert api.get('/v2.1/servers/%s' % server_id).status_code == 200
    return listed


def test_build_request_a_stopped_placement_left_is_no_ghost(
        start_system, sweeps, monkeypatch):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api

    def stop_after_set_cell(self, ctx, build_request, request_spec,
                            host_list):
        # The process dies after pointing the mapping at the cell, before
        # deleting the build request or casting the build.
        cell = self._cell(ctx, host_list[0].cell_uuid)
        build_request.instance.create(ss_context.target_cell(ctx, cell))
        objects.InstanceMapping.get_by_instance_uuid(
            ctx, build_request.instance_uuid).set_cell(ctx, cell)

    monkeypatch.setattr(build_task.ScheduleAndBuildTask,
                        '_build_in_cell', stop_after_set_cell)
    server_id = api.boot(name='half-placed')
    _wait_until(lambda: system.cell_of(server_id) == 'cell1',
                what='instance mapped')
    monkeypatch.undo()
    assert server_id in _build_requests()

    # Listed once, and what is listed is what GET and DELETE find.
    assert _every_listed_server_is_showable(api) == [server_id]
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)
    assert api.servers() == []
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 404

    # Once the placement is surely over, the sweep deletes the leftover.
    _api_db("UPDATE instance_mappings SET updated_at = '2000-01-01' "
            "WHERE instance_uuid = :u", u=server_id)
    _wait_until(lambda: server_id not in _build_requests(),
                what='stale build request deleted')
    assert api.servers() == []


def test_row_left_in_a_cell_by_a_placement_the_sweep_overtook(
        start_system, sweeps, monkeypatch):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api

    def stop_after_create(self, ctx, build_request, request_spec,
                          host_list):
        # The placement ends (as a process that dies) after creating
        # the row in its cell, before pointing the mapping at it, on the
        # boot's last re-drive: no super-conductor casts it again.
        cell = self._cell(ctx, host_list[0].cell_uuid)
        build_request.instance.create(ss_context.target_cell(ctx, cell))
        _api_db('UPDATE build_requests SET redrives = :n WHERE '
                'instance_uuid = :u', n=CONF.conductor.build_redrive_limit,
                u=build_request.instance_uuid)

    monkeypatch.setattr(build_task.ScheduleAndBuildTask,
                        '_build_in_cell', stop_after_create)
    server_id = api.boot(name='overtaken')
    _wait_until(lambda: len(_rows(system, server_id)) == 1,
                what='row created')
    monkeypatch.undo()
    [cell_name] = _rows(system, server_id)
    # Until the mapping names a cell the build request is the server.
    assert _every_listed_server_is_showable(api) == [server_id]
    assert api.server(server_id)['status'] == 'BUILD'

    # No super-conductor works on it any more: the lost-build sweep puts
    # it in cell0, and the row in the cell is not the server.
    _api_db("UPDATE build_requests SET created_at = '2000-01-01' "
            "WHERE instance_uuid = :u", u=server_id)
    server = api.wait_for(server_id, statuses=('ERROR',))
    assert 'no conductor scheduled it' in server['fault']['message']
    assert system.cell_of(server_id) == 'cell0'
    assert _every_listed_server_is_showable(api) == [server_id]
    assert api.servers()[0]['status'] == 'ERROR'
    _wait_until(lambda: _rows(system, server_id) == {
        'cell0': False, cell_name: True}, what='stray row deleted')
    assert system.allocations_after_settling({}) == {}

    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)
    assert api.servers() == []


def test_a_boot_its_living_super_conductor_dropped_is_placed_again(
        start_system, sweeps, monkeypatch):
    """A placement that ended after creating the row in its cell, before
    pointing the mapping at it, in a process that lives on (it gave up
    on a database outage, say): its super-conductor casts the boot again
    once nothing touched it for build_redrive_interval, and the server
    becomes ACTIVE in one cell, rather than ending in cell0."""
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    place = build_task.ScheduleAndBuildTask._build_in_cell
    dropped = []

    def drop_the_first(self, ctx, build_request, request_spec, host_list,
                       **kwargs):
        if dropped:
            return place(self, ctx, build_request, request_spec, host_list,
                         **kwargs)
        cell = self._cell(ctx, host_list[0].cell_uuid)
        build_request.instance.create(ss_context.target_cell(ctx, cell))
        dropped.append(cell.name)

    monkeypatch.setattr(build_task.ScheduleAndBuildTask,
                        '_build_in_cell', drop_the_first)
    server_id = api.boot(name='dropped')

    server = api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE', server
    assert dropped
    # One row, the server's, in the cell its mapping names.
    assert _rows(system, server_id) == {system.cell_of(server_id): False}
    assert _every_listed_server_is_showable(api) == [server_id]
    assert list(system.allocations_after_settling({})) == [server_id]


def test_a_build_handed_over_but_never_cast_is_cast_and_becomes_active(
        start_system, sweeps, monkeypatch):
    """A super-conductor killed between the hand-over and the cast: the
    instance is its cell's, waits for a host and has no build plan. It is
    cast to the host of its claim, not ended in ERROR as lost."""
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    handed = threading.Event()
    chosen = []

    def stop_after_hand_over(self, ctx, build_request, request_spec,
                             host_list):
        cell = self._cell(ctx, host_list[0].cell_uuid)
        instance = build_request.instance
        instance.vm_state = 'building'
        instance.task_state = 'scheduling'
        instance.create(ss_context.target_cell(ctx, cell))
        build_request.hand_over(ctx, cell)
        chosen.append(host_list[0].service_host)
        handed.set()

    monkeypatch.setattr(build_task.ScheduleAndBuildTask,
                        '_build_in_cell', stop_after_hand_over)
    server_id = api.boot(name='never-cast')
    assert handed.wait(20)
    monkeypatch.undo()
    assert server_id not in _build_requests()

    # Past the lost-build timeout (10 s) it is still going on.
    server = api.wait_for(server_id, statuses=('ACTIVE', 'ERROR'),
                          timeout=30)
    assert server['status'] == 'ACTIVE', server.get('fault')
    assert server['OS-EXT-SRV-ATTR:host'] == chosen[0]
    # Its one claim is the one made before the hand-over.
    assert list(system.allocations()) == [server_id]
    assert list(system.allocations()[server_id]) == chosen
    assert _rows(system, server_id) == {system.cell_of(server_id): False}


def test_removing_a_stray_row_leaves_the_live_copy_and_its_claim(
        start_system, sweeps):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    server = api.wait_for(api.boot(name='live'))
    assert server['status'] == 'ACTIVE'
    live_cell = system.cell_of(server['id'])
    claimed = system.allocations()
    assert set(claimed) == {server['id']}

    # A copy of it in the other cell, as a lost placement leaves one.
    ctx = ss_context.get_admin_context()
    other = next(c for c in objects.CellMapping.get_all(ctx)
                 if c.name not in ('cell0', live_cell))
    cctx = ss_context.target_cell(ctx, other)
    live_cell_mapping = objects.InstanceMapping.get_by_instance_uuid(
        ctx, server['id']).cell_mapping
    copy = objects.Instance.get_by_uuid(
        ss_context.target_cell(ctx, live_cell_mapping), server['id'])
    copy.obj_reset_changes()
    copy.host = copy.node = None
    copy.vm_state, copy.task_state = 'building', 'scheduling'
    copy.fault = None
    copy.id = None
    copy.create(cctx)
    # Listed once, from its own cell.
    assert _every_listed_server_is_showable(api) == [server['id']]
    assert api.servers()[0]['status'] == 'ACTIVE'

    _wait_until(lambda: _rows(system, server['id']) == {
        live_cell: False, other.name: True}, what='stray row deleted')
    assert api.server(server['id'])['status'] == 'ACTIVE'
    assert system.allocations() == claimed


def test_a_cell0_row_left_by_a_stopped_burial_is_reused(
        start_system, sweeps, monkeypatch, fake_driver):
    fake_driver('memory_mb', 4096)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    set_cell = objects.InstanceMapping.set_cell
    failures = []

    def database_gone_once(self, ctx, cell_mapping):
        if cell_mapping.is_cell0 and not failures:
            failures.append(self.instance_uuid)
            raise sa.exc.OperationalError('UPDATE', {}, 'database is gone')
        return set_cell(self, ctx, cell_mapping)

    monkeypatch.setattr(objects.InstanceMapping, 'set_cell',
                        database_gone_once)
    # Too big for any host: it goes to cell0, whose mapping write fails.
    server_id = api.boot(name='huge', flavor='5')
    _wait_until(lambda: failures, what='burial attempted')
    assert _rows(system, server_id) == {'cell0': False}
    assert api.server(server_id)['status'] == 'BUILD'
    assert _every_listed_server_is_showable(api) == [server_id]

    _api_db("UPDATE build_requests SET created_at = '2000-01-01' "
            "WHERE instance_uuid = :u", u=server_id)
    server = api.wait_for(server_id, statuses=('ERROR',))
    assert 'No valid host' in server['fault']['message']
    assert system.cell_of(server_id) == 'cell0'
    assert _every_listed_server_is_showable(api) == [server_id]
    assert api.delete('/v2.1/servers/%s' % server_id).status_code == 204
    api.wait_gone(server_id)
    assert api.servers() == []


# --- re-drives ---------------------------------------------------------------

def test_a_boot_the_bus_lost_is_redriven_and_becomes_active(
        start_system, sweeps, monkeypatch):
    system = start_system(cells=1, hosts_per_cell=1)
    cast = conductor_rpcapi.SuperConductorAPI.schedule_and_build_instances
    casts = []

    def first_cast_lost(self, ctx, build_requests, request_specs):
        casts.append([br.instance_uuid for br in build_requests])
        if len(casts) == 1:
            return None
        return cast(self, ctx, build_requests, request_specs)

    monkeypatch.setattr(conductor_rpcapi.SuperConductorAPI,
                        'schedule_and_build_instances', first_cast_lost)
    server_id = system.api.boot(name='redriven')
    server = system.api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE'
    assert casts[:2] == [[server_id], [server_id]]
    assert set(system.allocations()) == {server_id}


def test_a_scheduler_call_the_bus_lost_is_tried_again(
        start_system, sweeps, monkeypatch):
    system = start_system(cells=1, hosts_per_cell=1)
    select = scheduler_client.SchedulerClient.select_destinations
    calls = []

    def answer_lost_once(self, ctx, spec, uuids, *args, **kwargs):
        calls.append(uuids)
        result = select(self, ctx, spec, uuids, *args, **kwargs)
        if len(calls) == 1:
            # It claimed, but the answer never came back.
            raise messaging.MessagingTimeout('reply lost')
        return result

    monkeypatch.setattr(scheduler_client.SchedulerClient,
                        'select_destinations', answer_lost_once)
    server_id = system.api.boot(name='retried')
    server = system.api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE'
    assert len(calls) == 2
    assert set(system.allocations()) == {server_id}
    assert system.allocations()[server_id] == {
        server['OS-EXT-SRV-ATTR:host']: {'VCPU': 1, 'MEMORY_MB': 512,
                                         'DISK_GB': 1}}


def test_a_placement_held_up_past_the_lost_build_timeout_goes_on(
        start_system, sweeps, monkeypatch):
    """A super-conductor whose call to the schedulers waits out a broker
    outage longer than ``lost_build_timeout`` is still placing the boot:
    no sweep buries it meanwhile, and the server becomes ACTIVE."""
    system = start_system(cells=1, hosts_per_cell=1)
    select = scheduler_client.SchedulerClient.select_destinations
    asked = threading.Event()
    answer = threading.Event()

    def held_up(self, *args, **kwargs):
        asked.set()
        assert answer.wait(60)
        return select(self, *args, **kwargs)

    monkeypatch.setattr(scheduler_client.SchedulerClient,
                        'select_destinations', held_up)
    server_id = system.api.boot(name='held-up')
    assert asked.wait(10)
    # Longer than lost_build_timeout (10 s), the sweeps running every
    # second meanwhile.
    time.sleep(13)
    assert server_id in _build_requests()
    answer.set()
    server = system.api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE'
    assert unplaced.HELD.uuids() == []


def test_racing_deliveries_of_one_boot_build_it_once(
        start_system, monkeypatch):
    system = start_system(cells=2, hosts_per_cell=2)
    # The boot's own cast never arrives: only the racers deliver it.
    monkeypatch.setattr(conductor_rpcapi.SuperConductorAPI,
                        'schedule_and_build_instances',
                        lambda self, *args, **kwargs: None)
    server_id = system.api.boot(name='raced')
    monkeypatch.undo()
    manager = _super_conductor(system)
    ctx = ss_context.get_admin_context()
    racers = 6
    barrier = threading.Barrier(racers)
    errors = []

    def deliver():
        try:
            build_request = objects.BuildRequest.get_by_instance_uuid(
                ctx, server_id)
            spec = objects.RequestSpec.get_by_instance_uuid(ctx, server_id)
            barrier.wait()
            manager.schedule_and_build_instances(ctx, [build_request],
                                                 [spec])
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=deliver) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    server = system.api.wait_for(server_id)
    assert server['status'] == 'ACTIVE'
    rows = _rows(system, server_id)
    assert rows == {system.cell_of(server_id): False}
    assert system.allocations() == {server_id: {
        server['OS-EXT-SRV-ATTR:host']: {'VCPU': 1, 'MEMORY_MB': 512,
                                         'DISK_GB': 1}}}


# --- the reconciliation of claims --------------------------------------------

def test_super_conductor_says_which_consumers_need_their_claims(
        start_system, monkeypatch, fake_driver):
    import uuid as uuidlib
    fake_driver('memory_mb', 4096)
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    active = api.wait_for(api.boot(name='active'))['id']
    failed = api.wait_for(api.boot(name='failed', flavor='5'))['id']
    deleted = api.wait_for(api.boot(name='deleted'))['id']
    assert api.delete('/v2.1/servers/%s' % deleted).status_code == 204
    api.wait_gone(deleted)
    monkeypatch.setattr(conductor_rpcapi.SuperConductorAPI,
                        'schedule_and_build_instances',
                        lambda self, *args, **kwargs: None)
    pending = api.boot(name='pending')
    withdrawn = api.boot(name='withdrawn')
    assert api.delete('/v2.1/servers/%s' % withdrawn).status_code == 204
    monkeypatch.undo()
    unknown = str(uuidlib.uuid4())

    # Migrations hold the source host of a move: needed while the move
    # is under way and its instance lives.
    ctx = ss_context.get_admin_context()
    [cell] = [c for c in objects.CellMapping.get_all(ctx)
              if c.name == system.cell_of(active)]
    cctx = ss_context.target_cell(ctx, cell)

    def _migration(instance, status):
        return objects.Migration(
            instance_uuid=instance, migration_type='migration',
            status=status, source_compute='cell1-compute1').create(
            cctx).uuid
    moving = _migration(active, 'finished')
    confirmed = _migration(active, 'confirmed')
    orphaned = _migration(deleted, 'migrating')

    conductor = conductor_rpcapi.SuperConductorAPI(rpc.get_transport())
    asked = [active, failed, deleted, pending, withdrawn, unknown, moving,
             confirmed, orphaned]
    assert conductor.consumers_needing_claims(ctx, asked) == [
        active, pending, moving]
    assert conductor.consumers_needing_claims(ctx, []) == []


def test_reconciliation_keeps_every_claim_while_a_cell_cannot_be_read(
        start_system, monkeypatch):
    import uuid as uuidlib

    import sqlalchemy.exc

    from scheduler_split.conductor import super_periodic
    from scheduler_split.scheduler import claims

    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    keep = api.wait_for(api.boot(name='keep'))['id']
    url = system.scheduler_db()
    provider = claims.allocations_of(url, keep).popitem()[0]
    ghost = str(uuidlib.uuid4())
    claims.claim(system.scheduler_db(), provider, ghost,
                 {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1})
    CONF.set_override('heal_allocations_grace', 0, group='conductor')
    sweeps = super_periodic.SuperConductorPeriodics()

    def cell_down(*args, **kwargs):
        raise sqlalchemy.exc.OperationalError('SELECT', {},
                                              'cell database down')

    monkeypatch.setattr(objects.Instance, 'get_all', cell_down)
    assert sweeps.heal_allocations() == []
    assert set(system.allocations()) == {keep, ghost}
    monkeypatch.undo()
    assert sweeps.heal_allocations() == [ghost]
    assert set(system.allocations()) == {keep}


def test_reconciliation_stops_quietly_while_no_scheduler_answers(
        start_system, monkeypatch):
    from scheduler_split.conductor import super_periodic

    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    keep = api.wait_for(api.boot(name='keep'))['id']

    def away(self, *args, **kwargs):
        raise messaging.MessagingTimeout('no scheduler answered')

    monkeypatch.setattr(scheduler_client.SchedulerClient, 'list_consumers',
                        away)
    CONF.set_override('heal_allocations_grace', 0, group='conductor')
    assert super_periodic.SuperConductorPeriodics().heal_allocations() == []
    assert set(system.allocations()) == {keep}


def test_a_boot_given_back_for_a_re_drive_is_not_taken_for_lost(
        start_system):
    """The lost-build sweep buries a build request nothing touched for
    ``lost_build_timeout``: one a super-conductor gave back after its
    scheduler could not be reached (a broker outage longer than the
    timeout) is still being worked on, however long ago it was made."""
    start_system(cells=1, hosts_per_cell=1)
    ctx = ss_context.get_admin_context()
    long_ago = objects.base.naive_utc(objects.base.utcnow()) - \
        datetime.timedelta(seconds=120)
    rows = sa.table('build_requests', sa.column('instance_uuid'),
                    sa.column('project_id'), sa.column('instance'),
                    sa.column('created_at'), sa.column('updated_at'))
    with engines.writer(CONF.api_database.connection) as session:
        session.execute(sa.insert(rows), [
            {'instance_uuid': uuid, 'project_id': 'p',
             'instance': objects.Instance(uuid=uuid).to_json(),
             'created_at': long_ago, 'updated_at': None}
            for uuid in (UNTOUCHED, GIVEN_BACK)])
    objects.BuildRequest(instance_uuid=GIVEN_BACK).give_back(ctx)

    assert [br.instance_uuid for br in objects.BuildRequest.get_older_than(
        ctx, 60)] == [UNTOUCHED]


UNTOUCHED = '0a0b5d44-52a5-4bd4-9a52-0d7c2f3a0001'
GIVEN_BACK = '0a0b5d44-52a5-4bd4-9a52-0d7c2f3a0002'


def test_a_boot_whose_re_drives_the_bus_held_up_is_not_taken_for_lost(
        start_system):
    """A boot no super-conductor took is cast again up to
    ``build_redrive_limit`` times; a broker outage longer than
    ``lost_build_timeout`` holds those casts up. The lost-build sweep
    leaves the boot to its re-drives until they are spent, and buries it
    only then."""
    start_system(cells=1, hosts_per_cell=1)
    ctx = ss_context.get_admin_context()
    long_ago = objects.base.naive_utc(objects.base.utcnow()) - \
        datetime.timedelta(seconds=120)
    rows = sa.table('build_requests', sa.column('instance_uuid'),
                    sa.column('project_id'), sa.column('instance'),
                    sa.column('created_at'), sa.column('updated_at'),
                    sa.column('redrives'))
    with engines.writer(CONF.api_database.connection) as session:
        session.execute(sa.insert(rows), [
            {'instance_uuid': uuid, 'project_id': 'p',
             'instance': objects.Instance(uuid=uuid).to_json(),
             'created_at': long_ago, 'updated_at': None,
             'redrives': redrives}
            for uuid, redrives in ((UNTOUCHED, 0), (GIVEN_BACK, 1),
                                   (SPENT, 3))])

    older = objects.BuildRequest.get_older_than(ctx, 60, redrive_limit=3)
    assert [br.instance_uuid for br in older] == [SPENT]
    # With re-drives off, the time alone counts.
    older = objects.BuildRequest.get_older_than(ctx, 60, redrive_limit=0)
    assert sorted(br.instance_uuid for br in older) == sorted(
        [UNTOUCHED, GIVEN_BACK, SPENT])


SPENT = '0a0b5d44-52a5-4bd4-9a52-0d7c2f3a0003'


def test_a_scheduler_cut_from_its_database_leaves_the_boot_to_a_re_drive(
        start_system, sweeps, monkeypatch):
    """The scheduler that took the question could not reach its
    database (a process cut from it answers so at once, and stands aside
    for its peers): the boot waits for a re-drive rather than end in
    ERROR, and the next scheduler places it."""
    system = start_system(cells=1, hosts_per_cell=1)
    select = scheduler_client.SchedulerClient.select_destinations
    calls = []

    def cut_off_once(self, ctx, spec, uuids, *args, **kwargs):
        calls.append(uuids)
        if len(calls) == 1:
            raise exception.DatabaseUnavailable(reason='cut off')
        return select(self, ctx, spec, uuids, *args, **kwargs)

    monkeypatch.setattr(scheduler_client.SchedulerClient,
                        'select_destinations', cut_off_once)
    server_id = system.api.boot(name='re-driven')
    server = system.api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE'
    assert len(calls) == 2
    assert set(system.allocations()) == {server_id}
