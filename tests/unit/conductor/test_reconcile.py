"""The reconciliation of claims: the super-conductor pages through the
scheduler's consumers and releases what no build request, live instance
or move under way needs. The scheduler is asked, never the other way
round."""

import oslo_messaging as messaging
from oslo_utils import uuidutils
import sqlalchemy.exc

from scheduler_split.conductor import reconcile
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import migration as migration_obj
from tests.unit.conductor import fakes


def _claims(cloud):
    """A scheduler holding a claim for a server that lives, one in
    ERROR, one offloaded, one offloaded that is being unshelved, a boot
    not yet placed, a move under way, a move that ended, and a consumer
    nothing in the cloud knows."""
    scheduler = fakes.Scheduler()
    live = cloud.server(host='h1')
    failed = cloud.server(host='h1', vm_state=instance_obj.ERROR)
    offloaded = cloud.server(host=None,
                             vm_state=instance_obj.SHELVED_OFFLOADED)
    unshelving = cloud.server(host=None,
                              vm_state=instance_obj.SHELVED_OFFLOADED,
                              task_state=instance_obj.UNSHELVING)
    pending, _ = cloud.boot()
    moving, migration = cloud.moving(migration_obj.MIGRATION,
                                     instance_obj.RESIZE_PREP)
    _, ended = cloud.moving(migration_obj.MIGRATION,
                            instance_obj.RESIZE_PREP)
    ended.status = migration_obj.CONFIRMED
    ended.save(cloud.in_cell())
    orphan = uuidutils.generate_uuid()
    for consumer in (live.uuid, failed.uuid, offloaded.uuid,
                     unshelving.uuid, pending.instance_uuid, moving.uuid,
                     migration.uuid, ended.uuid, orphan):
        scheduler.held[consumer] = 'h1'
    return scheduler, {
        'needed': {live.uuid, unshelving.uuid, pending.instance_uuid,
                   moving.uuid, migration.uuid},
        'released': {failed.uuid, offloaded.uuid, ended.uuid, orphan}}


def test_what_nothing_needs_is_released_and_the_rest_kept(cloud):
    scheduler, expected = _claims(cloud)
    healed = reconcile.heal_allocations(scheduler, cloud.ctx, grace=0)
    assert set(healed) == expected['released']
    assert set(scheduler.held) == expected['needed']
    # Nothing left to release the next time.
    assert reconcile.heal_allocations(scheduler, cloud.ctx, grace=0) == []


def test_the_consumers_are_read_a_page_at_a_time(cloud, monkeypatch):
    monkeypatch.setattr(reconcile, 'CHUNK', 2)
    scheduler, expected = _claims(cloud)
    everyone = sorted(scheduler.held)
    healed = reconcile.heal_allocations(scheduler, cloud.ctx, grace=0)
    assert set(healed) == expected['released']
    assert set(scheduler.held) == expected['needed']
    # Nine consumers, two a page: each page after the last one's end.
    assert [marker for call, marker in scheduler.calls
            if call == 'list'] == [None, everyone[1], everyone[3],
                                   everyone[5], everyone[7]]


def test_schedulers_too_old_to_list_are_left_alone(cloud):
    scheduler, _ = _claims(cloud)
    held = dict(scheduler.held)
    scheduler.listing_error = messaging.RPCVersionCapError(
        version='1.6', version_cap='1.5')
    assert reconcile.heal_allocations(scheduler, cloud.ctx, grace=0) == []
    assert scheduler.held == held


def test_a_page_that_cannot_be_decided_keeps_every_claim(cloud,
                                                         monkeypatch):
    scheduler, _ = _claims(cloud)
    held = dict(scheduler.held)

    def cell_down(*args, **kwargs):
        raise sqlalchemy.exc.OperationalError('SELECT', {},
                                              'cell database down')

    monkeypatch.setattr(objects.Instance, 'get_all', cell_down)
    assert reconcile.heal_allocations(scheduler, cloud.ctx, grace=0) == []
    assert scheduler.held == held


def test_a_build_handed_to_its_cell_between_the_reads_keeps_its_claim(
        cloud, monkeypatch):
    """The reconciliation reads a boot's mapping (no cell yet), then its
    build request, which the hand-over deleted meanwhile: the instance is
    in its cell by then, and its claim stays."""
    scheduler = fakes.Scheduler()
    build_request, _ = cloud.boot()
    scheduler.held[build_request.instance_uuid] = 'h1'
    read = objects.BuildRequest.get_by_instance_uuid

    def handed_over_meanwhile(ctx, uuid):
        found = read(ctx, uuid)
        instance = found.instance
        instance.host, instance.node = 'h1', 'h1-node'
        instance.create(cloud.in_cell())
        found.hand_over(ctx, cloud.cell1)
        return read(ctx, uuid)

    monkeypatch.setattr(objects.BuildRequest, 'get_by_instance_uuid',
                        handed_over_meanwhile)
    assert reconcile.heal_allocations(scheduler, cloud.ctx, grace=0) == []
    assert set(scheduler.held) == {build_request.instance_uuid}
