"""How the host-state cache reads the scheduler database at large sizes:
the first load a page at a time while selects go on, incremental reloads
of what another scheduler changed, reports written in group commits that
no select waits for and that lose nothing, and what hosts share in
memory."""

import datetime
import threading

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.scheduler import host_loads
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import process as scheduler_process
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def two_schedulers(scheduler_db, override):
    """Two scheduler processes on one database, each reloading only when
    asked (an interval of an hour)."""
    override('host_state_refresh_interval', 3600, group='filter_scheduler')
    return (scheduler_process.Scheduler(scheduler_db),
            scheduler_process.Scheduler(scheduler_db))


def _add_host(scheduler, host, **extra):
    stats = dict({'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}, **extra)
    return scheduler.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(**stats))


def _select(scheduler, ctx, **spec_fields):
    spec = helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    for name, value in spec_fields.items():
        setattr(spec, name, value)
    uuid = uuidutils.generate_uuid()
    [host_list] = scheduler.select_destinations(
        ctx, spec, [uuid], return_alternates=True, num_alternates=3)
    return [selection.service_host for selection in host_list]


def _states(scheduler):
    return {state.host: state
            for state in scheduler.host_manager.host_states()}


class _ReadSpy:
    """Counts the providers each read of a host manager returns, and can
    hold a read until released."""

    def __init__(self, manager):
        self.manager = manager
        self.read = manager._read_states
        self.counts = []
        self.hold = None
        self.reading = threading.Event()
        manager._read_states = self

    def __call__(self, *args, **kwargs):
        self.reading.set()
        if self.hold is not None:
            assert self.hold.wait(10)
        states, newest = self.read(*args, **kwargs)
        self.counts.append(len(states))
        return states, newest


# --- the first load ---------------------------------------------------------

def test_a_restarted_scheduler_answers_before_its_load_ends(
        two_schedulers, ctx, monkeypatch):
    first, second = two_schedulers
    for index in range(7):
        _add_host(first, 'h%d' % index)
    monkeypatch.setattr(host_loads, 'FIRST_PAGE', 2)
    monkeypatch.setattr(host_loads, 'PAGE', 2)
    spy = _ReadSpy(second.host_manager)
    pages = threading.Event()

    def held_after_the_first(*args, **kwargs):
        if spy.counts:
            assert pages.wait(10)
        return _ReadSpy.__call__(spy, *args, **kwargs)

    second.host_manager._read_states = held_after_the_first
    second.host_manager.start_loading()
    try:
        # The first page holds two hosts: the select chooses among them.
        assert set(_select(second, ctx)) <= {'h0', 'h1'}
        assert not second.host_manager.loaded
    finally:
        pages.set()
    assert second.host_manager.wait_loaded(10)
    assert sorted(_states(second)) == ['h%d' % i for i in range(7)]


def test_a_request_for_a_host_not_read_yet_waits_for_the_load(
        two_schedulers, ctx, monkeypatch):
    first, second = two_schedulers
    for index in range(5):
        _add_host(first, 'h%d' % index)
    monkeypatch.setattr(host_loads, 'FIRST_PAGE', 2)
    monkeypatch.setattr(host_loads, 'PAGE', 2)
    spy = _ReadSpy(second.host_manager)
    pages = threading.Event()

    def held_after_the_first(*args, **kwargs):
        if spy.counts:
            assert pages.wait(10)
        return _ReadSpy.__call__(spy, *args, **kwargs)

    second.host_manager._read_states = held_after_the_first
    results = {}

    def select():
        try:
            results['forced'] = _select(second, ctx, force_hosts=['h4'])
        except exception.NoValidHost as exc:
            results['forced'] = exc

    second.host_manager.start_loading()
    selecting = threading.Thread(target=select)
    selecting.start()
    # No NoValidHost for a host of a page not read yet: the request
    # waits for the rest of the load.
    selecting.join(1)
    assert selecting.is_alive() and not results
    pages.set()
    selecting.join(10)
    assert results == {'forced': ['h4']}


def test_selects_go_on_while_a_reload_reads(two_schedulers, ctx):
    first, second = two_schedulers
    _add_host(first, 'h1')
    _add_host(first, 'h2')
    assert sorted(_select(second, ctx)) == ['h1', 'h2']
    _add_host(first, 'h2', memory_mb=65536)
    spy = _ReadSpy(second.host_manager)
    spy.hold = threading.Event()
    reloading = threading.Thread(target=second.host_manager.reload)
    reloading.start()
    try:
        assert spy.reading.wait(10)
        # The reload is held in its read: the select answers from the
        # states it has, which do not know h2 grew yet.
        assert sorted(_select(second, ctx)) == ['h1', 'h2']
        assert _states(second)['h2'].capacity('MEMORY_MB') == 8192
    finally:
        spy.hold.set()
        reloading.join(10)
    assert _states(second)['h2'].capacity('MEMORY_MB') == 65536


# --- incremental reloads ----------------------------------------------------

def test_a_reload_reads_only_the_hosts_another_scheduler_changed(
        two_schedulers, ctx, monkeypatch):
    # Without the margin for late commits, which would read again the
    # hosts registered just before the first load.
    monkeypatch.setattr(host_loads, 'CHANGE_OVERLAP',
                        datetime.timedelta(0))
    first, second = two_schedulers
    for index in range(6):
        _add_host(first, 'h%d' % index)
    assert len(_states(second)) == 6
    _add_host(first, 'h1', memory_mb=16384)
    _add_host(first, 'h6')
    first.delete_host(ctx, 'h2')
    spy = _ReadSpy(second.host_manager)

    second.host_manager.reload()

    # One read, of the changed host and the new one, not of all six.
    assert spy.counts == [2]
    states = _states(second)
    assert sorted(states) == ['h0', 'h1', 'h3', 'h4', 'h5', 'h6']
    assert states['h1'].capacity('MEMORY_MB') == 16384


def test_a_reload_skips_what_its_own_scheduler_changed(two_schedulers,
                                                       ctx, monkeypatch):
    monkeypatch.setattr(host_loads, 'CHANGE_OVERLAP',
                        datetime.timedelta(0))
    first, second = two_schedulers
    _add_host(first, 'h1')
    _add_host(first, 'h2')
    assert len(_states(second)) == 2
    _add_host(second, 'h1', memory_mb=16384)
    _select(second, ctx)
    spy = _ReadSpy(second.host_manager)

    second.host_manager.reload()

    assert spy.counts == [0]
    assert _states(second)['h1'].capacity('MEMORY_MB') == 16384


def test_a_claim_after_another_schedulers_change_leaves_it_to_be_read(
        two_schedulers, ctx):
    # The other scheduler's new inventory, then this one's claim on the
    # same host: the row's last writer is this scheduler, yet its reload
    # still reads the other's change.
    first, second = two_schedulers
    _add_host(first, 'h1')
    assert list(_states(second)) == ['h1']
    _add_host(first, 'h1', memory_mb=16384)
    assert _select(second, ctx) == ['h1']

    second.host_manager.reload()

    state = _states(second)['h1']
    assert state.capacity('MEMORY_MB') == 16384
    # And the claim it made, read back with it.
    assert state.used['MEMORY_MB'] == 512


def test_a_reload_learns_the_time_of_reports_another_scheduler_took(
        two_schedulers):
    first, second = two_schedulers
    uuid = _add_host(first, 'h1')
    before = _states(second)['h1'].last_report_at
    # A report that says nothing new: only its time is written.
    _add_host(first, 'h1')
    written = first.host_manager.get(uuid).last_report_at
    assert written > before

    second.host_manager.reload()

    assert _states(second)['h1'].last_report_at == written


def test_hosts_written_before_changes_were_stamped_are_loaded(
        two_schedulers, scheduler_db):
    first, second = two_schedulers
    _add_host(first, 'h1')
    with engines.writer(scheduler_db) as session:
        session.execute(sa.update(scheduler_models.ResourceProvider).values(
            changed_at=None, changed_by=None))
    assert list(_states(second)) == ['h1']


# --- reports ----------------------------------------------------------------

def test_a_cast_report_waits_for_no_transaction_and_is_written(
        two_schedulers, scheduler_db):
    first, _ = two_schedulers
    uuid = _add_host(first, 'h1')
    writer = first.host_manager.reports
    written = threading.Event()
    release = threading.Event()
    store = writer._store

    def held_store(*args):
        written.set()
        assert release.wait(10)
        return store(*args)

    writer._store = held_store
    holder = threading.Thread(target=_add_host, args=(first, 'h1'),
                              kwargs={'memory_mb': 4096})
    holder.start()
    assert written.wait(10)
    # A transaction is under way: the cast leaves its report and goes
    # (held, the transaction would fail this test).
    first.update_resource_stats(
        None, CELL, 'h1', 'h1',
        helpers.host_stats(vcpus=8, memory_mb=16384, local_gb=100))
    release.set()
    holder.join(10)
    with engines.reader(scheduler_db) as session:
        total = session.scalar(
            sa.select(scheduler_models.Inventory.total).where(
                scheduler_models.Inventory.resource_class == 'MEMORY_MB'))
    assert total == 16384
    assert first.host_manager.get(uuid).capacity('MEMORY_MB') == 16384


def test_a_burst_of_changed_reports_from_many_threads_loses_none(
        two_schedulers, scheduler_db):
    first, second = two_schedulers
    hosts = ['b%03d' % index for index in range(120)]
    for host in hosts:
        _add_host(first, host)

    def report(part):
        for turn in range(1, 4):
            for host in hosts[part::8]:
                first.update_resource_stats(
                    None, CELL, host, host, helpers.host_stats(
                        vcpus=8, memory_mb=8192, local_gb=100,
                        num_io_ops=turn, host_ip='192.0.2.%d' % turn))

    workers = [threading.Thread(target=report, args=(part,))
               for part in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # Whatever was left queued is written by the next writer.
    _add_host(first, 'last')

    rp = scheduler_models.ResourceProvider
    with engines.reader(scheduler_db) as session:
        rows = session.execute(sa.select(rp.host, rp.host_ip,
                                         rp.num_io_ops)).all()
    assert {(host, ip, io) for host, ip, io in rows if host != 'last'} == {
        (host, '192.0.2.3', 3) for host in hosts}
    for state in first.host_manager.host_states():
        if state.host != 'last':
            assert (state.host_ip, state.num_io_ops) == ('192.0.2.3', 3)
    assert {state.host: state.host_ip
            for state in second.host_manager.host_states()
            if state.host != 'last'} == dict.fromkeys(hosts, '192.0.2.3')


def test_a_newer_report_of_a_node_replaces_one_still_waiting(
        two_schedulers, scheduler_db):
    first, _ = two_schedulers
    uuid = _add_host(first, 'h1')
    writer = first.host_manager.reports
    superseded = metrics.REPORT_SUPERSEDED._value.get()
    with writer._reports:
        # As if a transaction were under way: both wait for the next.
        writer._writing = True
    first.update_resource_stats(None, CELL, 'h1', 'h1', helpers.host_stats(
        vcpus=8, memory_mb=8192, local_gb=100, num_io_ops=1))
    first.update_resource_stats(None, CELL, 'h1', 'h1', helpers.host_stats(
        vcpus=8, memory_mb=8192, local_gb=100, num_io_ops=2))
    with writer._reports:
        writer._writing = False
    assert metrics.REPORT_SUPERSEDED._value.get() == superseded + 1
    _add_host(first, 'h2')
    assert first.host_manager.get(uuid).num_io_ops == 2


def test_a_report_that_repeats_one_still_waiting_is_written_too(
        two_schedulers, scheduler_db):
    # h1 goes from A to B and back to A while B waits: A is written
    # again, not taken for a report that says nothing new.
    first, _ = two_schedulers
    uuid = _add_host(first, 'h1')
    writer = first.host_manager.reports
    with writer._reports:
        writer._writing = True
    cast = first.update_resource_stats
    cast(None, CELL, 'h1', 'h1', helpers.host_stats(
        vcpus=8, memory_mb=16384, local_gb=100))
    cast(None, CELL, 'h1', 'h1', helpers.host_stats(
        vcpus=8, memory_mb=8192, local_gb=100))
    with writer._reports:
        writer._writing = False
    _add_host(first, 'h2')
    assert first.host_manager.get(uuid).capacity('MEMORY_MB') == 8192
    with engines.reader(scheduler_db) as session:
        inventory = scheduler_models.Inventory
        rp = scheduler_models.ResourceProvider
        assert session.scalar(sa.select(inventory.total).where(
            inventory.resource_class == 'MEMORY_MB',
            inventory.resource_provider_id == sa.select(rp.id).where(
                rp.uuid == uuid).scalar_subquery())
        ) == 8192


def test_a_report_that_cannot_be_written_is_counted_dropped(
        two_schedulers):
    first, _ = two_schedulers
    dropped = metrics.REPORT_DROPPED._value.get()
    bad = helpers.host_stats()
    del bad['vcpus']
    assert first.update_resource_stats(None, CELL, 'bad', 'bad',
                                       bad) is None
    assert metrics.REPORT_DROPPED._value.get() == dropped + 1
    with pytest.raises(KeyError):
        first.host_manager.update_from_stats(CELL, 'bad', 'bad', bad)


# --- what hosts share -------------------------------------------------------

def test_hosts_of_one_kind_share_what_they_report(two_schedulers):
    first, second = two_schedulers
    _add_host(first, 'h1', hypervisor_type='fake', cpu_arch='x86_64',
              cpu_info='{"arch": "x86_64"}')
    _add_host(first, 'h2', hypervisor_type='fake', cpu_arch='x86_64',
              cpu_info='{"arch": "x86_64"}')
    for scheduler in (first, second):
        one, two = (_states(scheduler)[h] for h in ('h1', 'h2'))
        assert one.cpu_info == '{"arch": "x86_64"}'
        assert one._profile is two._profile
        assert one._resources is two._resources
        assert one.status() is two.status()
        # A node named as its host holds one text for both.
        assert one.nodename is one.host


def test_a_host_without_allocations_holds_no_usage_of_its_own():
    one = host_state.HostState('u1', 'h1', 'h1', CELL)
    two = host_state.HostState('u2', 'h2', 'h2', CELL)
    assert one.used is two.used
    one.consume({'VCPU': 2})
    assert (dict(one.used), dict(two.used)) == ({'VCPU': 2}, {})
    with pytest.raises(TypeError):
        two.used['VCPU'] = 1
    one.give_back({'VCPU': 2})
    assert one.used is two.used


def test_an_unknown_host_claim_is_refused_and_forgotten(two_schedulers,
                                                        ctx):
    first, second = two_schedulers
    _add_host(first, 'h1')
    _add_host(first, 'h2')
    assert len(_states(second)) == 2
    first.delete_host(ctx, 'h2')
    # Second still holds h2 until its next reload; a claim there is
    # refused by the database, and the host forgotten.
    uuid = second.host_manager.uuid_of(('h2', 'h2'))
    assert second.manager._claim(uuid, uuidutils.generate_uuid(),
                                 {'VCPU': 1}) is False
    assert second.host_manager.get(uuid) is None
    with pytest.raises(exception.NoValidHost):
        _select(second, ctx, force_hosts=['h2'])
