"""Rescheduling in a cell: the cell conductor hands an instance whose
host could not take it to the next same-cell alternate.

A compute whose build failed casts ``build_instances`` to its cell
conductor with the alternates not tried yet and the retry record (the
attempt count and the hosts tried); a destination that refused a resize
or a cold migration casts ``migrate_reschedule`` the same way (see
:mod:`.migrate`). Each attempt claims the next alternate that takes the
instance, records it in the instance's action and casts the work to that
host. With none left a build ends in ERROR with the exhausted-hosts
fault; a move is rolled back.
"""

import logging

from scheduler_split.conductor.tasks import alternates
from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import build
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.objects import build_plan
from scheduler_split.objects import instance_action

LOG = logging.getLogger(__name__)

EXHAUSTED = ('Exhausted all hosts available for retrying build failures '
             'for instance %s.')


class RescheduleTask(base.ConductorTask):
    """Claim the next alternate of the instance and hand it the work.

    ``ctx`` targets the cell. Subclasses name the ``event`` each attempt
    records, what the log calls the work (``what``) and the instance
    ``action``; they say what is written before the chosen alternate is
    told (``_prepare``), how it is told (``_hand_over``), and which
    failure ends the attempts when none is left (``_exhausted``, then
    raised and rolled back).
    """

    event = None
    what = 'instance'
    action = 'create'

    def __init__(self, scheduler, compute, ctx, instance, request_spec,
                 host_list, retry):
        self.scheduler = scheduler
        self.compute = compute
        self.ctx = ctx
        self.instance = instance
        self.request_spec = request_spec
        self.host_list = host_list
        self.retry = retry
        self.exhausted = False

    def _execute(self):
        uuid = self.instance.uuid
        retry = self.retry
        selection, rest = self._claim_next()
        if selection is None:
            self.exhausted = True
            raise self._exhausted()
        host = selection.service_host
        retry.num_attempts += 1
        retry.hosts = retry.hosts + [host]
        self._prepare(selection)
        instance_action.record_event(
            self.ctx, uuid, self.event, host=host,
            details='rescheduled to %s (attempt %d; hosts tried: %s)' % (
                host, retry.num_attempts, ', '.join(retry.hosts)),
            action=self.action, start_time=self.started)
        LOG.info('Rescheduling %s %s to %s (attempt %d)', self.what, uuid,
                 host, retry.num_attempts, extra={'instance_uuid': uuid})
        self._hand_over(selection, rest)

    def _claim_next(self):
        """Claim the next alternate that takes the instance: ``(its
        selection, the alternates after it)``, or ``(None, [])``."""
        return alternates.claim_next(self.scheduler, self.ctx,
                                     self.instance.uuid, self.host_list)

    def _prepare(self, selection):
        """Nothing to write before the alternate is told, by default."""

    def _hand_over(self, selection, rest):
        raise NotImplementedError

    def _exhausted(self):
        raise NotImplementedError


class _Overtaken(Exception):
    """Another conductor moved the build's plan first: the build is
    theirs to go on with."""


class _Waiting(Exception):
    """No alternate took the build, and it went back to waiting for its
    own host, claimed there again."""


class RescheduleBuildTask(RescheduleTask):
    """A build that failed on its host, or that its host gave back: on
    to the next alternate, or ERROR with the exhausted-hosts fault and no
    claim left.

    A build with a plan (``objects.build_plan``) goes on from its plan:
    its alternates and attempts are the plan's (a compute that restarted
    mid-build sends none); a compute's reschedule that finds the plan
    moved on since that compute gave the build back arrived late, and
    changes nothing. Each alternate is written into the plan,
    only if nobody moved the plan since it was read, before it is
    claimed: two conductors never both take a build on, and a cast that
    was overtaken never starts it (``Instance.save``'s ``build_host``).

    ``waits_on`` (``(host, node)``) names the host that held the claim
    of a build it never answered for, while that host is up and may be
    cast the build again: should every alternate refuse the claim (each
    full, down or disabled), the plan goes back to that host with no
    alternate left and the host is claimed again for the build (a
    refusal may come after a claim was written: the new claim replaces
    whatever the build held), and the build waits for it
    (:func:`.recover.recast_limit`) rather than ending in ERROR while
    the one host with room for it may only be cut off. ``waiting`` then
    says why it waits; the caller records it.
    """

    event = 'conductor_build_instances'

    def __init__(self, scheduler, compute, ctx, instance, request_spec,
                 host_list, retry, plan=None, waits_on=None):
        super().__init__(scheduler, compute, ctx, instance, request_spec,
                         host_list, retry)
        self.plan = plan
        self.waits_on = waits_on
        self.waiting = None

    def _execute(self):
        uuid = self.instance.uuid
        try:
            self.instance = objects.Instance.get_by_uuid(self.ctx, uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its reschedule',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(self.ctx, uuid)
            return
        if self.plan is None:
            self.plan = build_plan.BuildPlan.get(self.ctx, uuid)
            failed_on = self.retry.hosts[-1] if self.retry is not None \
                and self.retry.hosts else None
            if self.plan is not None and failed_on is not None and \
                    self._went_on_without(failed_on):
                # The compute's cast arrived late (held by a conductor
                # cut from its database, say): the sweep of stalled
                # builds took the build on from its plan meanwhile.
                LOG.info('The build of instance %s went on from %s before '
                         'its reschedule from there arrived; leaving it to '
                         '%s', uuid, failed_on,
                         self.plan.host or 'its next conductor',
                         extra={'instance_uuid': uuid})
                return
        if self.plan is not None:
            self.request_spec = self.plan.request_spec
            self.host_list = self.plan.alternates
            self.retry = self.plan.retry
        elif self.request_spec is None:
            raise exception.BuildAbortException(
                instance_uuid=uuid,
                reason='its host gave it back and it has no build plan to '
                       'go on with')
        try:
            super()._execute()
        except _Overtaken:
            LOG.info('The build of instance %s was taken on by another '
                     'conductor; leaving it to it', uuid,
                     extra={'instance_uuid': uuid})
        except _Waiting as waiting:
            self.waiting = str(waiting)

    def _went_on_without(self, host):
        """Whether the plan went on since ``host`` gave the build back: a
        host gives a build back by clearing the plan's host, which names
        it last among the hosts tried until a conductor moves it on."""
        tried = self.plan.retry.hosts
        return self.plan.host is not None or not tried or tried[-1] != host

    def _claim_next(self):
        if self.plan is None:
            return super()._claim_next()
        uuid = self.instance.uuid
        # The casts counted before the plan moves on.
        recasts, refused = self.plan.recasts, []
        for index, selection in enumerate(self.host_list):
            rest = self.host_list[index + 1:]
            # The attempts as they are once this one is made.
            after = objects.SchedulerRetries(
                num_attempts=self.retry.num_attempts + 1,
                hosts=self.retry.hosts + [selection.service_host])
            if not self.plan.move_to(self.ctx, selection, rest, after):
                raise _Overtaken()
            taken = alternates.claim_alternate(self.scheduler, self.ctx,
                                               selection, uuid)
            if taken:
                return selection, rest
            # A scheduler that could not be asked (None) may have
            # written the claim: the build then holds it nowhere sure.
            refused.append(selection.service_host if taken is False
                           else None)
        if self.waits_on is not None and refused and None not in refused:
            self._wait_on_own_host(refused, recasts)
        return None, []

    def _wait_on_own_host(self, refused, recasts):
        """Back to waiting for the host of ``waits_on`` once every
        alternate refused the claim, with one more cast counted than
        before (so a conductor that read the plan before it moved on
        cannot write it), and that host claimed again; returns (to end
        in ERROR) if the claim is not sure to be there."""
        host, node = self.waits_on
        if not self.plan.go_back_to(self.ctx, host, node, self.retry,
                                    recasts + 1):
            raise _Overtaken()
        if alternates.claim_own_host(self.scheduler, self.ctx,
                                     self.request_spec, host, node,
                                     self.instance.uuid):
            raise _Waiting('no alternate took its claim (refused by %s); '
                           'it waits for %s, claimed again' % (
                               ', '.join(refused), host))

    def _prepare(self, selection):
        if build.take_host_zone(self.instance, self.request_spec,
                                selection):
            self.instance.save(self.ctx)

    def _hand_over(self, selection, rest):
        self.compute.build_and_run_instance(
            self.ctx, selection.service_host, selection.nodename,
            self.instance, self.request_spec, rest, self.retry)
        metrics.BUILDS_RESCHEDULED.inc()

    def _exhausted(self):
        uuid = self.instance.uuid
        metrics.RESCHEDULES_EXHAUSTED.inc()
        exc = exception.MaxRetriesExceeded(reason=EXHAUSTED % uuid)
        LOG.warning('Instance %s: %s', uuid, exc.format_message(),
                    extra={'instance_uuid': uuid})
        instance_action.record_event(
            self.ctx, uuid, self.event, result=instance_action.ERROR,
            details='%s (hosts tried: %s)' % (exc.format_message(),
                                              ', '.join(self.retry.hosts)),
            start_time=self.started)
        return exc

    def rollback(self, exc):
        """ERROR with a fault first, then give the claim back.

        Not when the database refused a write of a build with a plan for
        a race: another conductor (the sweep of stalled builds, say)
        wrote the build first, on another Galera node, and goes on with
        it. Its claim is the instance's claim: giving it back, or the
        ERROR, would undo the winner's attempt."""
        instance = self.instance
        if self.plan is not None and outage.aborted_for_a_race(exc):
            LOG.info('The build of instance %s was changed by another '
                     'conductor meanwhile (%s); leaving it to it',
                     instance.uuid, outage.describe(exc),
                     extra={'instance_uuid': instance.uuid})
            return True
        if not self.exhausted:
            exception.log_failure(LOG, exc, 'Rescheduling instance %s '
                                  'failed', instance.uuid,
                                  extra={'instance_uuid': instance.uuid})
        instance.host = None
        instance.node = None
        try:
            instance.save_error(self.ctx, exc)
        except exception.InstanceNotFound:
            pass
        self.scheduler.try_release_resources(self.ctx, instance.uuid)
        return True
