"""A build request is taken once and handed over once: the statements a
super-conductor's placement of a boot rests on, on databases that can
return what a delete removed and on those that cannot."""

import pytest

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import objects


@pytest.fixture(params=['delete returning', 'locking read'])
def api_db(request, cloud, monkeypatch):
    """The API database, with or without DELETE ... RETURNING."""
    if request.param == 'locking read':
        engine = engines.get_engine(conf.CONF.api_database.connection)
        monkeypatch.setattr(engine.dialect, 'delete_returning', False)
    return request.param


def _mapping_cell(cloud, build_request):
    return objects.InstanceMapping.get_by_instance_uuid(
        cloud.ctx, build_request.instance_uuid).cell_mapping


def test_a_build_request_is_taken_once(cloud):
    build_request, _ = cloud.boot()

    assert build_request.take(cloud.ctx) is True
    assert build_request.take(cloud.ctx) is False


def test_a_deleted_or_placed_build_request_is_not_taken(cloud):
    deleted, _ = cloud.boot()
    deleted.destroy(cloud.ctx)
    placed, _ = cloud.boot()
    objects.InstanceMapping.get_by_instance_uuid(
        cloud.ctx, placed.instance_uuid).set_cell(cloud.ctx, cloud.cell1)

    assert deleted.take(cloud.ctx) is False
    assert placed.take(cloud.ctx) is False


def test_hand_over_points_the_mapping_and_keeps_the_users_edits(
        cloud, api_db):
    build_request, _ = cloud.boot(name='before')
    build_request.update_instance(cloud.ctx, {'display_name': 'renamed'})

    placed, recorded = build_request.hand_over(cloud.ctx, cloud.cell1)

    assert placed is True
    assert recorded.display_name == 'renamed'
    assert _mapping_cell(cloud, build_request).uuid == cloud.cell1.uuid
    with pytest.raises(exception.BuildRequestNotFound):
        objects.BuildRequest.get_by_instance_uuid(
            cloud.ctx, build_request.instance_uuid)


def test_hand_over_after_a_users_delete_points_the_mapping_all_the_same(
        cloud, api_db):
    build_request, _ = cloud.boot()
    build_request.destroy(cloud.ctx)

    placed, recorded = build_request.hand_over(cloud.ctx, cloud.cell1)

    assert (placed, recorded) == (True, None)
    assert _mapping_cell(cloud, build_request).uuid == cloud.cell1.uuid


def test_only_the_first_hand_over_places_the_instance(cloud, api_db):
    build_request, _ = cloud.boot()
    objects.InstanceMapping.get_by_instance_uuid(
        cloud.ctx, build_request.instance_uuid).set_cell(cloud.ctx,
                                                         cloud.cell0)

    assert build_request.hand_over(cloud.ctx, cloud.cell1) == (False, None)
    assert _mapping_cell(cloud, build_request).uuid == cloud.cell0.uuid
    # Nothing changed: the build request is still there.
    assert objects.BuildRequest.get_by_instance_uuid(
        cloud.ctx, build_request.instance_uuid)


def test_destroy_answers_the_instance_once(cloud, api_db):
    build_request, _ = cloud.boot(name='once')

    assert build_request.destroy(cloud.ctx).display_name == 'once'
    with pytest.raises(exception.BuildRequestNotFound):
        build_request.destroy(cloud.ctx)
