"""What the REST handlers ask of the system: boot, find, list, delete.

The API never creates an Instance row. A boot writes a BuildRequest, a
RequestSpec and an InstanceMapping (no cell yet) per instance in the API
database and casts ``schedule_and_build_instances`` to the
super-conductor; everything after that happens behind the bus.
"""

import logging

import oslo_messaging as messaging
from oslo_utils import uuidutils
from sqlalchemy import exc as sa_exc

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import quota
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class ComputeAPI:

    def __init__(self, transport=None):
        self.transport = transport or rpc.get_transport()
        self.conductor = conductor_rpcapi.SuperConductorAPI(self.transport)
        self.scheduler = scheduler_client.SchedulerClient(self.transport)

    # --- boot ---------------------------------------------------------------

    def create(self, ctx, name, flavor, image_ref, count=1,
               availability_zone=None, force_hosts=None, metadata=None,
               key_name=None, scheduler_hints=None, description=None,
               group=None, access_ip_v4=None, access_ip_v6=None,
               min_count=None, image_properties=None, boot_details=None):
        """Accept a boot of ``count`` instances (fewer, down to
        ``min_count``, if the project's quota takes no more); return them
        (BUILD). ``image_properties`` (the image's, as the image service
        holds them) go to the scheduler in each RequestSpec.

        Every instance is recorded in one transaction of the API database
        that first takes the project's quota turn, counts and then
        records (see ``scheduler_split.quota``): all of them or none, and
        never past a quota. With ``group`` (an InstanceGroup) every
        instance joins that server group in that transaction.
        ``boot_details``: the Instance fields of the boot beside its
        image (``user_data``, ``kernel_id``, ``ramdisk_id``).
        """
        reservation_id = 'r-' + uuidutils.generate_uuid()[:8]
        now = obj_base.utcnow()
        min_count = count if min_count is None else min_count

        def build(count):
            return self._build_requests(
                ctx, count, name, flavor, image_ref, now, reservation_id,
                availability_zone, force_hosts, metadata, key_name,
                scheduler_hints, description, group, access_ip_v4,
                access_ip_v6, image_properties, boot_details)

        build_requests, request_specs = objects.BuildRequest.record_boot(
            ctx, flavor, min_count, count, build,
            group_uuid=group.uuid if group is not None else None)
        return self._cast_boot(ctx, reservation_id, build_requests,
                               request_specs)

    @staticmethod
    def _build_requests(ctx, count, name, flavor, image_ref, now,
                        reservation_id, availability_zone, force_hosts,
                        metadata, key_name, scheduler_hints, description,
                        group, access_ip_v4, access_ip_v6,
                        image_properties=None, boot_details=None):
        """``count`` build requests, their request specs and the rows
        that record them."""
        build_requests, request_specs, rows = [], [], []
        for index in range(count):
            uuid = uuidutils.generate_uuid()
            display_name = name if count == 1 else '%s-%d' % (name,
                                                              index + 1)
            instance = objects.Instance(
                uuid=uuid, display_name=display_name,
                display_description=description,
                hostname=display_name, project_id=ctx.project_id,
                user_id=ctx.user_id, host=None, node=None,
                vm_state=instance_obj.BUILDING,
                task_state=instance_obj.SCHEDULING,
                power_state=instance_obj.NOSTATE, flavor=flavor,
                image_ref=image_ref, availability_zone=availability_zone,
                key_name=key_name, metadata=metadata or {},
                reservation_id=reservation_id, launch_index=index,
                launched_at=None, terminated_at=None, created_at=now,
                updated_at=None, deleted_at=None, deleted=False, fault=None,
                access_ip_v4=access_ip_v4, access_ip_v6=access_ip_v6,
                **(boot_details or {}))
            spec = objects.RequestSpec(
                instance_uuid=uuid, project_id=ctx.project_id,
                user_id=ctx.user_id, flavor=flavor, image_ref=image_ref,
                num_instances=count, availability_zone=availability_zone,
                force_hosts=force_hosts,
                scheduler_hints=scheduler_hints or {},
                instance_group=group and group.for_request(),
                image_properties=image_properties or {})
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
        return (objects.Instance.get_by_uuid(cctx, uuid,
                                             read_deleted=read_deleted),
                mapping.cell_mapping)

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
            LOG.warning('Server %s is being deleted but could not be taken '
                        'out of its server group (%s); it stays listed there',
                        uuid, outage.describe(exc),
                        extra={'instance_uuid': uuid})
        # From now on it counts against no quota (as in Nova).
        try:
            objects.InstanceMapping.queue_for_delete(ctx, uuid)
        except sa_exc.SQLAlchemyError as exc:
            LOG.warning('Server %s is being deleted but still counts against '
                        'its project\'s quota (%s)', uuid,
                        outage.describe(exc), extra={'instance_uuid': uuid})

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
        except Exception:
            LOG.exception('Casting the soft delete of %s failed', uuid)
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
                LOG.exception('Casting the restore of %s failed', uuid)
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
                LOG.warning('Server %s is being deleted; its compute %s '
                            'finishes the delete once the database is '
                            'back (%s)', uuid, instance.host,
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
            compute.terminate_instance(ctx, instance.host, instance)
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

    # --- moves --------------------------------------------------------------

    def _start_move(self, ctx, uuid, action, vm_states):
        """Check the server may start a move now and that every service
        it needs understands moves; ``(instance, cell)``."""
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        self.check_state(instance, action, vm_states, [None])
        if cell is None or cell.is_cell0 or not instance.host:
            raise exception.InstanceNotReady(instance_id=uuid)
        try:
            compute_rpcapi.ComputeAPI.for_cell(cell).can_move()
            self.conductor.can_move()
            self.scheduler.can_move()
        except messaging.RPCVersionCapError as exc:
            raise exception.ServicesTooOldToMove(
                action=action, instance_uuid=uuid, cap=exc.version_cap)
        return instance, cell

    @staticmethod
    def _check_host_cell(ctx, uuid, cell, host, moved):
        """A server lives in its cell's database, so it is placed again,
        moved or unshelved, only in that cell: a named ``host`` of
        another cell is refused before anything starts (``Invalid``,
        a 400 naming both cells)."""
        if host is None:
            return
        host_cell = objects.HostMapping.get_by_host(ctx, host).cell_mapping
        if host_cell.uuid != cell.uuid:
            raise exception.Invalid(
                reason='host %s is in cell %s, server %s in cell %s; a '
                       'server is %s in its own cell' % (
                           host, host_cell.name, uuid, cell.name, moved))

    def resize(self, ctx, uuid, flavor=None, host=None):
        """Resize the server to ``flavor``, or (without one) migrate it,
        to ``host`` if an admin named one. Returns once its destination
        is claimed (``NoValidHost`` if there is none; the server is then
        as it was)."""
        action = 'resize' if flavor is not None else 'migrate'
        instance, cell = self._start_move(
            ctx, uuid, action, [instance_obj.ACTIVE, instance_obj.STOPPED])
        if host is not None and host == instance.host:
            raise exception.MoveToSameHost()
        self._check_host_cell(ctx, uuid, cell, host, 'migrated')
        cctx = ss_context.target_cell(ctx, cell)
        if flavor is not None:
            quota.count_resize(instance.project_id, uuid, instance.flavor,
                               flavor)
        instance.task_state = instance_obj.RESIZE_PREP
        try:
            instance.save(cctx, expected_task_state=[None],
                          expected_vm_state=instance.vm_state)
        except exception.Conflict:
            if flavor is not None:
                self._count_as(uuid, instance.flavor)
            raise exception.InstanceInvalidState(
                action=action, instance_uuid=uuid, attr='task_state',
                state='changing')
        instance_action.start_action(cctx, uuid, action)
        try:
            return self.conductor.migrate_server(ctx, instance,
                                                 flavor=flavor, host=host)
        except Exception as exc:
            if flavor is not None:
                self._count_as(uuid, instance.flavor)
            if isinstance(exc, exception.SchedulerSplitException):
                raise
            LOG.exception('Starting the %s of %s failed', action, uuid)
            # Whatever the conductor got to, the server must not stay in
            # resize_prep: it is put back as it was.
            self._undo_task(cctx, instance, instance_obj.RESIZE_PREP)
            raise exception.ServiceUnavailable(
                reason='the conductor could not start the %s' % action)

    @staticmethod
    def _start_task(cctx, instance, action, task_state):
        """Write the instance's changes with ``task_state``, guarded by no
        task and the vm state it was read in (of two requests that start
        together one wins, the other gets a 409), and start the instance
        action ``action``."""
        instance.task_state = task_state
        try:
            instance.save(cctx, expected_task_state=[None],
                          expected_vm_state=instance.vm_state)
        except exception.Conflict:
            raise exception.InstanceInvalidState(
                action=action, instance_uuid=instance.uuid,
                attr='task_state', state='changing')
        instance_action.start_action(cctx, instance.uuid, action)

    @staticmethod
    def _undo_task(cctx, instance, task_state, back_to=None):
        """A task whose cast failed: the server's task is ``back_to``
        again (none by default) with whatever else the caller put back,
        written only if it is still in ``task_state``; best effort, the
        caller answers the failure."""
        instance.task_state = back_to
        try:
            instance.save(cctx, expected_task_state=task_state)
        except exception.SchedulerSplitException:
            pass

    def _record_move(self, ctx, cctx, instance, kind, action, task_state):
        """Set ``task_state`` (guarded: of two concurrent requests one
        wins), start the instance action and record the migration
        (``accepted``), made here so that the API can answer with it."""
        self._start_task(cctx, instance, action, task_state)
        return objects.Migration.for_move(
            ctx, instance, kind, migration_obj.ACCEPTED).create(cctx)

    def _cast_move(self, cctx, instance, migration, task_state, cast):
        try:
            cast()
        except Exception:
            LOG.exception('Casting the %s of %s failed',
                          migration.migration_type, instance.uuid)
            migration.status = migration_obj.ERROR
            migration.save(cctx)
            self._undo_task(cctx, instance, task_state)
            raise exception.ServiceUnavailable(
                reason='the conductor could not be reached; nothing was '
                       'done')

    def live_migrate(self, ctx, uuid, host=None, block_migration=None):
        """Live migrate the server (to ``host`` if named); returns the
        migration record, before any host is chosen (errors after that
        are in the instance action)."""
        instance, cell = self._start_move(
            ctx, uuid, 'os-migrateLive',
            [instance_obj.ACTIVE, instance_obj.PAUSED])
        if host is not None and host == instance.host:
            raise exception.MoveToSameHost()
        self._check_host_cell(ctx, uuid, cell, host, 'migrated')
        cctx = ss_context.target_cell(ctx, cell)
        migration = self._record_move(
            ctx, cctx, instance, migration_obj.LIVE_MIGRATION,
            'live-migration', instance_obj.MIGRATING)
        self._cast_move(
            cctx, instance, migration, instance_obj.MIGRATING,
            lambda: self.conductor.live_migrate_instance(
                ctx, instance, migration, host=host,
                block_migration=block_migration))
        return migration

    def evacuate(self, ctx, uuid, host=None, stopped=False):
        """Rebuild the server, whose compute is down, on another host (on
        ``host`` if named); left stopped there with ``stopped``, else in
        the state it was (ACTIVE for one in ERROR)."""
        instance, cell = self._start_move(
            ctx, uuid, 'evacuate',
            [instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.ERROR])
        if host is not None and host == instance.host:
            raise exception.MoveToSameHost()
        self._check_host_cell(ctx, uuid, cell, host, 'evacuated')
        cctx = ss_context.target_cell(ctx, cell)
        service = objects.Service.get_by_host_and_binary(
            cctx, instance.host, service_obj.COMPUTE)
        if service is not None and servicegroup.is_up(
                service.last_seen_up, service.forced_down):
            raise exception.ComputeServiceInUse(host=instance.host)
        migration = self._record_move(
            ctx, cctx, instance, migration_obj.EVACUATION, 'evacuate',
            instance_obj.REBUILDING)
        if stopped:
            migration.old_vm_state = instance_obj.STOPPED
            migration.save(cctx)
        self._cast_move(
            cctx, instance, migration, instance_obj.REBUILDING,
            lambda: self.conductor.evacuate_instance(
                ctx, instance, migration, host=host))
        return migration

    # --- rebuild ------------------------------------------------------------

    REBUILD_NEEDS = 'compute 1.6, conductor 1.11 and scheduler 1.8'

    def rebuild(self, ctx, uuid, image_ref, image_properties, changes,
                preserve_ephemeral=False):
        """Rebuild the server on its own host from ``image_ref`` (whose
        properties are ``image_properties``), writing ``changes``
        (Instance field -> value: name, metadata, key, user data, ...)
        with it; returns the server, ``rebuilding``.

        Guarded by the task state read, as every action: of a rebuild and
        a delete (or another action) that start together one wins. The
        super-conductor has a new image checked against the host before
        the compute rebuilds (``conductor/tasks/rebuild.py``)."""
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        self.check_state(instance, 'rebuild', [
            instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.ERROR],
            [None])
        if cell is None or cell.is_cell0 or not instance.host:
            raise exception.InstanceInvalidState(
                action='rebuild', instance_uuid=uuid, attr='host',
                state='none (it was never placed)')
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        try:
            compute.can_send_16()
            self.conductor.can_rebuild()
            self.scheduler.can_check_rebuild()
        except messaging.RPCVersionCapError as exc:
            raise exception.ServicesTooOld(
                action='rebuild', instance_uuid=uuid, cap=exc.version_cap,
                needed=self.REBUILD_NEEDS)
        cctx = ss_context.target_cell(ctx, cell)
        orig_image_ref = instance.image_ref
        seen = {name: instance.get(name) for name in changes}
        for name, value in changes.items():
            setattr(instance, name, value)
        instance.image_ref = image_ref
        self._start_task(cctx, instance, 'rebuild', instance_obj.REBUILDING)
        try:
            self.conductor.rebuild_instance(
                ctx, instance, orig_image_ref,
                image_properties=image_properties,
                preserve_ephemeral=preserve_ephemeral)
        except Exception:
            LOG.exception('Casting the rebuild of %s failed', uuid)
            # Nothing will rebuild it: the server is as it was.
            for name, value in seen.items():
                setattr(instance, name, value)
            instance.image_ref = orig_image_ref
            self._undo_task(cctx, instance, instance_obj.REBUILDING)
            raise exception.ServiceUnavailable(
                reason='the conductor could not be reached; nothing was '
                       'done')
        return instance

    # --- shelve -------------------------------------------------------------

    SHELVE_NEEDS = 'compute 1.7'
    UNSHELVE_NEEDS = 'compute 1.7 and conductor 1.12'

    def _shelve_services(self, uuid, action, cell, conductor=False):
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        try:
            compute.can_shelve()
            if conductor:
                self.conductor.can_unshelve()
        except messaging.RPCVersionCapError as exc:
            raise exception.ServicesTooOld(
                action=action, instance_uuid=uuid, cap=exc.version_cap,
                needed=self.UNSHELVE_NEEDS if conductor
                else self.SHELVE_NEEDS)
        return compute

    @staticmethod
    def _delete_image(ctx, image_id):
        """Best effort: a shelved image nothing needs any more."""
        if not image_id:
            return
        try:
            image_client.delete_image(ctx, image_id)
        except exception.ImageNotFound:
            pass
        except Exception:
            LOG.exception('Could not delete image %s', image_id)

    def shelve(self, ctx, uuid):
        """Shelve the server: its image is saved as ``<name>-shelved``
        (made here, as Nova's API makes it), then its compute powers it
        off and keeps it SHELVED on its host with its claim, offloading it
        at once with ``[DEFAULT] shelved_offload_time`` 0."""
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        self.check_state(instance, 'shelve', [
            instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.PAUSED,
            instance_obj.SUSPENDED], [None])
        if cell is None or cell.is_cell0 or not instance.host:
            raise exception.InstanceNotReady(instance_id=uuid)
        compute = self._shelve_services(uuid, 'shelve', cell)
        cctx = ss_context.target_cell(ctx, cell)
        image = image_client.create_image(
            ctx, '%s-shelved' % instance.display_name,
            properties={'image_type': 'snapshot', 'instance_uuid': uuid,
                        'base_image_ref': instance.image_ref or '',
                        'user_id': ctx.user_id or ''},
            min_disk=instance.flavor.root_gb,
            min_ram=instance.flavor.memory_mb)
        try:
            self._start_task(cctx, instance, 'shelve', instance_obj.SHELVING)
        except Exception:
            self._delete_image(ctx, image['id'])
            raise
        try:
            compute.shelve_instance(ctx, instance.host, instance,
                                    image['id'])
        except Exception:
            LOG.exception('Casting the shelve of %s failed', uuid)
            self._undo_task(cctx, instance, instance_obj.SHELVING)
            self._delete_image(ctx, image['id'])
            raise exception.ServiceUnavailable(
                reason='the compute service could not be reached; nothing '
                       'was done')
        return instance

    def shelve_offload(self, ctx, uuid):
        """Offload a SHELVED server now: its compute destroys it and gives
        its claim back."""
        return self.cast_action(
            ctx, uuid, 'shelveOffload', instance_obj.SHELVING_OFFLOADING,
            [instance_obj.SHELVED], [None], 'shelve_offload_instance',
            min_version='1.7')

    def unshelve(self, ctx, uuid, spec_changes=None, host=None):
        """Unshelve the server through the super-conductor: a SHELVED one
        runs again on its host; an offloaded one is placed again by the
        scheduler in its cell (``conductor/tasks/unshelve.py``), with the
        request spec changes of the body (its availability zone) and on
        ``host`` if an admin named one (of its cell: 400 otherwise); both
        only for an offloaded server (409 otherwise, as in Nova)."""
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        self.check_state(instance, 'unshelve', [
            instance_obj.SHELVED, instance_obj.SHELVED_OFFLOADED], [None])
        if (instance.vm_state != instance_obj.SHELVED_OFFLOADED and
                (spec_changes or host)):
            raise exception.InstanceInvalidState(
                action='unshelve to a zone or a host', instance_uuid=uuid,
                attr='vm_state', state=instance.vm_state)
        if cell is None or cell.is_cell0:
            raise exception.InstanceNotReady(instance_id=uuid)
        self._check_host_cell(ctx, uuid, cell, host, 'unshelved')
        self._shelve_services(uuid, 'unshelve', cell, conductor=True)
        cctx = ss_context.target_cell(ctx, cell)
        self._start_task(cctx, instance, 'unshelve',
                         instance_obj.UNSHELVING)
        try:
            self.conductor.unshelve_instance(
                ctx, instance, spec_changes=spec_changes, host=host)
        except Exception:
            LOG.exception('Casting the unshelve of %s failed', uuid)
            self._undo_task(cctx, instance, instance_obj.UNSHELVING)
            raise exception.ServiceUnavailable(
                reason='the conductor could not be reached; nothing was '
                       'done')
        return instance

    @staticmethod
    def _count_as(uuid, flavor):
        """The server counts ``flavor`` against its quota again."""
        try:
            quota.settle_resize(uuid, flavor)
        except Exception:
            LOG.exception('Could not count server %s at its flavor again',
                          uuid)

    def _finished_move(self, ctx, uuid, action):
        instance, cell = self.locate(ctx, uuid)
        self.check_lock(ctx, instance)
        cctx = ss_context.target_cell(ctx, cell) if cell else None
        migration = None
        if cctx is not None and instance.vm_state == instance_obj.RESIZED:
            migration = objects.Migration.get_by_instance_and_status(
                cctx, uuid, [migration_obj.FINISHED])
        if migration is None:
            raise exception.InstanceNotResized()
        self.check_state(instance, action, [instance_obj.RESIZED], [None])
        return instance, cell, cctx, migration

    def confirm_resize(self, ctx, uuid):
        """Confirm a finished resize or migration: the source is
        released (by its compute, asynchronously)."""
        instance, cell, cctx, migration = self._finished_move(
            ctx, uuid, 'confirmResize')
        migration.status = migration_obj.CONFIRMING
        try:
            migration.save(cctx, expected_status=migration_obj.FINISHED)
        except exception.Conflict:
            raise exception.InstanceNotResized()
        instance_action.start_action(cctx, uuid, 'confirmResize')
        if migration.is_resize:
            self._count_as(uuid, migration.new_flavor)
        compute_rpcapi.ComputeAPI.for_cell(cell).confirm_resize(
            ctx, migration.source_compute, instance, migration)

    def revert_resize(self, ctx, uuid):
        """Revert a finished resize or migration: the server goes back to
        its source, with its old flavor."""
        instance, cell, cctx, migration = self._finished_move(
            ctx, uuid, 'revertResize')
        migration.status = migration_obj.REVERTING
        try:
            migration.save(cctx, expected_status=migration_obj.FINISHED)
        except exception.Conflict:
            raise exception.InstanceNotResized()
        instance.task_state = instance_obj.RESIZE_REVERTING
        try:
            instance.save(cctx, expected_task_state=[None],
                          expected_vm_state=instance_obj.RESIZED)
        except exception.Conflict:
            migration.status = migration_obj.FINISHED
            migration.save(cctx, expected_status=migration_obj.REVERTING)
            raise exception.InstanceInvalidState(
                action='revertResize', instance_uuid=uuid,
                attr='task_state', state='changing')
        instance_action.start_action(cctx, uuid, 'revertResize')
        if migration.is_resize:
            self._count_as(uuid, migration.old_flavor)
        compute_rpcapi.ComputeAPI.for_cell(cell).revert_resize(
            ctx, migration.dest_compute, instance, migration)

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
            except Exception:
                LOG.exception('Casting %s of %s failed', method, uuid)
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
            return getattr(compute, method)(ctx, instance.host, instance,
                                            **kwargs)
        except messaging.MessagingTimeout:
            raise exception.ServiceUnavailable(
                reason='the compute service of %s did not answer'
                       % instance.host)

    def record_api_action(self, ctx, instance, cell, action):
        """An instance action done by the API alone (lock, unlock)."""
        if cell is not None:
            instance_action.start_action(
                ss_context.target_cell(ctx, cell), instance.uuid, action)
