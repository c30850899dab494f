"""Live migration: the super-conductor finds a destination ready to take
the running server.

The API recorded the migration (``accepted``) and set the server in
``migrating``. As for a cold migration, the migration holds the source
and the scheduler claims a destination with same-cell alternates. Each
destination in turn is asked ``pre_live_migration`` (a call); one that
refuses gives way to the next alternate, whose claim replaces its own.
The first that is ready gets the server: the source is told
``live_migration`` and sends it (``scheduler_split/compute/moves.py``).
None ready, or no host at all: the move is rolled back and the server
keeps running where it is.
"""

import logging

from scheduler_split.conductor.tasks import alternates
from scheduler_split.conductor.tasks import move
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class LiveMigrateTask(move.MoveTask):
    """Live migrate the server (to ``host`` if named, still filtered);
    ``migration`` is its record, made by the API (``accepted``)."""

    event = 'conductor_live_migrate_instance'

    def _execute(self):
        if not self._locate_for_cast():
            return
        migration = self.migration
        migration.status = migration_obj.QUEUED
        migration.save(self.cctx)
        spec = self._spec(self.instance.flavor)
        host_list = self._schedule(spec)
        compute = self.computes(self.cell)
        tried = []
        selection, rest = host_list[0], host_list[1:]
        while selection is not None:
            dest = selection.service_host
            tried.append(dest)
            move.aim(migration, selection)
            migration.status = migration_obj.PREPARING
            migration.save(self.cctx)
            asked = obj_base.utcnow()
            try:
                compute.pre_live_migration(
                    self.ctx, dest, self.instance, migration,
                    timeout=CONF.rpc_response_timeout)
            except Exception as exc:
                self._refused(dest, exc, asked)
                selection, rest = alternates.claim_next(
                    self.scheduler, self.ctx, self.uuid, rest)
                continue
            self._settled()
            instance_action.record_event(
                self.cctx, self.uuid, self.event, host=CONF.host,
                details='%s claimed and ready (hosts tried: %s)' % (
                    dest, ', '.join(tried)), action=migration.action,
                start_time=self.started)
            compute.live_migration(self.ctx, self.instance.host,
                                   self.instance, migration)
            return
        raise exception.MaxRetriesExceeded(
            reason='Exhausted all hosts available for live migrating '
                   'instance %s (hosts tried: %s)' % (self.uuid,
                                                      ', '.join(tried)))

    def _refused(self, dest, exc, asked):
        """``dest``, asked at ``asked``, refused the server with
        ``exc``."""
        LOG.info('%s cannot take instance %s live: %s', dest, self.uuid,
                 exception.describe(exc),
                 extra={'instance_uuid': self.uuid})
        instance_action.record_event(
            self.cctx, self.uuid, self.event, host=dest,
            result=instance_action.ERROR,
            details='%s refused: %s; trying the next alternate' % (
                dest, exception.describe(exc)),
            action=self.migration.action, start_time=asked)
