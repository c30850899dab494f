"""Host aggregates as the scheduler keeps and reads them: zones, the
aggregate filters, aggregate-set weigher multipliers, and a change made
through one scheduler process in effect in another on its next select."""

from oslo_utils import uuidutils
import pytest

from scheduler_split import context
from scheduler_split import exception
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import filters
from scheduler_split.scheduler.filters import aggregate_instance_extra_specs
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import process as scheduler_process
from scheduler_split.scheduler import weights
from tests.unit import helpers

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'


@pytest.fixture
def ctx():
    return context.get_admin_context()


def _manager(db):
    return scheduler_process.Scheduler(db)


def _add_host(manager, host, **extra):
    stats = dict({'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}, **extra)
    return manager.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(**stats))


def _chosen(manager, ctx, spec=None, count=1):
    spec = spec or helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    lists = manager.select_destinations(
        ctx, spec, [uuidutils.generate_uuid() for _ in range(count)],
        return_alternates=False, num_alternates=0)
    return [host_list[0].service_host for host_list in lists]


def _state(name, metadata_list=(), zone='nova'):
    state = host_state.HostState(uuidutils.generate_uuid(), name, name,
                                 CELL)
    state.reported_availability_zone = zone
    state.set_aggregates([aggregates.Aggregate({
        'id': i, 'uuid': uuidutils.generate_uuid(), 'name': 'agg%d' % i,
        'metadata': metadata, 'hosts': [name]})
        for i, metadata in enumerate(metadata_list)])
    return state


# --- zones ------------------------------------------------------------------

def test_a_host_is_in_its_aggregates_zone_else_in_the_one_it_reports():
    assert _state('h', [{'availability_zone': 'az1'}, {'k': 'v'}]
                  ).availability_zone == 'az1'
    assert _state('h', [{'k': 'v'}], zone='nova').availability_zone == 'nova'


def test_a_change_through_one_scheduler_is_seen_by_another_at_its_next_select(
        scheduler_db, ctx, override):
    # A refresh interval longer than the test: only the change check can
    # make the second process see it.
    override('host_state_refresh_interval', 3600, group='filter_scheduler')
    first, second = _manager(scheduler_db), _manager(scheduler_db)
    for host in ('h1', 'h2', 'h3'):
        _add_host(first, host)
    spec = helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    spec.availability_zone = 'az1'
    with pytest.raises(exception.NoValidHost):
        _chosen(second, ctx, spec)

    agg = first.aggregate_create(ctx, 'rack', 'az1')
    first.aggregate_add_host(ctx, agg['id'], 'h2')
    assert _chosen(second, ctx, spec, count=3) == ['h2'] * 3

    first.aggregate_update(ctx, agg['id'], {'availability_zone': None})
    with pytest.raises(exception.NoValidHost):
        _chosen(second, ctx, spec)
    zones = second.get_availability_zones(ctx)
    assert set(zones) == {'nova'} and set(zones['nova']) == {'h1', 'h2',
                                                             'h3'}


def test_aggregate_errors_are_novas(scheduler_db, ctx):
    manager = _manager(scheduler_db)
    _add_host(manager, 'h1')
    agg = manager.aggregate_create(ctx, 'a', 'az1')
    with pytest.raises(exception.AggregateNameExists):
        manager.aggregate_create(ctx, 'a')
    with pytest.raises(exception.ComputeHostNotFound):
        manager.aggregate_add_host(ctx, agg['id'], 'nohost')
    manager.aggregate_add_host(ctx, agg['id'], 'h1')
    with pytest.raises(exception.AggregateHostExists):
        manager.aggregate_add_host(ctx, agg['id'], 'h1')
    other = manager.aggregate_create(ctx, 'b', 'az2')
    with pytest.raises(exception.InvalidAggregateAction):
        manager.aggregate_add_host(ctx, other['id'], 'h1')
    with pytest.raises(exception.AggregateNotEmpty):
        manager.aggregate_delete(ctx, agg['id'])
    with pytest.raises(exception.AggregateHostNotFound):
        manager.aggregate_remove_host(ctx, other['id'], 'h1')
    with pytest.raises(exception.AggregateNotFound):
        manager.aggregate_get(ctx, 12345)
    assert manager.aggregate_get(ctx, agg['uuid'])['hosts'] == ['h1']


# --- AggregateInstanceExtraSpecsFilter --------------------------------------

@pytest.mark.parametrize('value,requirement,passes', [
    ('true', 'true', True),
    ('false', 'true', False),
    ('4', '>= 3', True),
    ('2', '>= 3', False),
    ('4', '= 3', True),
    ('3', '== 3', True),
    ('4', '== 3', False),
    ('ssd', 's== ssd', True),
    ('b', 's> a', True),
    ('avx2 sse4', '<in> avx2', True),
    ('sse4', '<in> avx2', False),
    ('gold', '<or> silver <or> gold', True),
    ('bronze', '<or> silver <or> gold', False),
    ('avx2 sse4 aes', '<all-in> avx2 aes', True),
    ('x', '>= 3', False),
])
def test_extra_spec_operators_are_novas(value, requirement, passes):
    assert aggregate_instance_extra_specs.extra_spec_matches(
        value, requirement) is passes


def _flavor_spec(extra_specs, project_id='project'):
    spec = helpers.make_spec()
    spec.flavor.extra_specs = extra_specs
    spec.project_id = project_id
    return spec


def test_extra_specs_filter_needs_a_matching_aggregate_for_scoped_keys():
    keep = filters.AggregateInstanceExtraSpecsFilter()
    spec = _flavor_spec({'aggregate_instance_extra_specs:ssd': 'true',
                         'hw:cpu_policy': 'shared'})
    assert keep.host_passes(_state('a', [{'ssd': 'true'}]), spec)
    assert not keep.host_passes(_state('b', [{'ssd': 'false'}]), spec)
    assert not keep.host_passes(_state('c'), spec)
    # Any of the host's aggregates may match.
    assert keep.host_passes(_state('d', [{'ssd': 'false'}, {'ssd': 'true'}]),
                            spec)
    # Keys of other namespaces are not the filter's.
    assert keep.host_passes(_state('e'), _flavor_spec({'hw:x': 'y'}))


def test_multi_tenancy_isolation_keeps_a_projects_hosts_for_it():
    keep = filters.AggregateMultiTenancyIsolation()
    owned = _state('a', [{'filter_tenant_id': 'p1,p2'},
                         {'filter_tenant_id_2': 'p3'}])
    assert keep.host_passes(owned, _flavor_spec({}, 'p1'))
    assert keep.host_passes(owned, _flavor_spec({}, 'p3'))
    assert not keep.host_passes(owned, _flavor_spec({}, 'p9'))
    assert keep.host_passes(_state('b'), _flavor_spec({}, 'p9'))


# --- multipliers ------------------------------------------------------------

def test_an_aggregate_sets_a_weighers_multiplier_for_its_hosts(override):
    override('ram_weight_multiplier', 1.0, group='filter_scheduler')
    spread = _state('spread')
    packed = _state('packed', [{'ram_weight_multiplier': '-1.0'},
                               {'ram_weight_multiplier': '2'}])
    broken = _state('broken', [{'ram_weight_multiplier': 'lots'}])
    weigher = weights.RAMWeigher()
    assert weigher.weight_multiplier(spread) == 1.0
    assert weigher.weight_multiplier(packed) == -1.0  # the smallest
    assert weigher.weight_multiplier(broken) == 1.0

    # With more free memory the packed host would win; its aggregate
    # makes free memory count against it.
    for state, free in ((spread, 1024), (packed, 8192)):
        state.inventory = {'MEMORY_MB': (free, 0, 1.0)}
    ranked = weights.weigh([weigher], [packed, spread], helpers.make_spec())
    assert [h.host for _, h in ranked] == ['spread', 'packed']


# --- same_host / different_host ---------------------------------------------

def _hinted(**hints):
    spec = helpers.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    spec.scheduler_hints = {k: v if isinstance(v, list) else [v]
                            for k, v in hints.items()}
    return spec


def test_same_and_different_host_follow_the_named_instances(
        scheduler_db, ctx, override):
    override('host_state_refresh_interval', 3600, group='filter_scheduler')
    first, second = _manager(scheduler_db), _manager(scheduler_db)
    for host in ('h1', 'h2', 'h3'):
        _add_host(first, host)
    second.host_manager.host_states()
    [[placed]] = [[s.service_host for s in hl] for hl in
                  first.select_destinations(
                      ctx, _hinted(), ['11111111-1111-4111-8111-111111111111'],
                      return_alternates=False, num_alternates=0)]
    # The second process never saw that claim; the hint makes it look.
    assert _chosen(second, ctx, _hinted(
        same_host='11111111-1111-4111-8111-111111111111'), count=3) == [
        placed] * 3
    others = _chosen(second, ctx, _hinted(
        different_host='11111111-1111-4111-8111-111111111111'), count=4)
    assert placed not in others
    # Once released, no host holds it: same_host finds nothing.
    first.release_resources(ctx, '11111111-1111-4111-8111-111111111111')
    with pytest.raises(exception.NoValidHost):
        _chosen(second, ctx, _hinted(
            same_host='11111111-1111-4111-8111-111111111111'))


def test_same_and_different_host_filters_without_hints_pass():
    state = _state('h')
    for host_filter in (filters.SameHostFilter(),
                        filters.DifferentHostFilter()):
        assert host_filter.host_passes(state, helpers.make_spec())
