"""A compute holds no database credentials: it reads and writes its
records through its cell conductor over the bus (object indirection).

Each test runs a real cell conductor on an in-memory bus with a SQLite
cell database and drives a compute from the test's own thread; the guard
fails the test if that thread opens any database engine.
"""

import contextlib
import datetime
import threading
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler_split.compute import manager as compute_manager
from scheduler_split.conductor import cell_manager
from scheduler_split.conductor import cell_periodic
from scheduler_split.conductor import records
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import memory_bus
from scheduler_split import objects
from scheduler_split.objects import build_plan
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from tests.unit import helpers

CONF = conf.CONF
BUS = 'kombu+memory:////indirection-cell'
HOST = 'host1'
UUID = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c01'
OTHER = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c02'


class FakeScheduler:
    """The scheduler's side of the library: records what it was told."""

    target = messaging.Target(version='1.2')

    def __init__(self):
        self.released = []
        self.claimed = []
        self.reports = []
        self.deleted_hosts = []

    @messaging.expose
    def release_resources(self, ctx, instance_uuid):
        self.released.append(instance_uuid)
        return True

    @messaging.expose
    def claim_resources(self, ctx, selection, instance_uuid):
        self.claimed.append((instance_uuid, selection.service_host))
        return True

    @messaging.expose
    def update_resource_stats(self, ctx, host, node, stats):
        self.reports.append(host)

    @messaging.expose
    def delete_host(self, ctx, host):
        self.deleted_hosts.append(host)
        return []


class Driver:
    """A hypervisor whose spawns a test can hold or fail."""

    def __init__(self):
        self.release = threading.Event()
        self.release.set()
        self.spawning = threading.Event()
        self.on_spawn = None
        self.destroyed = []

    def spawn(self, context, instance):
        self.spawning.set()
        assert self.release.wait(30)
        if self.on_spawn is not None:
            self.on_spawn()

    def destroy(self, instance):
        self.destroyed.append(instance.uuid)

    def get_available_resource(self):
        return {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}

    def nodename(self):
        return HOST


@pytest.fixture
def cell(tmp_path, override):
    """A cell conductor and a fake scheduler on one in-memory bus; the
    compute process has no [database] at all."""
    assert CONF.database.connection is None
    override('service_down_time', 60)
    url = 'sqlite:///' + str(tmp_path / 'cell.sqlite')
    helpers.database_at_head('cell', tmp_path / 'cell.sqlite')
    memory_bus.reset()
    rpc.reset_auto_caps()
    transport = rpc.get_transport(BUS)
    conductor = cell_manager.CellConductorManager(url, transport)
    sweeps = cell_periodic.CellConductorPeriodics(url, transport)
    scheduler = FakeScheduler()
    servers = [rpc.get_server(transport, 'conductor',
                              [conductor, records.ComputeRecords(url)],
                              'c1'),
               rpc.get_server(transport, 'scheduler', [scheduler], 's1')]
    for server in servers:
        server.start()
    driver = Driver()
    compute = compute_manager.ComputeManager(HOST, transport, driver=driver)
    yield type('Cell', (), dict(url=url, transport=transport,
                                conductor=conductor, sweeps=sweeps,
                                scheduler=scheduler,
                                compute=compute, driver=driver))
    driver.release.set()
    for server in servers:
        server.stop()
        server.wait()
    rpc.cleanup()
    rpc.reset_auto_caps()
    memory_bus.reset()
    engines.dispose_all()


@contextlib.contextmanager
def no_database_in_this_thread(monkeypatch):
    """Fail if the calling thread (the compute here) opens a database;
    the conductor's threads may."""
    me = threading.current_thread()
    opened = []
    real = engines.get_engine

    def get_engine(url, writer=True):
        if threading.current_thread() is me:
            opened.append(url)
            raise AssertionError('the compute opened database %s' % url)
        return real(url, writer)

    monkeypatch.setattr(engines, 'get_engine', get_engine)
    yield
    monkeypatch.setattr(engines, 'get_engine', real)
    assert opened == []


def _create(url, uuid=UUID, task_state=instance_obj.SCHEDULING, host=None,
            vm_state=instance_obj.BUILDING, seconds_ago=0):
    ctx = context.targeted(context.get_admin_context(), url)
    instance = objects.Instance(
        uuid=uuid, project_id='p', vm_state=vm_state, task_state=task_state,
        host=host, flavor=helpers.make_flavor(), display_name='vm')
    instance.create(ctx)
    if seconds_ago:
        old = helpers.naive_utcnow() - datetime.timedelta(
            seconds=seconds_ago)
        with engines.writer(url) as session:
            session.execute(sa.update(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid).values(updated_at=old,
                                                          created_at=old))
    return instance


def _row(url, uuid=UUID):
    ctx = context.targeted(context.get_admin_context(), url)
    return objects.Instance.get_by_uuid(ctx, uuid, read_deleted=True)


def _events(url, uuid=UUID):
    with engines.reader(url) as session:
        return [(e.event, e.result, e.host) for e in session.scalars(
            sa.select(cell_models.InstanceActionEvent).join(
                cell_models.InstanceAction,
                cell_models.InstanceAction.id ==
                cell_models.InstanceActionEvent.action_id).where(
                cell_models.InstanceAction.instance_uuid == uuid).order_by(
                cell_models.InstanceActionEvent.id))]


def _build(cell, instance):
    cell.compute.build_and_run_instance(
        context.get_admin_context(), instance, helpers.make_spec(UUID), [],
        objects.SchedulerRetries(num_attempts=1, hosts=[HOST]), HOST)


def test_a_compute_without_a_database_builds_through_its_conductor(
        cell, monkeypatch):
    instance = _create(cell.url)

    with no_database_in_this_thread(monkeypatch):
        _build(cell, instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.host) == ('active', None, HOST)
    assert row.launched_at is not None
    assert _events(cell.url) == [
        ('compute_build_and_run_instance', 'Success', HOST)]


def test_a_compute_without_a_database_deletes_through_its_conductor(
        cell, monkeypatch):
    instance = _create(cell.url)
    _build(cell, instance)

    with no_database_in_this_thread(monkeypatch):
        cell.compute.terminate_instance(context.get_admin_context(),
                                        instance)

    row = _row(cell.url)
    assert row.deleted and row.vm_state == 'deleted'
    assert cell.scheduler.released == [UUID]
    assert cell.driver.destroyed == [UUID]


def test_the_heartbeat_goes_through_the_conductor_with_its_version(
        cell, monkeypatch):
    with no_database_in_this_thread(monkeypatch):
        cell.compute.heartbeat()
        cell.compute.report()
        # A compute of another service version records its own, not the
        # conductor's.
        cell.compute.conductor.service_heartbeat(
            context.get_admin_context(), 'host2', service_obj.COMPUTE,
            'compute', 2)

    ctx = context.targeted(context.get_admin_context(), cell.url)
    records = {s.host: s.version for s in objects.Service.get_all(
        ctx, binary=service_obj.COMPUTE)}
    assert records == {HOST: service_obj.SERVICE_VERSION, 'host2': 2}
    deadline = time.monotonic() + 10
    while cell.scheduler.reports != [HOST]:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _compute_hosts(url):
    ctx = context.targeted(context.get_admin_context(), url)
    return [s.host for s in objects.Service.get_all(
        ctx, binary=service_obj.COMPUTE)]


def _reports_settle(scheduler, count):
    deadline = time.monotonic() + 10
    while len(scheduler.reports) < count:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Casts on the in-memory bus land within milliseconds: one more now
    # would be a report that should not have been sent.
    time.sleep(0.5)
    return len(scheduler.reports)


def test_a_deleted_service_record_stays_deleted_until_the_compute_restarts(
        cell, monkeypatch):
    ctx = context.targeted(context.get_admin_context(), cell.url)
    with no_database_in_this_thread(monkeypatch):
        cell.compute.heartbeat()
        cell.compute.report()
    assert _compute_hosts(cell.url) == [HOST]
    assert _reports_settle(cell.scheduler, 1) == 1

    # The operator deletes the record (os-services DELETE) while the
    # compute still runs.
    [record] = objects.Service.get_all(ctx, binary=service_obj.COMPUTE)
    assert objects.Service.destroy(ctx, record.id)
    with no_database_in_this_thread(monkeypatch):
        for _ in range(3):
            cell.compute.heartbeat()
            cell.compute.report()

    assert _compute_hosts(cell.url) == []
    # It had the scheduler forget the host once, and reports no more.
    assert cell.scheduler.deleted_hosts == [HOST]
    assert _reports_settle(cell.scheduler, 1) == 1

    # Started again, the compute records itself again and reports.
    restarted = compute_manager.ComputeManager(HOST, cell.transport,
                                               driver=cell.driver)
    with no_database_in_this_thread(monkeypatch):
        restarted.heartbeat()
        restarted.report()
    assert _compute_hosts(cell.url) == [HOST]
    assert _reports_settle(cell.scheduler, 2) == 2


def test_a_compute_capped_below_1_7_heartbeats_as_before(cell, override):
    """Conductors of service version 8 (RPC 1.6) know no ``create``: a
    compute capped for them sends its heartbeat without it, and the
    record comes back after a delete, as it did before."""
    override('conductor', '1.6', group='upgrade_levels')
    rpc.reset_auto_caps()
    compute = compute_manager.ComputeManager(HOST, cell.transport,
                                             driver=cell.driver)
    compute.heartbeat()
    ctx = context.targeted(context.get_admin_context(), cell.url)
    [record] = objects.Service.get_all(ctx, binary=service_obj.COMPUTE)
    assert objects.Service.destroy(ctx, record.id)
    compute.heartbeat()
    assert _compute_hosts(cell.url) == [HOST]
    assert cell.scheduler.deleted_hosts == []


def test_conflict_and_not_found_reach_the_compute_as_themselves(cell):
    _create(cell.url, task_state=instance_obj.DELETING)
    api = cell.compute.conductor
    ctx = context.get_admin_context()
    instance = api.instance_get(ctx, UUID)
    instance.task_state = instance_obj.SPAWNING

    with pytest.raises(exception.Conflict) as conflict:
        api.instance_save(ctx, instance,
                          expected_task_states=[instance_obj.SCHEDULING])
    with pytest.raises(exception.InstanceNotFound):
        api.instance_get(ctx, OTHER)
    assert 'deleting' in conflict.value.format_message()
    assert _row(cell.url).task_state == instance_obj.DELETING


@pytest.mark.parametrize('lost', ['request', 'answer', 'database'])
def test_a_build_goes_on_when_the_conductor_never_answers_a_save(
        cell, monkeypatch, lost):
    """A conductor that died with the call (the request lost) or after
    its write (the answer lost), or that answered that its database is
    unavailable (cut from it, another conductor takes the next try): the
    compute reads the instance again, and sends the save again only if
    it was not written."""
    instance = _create(cell.url)
    real = cell.compute.conductor.instance_save
    timeouts = []

    def instance_save(ctx, instance, **kwargs):
        if len(timeouts) < 2:
            if lost == 'answer':
                real(ctx, instance.obj_clone(), **kwargs)
            timeouts.append(kwargs['expected_task_states'])
            if lost == 'database':
                raise exception.DatabaseUnavailable(reason='cut off')
            raise messaging.MessagingTimeout('no answer')
        return real(ctx, instance, **kwargs)

    monkeypatch.setattr(cell.compute.conductor, 'instance_save',
                        instance_save)

    _build(cell, instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.host) == ('active', None, HOST)
    if lost == 'answer':
        # Each save was written: read back, not sent again.
        assert timeouts == [[instance_obj.SCHEDULING],
                            [instance_obj.SPAWNING]]
    else:
        # The start was sent three times, the last one answered.
        assert timeouts == [[instance_obj.SCHEDULING]] * 2
    assert _events(cell.url) == [
        ('compute_build_and_run_instance', 'Success', HOST)]
    assert cell.scheduler.released == []


def _plan(cell, host):
    """The build plan of UUID, naming ``host``."""
    build_plan.BuildPlan(
        UUID, host, host, helpers.make_spec(UUID), [],
        objects.SchedulerRetries(num_attempts=1, hosts=[host])).create(
        context.targeted(context.get_admin_context(), cell.url))


def test_a_second_delivery_of_a_finished_build_keeps_its_claim(cell):
    instance = _create(cell.url)
    _plan(cell, HOST)
    _build(cell, instance)
    cell.driver.spawning.clear()

    _build(cell, instance)

    assert not cell.driver.spawning.is_set()
    assert _row(cell.url).vm_state == instance_obj.ACTIVE
    assert cell.scheduler.released == []


def test_a_cast_the_plan_moved_on_from_starts_nothing(cell):
    """The build went on to host2 meanwhile: host1's late cast leaves
    the build and host2's claim alone."""
    instance = _create(cell.url)
    _plan(cell, 'host2')

    _build(cell, instance)

    assert not cell.driver.spawning.is_set()
    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.host) == (
        'building', 'scheduling', None)
    assert cell.scheduler.released == []


def test_a_build_the_conductor_settled_first_is_not_started(cell):
    instance = _create(cell.url, task_state=None,
                       vm_state=instance_obj.ERROR)

    _build(cell, instance)

    assert not cell.driver.spawning.is_set()
    assert _row(cell.url).vm_state == instance_obj.ERROR
    # No host: the claim the conductor made is nobody's.
    assert cell.scheduler.released == [UUID]


def test_auto_asks_the_cell_conductor_which_version_it_runs(
        cell, override):
    override('conductor', 'auto', group='upgrade_levels')
    cell.sweeps.report_service()
    api = conductor_rpcapi.CellConductorAPI(cell.transport)

    assert api.get_minimum_service_version() == service_obj.SERVICE_VERSION
    assert api.client.cap.resolve() == (
        service_obj.SERVICE_VERSION_HISTORY[-1]['conductor_rpc'])


def test_a_build_whose_saves_the_database_refused_is_given_back_at_settle(
        cell, monkeypatch, override):
    # An outage longer than the conductor waits for.
    override('retry_timeout', 0, group='database')
    instance = _create(cell.url)
    real_writer = engines.writer
    down = threading.Event()

    @contextlib.contextmanager
    def writer(url):
        if down.is_set() and url == cell.url:
            raise sa.exc.OperationalError('UPDATE instances', {},
                                          Exception('database is away'))
        with real_writer(url) as session:
            yield session

    monkeypatch.setattr(engines, 'writer', writer)
    # The database goes away while the instance spawns: its conductor
    # answers every try of the ACTIVE save that the database is
    # unavailable, which says nothing about the build: it stays, its VM
    # unconfirmed, and so does its claim.
    cell.driver.on_spawn = down.set
    _build(cell, instance)
    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == ('building', 'spawning')
    assert cell.scheduler.released == []
    assert cell.driver.destroyed == []

    # Still away: the next look fails too and keeps the claim.
    cell.compute.settle_instances()
    assert _row(cell.url).vm_state == 'building'
    assert cell.scheduler.released == []

    # Back: the build still waits on this host, which gives it back
    # rather than confirm it late; without an alternate left it ends in
    # ERROR with a fault, and its claim goes.
    down.clear()
    cell.compute.settle_instances()
    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == ('error', None)
    assert 'lost its database during the build' in row.fault.message
    assert row.fault.host == HOST
    assert set(cell.driver.destroyed) == {UUID}
    assert cell.scheduler.released == [UUID]


def test_settling_leaves_a_build_in_progress_alone(cell):
    instance = _create(cell.url)
    cell.driver.release.clear()
    build = threading.Thread(target=_build, args=(cell, instance))
    build.start()
    assert cell.driver.spawning.wait(10)
    # The settle waits for the build's lock, then finds it finished.
    settle = threading.Thread(target=cell.compute.settle_instances)
    settle.start()
    time.sleep(0.5)
    assert _row(cell.url).task_state == instance_obj.SPAWNING
    cell.driver.release.set()
    build.join(10)
    settle.join(10)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state) == ('active', None)
    assert row.fault is None
    assert cell.scheduler.released == []
    # And the VM of the server that just went ACTIVE is still there.
    assert cell.driver.destroyed == []


def test_settling_from_a_stale_list_leaves_a_build_rescheduled_elsewhere(
        cell, monkeypatch):
    # This host listed the build as spawning here; by the time the settle
    # reaches it, the build failed here and another host is spawning it.
    instance = _create(cell.url, task_state=instance_obj.SPAWNING, host=HOST)
    stale = [instance]
    ctx = context.targeted(context.get_admin_context(), cell.url)
    moved = objects.Instance.get_by_uuid(ctx, UUID)
    moved.host = 'host2'
    moved.save(ctx)
    monkeypatch.setattr(cell.compute.conductor, 'instance_get_all_by_host',
                        lambda ctx, host: stale)

    cell.compute.settle_instances()

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.host) == (
        'building', instance_obj.SPAWNING, 'host2')
    assert row.fault is None
    assert cell.scheduler.released == []
    assert cell.driver.destroyed == []


def test_a_delete_whose_last_steps_failed_is_finished_by_a_later_settle(
        cell):
    instance = _create(cell.url)
    _build(cell, instance)
    cell.compute.settle_instances()  # the first run after the start
    ctx = context.targeted(context.get_admin_context(), cell.url)
    deleting = objects.Instance.get_by_uuid(ctx, UUID)
    deleting.task_state = instance_obj.DELETING
    deleting.save(ctx)
    # A fresh delete is left to its own cast ...
    cell.compute.settle_instances()
    assert not _row(cell.url).deleted
    # ... one that has waited longer than a check is finished (its cast
    # was lost, or the database was away when it ran).
    old = helpers.naive_utcnow() - datetime.timedelta(
        seconds=CONF.compute.unfinished_build_check_interval + 5)
    with engines.writer(cell.url) as session:
        session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == UUID).values(updated_at=old))

    cell.compute.settle_instances()

    row = _row(cell.url)
    assert row.deleted
    assert cell.scheduler.released == [UUID]
    assert cell.driver.destroyed == [UUID]


def test_a_delete_the_conductor_never_answered_waits_for_the_next_look(
        cell, monkeypatch, caplog):
    instance = _create(cell.url)
    _build(cell, instance)
    real = cell.compute.conductor.instance_destroy

    def no_answer(ctx, uuid):
        raise messaging.MessagingTimeout('no answer')

    monkeypatch.setattr(cell.compute.conductor, 'instance_destroy',
                        no_answer)
    # As the API marks it before it casts the delete.
    ctx = context.targeted(context.get_admin_context(), cell.url)
    deleting = objects.Instance.get_by_uuid(ctx, UUID)
    deleting.task_state = instance_obj.DELETING
    deleting.save(ctx)
    cell.compute.terminate_instance(context.get_admin_context(), deleting)

    assert not _row(cell.url).deleted
    assert [r.levelname for r in caplog.records
            if 'Could not mark instance' in r.getMessage()] == ['WARNING']
    monkeypatch.setattr(cell.compute.conductor, 'instance_destroy', real)
    cell.compute.settle_instances()  # the first look after a start
    assert _row(cell.url).deleted


def test_a_build_left_spawning_by_a_previous_run_ends_in_error(cell):
    """One without a build plan (recorded by an earlier release)."""
    _create(cell.url, task_state=instance_obj.SPAWNING, host=HOST)

    cell.compute.settle_instances()

    row = _row(cell.url)
    assert row.vm_state == 'error'
    assert 'stopped or lost its database' in row.fault.message
    assert cell.scheduler.released == [UUID]


class OtherCompute:
    """The compute of an alternate, of this release: records the builds
    cast to it."""

    target = messaging.Target(version=compute_manager.RPC_VERSION)

    def __init__(self):
        self.builds = []

    @messaging.expose
    def build_and_run_instance(self, ctx, instance, request_spec, host_list,
                               retry, node):
        self.builds.append((instance.uuid, retry.hosts))


def test_a_build_left_spawning_by_a_previous_run_goes_on_to_an_alternate(
        cell, monkeypatch):
    other = OtherCompute()
    server = rpc.get_server(cell.transport, 'compute', [other], 'host2')
    server.start()
    try:
        _create(cell.url, task_state=instance_obj.SPAWNING, host=HOST)
        ctx = context.targeted(context.get_admin_context(), cell.url)
        selection = objects.Selection.for_claim(
            {'VCPU': 1}, compute_node_uuid=OTHER, service_host='host2',
            nodename='host2', cell_uuid=OTHER, limits=None)
        build_plan.BuildPlan(
            UUID, HOST, HOST, helpers.make_spec(UUID), [selection],
            objects.SchedulerRetries(num_attempts=1, hosts=[HOST])).create(
            ctx)

        with no_database_in_this_thread(monkeypatch):
            cell.compute.settle_instances()

        deadline = time.monotonic() + 10
        while not other.builds and time.monotonic() < deadline:
            time.sleep(0.01)
        assert other.builds == [(UUID, [HOST, 'host2'])]
        assert cell.scheduler.claimed == [(UUID, 'host2')]
        row = _row(cell.url)
        assert (row.vm_state, row.task_state, row.host, row.fault) == (
            'building', 'scheduling', None, None)
        assert cell.driver.destroyed == [UUID]
        assert ('conductor_recover_build', 'Error', HOST) in _events(
            cell.url)
    finally:
        server.stop()
        server.wait()


# --- the cell conductor's sweep of lost builds ------------------------------

def _service(url, host, seconds_ago):
    seen = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds_ago)
    with engines.writer(url) as session:
        session.add(cell_models.Service(host=host, binary=service_obj.COMPUTE,
                                        topic='compute', report_count=1,
                                        last_seen_up=seen, version=3))


def test_the_sweep_fails_builds_on_a_host_whose_compute_is_down(
        cell, override):
    override('lost_build_timeout', 30, group='conductor')
    _service(cell.url, 'dead', seconds_ago=600)
    _service(cell.url, 'alive', seconds_ago=0)
    dead = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c10'
    alive = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c11'
    fresh_on_dead = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c12'
    deleting = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c13'
    _create(cell.url, dead, instance_obj.SPAWNING, 'dead', seconds_ago=600)
    _create(cell.url, alive, instance_obj.SPAWNING, 'alive',
            seconds_ago=600)
    _create(cell.url, fresh_on_dead, instance_obj.SPAWNING, 'dead')
    _create(cell.url, deleting, instance_obj.DELETING, 'dead',
            seconds_ago=600)

    cell.sweeps.fail_lost_builds()

    row = _row(cell.url, dead)
    assert row.vm_state == 'error'
    assert row.fault.message == (
        'Build of instance %s aborted: the compute service of dead, where '
        'it was building, has been down for longer than [DEFAULT] '
        'service_down_time; the build was lost' % dead)
    for untouched in (alive, fresh_on_dead, deleting):
        assert _row(cell.url, untouched).vm_state == 'building'
    assert cell.scheduler.released == [dead]
    assert ('conductor_fail_lost_builds', 'Error', 'dead') in _events(
        cell.url, dead)


def test_the_sweep_fails_builds_without_a_host_in_any_task_state(
        cell, override):
    override('lost_build_timeout', 30, group='conductor')
    scheduling = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c20'
    no_task = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c21'
    recent = '6c1f0d6e-2b4a-4c1e-9f0a-7d5e3b2a1c22'
    _create(cell.url, scheduling, seconds_ago=60)
    _create(cell.url, no_task, task_state=None, seconds_ago=60)
    _create(cell.url, recent)

    cell.sweeps.fail_lost_builds()

    for lost in (scheduling, no_task):
        row = _row(cell.url, lost)
        assert row.vm_state == 'error', lost
        assert 'no compute took the build' in row.fault.message
    assert _row(cell.url, recent).vm_state == 'building'
    assert sorted(cell.scheduler.released) == sorted([scheduling, no_task])


# --- rolling upgrades and deployment files -----------------------------------

class OldConductor:
    """A cell conductor of the release before 1.3."""

    target = messaging.Target(version='1.2')

    @messaging.expose
    def build_instances(self, ctx, instance, request_spec, host_list,
                        retry):
        pass


def test_a_conductor_older_than_1_3_is_refused_with_a_clear_error(
        override):
    memory_bus.reset()
    rpc.reset_auto_caps()
    transport = rpc.get_transport('kombu+memory:////old-conductor-cell')
    server = rpc.get_server(transport, 'conductor', [OldConductor()], 'c1')
    server.start()
    try:
        override('conductor', 'auto', group='upgrade_levels')
        api = conductor_rpcapi.CellConductorAPI(transport)
        assert api.get_minimum_service_version() == 0
        with pytest.raises(messaging.RPCVersionCapError):
            api.instance_get(context.get_admin_context(), UUID)
    finally:
        server.stop()
        server.wait()
        rpc.cleanup()
        rpc.reset_auto_caps()
        memory_bus.reset()


def test_the_example_compute_configurations_hold_no_database():
    import configparser
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    computes = sorted((root / 'etc' / 'scheduler-split' / 'multi-cell' /
                       'computes').glob('*.conf'))
    assert computes
    for path in computes:
        parser = configparser.ConfigParser()
        parser.read(path)
        assert parser.get('DEFAULT', 'transport_url')
        assert not {'database', 'api_database', 'scheduler_database'} & set(
            parser.sections()), path
    plugin = (root / 'devstack' / 'lib' / 'scheduler-split').read_text()
    compute_part = plugin[plugin.index('conf=$SCHEDULER_SPLIT_CONF_DIR/'
                                       'computes/$host.conf'):]
    compute_part = compute_part[:compute_part.index('done')]
    assert 'database' not in compute_part


def _moved_on(url, host='host2'):
    """What the cell conductor and the alternate did while this host was
    taken for down: the build spawns on ``host`` now."""
    with engines.writer(url) as session:
        session.execute(sa.update(cell_models.Instance).where(
            cell_models.Instance.uuid == UUID).values(
            host=host, node=host, task_state=instance_obj.SPAWNING))


def test_a_spawn_that_ends_after_its_build_moved_on_ends_nothing(cell):
    instance = _create(cell.url)
    cell.driver.on_spawn = lambda: _moved_on(cell.url)

    _build(cell, instance)

    row = _row(cell.url)
    # The alternate's build goes on; this host's VM is gone, and the
    # claim (the alternate's now) stays.
    assert (row.vm_state, row.task_state, row.host) == (
        'building', 'spawning', 'host2')
    assert cell.driver.destroyed == [UUID]
    assert cell.scheduler.released == []


def test_a_spawn_failure_after_its_build_moved_on_keeps_the_claim(cell):
    instance = _create(cell.url)

    def moved_on_then_failed():
        _moved_on(cell.url)
        raise exception.RescheduledException(instance_uuid=UUID,
                                             reason='injected')

    cell.driver.on_spawn = moved_on_then_failed

    _build(cell, instance)

    row = _row(cell.url)
    assert (row.vm_state, row.task_state, row.host) == (
        'building', 'spawning', 'host2')
    assert UUID in cell.driver.destroyed
    assert cell.scheduler.released == []
