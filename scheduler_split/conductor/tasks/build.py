"""Schedule and build: the super-conductor places the instances of one
boot in the cells the scheduler chose.

1. Only one delivery of a boot takes its build requests (a late original
   and a re-drive never both schedule it).
2. The scheduler is asked once for every instance, with
   ``[conductor] build_max_attempts - 1`` same-cell alternates each; the
   ``scheduler.select_destinations`` start/end notifications are sent
   here, under Nova's names. No host: each instance goes to cell0 in
   ERROR with the reason; a bus that lost the question or the answer
   leaves the build requests for a re-drive instead.
3. Each instance is created in its chosen cell, its mapping pointed at
   that cell (only if nobody placed it first), its build request deleted
   (a user's delete meanwhile means: destroy it and release its claim),
   its build plan recorded in the cell (what the cell's conductor goes on
   with should the cast or the host be lost: ``tasks/recover.py``), and
   its build cast to the chosen compute with the alternates. Until
   the cell holds the instance a failure sends it to cell0; after that it
   fails where it is: ERROR in its cell.
"""

import functools
import logging

import oslo_messaging as messaging
from sqlalchemy import exc as sa_exc

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import unplaced
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import build_plan
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# What a call to the scheduler fails with when the bus, not the scheduler,
# lost the question or its answer (a broker restarting, say).
BUS_FAILURES = (messaging.MessagingTimeout,
                messaging.MessageDeliveryFailure)
# What says nothing about the boot: the bus failed, or the scheduler that
# took the question could not reach its database (a process cut from it
# answers so at once, and stands aside for its peers).
UNANSWERED = BUS_FAILURES + (exception.DatabaseUnavailable,)


def take_host_zone(instance, request_spec, selection):
    """An instance whose user asked for no zone is in its host's zone.

    A Selection of 1.0 (from a scheduler of the release before, or a
    client pinned to 1.0) carries no zone: the instance keeps none.
    Returns whether the instance changed.
    """
    zone = selection.get('availability_zone')
    if request_spec.get('availability_zone') or not zone:
        return False
    if instance.get('availability_zone') == zone:
        return False
    instance.availability_zone = zone
    return True


def _created(cctx, uuid):
    """After a create of instance ``uuid`` whose commit may have been
    written: whether it was (:func:`outage.run`'s ``check``). Nothing
    changes a row the placement wrote before its hand-over, so one in
    another state is not this create's but the leftover of an earlier
    placement (see ``ScheduleAndBuildTask._create``)."""
    try:
        found = objects.Instance.get_by_uuid(cctx, uuid)
    except exception.InstanceNotFound:
        return False, None
    return (found.vm_state == instance_obj.BUILDING and
            found.task_state == instance_obj.SCHEDULING and
            found.host is None), None


def _handed_over(ctx, build_request, cell):
    """After a hand-over to ``cell`` whose commit may have been written:
    whether it was, and then what it answered (:func:`outage.run`'s
    ``check``). The build request it deleted is gone with what users
    changed meanwhile: the instance keeps what it has."""
    uuid = build_request.instance_uuid
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
    except exception.InstanceMappingNotFound:
        # The user deleted the server: nothing to place.
        return True, (False, None)
    if mapping.cell_mapping is None:
        return False, None
    if mapping.cell_mapping.uuid != cell.uuid:
        # Placed by someone else first.
        return True, (False, None)
    return True, (True, build_request.instance.obj_clone())


class ScheduleAndBuildTask(base.ConductorTask):
    """Place the instances of one boot request: ``build_requests`` and
    their ``request_specs``, in the same order."""

    def __init__(self, scheduler, cells, ctx, build_requests, request_specs,
                 computes=compute_rpcapi.ComputeAPI.for_cell,
                 conductors=None):
        """``conductors()``: the super-conductors' client, to pass a boot
        on to them (:meth:`_pass_on`); None passes nothing on."""
        self.scheduler = scheduler
        self.cells = cells
        self.ctx = ctx
        self.build_requests = build_requests
        self.request_specs = request_specs
        self.computes = computes
        self.conductors = conductors
        self.scheduling = False

    def execute(self):
        # In hand from before their takes until the rollback is over: a
        # take written while its answer is awaited, or a boot whose
        # rollback releases and gives back, is never taken for dropped
        # by this process's sweep (SuperConductorPeriodics.
        # resume_orphaned_boots).
        delivered = [br.instance_uuid for br in self.build_requests]
        unplaced.HELD.add(delivered)
        try:
            return super().execute()
        finally:
            unplaced.HELD.discard(delivered)

    def _execute(self):
        ctx = self.ctx
        delivered = list(zip(self.build_requests, self.request_specs))
        pending = []
        for index, (build_request, spec) in enumerate(delivered):
            try:
                if self._take(ctx, build_request):
                    pending.append((build_request, spec))
            except Exception as exc:
                if not self._pass_on(exc, delivered[index:]):
                    raise
                # Those taken before are left taken, not placed while
                # the database is away: this host's sweep of orphaned
                # boots casts them again once it answers.
                return
        if not pending:
            return
        self.build_requests = [br for br, _ in pending]
        self.request_specs = [spec for _, spec in pending]
        self._place(ctx, [br.instance_uuid for br in self.build_requests])

    def _place(self, ctx, uuids):
        spec_obj = self.request_specs[0]
        num_alternates = CONF.conductor.build_max_attempts - 1

        def payload():
            return notifications.SelectDestinationsPayload(
                instance_uuids=uuids, flavor_name=spec_obj.flavor.name,
                num_alternates=num_alternates)

        # The scheduler's notifications, under Nova's names, from the one
        # caller of the scheduler: consumers of Nova's see them unchanged.
        publisher = 'scheduler-split-conductor:%s' % CONF.host
        notifications.emit(ctx, publisher,
                           'scheduler.select_destinations.start', payload)
        self.scheduling = True
        host_lists = self.scheduler.select_destinations(
            ctx, spec_obj, uuids, return_alternates=True,
            num_alternates=num_alternates)
        self.scheduling = False
        notifications.emit(ctx, publisher,
                           'scheduler.select_destinations.end', payload)
        for build_request, request_spec, host_list in zip(
                self.build_requests, self.request_specs, host_lists):
            self._build_in_cell(ctx, build_request, request_spec, host_list)

    def rollback(self, exc):
        """The scheduler placed none of the instances: they go to cell0
        in ERROR with the reason, or wait for a re-drive if the bus lost
        the question or its answer, or the scheduler its database."""
        if not self.scheduling:
            return False
        uuids = [br.instance_uuid for br in self.build_requests]
        self._notify_build_error(uuids, exc)
        extra = {'instance_uuid': uuids[0]} if len(uuids) == 1 else {}
        if isinstance(exc, UNANSWERED):
            LOG.warning('Scheduling %s failed: %s', uuids,
                        outage.describe(exc), extra=extra)
        else:
            exception.log_failure(LOG, exc, 'Scheduling %s failed', uuids,
                                  extra=extra)
        if not isinstance(exc, exception.NoValidHost):
            # A timeout, say: the scheduler may have claimed anyway.
            for uuid in uuids:
                self.scheduler.try_release_resources(self.ctx, uuid)
        if isinstance(exc, UNANSWERED):
            # No cell holds the instances yet, so they wait for a re-drive
            # rather than fail.
            for build_request in self.build_requests:
                self._give_back(build_request)
            return True
        reason = ('no_valid_host' if isinstance(exc, exception.NoValidHost)
                  else 'error')
        for build_request in self.build_requests:
            self._bury_in_cell0(self.ctx, build_request, exc, reason=reason)
        return True

    def _notify_build_error(self, uuids, exc):
        """``compute_task.build_instances.error`` for each instance the
        scheduler did not place, as Nova's conductor sends it."""
        publisher = 'scheduler-split-conductor:%s' % CONF.host
        flavor_name = self.request_specs[0].flavor.name
        for uuid in uuids:
            notifications.emit(
                self.ctx, publisher, 'compute_task.build_instances.error',
                functools.partial(
                    notifications.ComputeTaskPayload, instance_uuid=uuid,
                    flavor_name=flavor_name, state='error',
                    reason=exception.describe(exc)),
                error=True)

    def _give_back(self, build_request):
        try:
            # Only while this host still holds it: nobody took it back.
            build_request.give_back(self.ctx, taken_by=CONF.host)
            LOG.info('Build request of %s is left for a re-drive',
                     build_request.instance_uuid,
                     extra={'instance_uuid': build_request.instance_uuid})
        except Exception:
            # It stays taken: the lost-build sweep settles it.
            LOG.exception('Could not give back the build request of %s',
                          build_request.instance_uuid)

    def _pass_on(self, exc, pairs):
        """A take that failed (``exc``) because this process stands aside
        for its database: the ``pairs`` (build request, spec) not taken
        yet are cast again to the super-conductors' queue, which this
        process no longer consumes, so that a peer that reaches the
        database takes them now rather than after a re-drive (none is
        counted: this cast is a delivery the process had in hand, not
        one the bus lost). A take whose commit was written all the same
        leaves its boot taken by this host: the peer finds it so, and
        this process's sweep of orphaned boots casts it again once its
        database answers. Whether they were passed on."""
        if self.conductors is None or not outage.standing_aside() or \
                not outage.is_database_outage(exc):
            return False
        uuids = [br.instance_uuid for br, _ in pairs]
        extra = {'instance_uuid': uuids[0]} if len(uuids) == 1 else {}
        try:
            self.conductors().schedule_and_build_instances(
                self.ctx, [br for br, _ in pairs],
                [spec for _, spec in pairs])
        except Exception as cast_exc:
            # The re-drive sweep casts them again (a peer's, if this
            # process's database stays away).
            outage.report(LOG, cast_exc, 'Passing the boot of %s on to '
                          'the other super-conductors failed: %s; it waits '
                          'for a re-drive', ', '.join(uuids),
                          outage.describe(cast_exc), extra=extra)
            return True
        # INFO: the outage itself is the process's one WARNING of it.
        LOG.info('Boot of %s passed on to the other super-conductors: '
                 'this one stands aside, its database away (%s)',
                 ', '.join(uuids), outage.describe(exc), extra=extra)
        metrics.BOOTS_PASSED_ON.inc(len(uuids))
        return True

    @staticmethod
    def _take(ctx, build_request):
        """Whether this delivery of a boot is the one to schedule it.

        Only one delivery takes a build request: a late original and a
        re-drive of the same boot never both schedule it (which would
        move the instance's claim under the other's feet). One that is
        gone (a user's delete) or placed (a second delivery) is not
        taken either: there is nothing to schedule.
        """
        if build_request.take(ctx):
            return True
        LOG.info('Build request of %s is gone, placed or already being '
                 'scheduled; ignoring this delivery of its boot',
                 build_request.instance_uuid,
                 extra={'instance_uuid': build_request.instance_uuid})
        return False

    def _cell(self, ctx, cell_uuid):
        return self.cells.get(ctx, cell_uuid)

    def _bury_in_cell0(self, ctx, build_request, exc, reason='error'):
        return unplaced.bury_in_cell0(ctx, self.cells, build_request, exc,
                                      reason=reason,
                                      start_time=self.started)

    def _build_in_cell(self, ctx, build_request, request_spec, host_list,
                       elsewhere=True):
        """Create the instance in the chosen cell and cast its build.

        Until the cell holds the instance, a failure sends it to cell0;
        after that, it fails where it is: ERROR in its cell. A cell whose
        database stayed away while the instance was being created in it
        is the exception, once (``elsewhere``): the claim goes, and the
        scheduler, which no longer chooses the hosts of a cell that does
        not answer it either, is asked again.
        """
        chosen, alternates = host_list[0], host_list[1:]
        uuid = build_request.instance_uuid
        instance = build_request.instance
        try:
            cell = self._cell(ctx, chosen.cell_uuid)
            cctx = ss_context.target_cell(ctx, cell)
            instance.vm_state = instance_obj.BUILDING
            instance.task_state = instance_obj.SCHEDULING
            # Touched now: a boot accepted longer than lost_build_timeout
            # ago (re-driven since) is no lost build to its cell's sweep
            # before its plan is recorded.
            instance.updated_at = obj_base.utcnow()
            take_host_zone(instance, request_spec, chosen)
            event = dict(
                event=unplaced.EVENT, host=chosen.service_host,
                start_time=self.started,
                details='claimed on %s; alternates: %s' % (
                    chosen.service_host,
                    ', '.join(s.service_host for s in alternates) or
                    'none'))
            if not self._create(ctx, cctx, cell, build_request, instance,
                                event):
                # Another super-conductor places it now: its claim,
                # which is this instance's, stays.
                return
        except Exception as exc:
            if elsewhere and outage.is_database_outage(exc):
                self.scheduler.try_release_resources(ctx, uuid)
                self._elsewhere(ctx, build_request, request_spec, chosen,
                                exc)
                return
            LOG.exception('Creating instance %s in cell %s failed', uuid,
                          chosen.cell_uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(ctx, uuid)
            self._bury_in_cell0(ctx, build_request, exc)
            return
        try:
            placed, recorded = outage.run(
                build_request.hand_over, ctx, cell,
                what='Handing instance %s to its cell' % uuid,
                check=functools.partial(_handed_over, ctx, build_request,
                                        cell))
        except Exception as exc:
            LOG.exception('Handing instance %s to %s failed', uuid,
                          chosen.service_host, extra={'instance_uuid': uuid})
            self._unsure_hand_over(ctx, cctx, cell, build_request, instance,
                                   exc)
            return
        try:
            if not placed:
                # Someone placed it first (a sweep of lost builds).
                LOG.info('Instance %s was settled elsewhere meanwhile',
                         uuid, extra={'instance_uuid': uuid})
                instance.destroy(cctx)
                self.scheduler.try_release_resources(ctx, uuid)
                return
            if recorded is None:
                # The user deleted the server while it was being scheduled.
                LOG.info('Instance %s was deleted while scheduling; '
                         'releasing its claim', uuid,
                         extra={'instance_uuid': uuid})
                instance.destroy(cctx)
                self.scheduler.try_release_resources(ctx, uuid)
                return
            # Updates made while it was scheduled went to the build
            # request; from now on they go to the cell.
            if instance.take_user_edits(recorded):
                instance.save(cctx)
            retry = objects.SchedulerRetries(num_attempts=1,
                                             hosts=[chosen.service_host])
            planned = self._record_plan(cctx, uuid, chosen, request_spec,
                                        alternates, retry)
            try:
                self.computes(cell).build_and_run_instance(
                    ctx, chosen.service_host, chosen.nodename, instance,
                    request_spec, alternates, retry)
            except messaging.MessageDeliveryFailure as exc:
                if not planned:
                    raise
                # Nothing was sent (the cell's bus is away): the cell
                # conductor casts it from its plan once the bus answers,
                # rather than this thread waiting for that bus.
                LOG.warning('Instance %s: %s; its cell conductor casts '
                            'the build to %s from its plan once the bus '
                            'of cell %s answers', uuid, outage.describe(exc),
                            chosen.service_host, cell.name,
                            extra={'instance_uuid': uuid})
                return
            metrics.BUILDS_STARTED.inc()
        except Exception as exc:
            # A user's delete as it reached its cell is no bug.
            exception.log_failure(LOG, exc, 'Handing instance %s to %s '
                                  'failed', uuid, chosen.service_host,
                                  extra={'instance_uuid': uuid})
            self._fail_in_cell(ctx, cctx, build_request, instance, exc)

    @staticmethod
    def _create(ctx, cctx, cell, build_request, instance, event):
        """Create ``instance`` in ``cell`` (``cctx``), with ``event``.

        A row of its uuid there already, while this host still holds its
        build request (which the hand-over removes, so no mapping names
        the cell), was left by an earlier placement of the same boot
        that stopped before its hand-over (its process cut from its
        databases, and the boot cast again since): whatever became of
        that row, nothing else knows it. It goes, with what goes with
        it, and the instance is created again; rather than this boot
        ending in cell0 for a duplicate uuid. A build request another
        host holds now (it took the boot back from this one) is that
        host's to place: False, and nothing is undone here; else True.
        """
        uuid = instance.uuid

        def create():
            outage.run(instance.create, cctx, event=event,
                       what='Creating instance %s in its cell' % uuid,
                       check=functools.partial(_created, cctx, uuid))

        try:
            create()
        except sa_exc.IntegrityError as duplicate:
            try:
                held = build_request.held_by(ctx, CONF.host)
            except Exception as exc:
                if not outage.is_outage(exc):
                    raise
                # Whose the row is cannot be told: the duplicate is what
                # failed, not the cell's database.
                raise duplicate from exc
            if not held:
                LOG.info('Instance %s is being placed by another super-'
                         'conductor, which took its boot back from this '
                         'one; leaving it to it', uuid,
                         extra={'instance_uuid': uuid})
                return False
            if not objects.Instance.delete_unplaced(cctx, uuid):
                raise
            LOG.warning('Instance %s had a row in cell %s already, left '
                        'by an earlier placement that stopped before its '
                        'hand-over; that row is removed', uuid, cell.name,
                        extra={'instance_uuid': uuid})
            create()
        return True

    def _elsewhere(self, ctx, build_request, request_spec, chosen, exc):
        """Instance ``uuid`` could not be created in the cell of
        ``chosen``, whose database is away: schedule it once more, to a
        cell that answers, or end it in cell0 with why."""
        uuid = build_request.instance_uuid
        # What failed is logged already, as outages are.
        LOG.info('Instance %s could not be created in cell %s: scheduling '
                 'it again', uuid, chosen.cell_uuid,
                 extra={'instance_uuid': uuid})
        try:
            host_lists = self.scheduler.select_destinations(
                ctx, request_spec, [uuid], return_alternates=True,
                num_alternates=CONF.conductor.build_max_attempts - 1)
        except Exception as again:
            exception.log_failure(LOG, again, 'Scheduling %s again failed',
                                  uuid, extra={'instance_uuid': uuid})
            no_host = isinstance(again, exception.NoValidHost)
            self._bury_in_cell0(
                ctx, build_request, again if no_host else exc,
                reason='no_valid_host' if no_host else 'error')
            return
        self._build_in_cell(ctx, build_request, request_spec, host_lists[0],
                            elsewhere=False)

    @staticmethod
    def _record_plan(cctx, uuid, chosen, request_spec, alternates, retry):
        """What the cell's conductor goes on with should the cast, or the
        host, be lost (``tasks/recover.py``). A help, not a step: a build
        whose plan could not be written is cast all the same, and is
        failed as before if it is lost."""
        plan = build_plan.BuildPlan(uuid, chosen.service_host,
                                    chosen.nodename, request_spec,
                                    alternates, retry)
        try:
            if not outage.run(plan.create, cctx,
                              what='Recording the build plan of %s' % uuid):
                # The sweep of interrupted placements took this one for
                # stopped (it was held up that long) and recorded it.
                LOG.warning('Instance %s had a build plan already; its '
                            'alternates are not in it', uuid,
                            extra={'instance_uuid': uuid})
        except Exception as exc:
            outage.report(LOG, exc, 'Could not record the build plan of '
                          'instance %s (%s); building it without one', uuid,
                          outage.describe(exc),
                          extra={'instance_uuid': uuid})
            return False
        return True

    def _unsure_hand_over(self, ctx, cctx, cell, build_request, instance,
                          exc):
        """The hand-over raised: its transaction may have committed or
        not (a database that went away as it answered). Only the mapping
        tells: pointing at ``cell``, the instance is the cell's and fails
        there; still unplaced, the build request stays, so that the
        server is still listed and the sweep of lost builds ends it in
        cell0 (the row created in ``cell``, which no mapping points at,
        goes). Unreadable, nothing more is done: the build request, if
        it is still there, goes to that sweep, and an instance that was
        handed over to the unfinished-build check of its compute."""
        uuid = instance.uuid
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
        except exception.InstanceMappingNotFound:
            # The user deleted the server meanwhile.
            mapping = None
        except Exception:
            LOG.exception('Could not tell whether instance %s was handed to '
                          'its cell; the sweeps of lost and unfinished '
                          'builds will settle it', uuid,
                          extra={'instance_uuid': uuid})
            return
        placed = mapping is not None and mapping.cell_mapping is not None
        if placed and mapping.cell_mapping.uuid == cell.uuid:
            self._fail_in_cell(ctx, cctx, build_request, instance, exc)
            return
        try:
            # A copy: the build request's instance is what cell0 gets.
            instance.obj_clone().destroy(cctx)
        except exception.InstanceNotFound:
            pass
        except Exception:
            LOG.exception('Could not remove instance %s from its cell',
                          uuid, extra={'instance_uuid': uuid})
        self.scheduler.try_release_resources(ctx, uuid)
        if mapping is not None and not placed:
            self._bury_in_cell0(ctx, build_request, exc)

    def _fail_in_cell(self, ctx, cctx, build_request, instance, exc):
        try:
            instance.save_error(cctx, exc)
        except exception.InstanceNotFound:
            pass
        except Exception:
            LOG.exception('Could not put instance %s in ERROR',
                          instance.uuid)
        self.scheduler.try_release_resources(ctx, instance.uuid)
        try:
            build_request.destroy(ctx)
        except exception.BuildRequestNotFound:
            pass
        except Exception:
            LOG.exception('Could not delete the build request of %s',
                          instance.uuid)
