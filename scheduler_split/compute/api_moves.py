"""The moves of the compute API: resize and cold migration, live
migration, evacuation, rebuild, shelve, offload and unshelve, and the
confirmation or revert of a resize. :class:`Moves` is a part of
:class:`scheduler_split.compute.api.ComputeAPI`, whose ``locate``,
``check_lock``, ``check_state``, ``conductor`` and ``scheduler`` it
uses.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import quota
from scheduler_split import servicegroup

LOG = logging.getLogger(__name__)


class Moves:
    """The moves of :class:`~scheduler_split.compute.api.ComputeAPI`."""

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

    def snapshot(self, ctx, instance, cell, action, make_image):
        """The image ``make_image(queued)`` makes of the server (a
        snapshot or a backup), its data uploaded by the server's compute
        when it can (compute RPC 1.8: the image stays queued until then,
        the server's task is ``image_snapshot``), else made ``active``
        at once with no data."""
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        if not instance.host or not compute.uploads_images():
            return make_image(False)
        cctx = ss_context.target_cell(ctx, cell)
        image = make_image(True)
        self._cast_with_image(
            ctx, cctx, instance, action, instance_obj.IMAGE_SNAPSHOT,
            image['id'], lambda: compute.snapshot_instance(
                ctx, instance.host, instance, image['id']))
        return image

    def _cast_with_image(self, ctx, cctx, instance, action, task_state,
                         image_id, cast):
        """Start ``action`` (``task_state``) and ``cast`` it to the
        server's compute, which fills the image ``image_id``; the image
        goes if either fails, and a failed cast undoes the task (503)."""
        try:
            self._start_task(cctx, instance, action, task_state)
        except Exception:
            self._delete_image(ctx, image_id)
            raise
        try:
            cast()
        except Exception:
            LOG.exception('Casting the %s of %s failed', action,
                          instance.uuid)
            self._undo_task(cctx, instance, task_state)
            self._delete_image(ctx, image_id)
            raise exception.ServiceUnavailable(
                reason='the compute service could not be reached; nothing '
                       'was done')

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
        # The kernel and ramdisk its disk boots with go with it.
        properties = {key: value for key, value in (
            ('kernel_id', instance.kernel_id),
            ('ramdisk_id', instance.ramdisk_id)) if value}
        properties.update({'image_type': 'snapshot', 'instance_uuid': uuid,
                           'base_image_ref': instance.image_ref or '',
                           'user_id': ctx.user_id or ''})
        image = image_client.create_image(
            ctx, '%s-shelved' % instance.display_name,
            properties=properties, min_disk=instance.flavor.root_gb,
            min_ram=instance.flavor.memory_mb,
            queued=compute.uploads_images())
        self._cast_with_image(
            ctx, cctx, instance, 'shelve', instance_obj.SHELVING,
            image['id'], lambda: compute.shelve_instance(
                ctx, instance.host, instance, image['id']))
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

    def _finished_move(self, ctx, uuid, action, status):
        """The server ``uuid`` and its finished move, the move's status
        set to ``status`` (from FINISHED: a move another request took
        first is not resized any more)."""
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
        migration.status = status
        try:
            migration.save(cctx, expected_status=migration_obj.FINISHED)
        except exception.Conflict:
            raise exception.InstanceNotResized()
        return instance, cell, cctx, migration

    def confirm_resize(self, ctx, uuid):
        """Confirm a finished resize or migration: the source is
        released (by its compute, asynchronously)."""
        instance, cell, cctx, migration = self._finished_move(
            ctx, uuid, 'confirmResize', migration_obj.CONFIRMING)
        instance_action.start_action(cctx, uuid, 'confirmResize')
        if migration.is_resize:
            self._count_as(uuid, migration.new_flavor)
        compute_rpcapi.ComputeAPI.for_cell(cell).confirm_resize(
            ctx, migration.source_compute, instance, migration)

    def revert_resize(self, ctx, uuid):
        """Revert a finished resize or migration: the server goes back to
        its source, with its old flavor."""
        instance, cell, cctx, migration = self._finished_move(
            ctx, uuid, 'revertResize', migration_obj.REVERTING)
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
