"""The weighers and the weighed ranking."""

import pytest

from scheduler_split import conf
from scheduler_split import objects
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import weights
from tests.unit import helpers

CONF = conf.CONF


@pytest.fixture
def multipliers():
    """Set weigher multipliers for one test; always cleared after."""
    names = []

    def _set(**values):
        for name, value in values.items():
            CONF.set_override(name, value, group='filter_scheduler')
            names.append(name)

    yield _set
    for name in names:
        CONF.clear_override(name, group='filter_scheduler')


def _host(name, free_ram=0, free_vcpus=0):
    state = host_state.HostState('uuid-' + name, name, name, 'cell')
    state.inventory = {'MEMORY_MB': (free_ram, 0, 1.0),
                       'VCPU': (free_vcpus, 0, 1.0)}
    return state


def _ranked_names(weighers, hosts):
    return [h.host for _, h in weights.weigh(weighers, hosts,
                                             helpers.make_spec())]


def test_ram_weigher_spreads_by_default_host_with_more_free_memory_wins():
    small = _host('small', free_ram=1024)
    big = _host('big', free_ram=8192)
    middle = _host('middle', free_ram=4096)
    assert _ranked_names([weights.RAMWeigher()], [small, big, middle]) == [
        'big', 'middle', 'small']


def test_ram_weigher_counts_used_memory_not_only_total():
    busy = _host('busy', free_ram=8192)
    busy.used = {'MEMORY_MB': 7168}   # 1024 free
    idle = _host('idle', free_ram=2048)
    assert _ranked_names([weights.RAMWeigher()], [busy, idle]) == [
        'idle', 'busy']


def test_cpu_weigher_spreads_by_default_host_with_more_free_vcpus_wins():
    few = _host('few', free_vcpus=2)
    many = _host('many', free_vcpus=16)
    assert _ranked_names([weights.CPUWeigher()], [few, many]) == [
        'many', 'few']


def test_negative_ram_weight_multiplier_packs_onto_host_with_least_free_memory(  # noqa
        multipliers):
    multipliers(ram_weight_multiplier=-1.0)
    small = _host('small', free_ram=1024)
    big = _host('big', free_ram=8192)
    middle = _host('middle', free_ram=4096)
    assert _ranked_names([weights.RAMWeigher()], [big, small, middle]) == [
        'small', 'middle', 'big']


def test_negative_cpu_weight_multiplier_packs_onto_host_with_fewest_free_vcpus(  # noqa
        multipliers):
    multipliers(cpu_weight_multiplier=-1.0)
    few = _host('few', free_vcpus=2)
    many = _host('many', free_vcpus=16)
    assert _ranked_names([weights.CPUWeigher()], [many, few]) == [
        'few', 'many']


def test_zero_multiplier_disables_the_weigher(multipliers):
    multipliers(ram_weight_multiplier=0.0)
    small = _host('small', free_ram=1024)
    big = _host('big', free_ram=8192)
    assert _ranked_names([weights.RAMWeigher()], [small, big]) == [
        'small', 'big']


def test_equal_hosts_keep_their_order():
    hosts = [_host(name, free_ram=2048, free_vcpus=4)
             for name in ('c', 'a', 'd', 'b')]
    ranked = weights.weigh([weights.RAMWeigher(), weights.CPUWeigher()],
                           hosts, helpers.make_spec())
    assert [h.host for _, h in ranked] == ['c', 'a', 'd', 'b']
    assert [w for w, _ in ranked] == [0.0] * 4


def test_weights_are_normalized_and_multiplied_then_summed(multipliers):
    multipliers(ram_weight_multiplier=2.0, cpu_weight_multiplier=1.0)
    # RAM: a is best (normalized 1), CPU: b is best (normalized 1).
    a = _host('a', free_ram=8192, free_vcpus=2)
    b = _host('b', free_ram=1024, free_vcpus=64)
    ranked = weights.weigh([weights.RAMWeigher(), weights.CPUWeigher()],
                           [b, a], helpers.make_spec())
    assert [(w, h.host) for w, h in ranked] == [(2.0, 'a'), (1.0, 'b')]


def test_weigh_with_no_hosts_returns_empty_list():
    assert weights.weigh([weights.RAMWeigher()], [],
                         helpers.make_spec()) == []


def test_load_returns_the_named_weighers():
    loaded = weights.load(['CPUWeigher', 'RAMWeigher'])
    assert [type(w) for w in loaded] == [weights.CPUWeigher,
                                         weights.RAMWeigher]


def test_load_with_unknown_weigher_name_raises_value_error_naming_it():
    with pytest.raises(ValueError) as info:
        weights.load(['RAMWeigher', 'BogusWeigher'])
    assert 'BogusWeigher' in str(info.value)


def _group_spec(policy, hosts):
    spec = helpers.make_spec()
    spec.instance_group = objects.InstanceGroup(
        uuid='5b0e4c7a-1d2e-4f3a-9b8c-7d6e5f4a3b2c', name='g',
        project_id='project', user_id='user', policy=policy, rules={},
        members=[], hosts=hosts)
    return spec


def test_soft_affinity_prefers_the_host_with_most_members_then_soft_anti():
    hosts = [_host('a'), _host('b'), _host('c')]
    members = ['b', 'b', 'c']
    soft = weights.load(['ServerGroupSoftAffinityWeigher'])
    soft_anti = weights.load(['ServerGroupSoftAntiAffinityWeigher'])

    def ranked(weighers, policy):
        return [h.host for _, h in weights.weigh(
            weighers, hosts, _group_spec(policy, members))]

    assert ranked(soft, 'soft-affinity') == ['b', 'c', 'a']
    assert ranked(soft_anti, 'soft-anti-affinity') == ['a', 'c', 'b']
    # Each weigher leaves other policies alone.
    assert ranked(soft, 'soft-anti-affinity') == ['a', 'b', 'c']
    assert ranked(soft_anti, 'anti-affinity') == ['a', 'b', 'c']


def test_build_failure_weigher_outweighs_free_memory_by_default():
    failing = _host('failing', free_ram=16384)
    failing.failed_builds = 3
    healthy = _host('healthy', free_ram=1024)
    weighers = [weights.RAMWeigher(), weights.BuildFailureWeigher()]
    assert _ranked_names(weighers, [failing, healthy]) == [
        'healthy', 'failing']
    # Fewer failures in a row weigh less heavily.
    flaky = _host('flaky', free_ram=1024)
    flaky.failed_builds = 1
    assert _ranked_names(weighers, [failing, flaky]) == ['flaky', 'failing']


def test_build_failure_weigher_off_at_zero(multipliers):
    multipliers(build_failure_weight_multiplier=0.0)
    failing = _host('failing', free_ram=16384)
    failing.failed_builds = 3
    healthy = _host('healthy', free_ram=1024)
    assert _ranked_names([weights.RAMWeigher(), weights.BuildFailureWeigher()],
                         [healthy, failing]) == ['failing', 'healthy']


def test_num_instances_weigher_is_off_by_default_and_packs_when_positive(
        multipliers):
    busy = _host('busy')
    busy.instances = {'a', 'b', 'c'}
    idle = _host('idle')
    weigher = weights.NumInstancesWeigher()
    assert _ranked_names([weigher], [idle, busy]) == ['idle', 'busy']
    multipliers(num_instances_weight_multiplier=1.0)
    assert _ranked_names([weigher], [idle, busy]) == ['busy', 'idle']
    multipliers(num_instances_weight_multiplier=-1.0)
    assert _ranked_names([weigher], [busy, idle]) == ['idle', 'busy']


def test_io_ops_weigher_prefers_quiet_hosts_by_default():
    building = _host('building')
    building.num_io_ops = 2
    quiet = _host('quiet')
    assert _ranked_names([weights.IoOpsWeigher()], [building, quiet]) == [
        'quiet', 'building']
