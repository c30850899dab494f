"""Allocation candidates over provider trees and sharing providers
(scheduler RPC 1.11), built through the scheduler's own writes."""

import pytest

from scheduler_split.scheduler import candidates
from scheduler_split.scheduler import placement_providers as providers
from scheduler_split.scheduler import placement_writes

INVENTORY = {'reserved': 0, 'min_unit': 1, 'step_size': 1,
             'allocation_ratio': 1.0}


def _inventory(url, uuid, **totals):
    providers.set_inventories(url, uuid, {
        rc: dict(INVENTORY, total=total, max_unit=total)
        for rc, total in totals.items()}, None)


def _group(resources, required=(), forbidden=()):
    return {'resources': resources, 'member_of': [], 'forbidden': [],
            'in_tree': [], 'traits': [list(required), list(forbidden), []]}


@pytest.fixture
def cloud(scheduler_db):
    """A compute node with two GPUs as children, a flat one, and a disk
    pool shared with both through an aggregate."""
    url = scheduler_db
    cn1 = providers.create_provider(url, 'cn1')
    gpus = [providers.create_provider(url, 'gpu%d' % i, parent_uuid=cn1)
            for i in (1, 2)]
    cn2 = providers.create_provider(url, 'cn2')
    pool = providers.create_provider(url, 'pool')
    _inventory(url, cn1, VCPU=8)
    _inventory(url, cn2, VCPU=8)
    for gpu in gpus:
        _inventory(url, gpu, VGPU=1)
    _inventory(url, pool, DISK_GB=100)
    placement_writes.set_provider_traits(
        url, pool, ['MISC_SHARES_VIA_AGGREGATE'], None, None)
    aggregate = '9a1f6d4e-5b7c-4d8e-9f0a-1b2c3d4e5f60'
    for uuid in (cn1, cn2, pool):
        providers.set_aggregates(url, uuid, [aggregate], None)
    return {'cn1': cn1, 'cn2': cn2, 'gpus': gpus, 'pool': pool}


def test_classes_come_from_the_tree_and_the_shared_pool(cloud, scheduler_db):
    found = candidates.find(scheduler_db, {'': _group(
        {'VCPU': 1, 'VGPU': 1, 'DISK_GB': 10})})
    got = sorted(sorted(c['allocations']) for c in found['candidates'])
    assert got == sorted(sorted([cloud['cn1'], gpu, cloud['pool']])
                         for gpu in cloud['gpus'])
    # Every provider of the trees answered is summarized, the children
    # that gave nothing too.
    assert cloud['cn2'] not in found['providers']
    assert found['providers'][cloud['gpus'][0]][
        'parent_provider_uuid'] == cloud['cn1']


def test_isolated_groups_take_separate_providers(cloud, scheduler_db):
    groups = {'': _group({'VCPU': 1}), '1': _group({'VGPU': 1}),
              '2': _group({'VGPU': 1})}
    found = candidates.find(scheduler_db, groups, policy='isolate')
    [candidate] = {tuple(sorted(c['allocations'])): c
                   for c in found['candidates']}.values()
    assert candidate['allocations'][cloud['cn1']] == {'VCPU': 1}
    assert sorted(candidate['mappings']['1'] + candidate['mappings']['2']) \
        == sorted(cloud['gpus'])
    # Without isolation one GPU cannot take both groups: it has one unit.
    found = candidates.find(scheduler_db, groups, policy='none')
    assert all(len(c['allocations']) == 3 for c in found['candidates'])


def test_an_old_microversion_never_splits_a_request_over_a_tree(
        cloud, scheduler_db):
    found = candidates.find(scheduler_db, {'': _group(
        {'VCPU': 1, 'VGPU': 1})}, nested=False)
    assert found == {'candidates': [], 'providers': {}}


def test_the_search_is_bounded(cloud, scheduler_db, monkeypatch):
    monkeypatch.setattr(candidates, 'MAX_COMBINATIONS', 1)
    found = candidates.find(scheduler_db, {'': _group({'VCPU': 1})})
    assert len(found['candidates']) == 1
    found = candidates.find(scheduler_db, {'': _group({'VCPU': 1})},
                            limit=1)
    assert len(found['candidates']) == 1


def test_a_compute_node_stays_the_root_of_its_tree(scheduler_db):
    from scheduler_split import exception
    from scheduler_split.scheduler import process
    from tests.unit import helpers
    scheduler = process.Scheduler(scheduler_db)
    node = scheduler.host_manager.update_from_stats(
        '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01', 'h1', 'h1',
        helpers.host_stats(vcpus=4, memory_mb=4096, local_gb=40))
    other = providers.create_provider(scheduler_db, 'pool')
    with pytest.raises(exception.ResourceProviderInvalid) as raised:
        providers.update_provider(scheduler_db, node, 'h1', other, True)
    assert 'a compute node is the root of its tree' in str(raised.value)
    # Renamed, it stays a host the scheduler places on.
    providers.update_provider(scheduler_db, node, 'h1-renamed')
    assert scheduler.host_manager.refresh_host(node) is not None
