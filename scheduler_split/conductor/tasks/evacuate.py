"""Evacuation: the super-conductor rebuilds a server whose compute is
down on another host of its cell.

The API checked the source's compute is down, recorded the migration and
set the server in ``rebuilding``. The migration holds the dead source
until its compute comes back and cleans up; the scheduler claims a
destination (``host`` if named, still filtered; no alternates: a rebuild
that fails there leaves the server in ERROR), which is told
``rebuild_instance`` (``scheduler_split/compute/evacuation.py``). No
host: the move is rolled back and the server stays as it was.
"""

from scheduler_split.conductor.tasks import move
from scheduler_split import conf
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj

CONF = conf.CONF


class EvacuateTask(move.MoveTask):
    """Rebuild the server elsewhere; ``migration`` is its record, made by
    the API."""

    event = 'conductor_evacuate_instance'

    def _execute(self):
        if not self._locate_for_cast():
            return
        migration = self.migration
        spec = self._spec(self.instance.flavor)
        migration.status = migration_obj.PRE_MIGRATING
        migration.save(self.cctx)
        [chosen] = self._schedule(spec, alternates=False)
        self._settled()
        move.aim(migration, chosen)
        migration.save(self.cctx)
        instance_action.record_event(
            self.cctx, self.uuid, self.event, host=CONF.host,
            details='%s claimed' % chosen.service_host,
            action=migration.action, start_time=self.started)
        self.computes(self.cell).rebuild_instance(
            self.ctx, chosen.service_host, self.instance, migration)
