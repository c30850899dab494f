"""Migration records in a real SQLite cell database."""

import pytest

from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import migration as migration_obj
from tests.unit import helpers

INSTANCE = '3b0d8f7e-5a4c-4e1b-9c2d-1f0e9d8c7b01'
OTHER = '3b0d8f7e-5a4c-4e1b-9c2d-1f0e9d8c7b02'


@pytest.fixture
def ctx(tmp_path):
    url = 'sqlite:///' + str(tmp_path / 'cell.sqlite')
    helpers.database_at_head('cell', tmp_path / 'cell.sqlite')
    yield context.targeted(context.get_admin_context(), url)
    engines.dispose_all()


def _create(ctx, instance=INSTANCE, status=migration_obj.PRE_MIGRATING,
            kind=migration_obj.RESIZE, source='h1', dest=None):
    return objects.Migration(
        instance_uuid=instance, migration_type=kind, status=status,
        source_compute=source, source_node=source, dest_compute=dest,
        old_instance_type_id=1, new_instance_type_id=2,
        old_flavor=helpers.make_flavor(vcpus=1, flavorid='1'),
        new_flavor=helpers.make_flavor(vcpus=2, flavorid='2'),
        old_vm_state='active', user_id='u', project_id='p').create(ctx)


def test_a_migration_is_written_and_read_back_whole(ctx):
    created = _create(ctx)
    read = objects.Migration.get_by_uuid(ctx, created.uuid)

    assert read.id == created.id and read.id is not None
    assert (read.instance_uuid, read.migration_type, read.status,
            read.source_compute) == (INSTANCE, 'resize', 'pre-migrating',
                                     'h1')
    assert (read.old_flavor.vcpus, read.new_flavor.vcpus) == (1, 2)
    assert read.created_at is not None and not read.ended
    assert objects.Migration.get_by_id_and_instance(
        ctx, created.id, INSTANCE).uuid == created.uuid
    with pytest.raises(exception.MigrationNotFoundForInstance):
        objects.Migration.get_by_id_and_instance(ctx, created.id, OTHER)
    with pytest.raises(exception.MigrationNotFound):
        objects.Migration.get_by_uuid(ctx, OTHER)


def test_a_save_expecting_a_status_refuses_a_record_that_moved_on(ctx):
    created = _create(ctx, status=migration_obj.FINISHED)
    first = objects.Migration.get_by_uuid(ctx, created.uuid)
    second = objects.Migration.get_by_uuid(ctx, created.uuid)

    first.status = migration_obj.CONFIRMING
    first.save(ctx, expected_status=migration_obj.FINISHED)
    # A revert racing the confirm loses: the record is not finished now.
    second.status = migration_obj.REVERTING
    with pytest.raises(exception.Conflict):
        second.save(ctx, expected_status=migration_obj.FINISHED)

    read = objects.Migration.get_by_uuid(ctx, created.uuid)
    assert read.status == 'confirming'
    assert read.updated_at is not None


def test_migrations_are_found_by_instance_status_host_and_type(ctx):
    done = _create(ctx, status=migration_obj.CONFIRMED, dest='h2')
    live = _create(ctx, status=migration_obj.RUNNING,
                   kind=migration_obj.LIVE_MIGRATION, dest='h3')
    other = _create(ctx, instance=OTHER, source='h3', dest='h4')

    assert objects.Migration.get_by_instance_and_status(
        ctx, INSTANCE, migration_obj.LIVE_IN_PROGRESS).uuid == live.uuid
    assert objects.Migration.get_by_instance_and_status(
        ctx, INSTANCE, ['finished']) is None
    assert [m.uuid for m in objects.Migration.get_all(ctx, host='h3')] == [
        live.uuid, other.uuid]
    assert [m.uuid for m in objects.Migration.get_all(
        ctx, instance_uuid=INSTANCE, migration_types=['resize'])] == [
        done.uuid]
    assert [m.uuid for m in objects.Migration.get_all(
        ctx, uuids=[done.uuid, other.uuid])] == [done.uuid, other.uuid]
    assert objects.Migration.get_by_uuid(ctx, done.uuid).ended


def _instance(flavor):
    return objects.Instance(uuid=INSTANCE, host='h1', node='h1-node',
                            vm_state='stopped', flavor=flavor)


def test_a_resize_records_where_the_instance_is_and_both_flavors(ctx):
    ctx.user_id, ctx.project_id = 'u', 'p'
    old = helpers.make_flavor(vcpus=1, flavorid='1')
    old.id = 1
    new = helpers.make_flavor(vcpus=2, flavorid='2')
    new.id = 2

    made = objects.Migration.for_move(
        ctx, _instance(old), migration_obj.RESIZE,
        migration_obj.PRE_MIGRATING, new_flavor=new).create(ctx)
    read = objects.Migration.get_by_uuid(ctx, made.uuid)

    assert (read.instance_uuid, read.migration_type, read.status,
            read.source_compute, read.source_node, read.dest_compute,
            read.old_vm_state, read.user_id, read.project_id) == (
        INSTANCE, 'resize', 'pre-migrating', 'h1', 'h1-node', None,
        'stopped', 'u', 'p')
    assert (read.old_instance_type_id, read.new_instance_type_id) == (1, 2)
    assert (read.old_flavor.vcpus, read.new_flavor.vcpus) == (1, 2)


def test_a_move_without_a_new_flavor_keeps_the_instances(ctx):
    flavor = helpers.make_flavor(vcpus=1, flavorid='1')

    made = objects.Migration.for_move(
        ctx, _instance(flavor), migration_obj.LIVE_MIGRATION,
        migration_obj.ACCEPTED)

    assert made.new_flavor is made.old_flavor is flavor
    assert made.new_instance_type_id == made.old_instance_type_id
    assert not made.obj_attr_is_set('id')
