"""Going on with a build in a cell from its plan, rather than failing
it: the cell conductor's sweep finds a build that waits for a host
(the cast to its host, or its host's give-back to this conductor, was
lost with a crashed process or a restarted broker) or one whose host
died under it (``objects.build_plan`` says what the plan holds).

- A build whose plan names a host that is up, and that was cast there
  fewer than ``[conductor] build_redrive_limit`` times, is cast there
  again: its claim is there. A second delivery is harmless: a build
  starts once, and only on the host its plan names. With no alternate
  left, it is cast there for as long as ``[conductor]
  lost_build_timeout`` allows (:func:`recast_limit`): the host may only
  be cut off for a while, and ERROR is the one outcome left otherwise.
- Otherwise (that host is down, the casts are spent, or the host gave
  the build back) it goes on to its next alternate, as a build that
  failed on its host does (:class:`.reschedule.RescheduleBuildTask`),
  and ends in ERROR only when none is left. A build whose casts were
  spent on a host that is still up goes back to waiting for that host,
  with no alternate left and that host claimed again, if every
  alternate refused its claim (each full, say): that host has room for
  it and may only be cut off.
- A build spawning on a host whose compute has been down for
  ``[DEFAULT] service_down_time``, or whose compute restarted and no
  longer runs it (it gives the build back: ``give_back_build``), goes
  back to scheduling without a host first; then as above. Should a
  compute thought down come back and finish the spawn, its save finds
  the build gone on without it and destroys what it made.
"""

import logging

from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import reschedule
from scheduler_split import conf
from scheduler_split import metrics
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

CONF = conf.CONF
LOG = logging.getLogger(__name__)

EVENT = 'conductor_recover_build'


# Why a build goes back from the host it was on.
HOST_DOWN = ('the compute service of %s, where it was building, has been '
             'down for longer than [DEFAULT] service_down_time; '
             'rescheduling')
HOST_RESTARTED = ('the compute service on %s restarted during the build; '
                  'rescheduling')


def recast_limit(plan):
    """How many times the build is cast again to the host holding its
    claim before it goes on: ``[conductor] build_redrive_limit``, or,
    with no alternate left to go on to, as many as fit in ``[conductor]
    lost_build_timeout`` (a host cut off for a while, still up, takes the
    build once it is back rather than the build ending in ERROR)."""
    return _recasts_allowed(bool(plan.alternates))


def _recasts_allowed(alternates_left):
    limit = CONF.conductor.build_redrive_limit
    if alternates_left or not limit:
        return limit
    return max(limit, CONF.conductor.lost_build_timeout //
               CONF.conductor.build_redrive_interval)


class RecoverBuildTask(base.ConductorTask):
    """Go on with the build of ``instance`` (as it was just read) from
    ``plan``. A build on a host goes back from it first, for the reason
    ``why`` (a format of the host); ``host_up(host)`` says whether a
    compute is up now. ``ctx`` targets the cell."""

    def __init__(self, scheduler, compute, ctx, instance, plan, host_up,
                 why=HOST_DOWN):
        self.scheduler = scheduler
        self.compute = compute
        self.ctx = ctx
        self.instance = instance
        self.plan = plan
        self.host_up = host_up
        self.why = why
        # Whether the build went back from its host.
        self.given_back = False
        # The reschedule that takes the build on to its next alternate.
        self.rescheduling = None

    def _execute(self):
        if self.instance.host is not None:
            self._give_back()
        elif self._recast():
            return
        plan, uuid = self.plan, self.instance.uuid
        # A host that is up and never answered for the build may only be
        # cut off: the build waits for it, should no alternate take it,
        # while it can still be cast there (the going back counts as one
        # cast).
        waits_on = None
        if plan.host and plan.recasts + 1 < _recasts_allowed(False) and \
                self.host_up(plan.host):
            waits_on = (plan.host, plan.node)
        self.rescheduling = reschedule.RescheduleBuildTask(
            self.scheduler, self.compute, self.ctx, self.instance, None,
            [], None, plan=plan, waits_on=waits_on)
        try:
            self.rescheduling.execute()
        finally:
            waiting = self.rescheduling.waiting
            metrics.BUILDS_RECOVERED.labels(
                how='waiting' if waiting else 'rescheduled').inc()
        if waiting:
            LOG.warning('Instance %s: %s', uuid, waiting,
                        extra={'instance_uuid': uuid})
            instance_action.record_event(self.ctx, uuid, EVENT,
                                         host=plan.host, details=waiting,
                                         start_time=self.started)

    def rollback(self, exc):
        """Nothing of its own to undo; a failure of the reschedule was
        rolled back and recorded by it (ERROR with its fault, the log)."""
        return self.rescheduling is not None and \
            self.rescheduling.rolled_back

    def _recast(self):
        """Cast the build again to the host that holds its claim, if that
        is still worth it: whether it was (or another conductor did)."""
        plan, uuid = self.plan, self.instance.uuid
        limit = recast_limit(plan)
        if not plan.host or plan.recasts >= limit or \
                not self.host_up(plan.host):
            return False
        if not plan.note_recast(self.ctx):
            return True
        details = ('no compute took the build within %d seconds; cast '
                   'again to %s (%d of %d)' % (
                       CONF.conductor.build_redrive_interval, plan.host,
                       plan.recasts, limit))
        LOG.warning('Instance %s: %s', uuid, details,
                    extra={'instance_uuid': uuid})
        instance_action.record_event(self.ctx, uuid, EVENT, host=plan.host,
                                     details=details,
                                     start_time=self.started)
        self.compute.build_and_run_instance(
            self.ctx, plan.host, plan.node, self.instance,
            plan.request_spec, plan.alternates, plan.retry)
        metrics.BUILDS_RECOVERED.labels(how='recast').inc()
        return True

    def _give_back(self):
        """Back to scheduling without a host, if the build is still where
        it was read (else ``Conflict`` or ``InstanceNotFound``); its
        claim moves with its next alternate."""
        instance, uuid = self.instance, self.instance.uuid
        host, seen = instance.host, instance.task_state
        instance.host = None
        instance.node = None
        instance.task_state = instance_obj.SCHEDULING
        details = self.why % host
        instance.save(self.ctx, expected_task_state=seen,
                      expected_vm_state=instance_obj.BUILDING,
                      expected_host=host, give_back_build=True,
                      event=dict(event=EVENT, host=host,
                                 result=instance_action.ERROR,
                                 details=details, start_time=self.started))
        self.given_back = True
        LOG.warning('Instance %s: %s', uuid, details,
                    extra={'instance_uuid': uuid})
        metrics.BUILDS_RECOVERED.labels(how='given_back').inc()
        self.plan.host = self.plan.node = None
