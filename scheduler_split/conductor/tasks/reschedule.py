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
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
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
        selection, rest = alternates.claim_next(self.scheduler, self.ctx,
                                                uuid, self.host_list)
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
            action=self.action)
        LOG.info('Rescheduling %s %s to %s (attempt %d)', self.what, uuid,
                 host, retry.num_attempts, extra={'instance_uuid': uuid})
        self._hand_over(selection, rest)

    def _prepare(self, selection):
        """Nothing to write before the alternate is told, by default."""

    def _hand_over(self, selection, rest):
        raise NotImplementedError

    def _exhausted(self):
        raise NotImplementedError


class RescheduleBuildTask(RescheduleTask):
    """A build that failed on its host: on to the next alternate, or
    ERROR with the exhausted-hosts fault and no claim left."""

    event = 'conductor_build_instances'

    def _execute(self):
        uuid = self.instance.uuid
        try:
            self.instance = objects.Instance.get_by_uuid(self.ctx, uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its reschedule',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(self.ctx, uuid)
            return
        super()._execute()

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
                                              ', '.join(self.retry.hosts)))
        return exc

    def rollback(self, exc):
        """ERROR with a fault first, then give the claim back."""
        instance = self.instance
        if not self.exhausted:
            LOG.error('Rescheduling instance %s failed', instance.uuid,
                      exc_info=exc, extra={'instance_uuid': instance.uuid})
        instance.host = None
        instance.node = None
        try:
            instance.save_error(self.ctx, exc)
        except exception.InstanceNotFound:
            pass
        self.scheduler.try_release_resources(self.ctx, instance.uuid)
        return True
