"""A cell conductor's RPC endpoint: its cell's bus, topic ``conductor``.

It only dispatches: the reschedules of builds and moves are tasks
(``conductor/tasks``). The same RPC server also serves the computes'
records (``records.ComputeRecords``), and the cell's sweeps are in
``periodic``. A reschedule never leaves the cell.
"""

import oslo_messaging as messaging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split.conductor.tasks import migrate
from scheduler_split.conductor.tasks import recover
from scheduler_split.conductor.tasks import reschedule
from scheduler_split.conductor.tasks import unshelve
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import build_plan
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client


class CellConductorManager:
    """Runs on a cell bus: tries the alternates of a failed build or a
    refused move."""

    target = messaging.Target(version=conductor_rpcapi.RPC_VERSION)

    def __init__(self, cell_db, transport=None):
        self.cell_db = cell_db
        transport = transport or rpc.get_transport()
        self.scheduler = scheduler_client.SchedulerClient(transport)
        self.compute = compute_rpcapi.ComputeAPI(transport, cell_db)

    @messaging.expose
    def build_instances(self, ctx, instance, request_spec, host_list, retry):
        """Cast from a compute whose build failed: try the next alternate.

        Claims each alternate in order through the scheduler library and
        casts the build to the first one that accepts. With none left the
        instance ends in ERROR with the exhausted-hosts fault.
        """
        base.run_cast(reschedule.RescheduleBuildTask(
            self.scheduler, self.compute,
            ss_context.targeted(ctx, self.cell_db), instance, request_spec,
            host_list, retry))

    @messaging.expose
    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.Conflict)
    def give_back_build(self, ctx, instance_uuid, host):
        """Call (1.10) from a compute that restarted while it built
        ``instance_uuid``: take the build back from ``host`` and on to
        its next alternate, from its plan (True). False when the build
        has no plan (the compute then fails it); ``Conflict`` or
        ``InstanceNotFound`` when it is no longer building on ``host``.
        """
        cctx = ss_context.targeted(ctx, self.cell_db)
        plan = build_plan.BuildPlan.get(cctx, instance_uuid)
        if plan is None:
            return False
        instance = objects.Instance.get_by_uuid(cctx, instance_uuid)
        if instance.host != host:
            raise exception.Conflict(
                reason='instance %s is building on %s, not %s' % (
                    instance_uuid, instance.host, host))
        task = recover.RecoverBuildTask(
            self.scheduler, self.compute, cctx, instance, plan,
            host_up=lambda _: False, why=recover.HOST_RESTARTED)
        try:
            task.execute()
        except (exception.InstanceNotFound, exception.Conflict):
            raise
        except Exception:
            # Past the give-back, a failure was rolled back: the build is
            # in ERROR with its fault, and nothing is left for the
            # compute to do.
            if not task.given_back:
                raise
        return True

    @messaging.expose
    def migrate_reschedule(self, ctx, instance, migration, flavor,
                           request_spec, host_list, retry, reason):
        """Cast (1.8) from a destination that refused a resize or a cold
        migration: claim the next same-cell alternate for the instance
        (which replaces its claim of the refusing host) and cast
        ``prep_resize`` to it. With none left the move is undone: the
        instance holds its source again, keeps its state and gets the
        exhausted-hosts fault; the migration ends in error."""
        base.run_cast(migrate.MigrateRescheduleTask(
            self.scheduler, self.compute,
            ss_context.targeted(ctx, self.cell_db), instance, migration,
            flavor, request_spec, host_list, retry, reason))

    @messaging.expose
    def unshelve_reschedule(self, ctx, instance, request_spec, host_list,
                            retry):
        """Cast (1.12) from a compute that could not spawn an unshelved
        server: claim the next same-cell alternate and cast the unshelve
        to it; with none left the server is SHELVED_OFFLOADED again, with
        the exhausted-hosts fault and no claim."""
        base.run_cast(unshelve.UnshelveRescheduleTask(
            self.scheduler, self.compute,
            ss_context.targeted(ctx, self.cell_db), instance, request_spec,
            host_list, retry))
