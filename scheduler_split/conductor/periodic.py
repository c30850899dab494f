"""The conductors' periodic sweeps: nothing stays in flight forever.

Messages get lost (a process crashes, a broker restarts without its
queues) and database writes fail; these sweeps find what was left half
done and settle it, each guarded so that it never undoes a step a
service took meanwhile. The services run them (``deployment.py``):

- the super-conductor (:class:`SuperConductorPeriodics`) re-drives boots
  no super-conductor took, ends in cell0 those never scheduled, finishes
  placements a crash interrupted, releases claims nothing needs, and
  records itself in cell0;
- a cell conductor (:class:`CellConductorPeriodics`) ends in ERROR the
  builds of its cell no compute will finish, settles the other long
  tasks (a rebuild, a shelve, an offload, an unshelve) nobody advances,
  rolls back moves nobody advances, confirms resizes left unconfirmed,
  reclaims soft-deleted servers, offloads shelved ones, and records
  itself in its cell's database.
"""

import datetime
import logging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import reconcile
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import build
from scheduler_split.conductor.tasks import move
from scheduler_split.conductor.tasks import recover
from scheduler_split.conductor.tasks import unshelve
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import build_plan
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import instance_sweeps
from scheduler_split.objects import migration as migration_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)

LOST_BEFORE_SCHEDULING = ('no conductor scheduled it within '
                          '[conductor] lost_build_timeout; the boot was lost')
LOST_IN_CELL = ('no compute took the build within [conductor] '
                'lost_build_timeout; the build was lost')
LOST_HOST_DOWN = ('the compute service of %s, where it was building, has '
                  'been down for longer than [DEFAULT] service_down_time; '
                  'the build was lost')
# The long tasks besides builds and moves that a lost message can leave
# a server in, by task state: the action each is part of.
LOST_TASKS = {instance_obj.REBUILDING: 'rebuild',
              instance_obj.REBUILD_SPAWNING: 'rebuild',
              instance_obj.SHELVING: 'shelve',
              instance_obj.SHELVING_OFFLOADING: 'shelveOffload',
              instance_obj.UNSHELVING: 'unshelve'}


class SuperConductorPeriodics:
    """The super-conductor's sweeps, over the API database and every
    cell's."""

    def __init__(self, transport=None):
        self.transport = transport
        self.scheduler = scheduler_client.SchedulerClient(transport)
        self.cells = build.CellMappings()
        self._conductor = None
        # Boots this host took before then were taken by a run of it
        # that is gone (resume_orphaned_boots).
        self.started_at = obj_base.naive_utc(obj_base.utcnow())

    @property
    def conductor(self):
        """The super-conductors' own client (re-drives of boots)."""
        if self._conductor is None:
            self._conductor = conductor_rpcapi.SuperConductorAPI(
                self.transport or rpc.get_transport())
        return self._conductor

    def report_service(self):
        """Heartbeat this super-conductor's record, with its service
        version, in cell0 (the top level's services live there, as in
        Nova), for the API's ``[upgrade_levels] conductor = auto``."""
        ctx = ss_context.get_admin_context()
        try:
            cell0 = self.cells.get(ctx, cell_mapping_obj.CELL0_UUID)
        except exception.CellMappingNotFound:
            LOG.debug('cell0 is not mapped yet; no service record')
            return
        objects.Service.heartbeat(ss_context.target_cell(ctx, cell0),
                                  CONF.host, service_obj.CONDUCTOR,
                                  conductor_rpcapi.TOPIC)

    def heal_allocations(self):
        """Release the claims nothing needs any more (see
        :mod:`scheduler_split.conductor.reconcile`)."""
        ctx = ss_context.get_admin_context()
        try:
            return reconcile.heal_allocations(self.scheduler, ctx)
        except Exception as exc:
            LOG.warning('The reconciliation of claims stopped: %s; it '
                        'resumes at the next run',
                        exception.describe(exc))
            return []

    def fail_lost_builds(self):
        """Build requests nothing scheduled end in cell0: untouched for
        ``[conductor] lost_build_timeout`` seconds, and, if no
        super-conductor took them, re-driven ``build_redrive_limit``
        times already (the last re-drive starts the timeout again).

        Like every placement of an instance, this one only counts if it
        is the first to give the instance mapping its cell, so a late
        delivery of the original boot and this sweep never both win.
        """
        ctx = ss_context.get_admin_context()
        # This process's own placements in flight are not lost, however
        # long they take; nor do other super-conductors take them for it.
        objects.BuildRequest.renew(ctx, build.HELD.uuids(), CONF.host)
        for build_request in objects.BuildRequest.get_older_than(
                ctx, CONF.conductor.lost_build_timeout,
                redrive_limit=CONF.conductor.build_redrive_limit):
            uuid = build_request.instance_uuid
            if not build.still_pending(ctx, build_request):
                continue
            LOG.warning('Build request of %s was never scheduled; putting '
                        'the instance in ERROR', uuid,
                        extra={'instance_uuid': uuid})
            if build.bury_in_cell0(ctx, self.cells, build_request,
                                   exception.BuildAbortException(
                                       instance_uuid=uuid,
                                       reason=LOST_BEFORE_SCHEDULING),
                                   reason='lost'):
                metrics.LOST_BUILDS_FAILED.labels(
                    reason='never_scheduled').inc()
                # A run that died after claiming leaves its claim behind.
                self.scheduler.try_release_resources(ctx, uuid)

    def redrive_lost_boots(self):
        """Cast again the boots no super-conductor took.

        A boot waits on the bus, in the super-conductor's queue, until one
        takes its build request. A broker that restarts without keeping
        that queue loses it. A build request nobody took for
        ``[conductor] build_redrive_interval`` seconds is cast again, at
        most ``build_redrive_limit`` times; whichever delivery takes it
        first schedules it, the others find it taken. One never taken ends
        in cell0 through :meth:`fail_lost_builds`.
        """
        ctx = ss_context.get_admin_context()
        why = ('was taken by no super-conductor within %d seconds'
               % CONF.conductor.build_redrive_interval)
        return [build_request.instance_uuid
                for build_request, seen in objects.BuildRequest.get_untaken(
                    ctx, CONF.conductor.build_redrive_interval)
                if self._redrive(ctx, build_request, seen, why)]

    def resume_orphaned_boots(self):
        """Place again the boots this host's previous run had taken.

        A super-conductor that dies while it places a boot leaves its
        build request taken (by its host) and in no cell; one that
        starts on the same host finds those it took before it started:
        whatever the dead run wrote into a cell for them (a row waiting
        for its first host, which no mapping names) goes, whatever it
        claimed is released, and the boot is cast again, as a re-drive
        (``build_redrive_limit`` counts it). One process per host is
        assumed, as for every service's RPC server. Returns the uuids
        cast again.
        """
        ctx = ss_context.get_admin_context()
        resumed = []
        for build_request, seen in objects.BuildRequest.get_orphans(
                ctx, CONF.host, self.started_at):
            uuid = build_request.instance_uuid
            for cell in objects.CellMapping.get_all(ctx):
                objects.Instance.delete_unplaced(
                    ss_context.target_cell(ctx, cell), uuid)
            self.scheduler.try_release_resources(ctx, uuid)
            if not build_request.give_back(ctx, taken_by=CONF.host):
                continue
            if self._redrive(ctx, build_request, seen,
                             'was being placed by the previous run of this '
                             'super-conductor'):
                resumed.append(uuid)
        return resumed

    def _redrive(self, ctx, build_request, seen, why):
        """Cast the boot of ``build_request`` again, unless it was re-driven
        ``build_redrive_limit`` times (``seen``), is placed or gone, or
        another super-conductor re-drove it first: whether it was."""
        limit = CONF.conductor.build_redrive_limit
        uuid = build_request.instance_uuid
        if seen >= limit or not build.still_pending(ctx, build_request):
            return False
        try:
            spec = objects.RequestSpec.get_by_instance_uuid(ctx, uuid)
        except Exception as exc:
            # Not found: the server was deleted since it was read.
            exception.log_failure(LOG, exc, 'Reading the request spec of '
                                  '%s failed; not re-driving its boot',
                                  uuid, extra={'instance_uuid': uuid})
            return False
        if not build_request.note_redrive(ctx, seen):
            return False
        LOG.warning('Boot of instance %s %s; casting it again (%d of %d)',
                    uuid, why, seen + 1, limit,
                    extra={'instance_uuid': uuid})
        try:
            self.conductor.schedule_and_build_instances(
                ctx, [build_request], [spec])
        except Exception:
            LOG.exception('Re-driving the boot of %s failed', uuid,
                          extra={'instance_uuid': uuid})
            return False
        metrics.BOOTS_REDRIVEN.inc()
        return True

    def clean_up_placements(self):
        """Finish placements a crash or an error interrupted.

        An instance lives in exactly one cell, the one its mapping names:

        - a build request whose mapping has named a cell for
          ``[conductor] lost_build_timeout`` seconds was left by a
          placement that stopped before deleting it: it goes, and the
          user's edits it recorded reach the cell's row;
        - a row in a cell other than the one its mapping names was
          created by a placement that lost (to the lost-build sweep, or
          before an error sent the instance to cell0): it is marked
          deleted, and no claim is released, since the claims of an
          instance are those of its one live copy.

        Returns ``(build requests deleted, rows deleted)`` as uuids.
        """
        ctx = ss_context.get_admin_context()
        stale = []
        for build_request in objects.BuildRequest.get_placed(
                ctx, CONF.conductor.lost_build_timeout):
            if self._forget_build_request(ctx, build_request):
                stale.append(build_request.instance_uuid)
        strays = []
        for cell in objects.CellMapping.get_all(ctx):
            try:
                strays.extend(self._remove_strays(ctx, cell))
            except Exception:
                LOG.exception('Looking for instances of cell %s that '
                              'belong to another cell failed', cell.name)
        return stale, strays

    @staticmethod
    def _forget_build_request(ctx, build_request):
        uuid = build_request.instance_uuid
        try:
            recorded = build_request.destroy(ctx)
        except exception.BuildRequestNotFound:
            return False
        LOG.warning('Build request of %s outlived the placement of the '
                    'instance; deleted it', uuid,
                    extra={'instance_uuid': uuid})
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
            cctx = ss_context.target_cell(ctx, mapping.cell_mapping)
            instance = objects.Instance.get_by_uuid(cctx, uuid)
            if instance.take_user_edits(recorded):
                instance.save(cctx)
        except (exception.InstanceNotFound,
                exception.InstanceMappingNotFound):
            pass
        return True

    @staticmethod
    def _remove_strays(ctx, cell):
        """Rows of ``cell`` whose instance mapping names another cell."""
        cctx = ss_context.target_cell(ctx, cell)
        # Only a build leaves such a row: it is building or in ERROR.
        candidates = instance_sweeps.uuids_in_vm_states(
            cctx, (instance_obj.BUILDING, instance_obj.ERROR))
        if not candidates:
            return []
        mapped = objects.InstanceMapping.get_cell_ids(ctx, candidates)
        removed = []
        for uuid in candidates:
            cell_id = mapped.get(uuid)
            if cell_id is None or cell_id == cell.id:
                continue
            LOG.warning('Instance %s has a row in cell %s but lives in '
                        'another cell; marking that row deleted',
                        uuid, cell.name, extra={'instance_uuid': uuid})
            try:
                objects.Instance.get_by_uuid(cctx, uuid).destroy(cctx)
            except exception.InstanceNotFound:
                continue
            removed.append(uuid)
        return removed


class CellConductorPeriodics:
    """A cell conductor's sweeps, over its cell's database
    (``cell_db``)."""

    def __init__(self, cell_db, transport=None):
        self.cell_db = cell_db
        transport = transport or rpc.get_transport()
        self.scheduler = scheduler_client.SchedulerClient(transport)
        self.compute = compute_rpcapi.ComputeAPI(transport, cell_db)

    def _context(self):
        return ss_context.targeted(ss_context.get_admin_context(),
                                   self.cell_db)

    def report_service(self):
        """Heartbeat this cell conductor's record, with its service
        version, in its cell database, for the computes'
        ``[upgrade_levels] conductor = auto``."""
        objects.Service.heartbeat(self._context(), CONF.host,
                                  service_obj.CONDUCTOR,
                                  conductor_rpcapi.TOPIC)

    def _live_computes(self, ctx):
        """``host_up(host)``: whether the compute of ``host`` in this cell
        is up, as its service record says now."""
        since = servicegroup.up_since()
        live = {service.host for service in objects.Service.get_all(ctx)
                if service.binary == service_obj.COMPUTE and
                servicegroup.is_up(service.last_seen_up,
                                   service.forced_down, since)}
        return live.__contains__

    def _recover(self, ctx, instance, plan, host_up):
        task = recover.RecoverBuildTask(self.scheduler, self.compute, ctx,
                                        instance, plan, host_up)
        try:
            task.execute()
        except (exception.InstanceNotFound, exception.Conflict):
            # Moved on since it was read.
            pass
        except Exception as exc:
            if outage.is_outage(exc):
                raise
            # A build that ran out of alternates is in ERROR, its fault
            # and log line written by the task: not a failure of the
            # sweep.
            if not task.rolled_back:
                exception.log_failure(LOG, exc, 'Going on with the build '
                                      'of %s failed', instance.uuid,
                                      extra={'instance_uuid': instance.uuid})

    def recover_builds(self):
        """Go on with the builds whose cast was lost, from their plans.

        A build that waits for a host (task state ``scheduling``, none
        set) and that neither it nor its plan saw a change of for
        ``[conductor] build_redrive_interval`` seconds is cast again to
        the host holding its claim, or on to its next alternate
        (:mod:`.tasks.recover`). The plans of finished builds go first.
        Returns the uuids gone on with.
        """
        ctx = self._context()
        build_plan.BuildPlan.prune(ctx)
        stalled = build_plan.BuildPlan.get_stalled(
            ctx, CONF.conductor.build_redrive_interval)
        if not stalled:
            return []
        host_up = self._live_computes(ctx)
        for instance, plan in stalled:
            self._recover(ctx, instance, plan, host_up)
        return [instance.uuid for instance, _ in stalled]

    def fail_lost_builds(self):
        """Builds nothing will finish end in ERROR, unless their plan
        lets them go on.

        Two kinds: a build without a host (its cast to a compute, or to
        this conductor for a reschedule, was lost) that nothing touched
        for ``lost_build_timeout`` and that has no plan (one with a plan
        is :meth:`recover_builds`'); and a build on a host whose compute
        has been down for ``service_down_time`` (it crashed, or lost its
        bus, mid-build): with a plan it goes on to its next alternate.
        The others end in ERROR with a fault, written only if the
        instance is still in the state the sweep saw (a compute or a
        delete that moves it first wins), then their claim is released.
        """
        ctx = self._context()
        host_up = None
        for instance, why in instance_sweeps.get_unhandled_builds(
                ctx, CONF.conductor.lost_build_timeout, service_obj.COMPUTE,
                CONF.service_down_time):
            uuid = instance.uuid
            if why == instance_sweeps.LOST_HOST_DOWN:
                plan = build_plan.BuildPlan.get(ctx, uuid)
                if plan is not None:
                    host_up = host_up or self._live_computes(ctx)
                    self._recover(ctx, instance, plan, host_up)
                    continue
            seen_task_state = instance.task_state
            if why == instance_sweeps.LOST_NO_HOST:
                reason = LOST_IN_CELL
            else:
                reason = LOST_HOST_DOWN % instance.host
            exc = exception.BuildAbortException(instance_uuid=uuid,
                                                reason=reason)
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            fault = objects.InstanceFault.from_exception(uuid, exc)
            try:
                instance.save(ctx, expected_task_state=seen_task_state,
                              expected_vm_state=instance_obj.BUILDING,
                              fault=fault)
            except (exception.InstanceNotFound, exception.Conflict):
                continue
            metrics.LOST_BUILDS_FAILED.labels(
                reason='no_host' if why == instance_sweeps.LOST_NO_HOST
                else 'host_down').inc()
            LOG.warning('Build of instance %s was lost (%s); it is in '
                        'ERROR now', uuid, reason,
                        extra={'instance_uuid': uuid})
            instance_action.record_event(
                ctx, uuid, 'conductor_fail_lost_builds',
                host=instance.host, result=instance_action.ERROR,
                details=exc.format_message())
            self.scheduler.try_release_resources(ctx, uuid)

    def fail_lost_moves(self):
        """No server stays moving forever.

        A move that no service advanced for ``[conductor]
        lost_build_timeout`` seconds (its message was lost with a crashed
        process, or a compute died under it) is rolled back: the migration
        ends in error first (so that a late step finds it ended and
        stops), then the move is undone as any move that will not happen
        is (``tasks.move.roll_back``), with a fault. Returns the
        migrations rolled back.
        """
        ctx = self._context()
        cutoff = obj_base.utcnow() - datetime.timedelta(
            seconds=CONF.conductor.lost_build_timeout)
        lost = []
        for migration in objects.Migration.get_all(
                ctx, statuses=migration_obj.UNDER_WAY,
                updated_before=cutoff):
            seen = migration.status
            migration.status = migration_obj.ERROR
            try:
                migration.save(ctx, expected_status=seen)
            except (exception.Conflict, exception.MigrationNotFound):
                continue
            uuid = migration.instance_uuid
            try:
                instance = objects.Instance.get_by_uuid(ctx, uuid)
            except exception.InstanceNotFound:
                self.scheduler.try_release_resources(ctx, migration.uuid)
                continue
            if instance.task_state not in move.MOVING.get(
                    migration.migration_type, ()) and \
                    instance.host != migration.source_compute:
                # It did move (the record was not told): the source's
                # hold is all that is left.
                self.scheduler.try_release_resources(ctx, migration.uuid)
                continue
            exc = exception.MoveLost(
                kind=migration.migration_type, instance_uuid=uuid,
                status=seen)
            LOG.warning('%s', exc.format_message(),
                        extra={'instance_uuid': uuid})
            move.roll_back(self.scheduler, ctx, migration, exc,
                           'conductor_fail_lost_moves', instance=instance)
            lost.append(migration.uuid)
        return lost

    def fail_lost_tasks(self):
        """No server stays in a long task forever.

        A task that is not a build or a move (:data:`LOST_TASKS`) that no
        service advanced for ``[conductor] lost_build_timeout`` seconds
        (its message was lost with a crashed process, or its compute died
        in it) ends with a fault and an event in Error, written only if
        the server is still in the task the sweep saw:

        - a rebuild in ERROR, then its claim given back (a server in
          ERROR holds none; a rebuild claims its host again);
        - an offload, or an unshelve of an offloaded server, offloaded:
          no host, no claim (:func:`unshelve.back_to_offloaded`);
        - a shelve, or an unshelve of a server still on its host, as the
          server was, its task cleared and its claim kept.

        Returns the uuids settled.
        """
        ctx = self._context()
        settled = []
        for instance in instance_sweeps.get_stalled_tasks(
                ctx, LOST_TASKS, CONF.conductor.lost_build_timeout,
                migration_obj.UNDER_WAY):
            uuid = instance.uuid
            seen = instance.task_state
            action = LOST_TASKS[seen]
            exc = exception.TaskLost(action=action, instance_uuid=uuid,
                                     task_state=seen)
            if seen == instance_obj.SHELVING_OFFLOADING or (
                    seen == instance_obj.UNSHELVING and
                    instance.vm_state == instance_obj.SHELVED_OFFLOADED):
                if unshelve.back_to_offloaded(
                        self.scheduler, ctx, instance, exc,
                        'conductor_fail_lost_tasks', host=CONF.host,
                        action=action):
                    LOG.warning('%s; it is SHELVED_OFFLOADED now',
                                exc.format_message(),
                                extra={'instance_uuid': uuid})
                    settled.append(uuid)
                continue
            in_error = seen in (instance_obj.REBUILDING,
                                instance_obj.REBUILD_SPAWNING)
            if in_error:
                instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            try:
                instance.save(
                    ctx, expected_task_state=seen,
                    fault=objects.InstanceFault.from_exception(uuid, exc),
                    event=dict(event='conductor_fail_lost_tasks',
                               host=CONF.host,
                               result=instance_action.ERROR,
                               details=exc.format_message(),
                               action=action))
            except (exception.InstanceNotFound, exception.Conflict):
                continue
            LOG.warning('%s; it is %s now', exc.format_message(),
                        instance.vm_state, extra={'instance_uuid': uuid})
            if in_error:
                self.scheduler.try_release_resources(ctx, uuid)
            settled.append(uuid)
        return settled

    def offload_shelved(self):
        """Servers SHELVED for longer than ``[DEFAULT]
        shelved_offload_time`` are offloaded: each is marked
        ``shelving_offloading`` (guarded: an unshelve or a delete that
        comes first wins) and its compute told to offload it, which gives
        its claim back (a compute that cannot be told leaves it to
        :meth:`fail_lost_tasks`). Returns the uuids offloaded."""
        seconds = CONF.shelved_offload_time
        if seconds <= 0:
            return []
        ctx = self._context()
        return self._take_expired(
            ctx, instance_sweeps.get_shelved(ctx, seconds),
            instance_obj.SHELVED, instance_obj.SHELVING_OFFLOADING,
            dict(event='conductor_offload_shelved', action='shelve',
                 details='shelved more than %d seconds ago' % seconds),
            self.compute.shelve_offload_instance, 'offload')

    def _take_expired(self, ctx, instances, vm_state, task_state, event,
                      cast, what, unreachable=''):
        """Of ``instances`` (in ``vm_state`` with no task, expired), each
        is set in ``task_state`` (guarded: an action that comes first
        wins), with the event ``event`` (keyword arguments of
        ``instance_action.add_event`` but the host), and its compute is
        told to ``what`` it (``cast``); ``unreachable`` says what
        happens when it cannot be told. Returns the uuids taken."""
        taken = []
        for instance in instances:
            uuid = instance.uuid
            instance.task_state = task_state
            try:
                instance.save(ctx, expected_task_state=[None],
                              expected_vm_state=vm_state,
                              event=dict(event, host=CONF.host))
            except (exception.InstanceNotFound, exception.Conflict):
                continue
            LOG.info('Instance %s was %s: its compute is told to %s it',
                     uuid, event['details'], what,
                     extra={'instance_uuid': uuid})
            taken.append(uuid)
            try:
                cast(ctx, instance.host, instance)
            except Exception as exc:
                LOG.warning('Could not tell %s to %s instance %s (%s)%s',
                            instance.host, what, uuid, exc, unreachable,
                            extra={'instance_uuid': uuid})
        return taken

    def reclaim_soft_deleted(self):
        """Servers SOFT_DELETED for longer than ``[DEFAULT]
        reclaim_instance_interval`` are deleted for good: each is marked
        ``deleting`` (guarded: a restore or a forceDelete that comes first
        wins) and its compute told to terminate it, which releases its
        claim (a compute that cannot be told finishes the delete when it
        starts). Returns the uuids reclaimed."""
        interval = CONF.reclaim_instance_interval
        if not interval:
            return []
        ctx = self._context()
        # A compute that cannot be told finishes such deletes when it
        # starts (settle_instances): the server stays deleting.
        return self._take_expired(
            ctx, instance_sweeps.get_soft_deleted(ctx, interval),
            instance_obj.SOFT_DELETED, instance_obj.DELETING,
            dict(event='conductor_reclaim_instance', action='delete',
                 details='soft-deleted more than %d seconds ago'
                         % interval),
            self.compute.terminate_instance, 'delete',
            unreachable='; it finishes the delete when it starts')

    def confirm_old_resizes(self):
        """Resizes and migrations waiting for a confirmation longer than
        ``[DEFAULT] resize_confirm_window`` seconds are confirmed, as if
        their user had (0: never)."""
        window = CONF.resize_confirm_window
        if not window:
            return []
        ctx = self._context()
        cutoff = obj_base.utcnow() - datetime.timedelta(seconds=window)
        confirmed = []
        for migration in objects.Migration.get_all(
                ctx, statuses=[migration_obj.FINISHED],
                updated_before=cutoff):
            migration.status = migration_obj.CONFIRMING
            try:
                migration.save(ctx, expected_status=migration_obj.FINISHED)
                instance = objects.Instance.get_by_uuid(
                    ctx, migration.instance_uuid)
            except (exception.Conflict, exception.MigrationNotFound,
                    exception.InstanceNotFound):
                continue
            LOG.info('Confirming the move of instance %s, unconfirmed for '
                     'more than %d seconds', instance.uuid, window,
                     extra={'instance_uuid': instance.uuid})
            self.compute.confirm_resize(ctx, migration.source_compute,
                                        instance, migration)
            confirmed.append(migration.uuid)
        return confirmed
