"""Resize and cold migration: the super-conductor places the move, the
cell conductor reschedules it when a destination refuses.

The API set the instance in ``resize_prep`` and calls ``migrate_server``.
The super-conductor records the migration in the instance's cell, hands
the instance's allocations (its source host's) to it, and the scheduler
claims a destination among the other hosts of the cell, with same-cell
alternates; the destination's ``prep_resize`` is cast and the migration
answered. No host: the move is rolled back (the instance holds its
source again, as it was) and ``NoValidHost`` raised to the API.

A destination that cannot take the server casts ``migrate_reschedule``
to its cell conductor, which claims the next alternate (its claim
replaces the instance's claim of the refusing host) and casts
``prep_resize`` to it; with none left the move is rolled back and the
instance gets the exhausted-hosts fault. The compute side is
``scheduler_split/compute/moves.py``.
"""

import logging

from scheduler_split.conductor.tasks import move
from scheduler_split.conductor.tasks import reschedule
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

EVENT = 'conductor_migrate_server'


class MigrateTask(move.MoveTask):
    """A resize (to ``flavor``) or a cold migration (to ``host`` if an
    admin named one); ``execute`` answers the migration."""

    event = EVENT

    def __init__(self, scheduler, ctx, instance, flavor=None, host=None,
                 **kwargs):
        super().__init__(scheduler, ctx, instance, host=host, **kwargs)
        self.flavor = flavor

    def _execute(self):
        self._locate()
        instance = self.instance
        new_flavor = self.flavor or instance.flavor
        spec = self._spec(new_flavor)
        self.migration = migration = objects.Migration.for_move(
            self.ctx, instance,
            (migration_obj.RESIZE if self.flavor is not None
             else migration_obj.MIGRATION),
            migration_obj.PRE_MIGRATING, new_flavor=new_flavor).create(
            self.cctx)
        host_list = self._schedule(spec)
        chosen, others = host_list[0], host_list[1:]
        self._settled()
        move.aim(migration, chosen)
        migration.save(self.cctx)
        instance_action.record_event(
            self.cctx, self.uuid, self.event, host=CONF.host,
            details='%s claimed (alternates: %s)' % (
                chosen.service_host,
                ', '.join(s.service_host for s in others) or 'none'),
            action=migration.action, start_time=self.started)
        LOG.info('Moving instance %s from %s to %s (%s)', self.uuid,
                 instance.host, chosen.service_host, migration.action,
                 extra={'instance_uuid': self.uuid})
        retry = objects.SchedulerRetries(num_attempts=1,
                                         hosts=[chosen.service_host])
        self.computes(self.cell).prep_resize(
            self.ctx, chosen.service_host, instance, migration, new_flavor,
            spec, others, retry)
        return migration


class MigrateRescheduleTask(reschedule.RescheduleTask):
    """A destination refused the move: on to the next alternate, or the
    move is rolled back with the exhausted-hosts fault."""

    event = EVENT
    what = 'the move of instance'

    def __init__(self, scheduler, compute, ctx, instance, migration, flavor,
                 request_spec, host_list, retry, reason):
        super().__init__(scheduler, compute, ctx, instance, request_spec,
                         host_list, retry)
        self.migration = migration
        self.flavor = flavor
        self.reason = reason
        self.action = migration.action

    def _prepare(self, selection):
        move.aim(self.migration, selection)
        self.migration.save(self.ctx,
                            expected_status=migration_obj.PRE_MIGRATING)

    def _hand_over(self, selection, rest):
        self.compute.prep_resize(
            self.ctx, selection.service_host, self.instance, self.migration,
            self.flavor, self.request_spec, rest, self.retry)

    def _exhausted(self):
        return exception.MaxRetriesExceeded(
            reason='Exhausted all hosts available for moving instance %s '
                   '(hosts tried: %s; last: %s)' % (
                       self.instance.uuid, ', '.join(self.retry.hosts),
                       self.reason))

    def rollback(self, exc):
        uuid = self.instance.uuid
        if not self.exhausted and not exception.is_expected(exc):
            LOG.error('Rescheduling the move of instance %s failed', uuid,
                      exc_info=exc, extra={'instance_uuid': uuid})
        LOG.warning('Move of instance %s failed: %s', uuid,
                    exception.describe(exc), extra={'instance_uuid': uuid})
        move.roll_back(self.scheduler, self.ctx, self.migration, exc,
                       self.event, start_time=self.started)
        return True
