"""The super-conductor's RPC endpoint: the API bus, topic ``conductor``.

It only dispatches. Each long operation is a task (``conductor/tasks``),
which of the scheduler's claims are still needed is ``reconcile``'s to
say, and the sweeps are in ``super_periodic``. The super-conductor turns build
requests into instances in the cell the scheduler chose, and places the
moves the API asks for; it never sends a build or a move across cells.
"""

import oslo_messaging as messaging

from scheduler_split.conductor import reconcile
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import build
from scheduler_split.conductor.tasks import evacuate
from scheduler_split.conductor.tasks import live_migrate
from scheduler_split.conductor.tasks import migrate
from scheduler_split.conductor.tasks import rebuild
from scheduler_split.conductor.tasks import unplaced
from scheduler_split.conductor.tasks import unshelve
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF


class SuperConductorManager:
    """Runs on the API bus: the boots and moves the API asks for."""

    target = messaging.Target(version=conductor_rpcapi.RPC_VERSION)

    def __init__(self, transport=None):
        self.scheduler = scheduler_client.SchedulerClient(
            transport, batch_window=CONF.conductor.schedule_batch_window,
            in_flight=CONF.conductor.schedule_calls_in_flight)
        self.cells = unplaced.CellMappings()
        self.transport = transport
        self._conductors = None

    def conductors(self):
        """The super-conductors' own client, for the boots this one passes
        on while it stands aside."""
        if self._conductors is None:
            self._conductors = conductor_rpcapi.SuperConductorAPI(
                self.transport or rpc.get_transport())
        return self._conductors

    @messaging.expose
    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        """Cast from the API: place the instances of one boot request.

        Calls the scheduler once for all of them, asking for
        ``build_max_attempts - 1`` alternates each, then creates every
        instance in its chosen cell and casts its build to the chosen
        compute. Instances that cannot be placed go to cell0 in ERROR.
        """
        base.run_cast(build.ScheduleAndBuildTask(
            self.scheduler, self.cells, ctx, build_requests, request_specs,
            conductors=self.conductors))

    @messaging.expose
    def consumers_needing_claims(self, ctx, consumer_uuids):
        """Call from the scheduler's heal: which of ``consumer_uuids``
        still need their claims (see ``reconcile``)."""
        return reconcile.consumers_needing_claims(ctx, consumer_uuids)

    # --- moves (1.8) ---------------------------------------------------------

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.Conflict,
                                   exception.InstanceNotFound)
    def migrate_server(self, ctx, instance, flavor=None, host=None):
        """Call from the API: start a resize (``flavor``) or a cold
        migration (to ``host`` if an admin named one), the instance in
        ``resize_prep`` already. Answers the migration once the
        destination's ``prep_resize`` is cast; if no host takes it,
        everything is put back as it was and ``NoValidHost`` is raised.
        """
        return migrate.MigrateTask(self.scheduler, ctx, instance,
                                   flavor=flavor, host=host).execute()

    @messaging.expose
    def live_migrate_instance(self, ctx, instance, migration, host=None,
                              block_migration=None):
        """Cast from the API: live migrate the server (in ``migrating``);
        a destination that refuses gives way to the next alternate."""
        base.run_cast(live_migrate.LiveMigrateTask(
            self.scheduler, ctx, instance, migration=migration, host=host))

    @messaging.expose
    def evacuate_instance(self, ctx, instance, migration, host=None):
        """Cast from the API: rebuild the server, whose compute is down,
        on another host of its cell (``host`` if named, still filtered).
        The migration holds the dead source until its compute comes back
        and cleans up."""
        base.run_cast(evacuate.EvacuateTask(
            self.scheduler, ctx, instance, migration=migration, host=host))

    # --- rebuilds (1.11) -----------------------------------------------------

    @messaging.expose
    def rebuild_instance(self, ctx, instance, orig_image_ref,
                         image_properties=None, preserve_ephemeral=False):
        """Cast from the API: rebuild the server (``rebuilding``) on its
        own host; a new image is checked against that host first."""
        base.run_cast(rebuild.RebuildTask(
            self.scheduler, ctx, instance, orig_image_ref,
            image_properties=image_properties,
            preserve_ephemeral=preserve_ephemeral))

    # --- unshelves (1.12) ----------------------------------------------------

    @messaging.expose
    def unshelve_instance(self, ctx, instance, spec_changes=None, host=None):
        """Cast from the API: the server (``unshelving``) runs again; an
        offloaded one is placed by the scheduler in its cell, with
        alternates, as the unshelve asks (its zone, an admin's host)."""
        base.run_cast(unshelve.UnshelveTask(
            self.scheduler, ctx, instance, spec_changes=spec_changes,
            host=host))
