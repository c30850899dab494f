"""A cell conductor's periodic sweeps: nothing in a cell stays in
flight forever.

Messages get lost (a process crashes, a broker restarts without its
queues) and database writes fail; these sweeps, over the cell's
database, find what was left half done and settle it, each guarded so
that it never undoes a step a service took meanwhile. A cell
conductor's service runs them (``deployment.py``):
:class:`CellConductorPeriodics` ends in ERROR the builds of its cell no
compute will finish (or goes on with them from their plans), settles
the other long tasks (a rebuild, a shelve, an offload, an unshelve)
nobody advances, rolls back moves nobody advances, confirms resizes
left unconfirmed, reclaims soft-deleted servers, offloads shelved ones,
and records itself in its cell's database. The super-conductor's sweeps
are in :mod:`.super_periodic`.
"""

import datetime
import logging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
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
