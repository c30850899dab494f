"""Where a request lands on one provider tree, as Placement places it."""

from scheduler_split.objects import resource_request
from scheduler_split.scheduler import tree_fit

ROOT, GPU_A, GPU_B, NIC = 'root', 'gpu-a', 'gpu-b', 'nic'


def _tree(**free):
    """A compute node with two GPUs and a NIC below it."""
    traits = {ROOT: {'HW_CPU_X86_AVX2'}, GPU_A: {'CUSTOM_GPU_A'},
              GPU_B: {'CUSTOM_GPU_B'}, NIC: {'CUSTOM_PHYSNET_PUBLIC'}}
    base = {ROOT: {'VCPU': 8, 'MEMORY_MB': 4096, 'DISK_GB': 100},
            GPU_A: {'VGPU': 2}, GPU_B: {'VGPU': 1},
            NIC: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}
    for name, amounts in free.items():
        base[name] = amounts
    return [tree_fit.Provider(uuid, frozenset(traits[uuid]), base[uuid])
            for uuid in (ROOT, GPU_A, GPU_B, NIC)]


def _request(groups, policy=None):
    return resource_request.ResourceRequest.from_primitive({
        'groups': [dict({'suffix': suffix}, **group)
                   for suffix, group in groups.items()],
        'group_policy': policy})


FLAVOR = {'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 10}


def test_the_unnumbered_group_spreads_its_classes_over_the_tree():
    request = _request({'': {'resources': dict(FLAVOR, VGPU=1)}})
    assert tree_fit.place(_tree(), request) == {
        ROOT: FLAVOR, GPU_A: {'VGPU': 1}}


def test_unnumbered_traits_are_among_those_of_the_providers_used():
    request = _request({'': {'resources': dict(FLAVOR, VGPU=1),
                             'required': ['CUSTOM_GPU_B',
                                          'HW_CPU_X86_AVX2']}})
    assert tree_fit.place(_tree(), request) == {
        ROOT: FLAVOR, GPU_B: {'VGPU': 1}}
    # A trait of a provider the request takes nothing from is no match.
    request = _request({'': {'resources': FLAVOR,
                             'required': ['CUSTOM_GPU_B']}})
    assert tree_fit.place(_tree(), request) is None
    # Nor is a forbidden one of a provider it takes from.
    request = _request({'': {'resources': dict(FLAVOR, VGPU=1),
                             'forbidden': ['CUSTOM_GPU_A']}})
    assert tree_fit.place(_tree(), request) == {
        ROOT: FLAVOR, GPU_B: {'VGPU': 1}}


def test_a_numbered_group_takes_everything_from_one_provider():
    request = _request({'': {'resources': FLAVOR},
                        '1': {'resources': {'VGPU': 2}}})
    assert tree_fit.place(_tree(), request)[GPU_A] == {'VGPU': 2}
    request = _request({'': {'resources': FLAVOR},
                        '1': {'resources': {'VGPU': 3}}})
    # Three VGPUs are free in all, but no GPU has three.
    assert tree_fit.place(_tree(), request) is None


def test_isolate_puts_numbered_groups_on_providers_of_their_own():
    two = {'': {'resources': FLAVOR}, '1': {'resources': {'VGPU': 1}},
           '2': {'resources': {'VGPU': 1}}}
    placed = tree_fit.place(_tree(), _request(two, 'isolate'))
    assert placed[GPU_A] == {'VGPU': 1} and placed[GPU_B] == {'VGPU': 1}
    # Without isolate both may come from one GPU.
    placed = tree_fit.place(_tree(), _request(two, 'none'))
    assert placed[GPU_A] == {'VGPU': 2}
    # With one GPU left, isolate cannot be met.
    assert tree_fit.place(_tree(**{GPU_B: {'VGPU': 0}}),
                          _request(two, 'isolate')) is None


def test_a_group_without_resources_names_a_provider_by_its_traits():
    request = _request({'': {'resources': FLAVOR},
                        '1': {'required': ['CUSTOM_PHYSNET_PUBLIC']}})
    assert tree_fit.place(_tree(), request) == {ROOT: FLAVOR}
    request = _request({'': {'resources': FLAVOR},
                        '1': {'required': ['CUSTOM_PHYSNET_PRIVATE']}})
    assert tree_fit.place(_tree(), request) is None


def test_amounts_taken_earlier_count_against_later_groups():
    request = _request({'': {'resources': dict(FLAVOR, VGPU=1)},
                        '1': {'resources': {'VGPU': 2}}})
    # Group 1 needs GPU A whole: the unnumbered VGPU goes to GPU B.
    assert tree_fit.place(_tree(), request) == {
        ROOT: FLAVOR, GPU_A: {'VGPU': 2}, GPU_B: {'VGPU': 1}}


def test_a_wide_tree_with_many_groups_stops_within_its_bound():
    children = [tree_fit.Provider('c%d' % i, frozenset(), {'VGPU': 1})
                for i in range(12)]
    providers = [tree_fit.Provider(ROOT, frozenset(), dict(FLAVOR))] + \
        children
    # Eight isolated groups of one VGPU and a ninth of two: nothing has
    # two, which only the end of the search would find.
    groups = {str(i): {'resources': {'VGPU': 1}} for i in range(1, 9)}
    groups['9'] = {'resources': {'VGPU': 2}}
    groups[''] = {'resources': FLAVOR}
    assert tree_fit.place(providers, _request(groups, 'isolate')) is None


def test_a_request_using_the_root_counts_the_roots_traits():
    """A flavor's CPUs come from the compute node: its traits count for
    the unnumbered group even when only the VGPU is placed here."""
    request = _request({'': {'resources': {'VGPU': 1},
                             'required': ['HW_CPU_X86_AVX2',
                                          'CUSTOM_GPU_B']}})
    assert tree_fit.search(_tree(), request) is None
    assert tree_fit.place(_tree(), request) is None
    request.root_used = True
    assert tree_fit.search(_tree(), request) == {GPU_B: {'VGPU': 1}}
    assert tree_fit.place(_tree(), request) == {GPU_B: {'VGPU': 1}}
    assert tree_fit.place_one(_tree(), request) == {GPU_B: {'VGPU': 1}}


def test_one_class_placed_without_the_search_agrees_with_it():
    for required, forbidden in (([], []), (['CUSTOM_GPU_B'], []),
                                ([], ['CUSTOM_GPU_A']),
                                (['CUSTOM_GPU_A'], ['CUSTOM_GPU_A']),
                                (['HW_CPU_X86_AVX2'], [])):
        for root_used in (False, True):
            for amount in (1, 2, 3):
                request = _request({'': {
                    'resources': {'VGPU': amount}, 'required': required,
                    'forbidden': forbidden}})
                request.root_used = root_used
                assert tree_fit.place_one(_tree(), request) == \
                    tree_fit.search(_tree(), request), (
                        required, forbidden, root_used, amount)
