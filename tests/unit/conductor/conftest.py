"""A cloud for the conductor's tasks to work on: an API database with
cell0 and cell1 mapped, each database a SQLite file at head. The
scheduler and the computes are the stand-ins of ``fakes``."""

import logging

from oslo_utils import uuidutils
import pytest

from scheduler_split import cells
from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj
from tests.unit.conductor import fakes
from tests.unit import helpers

RESOURCES = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}


class Cloud:

    def __init__(self, ctx, cell0, cell1):
        self.ctx = ctx
        self.cell0 = cell0
        self.cell1 = cell1

    def in_cell(self, cell=None):
        """``ctx`` targeted at ``cell`` (cell1 by default)."""
        return context.target_cell(self.ctx, cell or self.cell1)

    @staticmethod
    def selection(host, cell, zone='nova'):
        return objects.Selection.for_claim(
            RESOURCES, compute_node_uuid=uuidutils.generate_uuid(),
            service_host=host, nodename=host + '-node', cell_uuid=cell.uuid,
            limits=None, availability_zone=zone)

    def hosts(self, *names, cell=None):
        """A host list as the scheduler answers it, in cell1 unless
        said: the chosen host, then the alternates."""
        return [self.selection(name, cell or self.cell1) for name in names]

    def boot(self, name='server', flavor=None):
        """A boot as the API records it: build request, request spec and
        an instance mapping without a cell."""
        uuid = uuidutils.generate_uuid()
        flavor = flavor or helpers.make_flavor(flavorid='1', name='tiny')
        instance = objects.Instance(
            uuid=uuid, display_name=name, hostname=name,
            project_id=self.ctx.project_id, user_id=self.ctx.user_id,
            host=None, node=None, vm_state=instance_obj.BUILDING,
            task_state=instance_obj.SCHEDULING,
            power_state=instance_obj.NOSTATE, flavor=flavor,
            image_ref='image', availability_zone=None, key_name=None,
            metadata={}, reservation_id='r-1', launch_index=0,
            launched_at=None, terminated_at=None, created_at=None,
            updated_at=None, deleted_at=None, deleted=False, fault=None)
        spec = objects.RequestSpec(
            instance_uuid=uuid, project_id=self.ctx.project_id,
            user_id=self.ctx.user_id, flavor=flavor, image_ref='image')
        build_request = objects.BuildRequest(
            instance_uuid=uuid, project_id=self.ctx.project_id,
            instance=instance)
        build_request.create(self.ctx, request_spec=spec)
        return build_request, spec

    def server(self, host='src', vm_state=instance_obj.ACTIVE,
               task_state=None, name='server'):
        """A server of cell1 that runs on ``host``."""
        build_request, _ = self.boot(name)
        instance = build_request.instance
        instance.host = host
        instance.node = host and host + '-node'
        instance.vm_state = vm_state
        instance.task_state = task_state
        instance.create(self.in_cell())
        objects.InstanceMapping.get_by_instance_uuid(
            self.ctx, instance.uuid).set_cell(self.ctx, self.cell1)
        build_request.destroy(self.ctx)
        return objects.Instance.get_by_uuid(self.in_cell(), instance.uuid)

    def moving(self, kind, task_state, vm_state=instance_obj.ACTIVE):
        """A server of cell1 on ``src`` and the migration the API
        recorded for its move of ``kind`` (``accepted``)."""
        instance = self.server(host='src', vm_state=vm_state,
                               task_state=task_state)
        migration = objects.Migration.for_move(
            self.ctx, instance, kind, migration_obj.ACCEPTED).create(
            self.in_cell())
        return instance, migration

    def move_task(self, task_class, moving, scheduler, computes):
        """A super-conductor's ``task_class`` for the move ``moving``
        (from :meth:`moving`), the server holding ``src``."""
        instance, migration = moving
        scheduler.held[instance.uuid] = 'src'
        return task_class(scheduler, self.ctx, instance,
                          migration=migration, computes=computes.for_cell)

    def after_move(self, instance, migration):
        """What a move left, as its user and operator read it: the
        migration's status, the server's vm state, task state and host,
        and its fault's message (None without one)."""
        current = self.instance(instance.uuid)
        return (self.migration(migration.uuid).status, current.vm_state,
                current.task_state, current.host,
                current.fault and current.fault.message)

    def instance(self, uuid, cell=None):
        return objects.Instance.get_by_uuid(self.in_cell(cell), uuid)

    def migration(self, uuid, cell=None):
        return objects.Migration.get_by_uuid(self.in_cell(cell), uuid)

    def _events(self, uuid, cell):
        cctx = self.in_cell(cell)
        found = []
        for action in reversed(instance_action.get_actions(cctx, uuid)):
            found.extend(instance_action.get_action(
                cctx, uuid, action['request_id'])['events'])
        return found

    def events(self, uuid, cell=None):
        """``(event, result, host)`` of every step recorded for the
        instance, oldest first."""
        return [(e['event'], e['result'], e['host'])
                for e in self._events(uuid, cell)]

    def event_details(self, uuid, cell=None):
        """What each of those steps says, oldest first."""
        return [e['details'] for e in self._events(uuid, cell)]


@pytest.fixture
def cloud(tmp_path, override):
    def url(name):
        return 'sqlite:///' + str(tmp_path / (name + '.sqlite'))

    helpers.database_at_head('api', tmp_path / 'api.sqlite')
    # map_cell0 and create_cell find their databases at head already.
    for name in ('cell0', 'cell1'):
        helpers.database_at_head('cell', tmp_path / (name + '.sqlite'))
    override('connection', url('api'), group='api_database')
    override('host', 'conductor-1')

    def quiet(*args):
        pass

    cell0 = cells.map_cell0(url('cell0'), echo=quiet)
    cell1 = cells.create_cell('cell1', 'fake:///cell1', url('cell1'),
                              echo=quiet)
    ctx = context.RequestContext(user_id='user', project_id='project',
                                 is_admin=True, overwrite=False)
    yield Cloud(ctx, cell0, cell1)
    engines.dispose_all()


@pytest.fixture
def computes():
    return fakes.Computes()


@pytest.fixture
def log_of(caplog):
    """``log_of(uuid)``: what the log says about the instance ``uuid``
    from INFO up, as ``(level, message, with a traceback)``, oldest
    first."""
    caplog.set_level(logging.INFO, logger='scheduler_split')

    def lines(uuid):
        return [(r.levelname, r.getMessage(), bool(r.exc_info))
                for r in caplog.records
                if r.levelno >= logging.INFO and uuid in r.getMessage()]
    return lines
