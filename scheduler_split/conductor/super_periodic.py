"""The super-conductor's periodic sweeps: no boot stays in flight forever.

Messages get lost (a process crashes, a broker restarts without its
queues) and database writes fail; these sweeps, over the API database
and every cell's, find what a boot left half done and settle it, each
guarded so that it never undoes a step a service took meanwhile. The
super-conductor's service runs them (``deployment.py``):
:class:`SuperConductorPeriodics` re-drives boots no super-conductor
took, ends in cell0 those never scheduled, finishes placements a crash
interrupted, releases claims nothing needs, and records itself in cell0.
A cell conductor's sweeps are in :mod:`.cell_periodic`.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.conductor import reconcile
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import unplaced
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import build_plan
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_sweeps
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class _EveryHost:
    """Without cell0 no record says which super-conductors are up: each
    is taken for up."""

    def __contains__(self, host):
        return True


_EVERY_HOST = _EveryHost()

LOST_BEFORE_SCHEDULING = ('no conductor scheduled it within '
                          '[conductor] lost_build_timeout; the boot was lost')


class SuperConductorPeriodics:
    """The super-conductor's sweeps, over the API database and every
    cell's."""

    def __init__(self, transport=None):
        self.transport = transport
        self.scheduler = scheduler_client.SchedulerClient(transport)
        self.cells = unplaced.CellMappings()
        self._conductor = None
        # Boots this host took before then were taken by a run of it
        # that is gone (resume_orphaned_boots).
        self.started_at = obj_base.naive_utc(obj_base.utcnow())

    @property
    def conductor(self):
        """The super-conductors' own client (re-drives of boots)."""
        if self._conductor is None:
            self._conductor = conductor_rpcapi.SuperConductorAPI(
                self.transport or rpc.get_transport())
        return self._conductor

    def report_service(self):
        """Heartbeat this super-conductor's record, with its service
        version, in cell0 (the top level's services live there, as in
        Nova), for the API's ``[upgrade_levels] conductor = auto``."""
        ctx = ss_context.get_admin_context()
        try:
            cell0 = self.cells.get(ctx, cell_mapping_obj.CELL0_UUID)
        except exception.CellMappingNotFound:
            LOG.debug('cell0 is not mapped yet; no service record')
            return
        objects.Service.heartbeat(ss_context.target_cell(ctx, cell0),
                                  CONF.host, service_obj.CONDUCTOR,
                                  conductor_rpcapi.TOPIC)

    def heal_allocations(self):
        """Release the claims nothing needs any more (see
        :mod:`scheduler_split.conductor.reconcile`)."""
        ctx = ss_context.get_admin_context()
        try:
            return reconcile.heal_allocations(self.scheduler, ctx)
        except Exception as exc:
            outage.report(LOG, exc, 'The reconciliation of claims stopped: '
                          '%s; it resumes at the next run',
                          outage.reason(exc))
            return []

    def fail_lost_builds(self):
        """Build requests nothing scheduled end in cell0: untouched for
        ``[conductor] lost_build_timeout`` seconds, and, if no
        super-conductor took them, re-driven ``build_redrive_limit``
        times already (the last re-drive starts the timeout again).

        Like every placement of an instance, this one only counts if it
        is the first to give the instance mapping its cell, so a late
        delivery of the original boot and this sweep never both win.
        """
        ctx = ss_context.get_admin_context()
        # This process's own placements in flight are not lost, however
        # long they take; nor do other super-conductors take them for it.
        objects.BuildRequest.renew(ctx, unplaced.HELD.uuids(), CONF.host)
        try:
            self._resume_abandoned_boots(ctx)
        except Exception as exc:
            # cell0 away, say: the boots are ended or taken back later.
            if not outage.is_outage(exc):
                raise
            outage.report(LOG, exc, 'Looking for the boots of super-'
                          'conductors that are down failed: %s',
                          outage.describe(exc))
        for build_request in objects.BuildRequest.get_older_than(
                ctx, CONF.conductor.lost_build_timeout,
                redrive_limit=CONF.conductor.build_redrive_limit):
            uuid = build_request.instance_uuid
            if not unplaced.still_pending(ctx, build_request):
                continue
            LOG.warning('Build request of %s was never scheduled; putting '
                        'the instance in ERROR', uuid,
                        extra={'instance_uuid': uuid})
            if unplaced.bury_in_cell0(ctx, self.cells, build_request,
                                      exception.BuildAbortException(
                                          instance_uuid=uuid,
                                          reason=LOST_BEFORE_SCHEDULING),
                                      reason='lost'):
                metrics.LOST_BUILDS_FAILED.labels(
                    reason='never_scheduled').inc()
                # A run that died after claiming leaves its claim behind.
                self.scheduler.try_release_resources(ctx, uuid)

    def _resume_abandoned_boots(self, ctx):
        """Boots another super-conductor took and stopped renewing for
        ``lost_build_timeout``, and whose record in cell0 says it is
        down (it died, or was cut from the API database mid-placement),
        are given back and cast again while their re-drives last, rather
        than buried: whichever placement gives the instance mapping its
        cell first counts."""
        abandoned = objects.BuildRequest.get_abandoned(
            ctx, CONF.conductor.lost_build_timeout)
        if not abandoned:
            return
        live = self._live_super_conductors(ctx)
        for build_request, host, seen in abandoned:
            if host == CONF.host or host in live:
                # Its own, or a live one's that a bus outage holds up,
                # which may still give its claim back as it gives up:
                # that would take a new placement's. Ended below.
                continue
            if seen >= CONF.conductor.build_redrive_limit:
                continue
            try:
                self._take_back(ctx, build_request, host, seen,
                                'was taken by %s, which is down' % host)
            except Exception as exc:
                # A cell or the bus away: the next run tries again.
                if not outage.is_outage(exc):
                    raise
                outage.report(LOG, exc, 'Taking the boot of %s back from '
                              '%s failed: %s', build_request.instance_uuid,
                              host, outage.describe(exc),
                              extra={'instance_uuid':
                                     build_request.instance_uuid})

    def _live_super_conductors(self, ctx):
        """The hosts whose super-conductor is up, as its record in cell0
        says now (one cut from the API database cannot write it)."""
        try:
            cell0 = self.cells.get(ctx, cell_mapping_obj.CELL0_UUID)
        except exception.CellMappingNotFound:
            return _EVERY_HOST
        since = servicegroup.up_since()
        return {service.host for service in objects.Service.get_all(
            ss_context.target_cell(ctx, cell0))
            if service.binary == service_obj.CONDUCTOR and
            servicegroup.is_up(service.last_seen_up, service.forced_down,
                               since)}

    def redrive_lost_boots(self):
        """Cast again the boots no super-conductor took.

        A boot waits on the bus, in the super-conductor's queue, until one
        takes its build request. A broker that restarts without keeping
        that queue loses it. A build request nobody took for
        ``[conductor] build_redrive_interval`` seconds is cast again, at
        most ``build_redrive_limit`` times; whichever delivery takes it
        first schedules it, the others find it taken. One never taken ends
        in cell0 through :meth:`fail_lost_builds`.
        """
        ctx = ss_context.get_admin_context()
        why = ('was taken by no super-conductor within %d seconds'
               % CONF.conductor.build_redrive_interval)
        return [build_request.instance_uuid
                for build_request, seen in objects.BuildRequest.get_untaken(
                    ctx, CONF.conductor.build_redrive_interval)
                if self._redrive(ctx, build_request, seen, why)]

    def resume_orphaned_boots(self):
        """Place again the boots this host took and is not placing.

        A super-conductor that dies while it places a boot leaves its
        build request taken (by its host) and in no cell; one that
        starts on the same host finds those it took before it started.
        A placement of this run that gave up without knowing whether it
        took the boot (its database went away as the take was written,
        and the process stood aside meanwhile) leaves the same behind
        while its process lives on; those are found too, once untouched
        for ``build_redrive_interval`` and no thread has them in hand
        (``unplaced.HELD``). Whatever the placement wrote into a cell for
        them (a row never on a host, which no mapping names, in any
        state) goes, whatever it claimed is released, and the boot is cast
        again, as a re-drive (``build_redrive_limit`` counts it). One
        process per host is assumed, as for every service's RPC server.
        Returns the uuids cast again.
        """
        ctx = ss_context.get_admin_context()
        held = unplaced.HELD.uuids()
        cast = []
        for build_request, seen, before in objects.BuildRequest.get_orphans(
                ctx, CONF.host, self.started_at,
                idle=CONF.conductor.build_redrive_interval, held=held):
            if seen >= CONF.conductor.build_redrive_limit:
                # Stays taken: the lost-build sweep ends it.
                continue
            why = ('was being placed by the previous run of this '
                   'super-conductor' if before else 'was taken by this '
                   'super-conductor, which is not placing it')
            try:
                if self._take_back(ctx, build_request, CONF.host, seen,
                                   why):
                    cast.append(build_request.instance_uuid)
            except Exception as exc:
                # A cell or the bus away: the next run tries again.
                if not outage.is_outage(exc):
                    raise
                outage.report(LOG, exc, 'Taking the boot of %s back '
                              'failed: %s', build_request.instance_uuid,
                              outage.describe(exc),
                              extra={'instance_uuid':
                                     build_request.instance_uuid})
        return cast

    def _take_back(self, ctx, build_request, host, seen, why):
        """Give the build request that ``host`` holds back (one sweeper
        wins that write, and no placement holds it then), undo what its
        placement left (a row in a cell that no mapping names, a claim)
        and cast the boot again: whether it was."""
        uuid = build_request.instance_uuid
        if not build_request.give_back(ctx, taken_by=host):
            return False
        for cell in objects.CellMapping.get_all(ctx):
            if cell.uuid == cell_mapping_obj.CELL0_UUID:
                # A row there is a burial's, which may be pointing the
                # mapping at it now; one a burial left goes on as the
                # ERROR of the next (unplaced.bury_in_cell0).
                continue
            objects.Instance.delete_unplaced(
                ss_context.target_cell(ctx, cell), uuid)
        self.scheduler.try_release_resources(ctx, uuid)
        return self._redrive(ctx, build_request, seen, why)

    def _redrive(self, ctx, build_request, seen, why):
        """Cast the boot of ``build_request`` again, unless it was re-driven
        ``build_redrive_limit`` times (``seen``), is placed or gone, or
        another super-conductor re-drove it first: whether it was."""
        limit = CONF.conductor.build_redrive_limit
        uuid = build_request.instance_uuid
        if seen >= limit or not unplaced.still_pending(ctx, build_request):
            return False
        try:
            spec = objects.RequestSpec.get_by_instance_uuid(ctx, uuid)
        except Exception as exc:
            # Not found: the server was deleted since it was read.
            exception.log_failure(LOG, exc, 'Reading the request spec of '
                                  '%s failed; not re-driving its boot',
                                  uuid, extra={'instance_uuid': uuid})
            return False
        if not build_request.note_redrive(ctx, seen):
            return False
        LOG.warning('Boot of instance %s %s; casting it again (%d of %d)',
                    uuid, why, seen + 1, limit,
                    extra={'instance_uuid': uuid})
        try:
            self.conductor.schedule_and_build_instances(
                ctx, [build_request], [spec])
        except Exception:
            LOG.exception('Re-driving the boot of %s failed', uuid,
                          extra={'instance_uuid': uuid})
            return False
        metrics.BOOTS_REDRIVEN.inc()
        return True

    def clean_up_placements(self):
        """Finish placements a crash or an error interrupted.

        An instance lives in exactly one cell, the one its mapping names:

        - a build request whose mapping has named a cell for
          ``[conductor] lost_build_timeout`` seconds was left by a
          placement that stopped before deleting it: it goes, and the
          user's edits it recorded reach the cell's row;
        - a row in a cell other than the one its mapping names was
          created by a placement that lost (to the lost-build sweep, or
          before an error sent the instance to cell0): it is marked
          deleted, and no claim is released, since the claims of an
          instance are those of its one live copy;
        - a build handed to its cell ``[conductor]
          build_redrive_interval`` seconds ago or earlier (its mapping
          names the cell, its build request is gone) that waits for a
          host without a build plan, its row saved by nobody since it
          was created, was left by a placement that stopped before it
          cast the build: it gets the plan that placement would have
          recorded, with the host its claim is on, and its cell's
          conductor casts it there (``cell_periodic.recover_builds``)
          instead of ending it in ERROR as lost.

        Returns ``(build requests deleted, rows deleted, builds
        planned)`` as uuids.
        """
        ctx = ss_context.get_admin_context()
        stale = []
        for build_request in objects.BuildRequest.get_placed(
                ctx, CONF.conductor.lost_build_timeout):
            if self._forget_build_request(ctx, build_request):
                stale.append(build_request.instance_uuid)
        strays, planned, nodes = [], [], {}
        for cell in objects.CellMapping.get_all(ctx):
            try:
                strays.extend(self._remove_strays(ctx, cell))
            except Exception:
                LOG.exception('Looking for instances of cell %s that '
                              'belong to another cell failed', cell.name)
            if cell.uuid == cell_mapping_obj.CELL0_UUID:
                continue
            try:
                planned.extend(self._plan_uncast_builds(ctx, cell, nodes))
            except Exception:
                LOG.exception('Looking for builds of cell %s that were '
                              'never cast failed', cell.name)
        return stale, strays, planned

    @staticmethod
    def _forget_build_request(ctx, build_request):
        uuid = build_request.instance_uuid
        try:
            recorded = build_request.destroy(ctx)
        except exception.BuildRequestNotFound:
            return False
        LOG.warning('Build request of %s outlived the placement of the '
                    'instance; deleted it', uuid,
                    extra={'instance_uuid': uuid})
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
            cctx = ss_context.target_cell(ctx, mapping.cell_mapping)
            instance = objects.Instance.get_by_uuid(cctx, uuid)
            if instance.take_user_edits(recorded):
                instance.save(cctx)
        except (exception.InstanceNotFound,
                exception.InstanceMappingNotFound):
            pass
        return True

    def _plan_uncast_builds(self, ctx, cell, nodes):
        """Builds of ``cell`` its placement stopped before casting (see
        :meth:`clean_up_placements`), each given its plan. ``nodes``
        caches the compute nodes by uuid for the whole pass."""
        cctx = ss_context.target_cell(ctx, cell)
        interval = CONF.conductor.build_redrive_interval
        planned = []
        for instance, why in instance_sweeps.get_unhandled_builds(
                cctx, interval, service_obj.COMPUTE, CONF.service_down_time):
            # Saved by nobody since its placement created it: no compute
            # started it, no reschedule moved it.
            if why != instance_sweeps.LOST_NO_HOST or \
                    instance.task_state != instance_obj.SCHEDULING or \
                    instance.updated_at is not None:
                continue
            try:
                if self._plan_uncast_build(ctx, cctx, cell, instance,
                                           interval, nodes):
                    planned.append(instance.uuid)
            except Exception as exc:
                outage.report(LOG, exc, 'Could not plan the build of '
                              'instance %s, which was never cast: %s',
                              instance.uuid, outage.describe(exc),
                              extra={'instance_uuid': instance.uuid})
                if outage.is_database_outage(exc) or isinstance(
                        exc, messaging.MessagingException):
                    break
        return planned

    def _plan_uncast_build(self, ctx, cctx, cell, instance, interval,
                           nodes):
        uuid = instance.uuid
        # Handed to this cell that long ago (not a stray, and not a
        # placement going on now), and its build request gone.
        if objects.InstanceMapping.cell_id_placed_before(
                ctx, uuid, interval) != cell.id:
            return False
        try:
            objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
            return False
        except exception.BuildRequestNotFound:
            pass
        held = self.scheduler.consumer_allocations(ctx, uuid)
        if not held:
            # Nothing claimed for it: the lost-build sweep ends it.
            return False
        if not nodes:
            nodes.update((node['uuid'], node) for node in
                         self.scheduler.get_compute_nodes(ctx))
        roots = [nodes[p] for p in held if p in nodes]
        if len(roots) != 1 or roots[0].get('cell_uuid') != cell.uuid:
            return False
        host, node = roots[0]['host'], roots[0]['hypervisor_hostname']
        plan = build_plan.BuildPlan(
            uuid, host, node, objects.RequestSpec.of_instance(ctx, instance),
            [], objects.SchedulerRetries(num_attempts=1, hosts=[host]))
        if not plan.create(cctx):
            # Its placement recorded it after all.
            return False
        LOG.warning('Instance %s was handed to cell %s, but its placement '
                    'stopped before casting its build; recorded its plan, '
                    'and the cell\'s conductor casts it to %s, where its '
                    'claim is', uuid, cell.name, host,
                    extra={'instance_uuid': uuid})
        return True

    @staticmethod
    def _remove_strays(ctx, cell):
        """Rows of ``cell`` whose instance mapping names another cell."""
        cctx = ss_context.target_cell(ctx, cell)
        # Only a build leaves such a row: it is building or in ERROR.
        candidates = instance_sweeps.uuids_in_vm_states(
            cctx, (instance_obj.BUILDING, instance_obj.ERROR))
        if not candidates:
            return []
        mapped = objects.InstanceMapping.get_cell_ids(ctx, candidates)
        removed = []
        for uuid in candidates:
            cell_id = mapped.get(uuid)
            if cell_id is None or cell_id == cell.id:
                continue
            LOG.warning('Instance %s has a row in cell %s but lives in '
                        'another cell; marking that row deleted',
                        uuid, cell.name, extra={'instance_uuid': uuid})
            try:
                objects.Instance.get_by_uuid(cctx, uuid).destroy(cctx)
            except exception.InstanceNotFound:
                continue
            removed.append(uuid)
        return removed
