"""The compute API: what the REST handlers ask of the system (boot,
find, list, update, delete, the lifecycle actions and, through
:mod:`scheduler_split.compute.api_moves`, the moves).

The API never creates an Instance row. A boot writes a BuildRequest, a
RequestSpec and an InstanceMapping (no cell yet) per instance in the API
database and casts ``schedule_and_build_instances`` to the
super-conductor; everything after that happens behind the bus.
"""

import dataclasses
import logging
import typing

import oslo_messaging as messaging
from oslo_utils import uuidutils
from sqlalchemy import exc as sa_exc

from scheduler_split.compute import api_moves
from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj
from scheduler_split import quota
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def _cast_failed(exc, what, uuid):
    """Log that casting ``what`` for server ``uuid`` failed: one line
    when its cell's bus (or a database) is away, else with the
    traceback."""
    if outage.is_outage(exc):
        outage.report(LOG, exc, 'Casting %s of %s failed: %s', what, uuid,
                      outage.describe(exc), extra={'instance_uuid': uuid})
    else:
        LOG.exception('Casting %s of %s failed', what, uuid,
                      extra={'instance_uuid': uuid})


@dataclasses.dataclass
class Boot:
    """A boot as the REST API accepted it, what :meth:`ComputeAPI.create`
    records: ``count`` servers named ``name`` (``name-1`` ... when more
    than one), of ``flavor`` and the image ``image_ref``, whose
    properties (``image_properties``, as the image service holds them)
    go to the scheduler in each RequestSpec; fewer, down to
    ``min_count``, if the project's quota takes no more. ``group``: the
    InstanceGroup every server joins. ``boot_details``: the Instance
    fields of the boot beside its image (``user_data``, ``kernel_id``,
    ``ramdisk_id``, ``system_metadata``)."""
    name: str
    flavor: typing.Any
    image_ref: str
    count: int = 1
    min_count: typing.Optional[int] = None
    availability_zone: typing.Optional[str] = None
    force_hosts: typing.Optional[list] = None
    metadata: typing.Optional[dict] = None
    key_name: typing.Optional[str] = None
    scheduler_hints: typing.Optional[dict] = None
    description: typing.Optional[str] = None
    group: typing.Any = None
    access_ip_v4: typing.Optional[str] = None
    access_ip_v6: typing.Optional[str] = None
    image_properties: typing.Optional[dict] = None
    boot_details: typing.Optional[dict] = None


class ComputeAPI(api_moves.Moves):
    """The API's way into the system; the moves are :class:`Moves`'."""

    def __init__(self, transport=None):
        self.transport = transport or rpc.get_transport()
        self.conductor = conductor_rpcapi.SuperConductorAPI(self.transport)
        self.scheduler = scheduler_client.SchedulerClient(self.transport)

    # --- boot ---------------------------------------------------------------

    def create(self, ctx, boot):
        """Accept ``boot`` (a :class:`Boot`) of ``boot.count`` instances
        (fewer, down to ``boot.min_count``, if the project's quota takes
        no more); return its reservation id and the instances (BUILD).

        Every instance is recorded in one transaction of the API database
        that first takes the project's quota turn, counts and then
        records (see ``scheduler_split.quota``): all of them or none, and
        never past a quota. With a ``group`` every instance joins that
        server group in that transaction.
        """
        reservation_id = 'r-' + uuidutils.generate_uuid()[:8]
        now = obj_base.utcnow()
        min_count = boot.count if boot.min_count is None else boot.min_count

        def build(count):
            return self._build_requests(ctx, boot, count, now,
                                        reservation_id)

        build_requests, request_specs = objects.BuildRequest.record_boot(
            ctx, boot.flavor, min_count, boot.count, build,
            group_uuid=boot.group.uuid if boot.group is not None else None)
        return self._cast_boot(ctx, reservation_id, build_requests,
                               request_specs)

    @staticmethod
    def _build_requests(ctx, boot, count, now, reservation_id):
        """``count`` build requests of ``boot``, their request specs and
        the rows that record them."""
        build_requests, request_specs, rows = [], [], []
        for index in range(count):
            uuid = uuidutils.generate_uuid()
            display_name = boot.name if count == 1 else '%s-%d' % (
                boot.name, index + 1)
            instance = objects.Instance(
                uuid=uuid, display_name=display_name,
                display_description=boot.description,
                hostname=display_name, project_id=ctx.project_id,
                user_id=ctx.user_id, host=None, node=None,
                vm_state=instance_obj.BUILDING,
                task_state=instance_obj.SCHEDULING,
                power_state=instance_obj.NOSTATE, flavor=boot.flavor,
                image_ref=boot.image_ref,
                availability_zone=boot.availability_zone,
                key_name=boot.key_name, metadata=boot.metadata or {},
                reservation_id=reservation_id, launch_index=index,
                launched_at=None, terminated_at=None, created_at=now,
                updated_at=None, deleted_at=None, deleted=False, fault=None,
                access_ip_v4=boot.access_ip_v4,
                access_ip_v6=boot.access_ip_v6,
                **(boot.boot_details or {}))
            spec = objects.RequestSpec(
                instance_uuid=uuid, project_id=ctx.project_id,
                user_id=ctx.user_id, flavor=boot.flavor,
                image_ref=boot.image_ref, num_instances=count,
                availability_zone=boot.availability_zone,
                force_hosts=boot.force_hosts,
                scheduler_hints=boot.scheduler_hints or {},
                instance_group=boot.group and boot.group.for_request(),
                image_properties=boot.image_properties or {})
            build_request = objects.BuildRequest(
                instance_uuid=uuid, project_id=ctx.project_id,
                instance=instance, created_at=now)
            build_requests.append(build_request)
            request_specs.append(spec)
            rows.append(build_request.rows(spec))
        return build_requests, request_specs, rows

    def _cast_boot(self, ctx, reservation_id, build_requests, request_specs):
        try:
            self.conductor.schedule_and_build_instances(ctx, build_requests,
                                                        request_specs)
        except Exception:
            # Nothing would ever build these servers: take them back. If
            # the cast did get through, the conductor finds the build
            # requests gone and builds nothing.
            LOG.exception('Casting the boot of %s to the conductor failed',
                          [br.instance_uuid for br in build_requests])
            self._take_back(ctx, build_requests)
            raise exception.ServiceUnavailable(
                reason='the conductor could not be reached; no server was '
                       'created')
        return reservation_id, [br.instance for br in build_requests]

    @staticmethod
    def _take_back(ctx, build_requests):
        for build_request in build_requests:
            try:
                build_request.destroy(ctx)
            except exception.BuildRequestNotFound:
                pass
            except Exception:
                LOG.exception('Could not take back the build request of %s',
                              build_request.instance_uuid)
                continue
            try:
                # What was taken back counts against no quota.
                objects.InstanceMapping.queue_for_delete(
                    ctx, build_request.instance_uuid)
            except Exception:
                LOG.exception('Could not release the quota of %s',
                              build_request.instance_uuid)

    # --- read ---------------------------------------------------------------

    def get(self, ctx, uuid, read_deleted=False):
        """The server ``uuid`` if it exists and the caller may see it."""
        instance = self.locate(ctx, uuid, read_deleted=read_deleted)[0]
        if not ctx.is_admin and instance.project_id != ctx.project_id:
            raise exception.InstanceNotFound(instance_id=uuid)
        return instance

    def locate(self, ctx, uuid, read_deleted=False):
        """``(instance, cell_mapping or None)``: None while the server is
        a build request. No visibility check: see ``get``."""
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
        except exception.InstanceMappingNotFound:
            raise exception.InstanceNotFound(instance_id=uuid)
        if mapping.cell_mapping is None:
            try:
                return (objects.BuildRequest.get_by_instance_uuid(
                    ctx, uuid).instance, None)
            except exception.BuildRequestNotFound:
                # Scheduled meanwhile: the mapping has a cell by now.
                mapping = objects.InstanceMapping.get_by_instance_uuid(
                    ctx, uuid)
                if mapping.cell_mapping is None:
                    raise exception.InstanceNotFound(instance_id=uuid)
        cctx = ss_context.target_cell(ctx, mapping.cell_mapping)
        try:
            instance = objects.Instance.get_by_uuid(
                cctx, uuid, read_deleted=read_deleted)
        except outage.DATABASE_UNAVAILABLE as exc:
            # Still a 503 (a DatabaseUnavailable), which says the cell.
            raise exception.CellUnavailable(
                cell=mapping.cell_mapping.name,
                reason=outage.describe(exc), mapping=mapping) from exc
        return instance, mapping.cell_mapping

    # --- update -------------------------------------------------------------

    def update(self, ctx, instance, changes):
        """Write ``changes`` (Instance field -> value) to the server
        ``instance``; the updated server.

        A server being scheduled is updated in its build request, which the
        conductor reads back as it deletes it; one in a cell has only the
        named fields written, so a compute saving its task or power state
        at the same time loses nothing.
        """
        uuid = instance.uuid
        for _ in range(10):
            instance, cell = self.locate(ctx, uuid)
            if cell is None:
                build_request = objects.BuildRequest(instance_uuid=uuid)
                try:
                    build_request.update_instance(ctx, changes)
                    return build_request.instance
                except exception.BuildRequestNotFound:
                    # Placed meanwhile: the cell holds it now.
                    continue
            for name, value in changes.items():
                setattr(instance, name, value)
            instance.save(ss_context.target_cell(ctx, cell))
            return instance
        raise exception.InstanceNotFound(instance_id=uuid)

    # --- delete -------------------------------------------------------------

    def delete(self, ctx, uuid, force=False):
        """Delete a server wherever it is in its life; with ``[DEFAULT]
        reclaim_instance_interval`` a server that runs on its host is
        only soft-deleted (see ``_soft_delete``), unless ``force``.

        Each step is guarded by the task state it read, so a delete and a
        build that move at the same time never both win: a compute starts
        spawning only from SCHEDULING and finishes only from SPAWNING,
        and the API marks DELETING only from the state it saw.
        """
        instance = self.get(ctx, uuid)
        if force or not self._soft_delete(ctx, uuid):
            self._delete(ctx, uuid)
            # A shelved server's saved image goes with it, as in Nova.
            self._delete_image(ctx, instance.get('system_metadata', {}).get(
                'shelved_image_id'))
        # A server being deleted is no member of its group any more; the
        # scheduler keeps enforcing the policy on its claim until that is
        # released. The delete is under way whatever happens here, so a
        # database that went away meanwhile does not turn it into an
        # error the user would retry.
        try:
            objects.InstanceGroup.remove_instance(ctx, uuid)
        except sa_exc.SQLAlchemyError as exc:
            outage.report(LOG, exc, 'Server %s is being deleted but could '
                          'not be taken out of its server group (%s); it '
                          'stays listed there', uuid, outage.describe(exc),
                          extra={'instance_uuid': uuid})
        # From now on it counts against no quota (as in Nova).
        try:
            objects.InstanceMapping.queue_for_delete(ctx, uuid)
        except sa_exc.SQLAlchemyError as exc:
            outage.report(LOG, exc, 'Server %s is being deleted but still '
                          'counts against its project\'s quota (%s)', uuid,
                          outage.describe(exc),
                          extra={'instance_uuid': uuid})

    # A server in one of these, on its host and with no task, is
    # soft-deleted when a reclaim interval is set.
    SOFT_DELETABLE = (instance_obj.ACTIVE, instance_obj.STOPPED,
                      instance_obj.PAUSED, instance_obj.SUSPENDED,
                      instance_obj.ERROR)

    def _soft_delete(self, ctx, uuid):
        """With ``[DEFAULT] reclaim_instance_interval``: a server that
        was launched on its host and has no task is powered off and kept
        SOFT_DELETED with its claim, to be restored or reclaimed by its
        cell conductor once the interval passed. False for any other
        server (or while its computes are older than compute RPC 1.6),
        which is deleted at once."""
        if CONF.reclaim_instance_interval <= 0:
            return False
        instance, cell = self.locate(ctx, uuid)
        if (cell is None or cell.is_cell0 or not instance.host or
                not instance.launched_at or instance.task_state or
                instance.vm_state not in self.SOFT_DELETABLE):
            return False
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        try:
            compute.can_send_16()
        except messaging.RPCVersionCapError:
            return False
        cctx = ss_context.target_cell(ctx, cell)
        instance.deleted_at = obj_base.utcnow()
        self._start_task(cctx, instance, 'delete',
                         instance_obj.SOFT_DELETING)
        try:
            compute.soft_delete_instance(ctx, instance.host, instance)
        except Exception as exc:
            _cast_failed(exc, 'the soft delete', uuid)
            instance.deleted_at = None
            self._undo_task(cctx, instance, instance_obj.SOFT_DELETING)
            raise exception.ServiceUnavailable(
                reason='the compute service could not be reached; nothing '
                       'was done')
        return True

    def restore(self, ctx, uuid):
        """A SOFT_DELETED server runs again on its host, counted against
        its project's quota again (OverQuota if it no longer fits) and a
        member of its server group again."""
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        self.check_state(instance, 'restore', [instance_obj.SOFT_DELETED],
                         [None])
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        cctx = ss_context.target_cell(ctx, cell)
        instance.task_state = instance_obj.RESTORING
        deleted_at, instance.deleted_at = instance.deleted_at, None
        try:
            instance.save(cctx, expected_task_state=[None],
                          expected_vm_state=instance_obj.SOFT_DELETED)
        except exception.Conflict:
            raise exception.InstanceInvalidState(
                action='restore', instance_uuid=uuid, attr='task_state',
                state='changing')
        try:
            quota.count_restore(instance.project_id, uuid, instance.flavor)
            instance_action.start_action(cctx, uuid, 'restore')
            compute.restore_instance(ctx, instance.host, instance)
        except Exception as exc:
            if not isinstance(exc, quota.OverQuota):
                _cast_failed(exc, 'the restore', uuid)
            instance.task_state = None
            instance.deleted_at = deleted_at
            try:
                instance.save(cctx,
                              expected_task_state=instance_obj.RESTORING)
                objects.InstanceMapping.queue_for_delete(ctx, uuid)
            except exception.SchedulerSplitException:
                pass
            if isinstance(exc, exception.SchedulerSplitException):
                raise
            raise exception.ServiceUnavailable(
                reason='the compute service could not be reached; nothing '
                       'was done')
        objects.InstanceGroup.rejoin(ctx, uuid)
        return instance

    def _delete(self, ctx, uuid):
        for _ in range(10):
            instance, cell = self.locate(ctx, uuid)
            if cell is None:
                try:
                    # Not scheduled yet: the conductor finds the build
                    # request gone, releases the claim, builds nothing.
                    objects.BuildRequest(instance_uuid=uuid).destroy(ctx)
                    return
                except exception.BuildRequestNotFound:
                    continue
            cctx = ss_context.target_cell(ctx, cell)
            seen = instance.task_state
            instance.task_state = instance_obj.DELETING
            try:
                instance.save(cctx, expected_task_state=seen)
            except exception.Conflict:
                continue
            local = (cell.is_cell0 or not instance.host or
                     instance.vm_state == instance_obj.ERROR)
            try:
                instance_action.start_action(cctx, uuid, 'delete')
                self._end_moves(ctx, cctx, cell, instance)
            except sa_exc.SQLAlchemyError as exc:
                if local:
                    raise
                # DELETING is saved: the delete is under way, and its
                # compute finishes a delete whose last steps failed (see
                # ComputeManager.settle_instances). Answering 503 would
                # tell the user it did not happen.
                outage.report(LOG, exc, 'Server %s is being deleted; its '
                              'compute %s finishes the delete once the '
                              'database is back (%s)', uuid, instance.host,
                              outage.describe(exc),
                              extra={'instance_uuid': uuid})
                return
            if local:
                # Nothing runs anywhere (a failed build's VM is gone with
                # the failure): delete here and drop any claim.
                self.scheduler.try_release_resources(ctx, uuid)
                instance.destroy(cctx)
                return
            compute = compute_rpcapi.ComputeAPI.for_cell(cell)
            try:
                compute.terminate_instance(ctx, instance.host, instance)
            except messaging.MessageDeliveryFailure as exc:
                # As above: DELETING is saved, and the compute finishes
                # a delete whose cast was lost once its bus is back.
                outage.report(LOG, exc, 'Server %s is being deleted; its '
                              'compute %s finishes the delete once it can '
                              'be reached (%s)', uuid, instance.host,
                              outage.describe(exc),
                              extra={'instance_uuid': uuid})
            return
        raise exception.Conflict(
            reason='server %s keeps changing state; try again' % uuid)

    def _end_moves(self, ctx, cctx, cell, instance):
        """A server deleted mid-move: a move waiting for its
        confirmation is confirmed (the source drops its copy and gives
        its resources back); one still under way ends, and its
        migration's claim goes. Each step of that move finds the server
        deleting and stops."""
        for migration in objects.Migration.get_all(
                cctx, instance_uuid=instance.uuid):
            if migration.ended:
                continue
            if migration.status == migration_obj.FINISHED:
                migration.status = migration_obj.CONFIRMING
                try:
                    migration.save(cctx,
                                   expected_status=migration_obj.FINISHED)
                except exception.Conflict:
                    continue
                compute_rpcapi.ComputeAPI.for_cell(cell).confirm_resize(
                    ctx, migration.source_compute, instance, migration)
                continue
            self.scheduler.try_release_resources(ctx, migration.uuid)
            migration.status = migration_obj.ERROR
            migration.save(cctx)

    # --- lifecycle after boot -----------------------------------------------

    @staticmethod
    def check_lock(ctx, instance):
        """409, as Nova's, for a non-admin's action on a locked server."""
        if instance.get('locked', False) and not ctx.is_admin:
            raise exception.InstanceIsLocked(instance_uuid=instance.uuid)

    @staticmethod
    def check_state(instance, action, vm_states, task_states=None):
        """409 unless the server is in one of ``vm_states`` (and, unless
        ``task_states`` is None, in one of those task states)."""
        if vm_states is not None and instance.vm_state not in vm_states:
            raise exception.InstanceInvalidState(
                action=action, instance_uuid=instance.uuid, attr='vm_state',
                state=instance.vm_state)
        if task_states is not None and instance.task_state not in \
                task_states:
            raise exception.InstanceInvalidState(
                action=action, instance_uuid=instance.uuid,
                attr='task_state', state=instance.task_state)

    def cast_action(self, ctx, uuid, action, task_state, vm_states,
                    task_states, method, min_version='1.3', **kwargs):
        """Start ``action`` on the server ``uuid``: check its lock and
        state, set ``task_state`` guarded by the task state read (so that
        of two concurrent actions only one wins), record the instance
        action and cast ``method`` to its compute. The compute's cell
        must run compute RPC ``min_version`` (409 otherwise, before
        anything is written)."""
        for _ in range(10):
            instance, cell = self.locate(ctx, uuid)
            self.check_lock(ctx, instance)
            self.check_state(instance, action, vm_states, task_states)
            if cell is None or cell.is_cell0 or not instance.host:
                raise exception.InstanceNotReady(instance_id=uuid)
            compute = compute_rpcapi.ComputeAPI.for_cell(cell)
            try:
                compute.can_send(min_version)
            except messaging.RPCVersionCapError as exc:
                raise exception.ComputeTooOld(
                    action=action, instance_uuid=uuid,
                    cap=exc.version_cap, needed=min_version)
            cctx = ss_context.target_cell(ctx, cell)
            seen = instance.task_state
            instance.task_state = task_state
            try:
                instance.save(cctx, expected_task_state=seen,
                              expected_vm_state=instance.vm_state)
            except exception.Conflict:
                continue
            instance_action.start_action(cctx, uuid, action)
            try:
                getattr(compute, method)(ctx, instance.host, instance,
                                         **kwargs)
            except Exception as exc:
                _cast_failed(exc, method, uuid)
                self._undo_task(cctx, instance, task_state, back_to=seen)
                raise exception.ServiceUnavailable(
                    reason='the compute service could not be reached; '
                           'nothing was done')
            return instance
        raise exception.Conflict(
            reason='server %s keeps changing state; try again' % uuid)

    def inspect(self, ctx, uuid, action, method, **kwargs):
        """Ask the server's compute ``method`` (a call of compute RPC
        1.6: its console output, its diagnostics) and return the answer;
        409 unless the server runs on a host, and not while it is
        deleted or migrated."""
        instance, cell = self.locate(ctx, uuid)
        if cell is None or cell.is_cell0 or not instance.host:
            raise exception.InstanceNotReady(instance_id=uuid)
        if instance.task_state in (instance_obj.DELETING,
                                   instance_obj.MIGRATING):
            raise exception.InstanceInvalidState(
                action=action, instance_uuid=uuid, attr='task_state',
                state=instance.task_state)
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        try:
            compute.can_send_16()
        except messaging.RPCVersionCapError as exc:
            raise exception.ComputeTooOld(
                action=action, instance_uuid=uuid, cap=exc.version_cap,
                needed='1.6')
        try:
            # Bounded here too: a call waits for its bus's connection
            # without any bound of its own.
            return rpc.call_within(rpc.cell_call_timeout() + 1,
                                   getattr(compute, method), ctx,
                                   instance.host, instance, **kwargs)
        except messaging.MessagingTimeout:
            raise exception.ServiceUnavailable(
                reason='the compute service of %s did not answer within '
                       '%d seconds' % (instance.host,
                                       rpc.cell_call_timeout()))
        except messaging.MessageDeliveryFailure:
            raise exception.ServiceUnavailable(
                reason='the bus of the cell of %s cannot be reached'
                       % instance.host)

    def record_api_action(self, ctx, instance, cell, action):
        """An instance action done by the API alone (lock, unlock)."""
        if cell is not None:
            instance_action.start_action(
                ss_context.target_cell(ctx, cell), instance.uuid, action)
