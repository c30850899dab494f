"""SchedulerManager: filter, weigh, claim and same-cell alternates."""

import collections
import datetime

from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import manager as scheduler_manager
from tests.unit import helpers

CELL_A = '0f5b3a3e-7a1d-4d2b-9a0c-aaaaaaaaaaaa'
CELL_B = '5c9e2d71-3b8f-4e6a-8d1c-bbbbbbbbbbbb'

# one instance: 1 vCPU, 512 MiB, 10 GiB
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 10}
RESOURCES = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}


@pytest.fixture
def ctx():
    return context.get_admin_context()


@pytest.fixture
def manager(scheduler_db):
    return scheduler_manager.SchedulerManager(scheduler_db)


def _add_host(manager, cell, host, instances, **extra):
    """A host with room for exactly ``instances`` instances of FLAVOR."""
    stats = helpers.host_stats(vcpus=instances, memory_mb=512 * instances,
                               local_gb=10 * instances, **extra)
    return manager.host_manager.update_from_stats(cell, host, host + '-node',
                                                  stats)


def _spec(**kwargs):
    spec = helpers.make_spec(**FLAVOR)
    for name, value in kwargs.items():
        setattr(spec, name, value)
    return spec


def _uuids(count):
    return [uuidutils.generate_uuid() for _ in range(count)]


@pytest.fixture
def two_cells(manager):
    """Cell A: a1 (8), a2 (4), a3 (2); cell B: b1 (6), b2 (3) instances.

    Spreading ranks them a1, b1, a2, b2, a3.
    """
    hosts = {}
    for cell, host, size in ((CELL_A, 'a1', 8), (CELL_B, 'b1', 6),
                             (CELL_A, 'a2', 4), (CELL_B, 'b2', 3),
                             (CELL_A, 'a3', 2)):
        hosts[host] = _add_host(manager, cell, host, size)
    return hosts


# --- one instance -----------------------------------------------------------

def test_select_destinations_claims_the_best_host_for_the_instance(
        manager, two_cells, ctx, scheduler_db):
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid],
                                              return_alternates=True,
                                              num_alternates=2)
    chosen = host_list[0]
    assert chosen.service_host == 'a1'
    assert chosen.nodename == 'a1-node'
    assert chosen.compute_node_uuid == two_cells['a1']
    assert chosen.cell_uuid == CELL_A
    assert jsonutils.loads(chosen.allocation_request) == RESOURCES
    assert claims.allocations_of(scheduler_db, uuid) == {
        two_cells['a1']: RESOURCES}


def test_alternates_are_unclaimed_hosts_of_the_chosen_hosts_cell_best_first(
        manager, two_cells, ctx, scheduler_db):
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid],
                                              return_alternates=True,
                                              num_alternates=5)
    alternates = host_list[1:]
    # b1 outranks a2 and a3 but lives in the other cell.
    assert [s.service_host for s in alternates] == ['a2', 'a3']
    assert {s.cell_uuid for s in alternates} == {CELL_A}
    for selection in alternates:
        assert helpers.provider_usage(
            scheduler_db, selection.compute_node_uuid) == {}
    assert list(claims.allocations_of(scheduler_db, uuid)) == [
        two_cells['a1']]


def test_alternates_are_capped_at_num_alternates(manager, two_cells, ctx):
    [host_list] = manager.select_destinations(ctx, _spec(), _uuids(1),
                                              return_alternates=True,
                                              num_alternates=1)
    assert [s.service_host for s in host_list] == ['a1', 'a2']


def test_without_return_alternates_each_list_holds_only_the_chosen_host(
        manager, two_cells, ctx):
    host_lists = manager.select_destinations(ctx, _spec(), _uuids(3),
                                             return_alternates=False,
                                             num_alternates=3)
    assert len(host_lists) == 3
    assert all(len(host_list) == 1 for host_list in host_lists)


def test_chosen_host_of_other_cell_gets_alternates_of_that_cell(
        manager, ctx, scheduler_db):
    _add_host(manager, CELL_A, 'a1', 2)
    b1 = _add_host(manager, CELL_B, 'b1', 8)
    _add_host(manager, CELL_B, 'b2', 4)
    [host_list] = manager.select_destinations(ctx, _spec(), _uuids(1),
                                              return_alternates=True,
                                              num_alternates=3)
    assert [s.service_host for s in host_list] == ['b1', 'b2']
    assert {s.cell_uuid for s in host_list} == {CELL_B}
    assert host_list[0].compute_node_uuid == b1


# --- several instances ------------------------------------------------------

def test_select_destinations_returns_one_list_per_instance_each_claimed(
        manager, two_cells, ctx, scheduler_db):
    uuids = _uuids(4)
    host_lists = manager.select_destinations(ctx, _spec(), uuids,
                                             return_alternates=True,
                                             num_alternates=2)
    assert len(host_lists) == len(uuids)
    for uuid, host_list in zip(uuids, host_lists):
        chosen = host_list[0]
        assert claims.allocations_of(scheduler_db, uuid) == {
            chosen.compute_node_uuid: RESOURCES}
        assert len(host_list) <= 3
        assert {s.cell_uuid for s in host_list} == {chosen.cell_uuid}
        assert chosen.compute_node_uuid not in [
            s.compute_node_uuid for s in host_list[1:]]


def test_instances_of_one_request_consume_capacity_and_spread(
        manager, ctx, scheduler_db):
    two = _add_host(manager, CELL_A, 'two', 2)
    one = _add_host(manager, CELL_A, 'one', 1)
    uuids = _uuids(3)
    host_lists = manager.select_destinations(ctx, _spec(), uuids)

    placed = collections.Counter(hl[0].service_host for hl in host_lists)
    assert placed == {'two': 2, 'one': 1}
    assert helpers.provider_usage(scheduler_db, two) == {
        rc: 2 * amount for rc, amount in RESOURCES.items()}
    assert helpers.provider_usage(scheduler_db, one) == RESOURCES


def test_instances_with_equal_hosts_spread_one_per_host(manager, ctx):
    for name in ('h1', 'h2', 'h3'):
        _add_host(manager, CELL_A, name, 4)
    host_lists = manager.select_destinations(ctx, _spec(), _uuids(3))
    assert sorted(hl[0].service_host for hl in host_lists) == [
        'h1', 'h2', 'h3']


def test_when_one_instance_cannot_fit_no_valid_host_and_no_claims_left(
        manager, ctx, scheduler_db):
    a = _add_host(manager, CELL_A, 'a', 1)
    b = _add_host(manager, CELL_B, 'b', 1)
    uuids = _uuids(3)

    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(), uuids,
                                    return_alternates=True, num_alternates=1)

    for uuid in uuids:
        assert claims.allocations_of(scheduler_db, uuid) == {}
    assert helpers.provider_usage(scheduler_db, a) == {}
    assert helpers.provider_usage(scheduler_db, b) == {}
    # Memory got the capacity back too: two instances still fit.
    assert len(manager.select_destinations(ctx, _spec(), _uuids(2))) == 2


def test_no_valid_host_when_no_host_is_known(manager, ctx):
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(), _uuids(1))


# --- the claim decides ----------------------------------------------------

def test_host_whose_claim_fails_is_skipped_and_next_host_is_claimed(
        manager, ctx, scheduler_db):
    big = _add_host(manager, CELL_A, 'big', 8)
    small = _add_host(manager, CELL_A, 'small', 2)
    manager.host_manager.host_states()      # memory: big is empty
    # Somebody else fills big behind this scheduler's back.
    claims.claim(scheduler_db, big, 'intruder',
                 {rc: 8 * amount for rc, amount in RESOURCES.items()})

    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid],
                                              return_alternates=True,
                                              num_alternates=2)

    assert host_list[0].service_host == 'small'
    assert claims.allocations_of(scheduler_db, uuid) == {small: RESOURCES}
    assert 'big' not in [s.service_host for s in host_list]
    # The failed claim refreshed big in memory.
    assert manager.host_manager.get(big).free('VCPU') == 0


def test_claim_failures_on_every_host_end_in_no_valid_host(
        manager, ctx, scheduler_db):
    a = _add_host(manager, CELL_A, 'a', 1)
    manager.host_manager.host_states()
    claims.claim(scheduler_db, a, 'intruder', RESOURCES)
    [uuid] = _uuids(1)
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(), [uuid])
    assert claims.allocations_of(scheduler_db, uuid) == {}


def test_no_valid_host_logs_what_each_filter_left(manager, ctx,
                                                  scheduler_db, caplog):
    caplog.set_level('INFO', logger='scheduler_split.scheduler.manager')
    a = _add_host(manager, CELL_A, 'a', 1)
    _add_host(manager, CELL_A, 'a2', 1)
    _add_host(manager, CELL_B, 'b', 1)
    manager.host_manager.host_states()
    claims.claim(scheduler_db, a, 'intruder', RESOURCES)
    # Cell A only, a2 ignored: a is full behind the scheduler's back;
    # its refused claim showed memory that, and RamFilter leaves none.
    [uuid] = _uuids(1)
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(requested_cell=CELL_A,
                                               ignore_hosts=['a2']), [uuid])
    assert ('Instance %s: no host; 3 hosts known, cell %s: 2, ignored '
            "hosts ['a2']: 1, ComputeFilter: 1, AvailabilityZoneFilter: 1, "
            'RamFilter: 0\n' % (uuid, CELL_A)) in caplog.text, caplog.text


def test_the_filter_pass_counts_the_hosts_each_filter_removed(manager):
    _add_host(manager, CELL_A, 'off', 4, disabled=True)
    _add_host(manager, CELL_A, 'tiny1', 4, ram_allocation_ratio=0.1)
    _add_host(manager, CELL_A, 'tiny2', 4, ram_allocation_ratio=0.1)
    _add_host(manager, CELL_B, 'fits', 4)
    spec = _spec(availability_zone='nova')
    candidates, complete, record = manager._candidates(
        manager.host_manager.host_states(), spec)
    assert [h.host for h in candidates] == ['fits']
    assert complete
    assert (record.known, record.looked) == (4, 4)
    assert dict(record.counts()) == {
        'ComputeFilter': 1, 'AvailabilityZoneFilter': 0, 'RamFilter': 2,
        'CoreFilter': 0, 'DiskFilter': 0, 'ServerGroupAntiAffinityFilter': 0,
        'ServerGroupAffinityFilter': 0, 'SameHostFilter': 0,
        'DifferentHostFilter': 0, 'ImagePropertiesFilter': 0}


def test_a_request_two_filters_reject_reports_each_filters_count(
        manager, ctx, caplog):
    caplog.set_level('INFO', logger='scheduler_split.scheduler.manager')
    _add_host(manager, CELL_A, 'off', 4, disabled=True)
    _add_host(manager, CELL_A, 'tiny1', 4, ram_allocation_ratio=0.1)
    _add_host(manager, CELL_A, 'tiny2', 4, ram_allocation_ratio=0.1)
    [uuid] = _uuids(1)
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(), [uuid])
    # ComputeFilter removed one host, RamFilter the other two.
    assert ('Instance %s: no host; 3 hosts known, ComputeFilter: 2, '
            'AvailabilityZoneFilter: 2, RamFilter: 0\n' % uuid) \
        in caplog.text, caplog.text


def test_a_request_that_finds_no_host_runs_each_filter_once_per_host(
        manager, ctx):
    seen = collections.Counter()

    class Counting:
        def filter_all(self, host_states, spec_obj):
            seen.update(h.host for h in host_states)
            return list(host_states)

    manager.filters.insert(0, Counting())
    for name in ('h1', 'h2', 'h3'):
        _add_host(manager, CELL_A, name, 4, ram_allocation_ratio=0.1)
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, _spec(), _uuids(1))
    assert seen == {'h1': 1, 'h2': 1, 'h3': 1}


# --- filters in the manager -----------------------------------------------

def test_disabled_host_is_not_chosen(manager, ctx):
    _add_host(manager, CELL_A, 'big', 8, disabled=True)
    _add_host(manager, CELL_A, 'small', 2)
    [host_list] = manager.select_destinations(ctx, _spec(), _uuids(1),
                                              return_alternates=True,
                                              num_alternates=3)
    assert [s.service_host for s in host_list] == ['small']


def test_host_that_stopped_reporting_is_not_chosen(manager, ctx,
                                                   scheduler_db):
    big = _add_host(manager, CELL_A, 'big', 8)
    _add_host(manager, CELL_A, 'small', 2)
    old = helpers.naive_utcnow() - datetime.timedelta(hours=1)
    with engines.writer(scheduler_db) as session:
        session.execute(sa.update(scheduler_models.ResourceProvider)
                        .where(scheduler_models.ResourceProvider.uuid == big)
                        .values(last_report_at=old))
    [host_list] = manager.select_destinations(ctx, _spec(), _uuids(1))
    assert host_list[0].service_host == 'small'


def test_ignore_hosts_are_never_chosen(manager, ctx):
    _add_host(manager, CELL_A, 'big', 8)
    _add_host(manager, CELL_A, 'small', 2)
    [host_list] = manager.select_destinations(
        ctx, _spec(ignore_hosts=['big']), _uuids(1),
        return_alternates=True, num_alternates=3)
    assert [s.service_host for s in host_list] == ['small']


def test_force_hosts_restricts_the_choice(manager, ctx):
    _add_host(manager, CELL_A, 'big', 8)
    _add_host(manager, CELL_A, 'small', 2)
    [host_list] = manager.select_destinations(
        ctx, _spec(force_hosts=['small']), _uuids(1))
    assert host_list[0].service_host == 'small'


def test_requested_availability_zone_is_honoured(manager, ctx):
    _add_host(manager, CELL_A, 'big', 8, availability_zone='az1')
    _add_host(manager, CELL_A, 'small', 2, availability_zone='az2')
    [host_list] = manager.select_destinations(
        ctx, _spec(availability_zone='az2'), _uuids(1),
        return_alternates=True, num_alternates=3)
    assert [s.service_host for s in host_list] == ['small']


# --- alternates and releases ------------------------------------------------

def test_claim_resources_on_alternate_moves_the_instances_claim(
        manager, two_cells, ctx, scheduler_db):
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid],
                                              return_alternates=True,
                                              num_alternates=1)
    alternate = host_list[1]

    assert manager.claim_resources(ctx, alternate, uuid) is True

    assert claims.allocations_of(scheduler_db, uuid) == {
        alternate.compute_node_uuid: RESOURCES}


def test_claim_resources_on_full_alternate_returns_false(
        manager, ctx, scheduler_db):
    _add_host(manager, CELL_A, 'a1', 2)
    a2 = _add_host(manager, CELL_A, 'a2', 1)
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid],
                                              return_alternates=True,
                                              num_alternates=1)
    assert host_list[1].compute_node_uuid == a2
    claims.claim(scheduler_db, a2, 'intruder', RESOURCES)

    assert manager.claim_resources(ctx, host_list[1], uuid) is False
    assert list(claims.allocations_of(scheduler_db, uuid)) == [
        host_list[0].compute_node_uuid]


def test_release_resources_frees_the_claim_once(manager, two_cells, ctx,
                                                scheduler_db):
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(ctx, _spec(), [uuid])
    chosen = host_list[0].compute_node_uuid
    free_after_claim = manager.host_manager.get(chosen).free('VCPU')

    assert manager.release_resources(ctx, uuid) is True
    assert manager.release_resources(ctx, uuid) is False

    assert claims.allocations_of(scheduler_db, uuid) == {}
    assert manager.host_manager.get(chosen).free('VCPU') == \
        free_after_claim + 1


# --- server groups ----------------------------------------------------------

def _group(policy, rules=None):
    return objects.InstanceGroup(
        uuid=uuidutils.generate_uuid(), name='g', project_id='project',
        user_id='user', policy=policy, rules=rules or {}, members=[],
        hosts=[])


def test_anti_affinity_request_puts_each_instance_on_its_own_host(
        manager, two_cells, ctx, scheduler_db):
    spec = _spec(instance_group=_group('anti-affinity'))
    uuids = _uuids(3)
    host_lists = manager.select_destinations(ctx, spec, uuids,
                                             return_alternates=True,
                                             num_alternates=5)
    chosen = [hl[0].service_host for hl in host_lists]
    assert len(set(chosen)) == 3
    # An alternate never holds a member placed before its instance.
    for index, host_list in enumerate(host_lists):
        assert not {s.service_host for s in host_list[1:]} & set(
            chosen[:index])
        assert host_list[0].group['policy'] == 'anti-affinity'
    # A fourth member, in a later request, avoids all three.
    [later] = manager.select_destinations(
        ctx, _spec(instance_group=spec.instance_group), _uuids(1))
    assert later[0].service_host not in chosen


def test_anti_affinity_request_with_more_instances_than_hosts_fails_whole(
        manager, ctx, scheduler_db):
    for host in ('h1', 'h2'):
        _add_host(manager, CELL_A, host, 8)
    uuids = _uuids(3)
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(
            ctx, _spec(instance_group=_group('anti-affinity')), uuids)
    assert all(claims.allocations_of(scheduler_db, u) == {} for u in uuids)


def test_affinity_request_puts_every_instance_with_the_first(
        manager, two_cells, ctx, scheduler_db):
    group = _group('affinity')
    host_lists = manager.select_destinations(
        ctx, _spec(instance_group=group), _uuids(3))
    [later] = manager.select_destinations(
        ctx, _spec(instance_group=group), _uuids(1))
    assert {hl[0].service_host for hl in host_lists + [later]} == {'a1'}


@pytest.mark.parametrize('policy, count, expected', [
    ('affinity', 2, {'b2'}),      # b2 has room for two more
    ('anti-affinity', 4, {'a1', 'b1', 'a2', 'a3'})])
def test_claims_enforce_the_policy_even_with_the_group_filters_disabled(
        override, scheduler_db, ctx, policy, count, expected):
    override('enabled_filters', ['ComputeFilter', 'RamFilter'],
             group='filter_scheduler')
    manager = scheduler_manager.SchedulerManager(scheduler_db)
    hosts = {}
    for cell, host, size in ((CELL_A, 'a1', 8), (CELL_B, 'b1', 6),
                             (CELL_A, 'a2', 4), (CELL_B, 'b2', 3),
                             (CELL_A, 'a3', 2)):
        hosts[host] = _add_host(manager, cell, host, size)
    group = _group(policy)
    # A member already runs on b2, the host spreading ranks last.
    claims.claim(scheduler_db, hosts['b2'], 'first-member', RESOURCES,
                 group=group.claim_group)

    host_lists = manager.select_destinations(
        ctx, _spec(instance_group=group), _uuids(count))

    placed = [hl[0].service_host for hl in host_lists]
    assert set(placed) == expected
    if policy == 'anti-affinity':
        assert len(placed) == len(set(placed))


def test_alternate_claim_that_would_break_the_policy_returns_false(
        manager, two_cells, ctx, scheduler_db):
    group = _group('anti-affinity')
    [uuid] = _uuids(1)
    [host_list] = manager.select_destinations(
        ctx, _spec(instance_group=group), [uuid], return_alternates=True,
        num_alternates=1)
    alternate = host_list[1]
    claims.claim(scheduler_db, alternate.compute_node_uuid, 'other-member',
                 RESOURCES, group=group.claim_group)

    assert manager.claim_resources(ctx, alternate, uuid) is False
    assert list(claims.allocations_of(scheduler_db, uuid)) == [
        host_list[0].compute_node_uuid]


# --- cells whose database does not answer -----------------------------------

class _Cell:
    def __init__(self, uuid, name):
        self.uuid = uuid
        self.name = name
        self.database_connection = name
        self.is_cell0 = False


def _cells_answering(manager, *answering):
    """The scheduler service's look at cells A and B, of which only
    ``answering`` (names) answer."""
    def look(url):
        if url not in answering:
            raise sa.exc.OperationalError('SELECT 1', {},
                                          Exception('connection refused'))

    manager.cell_health._look = look
    cells = [_Cell(CELL_A, 'cell-a'), _Cell(CELL_B, 'cell-b')]
    # A cell is down after two failed looks in a row.
    manager.cell_health.check(cells)
    return manager.cell_health.check(cells)


def test_the_hosts_of_a_cell_that_does_not_answer_get_nothing(
        manager, two_cells, ctx, scheduler_db):
    assert _cells_answering(manager, 'cell-b') == {CELL_A}
    uuids = _uuids(3)
    host_lists = manager.select_destinations(
        ctx, _spec(), uuids, return_alternates=True, num_alternates=3)
    # a1 ranks first, but only cell B's hosts are chosen or offered.
    assert {s.service_host for host_list in host_lists
            for s in host_list} == {'b1', 'b2'}
    assert {host for uuid in uuids
            for host in claims.allocations_of(scheduler_db, uuid)} <= {
        two_cells['b1'], two_cells['b2']}

    # Once it answers again, its hosts are chosen again.
    assert _cells_answering(manager, 'cell-a', 'cell-b') == frozenset()
    [[chosen]] = manager.select_destinations(ctx, _spec(), _uuids(1))
    assert chosen.service_host == 'a1'


def test_no_host_in_a_cell_that_is_down_says_it_cannot_be_reached(
        manager, two_cells, ctx, caplog):
    caplog.set_level('INFO', logger='scheduler_split.scheduler.manager')
    _cells_answering(manager, 'cell-b')
    [uuid] = _uuids(1)
    with pytest.raises(exception.NoValidHost) as caught:
        manager.select_destinations(
            ctx, _spec(requested_cell=CELL_A), [uuid])
    assert str(caught.value) == (
        'No valid host was found. There are not enough hosts available. '
        'Cell cell-a cannot be reached (its database or bus).')
    assert ('Instance %s: no host; 5 hosts known, cell %s: 3, cells that '
            'answer, not cell-a: 0' % (uuid, CELL_A)) in caplog.text, \
        caplog.text


def test_with_no_cell_answering_no_host_is_left_out(
        manager, two_cells, ctx):
    # More likely this scheduler's link than every cell: the boot goes
    # on, and its cell's database is waited for.
    assert _cells_answering(manager) == {CELL_A, CELL_B}
    [[chosen]] = manager.select_destinations(ctx, _spec(), _uuids(1))
    assert chosen.service_host == 'a1'


# --- moves ------------------------------------------------------------------

def test_a_move_is_kept_to_its_cell_and_off_its_source(
        manager, two_cells, ctx, scheduler_db):
    [uuid] = _uuids(1)
    [[first]] = manager.select_destinations(ctx, _spec(instance_uuid=uuid),
                                            [uuid])
    assert first.service_host == 'a1'

    migration = uuidutils.generate_uuid()
    assert manager.move_allocations(ctx, uuid, migration) == {
        two_cells['a1']: RESOURCES}
    spec = _spec(instance_uuid=uuid, requested_cell=CELL_B,
                 ignore_hosts=['a1'])
    [host_list] = manager.select_destinations(
        ctx, spec, [uuid], return_alternates=True, num_alternates=3)

    assert [s.service_host for s in host_list] == ['b1', 'b2']
    assert claims.allocations_of(scheduler_db, uuid) == {
        two_cells['b1']: RESOURCES}
    assert claims.allocations_of(scheduler_db, migration) == {
        two_cells['a1']: RESOURCES}
    # The scheduler's memory counts both hosts as used.
    assert manager.host_manager.get(two_cells['a1']).used['VCPU'] == 1
    assert manager.host_manager.get(two_cells['b1']).used['VCPU'] == 1


def test_a_reverted_move_frees_the_destination_in_memory_too(
        manager, two_cells, ctx, scheduler_db):
    [uuid] = _uuids(1)
    migration = uuidutils.generate_uuid()
    manager.select_destinations(ctx, _spec(instance_uuid=uuid), [uuid])
    manager.move_allocations(ctx, uuid, migration)
    manager.select_destinations(
        ctx, _spec(instance_uuid=uuid, requested_cell=CELL_A,
                   ignore_hosts=['a1']), [uuid])
    assert manager.host_manager.get(two_cells['a2']).used['VCPU'] == 1

    assert manager.move_allocations(ctx, migration, uuid) == {
        two_cells['a1']: RESOURCES}

    assert claims.allocations_of(scheduler_db, uuid) == {
        two_cells['a1']: RESOURCES}
    assert manager.host_manager.get(two_cells['a2']).used.get(
        'VCPU', 0) == 0
    assert manager.host_manager.get(two_cells['a1']).used['VCPU'] == 1


def test_a_rebuild_check_judges_the_request_not_the_hosts_room(
        manager, ctx, scheduler_db):
    """The server's own host, full and disabled, still takes it for a
    rebuild whose image it passes; an image for another architecture is
    refused, by name of the filter. Nothing is claimed either way."""
    full = _add_host(manager, CELL_A, 'full', 1, cpu_arch='x86_64')
    uuid = _uuids(1)[0]
    [[chosen]] = manager.select_destinations(ctx, _spec(), [uuid])
    assert chosen.service_host == 'full'
    manager.host_manager.update_from_stats(
        CELL_A, 'full', 'full-node',
        helpers.host_stats(vcpus=1, memory_mb=512, local_gb=10,
                           cpu_arch='x86_64', disabled=True))
    before = helpers.provider_usage(scheduler_db, full)

    spec = _spec(instance_uuid=uuid,
                 image_properties={'architecture': 'x86_64'})
    assert manager.check_rebuild(ctx, spec, 'full', 'full-node') is True
    # The same request placed as a boot finds no room anywhere.
    with pytest.raises(exception.NoValidHost):
        manager.select_destinations(ctx, spec, _uuids(1))

    spec.image_properties = {'architecture': 'sparc64'}
    with pytest.raises(exception.NoValidHost) as raised:
        manager.check_rebuild(ctx, spec, 'full', 'full-node')
    assert 'ImagePropertiesFilter' in raised.value.format_message()
    with pytest.raises(exception.NoValidHost) as raised:
        manager.check_rebuild(ctx, spec, 'gone', 'gone-node')
    assert 'not known' in raised.value.format_message()
    assert helpers.provider_usage(scheduler_db, full) == before


def test_a_rebuild_of_a_server_in_error_claims_its_host_again(
        manager, ctx, scheduler_db):
    host = _add_host(manager, CELL_A, 'one', 1)
    first, second = _uuids(2)
    [[chosen]] = manager.select_destinations(ctx, _spec(), [first])
    manager.release_resources(ctx, first)       # in ERROR, reconciled
    spec = _spec(instance_uuid=first)

    assert manager.check_rebuild(ctx, spec, 'one', 'one-node', claim=True)
    assert helpers.provider_usage(scheduler_db, host)['VCPU'] == 1
    # Claiming again what it holds changes nothing.
    assert manager.check_rebuild(ctx, spec, 'one', 'one-node', claim=True)
    assert helpers.provider_usage(scheduler_db, host)['VCPU'] == 1

    # Taken meanwhile by another server, the host refuses it.
    manager.release_resources(ctx, first)
    [[_]] = manager.select_destinations(ctx, _spec(), [second])
    with pytest.raises(exception.NoValidHost) as raised:
        manager.check_rebuild(ctx, spec, 'one', 'one-node', claim=True)
    assert 'cannot take its claim again' in raised.value.format_message()
