"""The conductors: the super-conductor (API level) and cell conductors.

The super-conductor turns build requests into instances in the cell the
scheduler chose; a cell conductor reschedules a failed build to the next
same-cell alternate. Neither ever sends a build across cells.
"""

import datetime
import functools
import logging
import threading

import oslo_messaging as messaging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import migration as migration_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF
LOG = logging.getLogger(__name__)

RPC_VERSION = '1.8'

LOST_BEFORE_SCHEDULING = ('no conductor scheduled it within '
                          '[conductor] lost_build_timeout; the boot was lost')
LOST_IN_CELL = ('no compute took the build within [conductor] '
                'lost_build_timeout; the build was lost')
LOST_HOST_DOWN = ('the compute service of %s, where it was building, has '
                  'been down for longer than [DEFAULT] service_down_time; '
                  'the build was lost')

# What a compute's call may answer as a normal outcome: sent back to the
# compute as itself, without a traceback in this conductor's log.
_EXPECTED = messaging.expected_exceptions(exception.InstanceNotFound,
                                          exception.Conflict)

EXHAUSTED = ('Exhausted all hosts available for retrying build failures '
             'for instance %s.')

# What a call to the scheduler fails with when the bus, not the scheduler,
# lost the question or its answer (a broker restarting, say).
BUS_FAILURES = (messaging.MessagingTimeout,
                messaging.MessageDeliveryFailure)

# How many instances one look at a cell reads at a time.
CHUNK = 500

# The conductor's event in each kind of move's instance action.
_CONDUCTOR_EVENTS = {'resize': 'conductor_migrate_server',
                     'migrate': 'conductor_migrate_server',
                     'live-migration': 'conductor_live_migrate_instance',
                     'evacuate': 'conductor_evacuate_instance'}


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


def claim_alternate(scheduler, ctx, selection, uuid):
    """Claim an alternate for the instance: whether it took the claim (a
    scheduler that could not be asked counts as a refusal)."""
    try:
        return scheduler.claim_resources(ctx, selection, uuid)
    except Exception:
        LOG.exception('Claiming %s for instance %s failed; trying the next '
                      'alternate', selection.service_host, uuid,
                      extra={'instance_uuid': uuid})
        return False


class SuperConductorManager:
    """Runs on the API bus: schedules and creates instances in cells."""

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, transport=None):
        self.transport = transport
        self.scheduler = scheduler_client.SchedulerClient(transport)
        self._conductor = None
        self._cells = {}
        self._cells_lock = threading.Lock()

    @property
    def conductor(self):
        """The super-conductors' own client (re-drives of boots)."""
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI(
                self.transport or rpc.get_transport())
        return self._conductor

    def report_service(self):
        """Periodic: heartbeat this super-conductor's record, with its
        service version, in cell0 (the top level's services live there,
        as in Nova), for the API's ``[upgrade_levels] conductor = auto``.
        """
        ctx = ss_context.get_admin_context()
        try:
            cell0 = self._cell(ctx, cell_mapping_obj.CELL0_UUID)
        except exception.CellMappingNotFound:
            LOG.debug('cell0 is not mapped yet; no service record')
            return
        objects.Service.heartbeat(ss_context.target_cell(ctx, cell0),
                                  CONF.host, service_obj.CONDUCTOR,
                                  conductor_rpcapi.TOPIC)

    def _cell(self, ctx, cell_uuid):
        with self._cells_lock:
            cell = self._cells.get(cell_uuid)
        if cell is None:
            cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
            with self._cells_lock:
                self._cells[cell_uuid] = cell
        return cell

    @messaging.expose
    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        """Cast from the API: place the instances of one boot request.

        Calls the scheduler once for all of them, asking for
        ``build_max_attempts - 1`` alternates each, then creates every
        instance in its chosen cell and casts its build to the chosen
        compute. Instances that cannot be placed go to cell0 in ERROR.
        """
        pending = [(br, spec) for br, spec in zip(build_requests,
                                                  request_specs)
                   if self._take(ctx, br)]
        if not pending:
            return
        build_requests = [br for br, _ in pending]
        request_specs = [spec for _, spec in pending]
        spec_obj = request_specs[0]
        uuids = [br.instance_uuid for br in build_requests]
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
        try:
            host_lists = self.scheduler.select_destinations(
                ctx, spec_obj, uuids, return_alternates=True,
                num_alternates=num_alternates)
        except Exception as exc:
            self._notify_build_error(ctx, uuids, spec_obj, exc)
            self._scheduling_failed(ctx, build_requests, uuids, exc)
            return
        notifications.emit(ctx, publisher,
                           'scheduler.select_destinations.end', payload)

        for build_request, request_spec, host_list in zip(
                build_requests, request_specs, host_lists):
            self._build_in_cell(ctx, build_request, request_spec, host_list)

    # --- moves (1.8) ---------------------------------------------------------

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.Conflict,
                                   exception.InstanceNotFound)
    def migrate_server(self, ctx, instance, flavor=None, host=None):
        """Call from the API: start a resize (``flavor``) or a cold
        migration (to ``host`` if an admin named one).

        The instance is in ``resize_prep`` already (the API set it). A
        migration record is made in its cell; the instance's allocations
        (the source host's) are handed to the migration, and the
        scheduler claims a destination for the instance among the hosts
        of its cell other than its own, with same-cell alternates. The
        destination's ``prep_resize`` is cast, and the migration
        answered. If no host takes it, everything is put back as it was
        (the instance holds its source again) and ``NoValidHost`` is
        raised.
        """
        uuid = instance.uuid
        cell, cctx, instance = self._locate(ctx, uuid)
        new_flavor = flavor or instance.flavor
        resize = flavor is not None
        migration = objects.Migration(
            instance_uuid=uuid,
            migration_type=(migration_obj.RESIZE if resize
                            else migration_obj.MIGRATION),
            status=migration_obj.PRE_MIGRATING,
            source_compute=instance.host, source_node=instance.node,
            old_instance_type_id=instance.flavor.get('id'),
            new_instance_type_id=new_flavor.get('id'),
            old_flavor=instance.flavor, new_flavor=new_flavor,
            old_vm_state=instance.vm_state, user_id=ctx.user_id,
            project_id=ctx.project_id).create(cctx)
        action = migration.action
        spec = self._move_spec(ctx, instance, new_flavor, cell, host)
        retry = objects.SchedulerRetries(num_attempts=1, hosts=[])
        try:
            self.scheduler.move_claim_to_migration(ctx, uuid,
                                                   migration.uuid)
            host_lists = self.scheduler.select_destinations(
                ctx, spec, [uuid], return_alternates=True,
                num_alternates=CONF.conductor.build_max_attempts - 1)
        except Exception as exc:
            self._move_not_scheduled(cctx, instance, migration, action, exc)
            raise
        [host_list] = host_lists
        chosen = host_list[0]
        retry.hosts = [chosen.service_host]
        migration.dest_compute = chosen.service_host
        migration.dest_node = chosen.nodename
        migration.dest_host = chosen.service_host
        migration.save(cctx)
        instance_action.record_event(
            cctx, uuid, 'conductor_migrate_server', host=CONF.host,
            details='%s claimed (alternates: %s)' % (
                chosen.service_host,
                ', '.join(s.service_host for s in host_list[1:]) or 'none'),
            action=action)
        LOG.info('Moving instance %s from %s to %s (%s)', uuid,
                 instance.host, chosen.service_host, action,
                 extra={'instance_uuid': uuid})
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        compute.prep_resize(ctx, chosen.service_host, instance, migration,
                            new_flavor, spec, host_list[1:], retry)
        return migration

    @staticmethod
    def _move_spec(ctx, instance, flavor, cell, host):
        """What the scheduler needs to move ``instance``: its boot's
        request (zone, group, hints, image), with the new flavor, kept to
        its cell, off its own host, and to ``host`` if one was named."""
        try:
            spec = objects.RequestSpec.get_by_instance_uuid(ctx,
                                                            instance.uuid)
        except exception.NotFound:
            spec = objects.RequestSpec(instance_uuid=instance.uuid,
                                       project_id=instance.project_id,
                                       user_id=instance.user_id,
                                       image_ref=instance.image_ref)
        spec.instance_uuid = instance.uuid
        spec.flavor = flavor
        spec.num_instances = 1
        spec.retry = None
        spec.requested_cell = cell.uuid
        spec.ignore_hosts = [instance.host] if instance.host else None
        spec.force_hosts = [host] if host else None
        spec.force_nodes = None
        if spec.get('instance_group') is not None:
            # Where the other members are is the scheduler's to read.
            spec.instance_group.hosts = []
        return spec

    def _locate(self, ctx, uuid):
        """``(cell, cell context, instance)`` of a server in a cell."""
        cell = objects.InstanceMapping.get_by_instance_uuid(
            ctx, uuid).cell_mapping
        cctx = ss_context.target_cell(ctx, cell)
        return cell, cctx, objects.Instance.get_by_uuid(cctx, uuid)

    def _locate_for_cast(self, ctx, uuid):
        """``_locate``, or None once the server is deleted: a cast has
        nobody to tell."""
        try:
            return self._locate(ctx, uuid)
        except (exception.InstanceNotFound,
                exception.InstanceMappingNotFound):
            return None

    @messaging.expose
    def live_migrate_instance(self, ctx, instance, migration, host=None,
                              block_migration=None):
        """Cast from the API: live migrate the server (in ``migrating``).

        As a cold migration: the migration holds the source, the
        scheduler claims a destination with same-cell alternates. Each
        destination in turn is asked ``pre_live_migration``; one that
        refuses gives way to the next alternate (whose claim replaces
        its own). The source then sends the server.
        """
        uuid = instance.uuid
        action = 'live-migration'
        located = self._locate_for_cast(ctx, uuid)
        if located is None:
            return
        cell, cctx, instance = located
        migration.status = migration_obj.QUEUED
        migration.save(cctx)
        spec = self._move_spec(ctx, instance, instance.flavor, cell, host)
        try:
            self.scheduler.move_claim_to_migration(ctx, uuid,
                                                   migration.uuid)
            [host_list] = self.scheduler.select_destinations(
                ctx, spec, [uuid], return_alternates=True,
                num_alternates=CONF.conductor.build_max_attempts - 1)
        except Exception as exc:
            self._move_not_scheduled(cctx, instance, migration, action, exc,
                                     instance_obj.MIGRATING)
            return
        compute = compute_rpcapi.ComputeAPI.for_cell(cell)
        tried = []
        for index, selection in enumerate(host_list):
            dest = selection.service_host
            if index and not claim_alternate(self.scheduler, ctx, selection,
                                             uuid):
                continue
            tried.append(dest)
            migration.dest_compute = migration.dest_host = dest
            migration.dest_node = selection.nodename
            migration.status = migration_obj.PREPARING
            migration.save(cctx)
            try:
                compute.pre_live_migration(
                    ctx, dest, instance, migration,
                    timeout=CONF.rpc_response_timeout)
            except Exception as exc:
                LOG.info('%s cannot take instance %s live: %s', dest, uuid,
                         exception.describe(exc),
                         extra={'instance_uuid': uuid})
                instance_action.record_event(
                    cctx, uuid, 'conductor_live_migrate_instance',
                    host=dest, result=instance_action.ERROR,
                    details='%s refused: %s; trying the next alternate' % (
                        dest, exception.describe(exc)), action=action)
                continue
            instance_action.record_event(
                cctx, uuid, 'conductor_live_migrate_instance', host=CONF.host,
                details='%s claimed and ready (hosts tried: %s)' % (
                    dest, ', '.join(tried)), action=action)
            compute.live_migration(ctx, instance.host, instance, migration)
            return
        self._move_not_scheduled(
            cctx, instance, migration, action,
            exception.MaxRetriesExceeded(
                reason='Exhausted all hosts available for live migrating '
                       'instance %s (hosts tried: %s)' % (
                           uuid, ', '.join(tried))),
            instance_obj.MIGRATING)

    @messaging.expose
    def evacuate_instance(self, ctx, instance, migration, host=None):
        """Cast from the API: rebuild the server, whose compute is down,
        on another host of its cell (``host`` if named, still filtered).
        The migration holds the dead source until its compute comes back
        and cleans up."""
        uuid = instance.uuid
        action = 'evacuate'
        located = self._locate_for_cast(ctx, uuid)
        if located is None:
            return
        cell, cctx, instance = located
        spec = self._move_spec(ctx, instance, instance.flavor, cell, host)
        migration.status = migration_obj.PRE_MIGRATING
        migration.save(cctx)
        try:
            self.scheduler.move_claim_to_migration(ctx, uuid,
                                                   migration.uuid)
            [[chosen]] = self.scheduler.select_destinations(
                ctx, spec, [uuid], return_alternates=False)
        except Exception as exc:
            self._move_not_scheduled(cctx, instance, migration, action, exc,
                                     instance_obj.REBUILDING)
            return
        migration.dest_compute = migration.dest_host = chosen.service_host
        migration.dest_node = chosen.nodename
        migration.save(cctx)
        instance_action.record_event(
            cctx, uuid, 'conductor_evacuate_instance', host=CONF.host,
            details='%s claimed' % chosen.service_host, action=action)
        compute_rpcapi.ComputeAPI.for_cell(cell).rebuild_instance(
            ctx, chosen.service_host, instance, migration)

    def _move_not_scheduled(self, cctx, instance, migration, action, exc,
                            task_state=instance_obj.RESIZE_PREP):
        """No destination: the instance holds its source again and is as
        it was; the migration ends in error."""
        uuid = instance.uuid
        if isinstance(exc, exception.NoValidHost):
            LOG.warning('No valid host to move instance %s to: %s', uuid,
                        exc.format_message(), extra={'instance_uuid': uuid})
        else:
            LOG.error('Scheduling the move of instance %s failed', uuid,
                      exc_info=exc, extra={'instance_uuid': uuid})
        try:
            self.scheduler.revert_claim_from_migration(cctx, migration.uuid,
                                                       uuid)
        except Exception:
            # The migration's record ends below: the heal gives its claim
            # back to nobody, and the instance's next claim is its own.
            LOG.exception('Could not give instance %s its source back',
                          uuid, extra={'instance_uuid': uuid})
        migration.status = migration_obj.ERROR
        migration.save(cctx)
        instance.task_state = None
        try:
            instance.save(cctx, expected_task_state=task_state)
        except (exception.InstanceNotFound, exception.Conflict):
            pass
        instance_action.record_event(
            cctx, uuid, _CONDUCTOR_EVENTS[action], host=CONF.host,
            result=instance_action.ERROR, details=exception.describe(exc),
            action=action)

    @staticmethod
    def _notify_build_error(ctx, uuids, spec_obj, exc):
        """``compute_task.build_instances.error`` for each instance the
        scheduler did not place, as Nova's conductor sends it."""
        publisher = 'scheduler-split-conductor:%s' % CONF.host
        for uuid in uuids:
            notifications.emit(
                ctx, publisher, 'compute_task.build_instances.error',
                functools.partial(
                    notifications.ComputeTaskPayload, instance_uuid=uuid,
                    flavor_name=spec_obj.flavor.name, state='error',
                    reason=exception.describe(exc)),
                error=True)

    def _scheduling_failed(self, ctx, build_requests, uuids, exc):
        """The instances of a request the scheduler did not place go to
        cell0 in ERROR with the reason."""
        if isinstance(exc, exception.NoValidHost):
            LOG.warning('No valid host for %s: %s', uuids,
                        exc.format_message())
        else:
            # A timeout, say: the scheduler may have claimed anyway.
            LOG.error('Scheduling %s failed', uuids, exc_info=exc)
            for uuid in uuids:
                self.scheduler.try_release_resources(ctx, uuid)
        if isinstance(exc, BUS_FAILURES):
            # The bus lost the question or the answer (a broker restart):
            # no cell holds the instances yet, so they wait for a re-drive
            # rather than fail.
            for build_request in build_requests:
                self._give_back(ctx, build_request)
            return
        reason = ('no_valid_host' if isinstance(exc, exception.NoValidHost)
                  else 'error')
        for build_request in build_requests:
            self._bury_in_cell0(ctx, build_request, exc, reason=reason)

    @staticmethod
    def _give_back(ctx, build_request):
        try:
            build_request.give_back(ctx)
            LOG.info('Build request of %s is left for a re-drive',
                     build_request.instance_uuid,
                     extra={'instance_uuid': build_request.instance_uuid})
        except Exception:
            # It stays taken: the lost-build sweep settles it.
            LOG.exception('Could not give back the build request of %s',
                          build_request.instance_uuid)

    def fail_lost_builds(self):
        """Periodic: build requests nothing scheduled end in cell0.

        Like every placement of an instance, this one only counts if it
        is the first to give the instance mapping its cell, so a late
        delivery of the original boot and this sweep never both win.
        """
        ctx = ss_context.get_admin_context()
        for build_request in objects.BuildRequest.get_older_than(
                ctx, CONF.conductor.lost_build_timeout):
            uuid = build_request.instance_uuid
            if not self._still_pending(ctx, build_request):
                continue
            LOG.warning('Build request of %s was never scheduled; putting '
                        'the instance in ERROR', uuid,
                        extra={'instance_uuid': uuid})
            if self._bury_in_cell0(ctx, build_request,
                                   exception.BuildAbortException(
                                       instance_uuid=uuid,
                                       reason=LOST_BEFORE_SCHEDULING),
                                   reason='lost'):
                metrics.LOST_BUILDS_FAILED.labels(
                    reason='never_scheduled').inc()
                # A run that died after claiming leaves its claim behind.
                self.scheduler.try_release_resources(ctx, uuid)

    def redrive_lost_boots(self):
        """Periodic: cast again the boots no super-conductor took.

        A boot waits on the bus, in the super-conductor's queue, until one
        takes its build request. A broker that restarts without keeping
        that queue loses it. A build request nobody took for
        ``[conductor] build_redrive_interval`` seconds is cast again, at
        most ``build_redrive_limit`` times; whichever delivery takes it
        first schedules it, the others find it taken. One never taken ends
        in cell0 through ``fail_lost_builds``.
        """
        limit = CONF.conductor.build_redrive_limit
        if not limit:
            return []
        ctx = ss_context.get_admin_context()
        redriven = []
        for build_request, seen in objects.BuildRequest.get_untaken(
                ctx, CONF.conductor.build_redrive_interval):
            uuid = build_request.instance_uuid
            if seen >= limit or not self._still_pending(ctx, build_request):
                continue
            try:
                spec = objects.RequestSpec.get_by_instance_uuid(ctx, uuid)
            except Exception:
                LOG.exception('No request spec for build request %s; not '
                              're-driving it', uuid,
                              extra={'instance_uuid': uuid})
                continue
            if not build_request.note_redrive(ctx, seen):
                continue
            LOG.warning('Boot of instance %s was taken by no super-conductor '
                        'within %d seconds; casting it again (%d of %d)',
                        uuid, CONF.conductor.build_redrive_interval,
                        seen + 1, limit, extra={'instance_uuid': uuid})
            try:
                self.conductor.schedule_and_build_instances(
                    ctx, [build_request], [spec])
            except Exception:
                LOG.exception('Re-driving the boot of %s failed', uuid,
                              extra={'instance_uuid': uuid})
                continue
            metrics.BOOTS_REDRIVEN.inc()
            redriven.append(uuid)
        return redriven

    def clean_up_placements(self):
        """Periodic: finish placements a crash or an error interrupted.

        An instance lives in exactly one cell, the one its mapping names:

        - a build request whose mapping has named a cell for
          ``[conductor] lost_build_timeout`` seconds was left by a
          placement that stopped before deleting it: it goes, and the
          user's edits it recorded reach the cell's row;
        - a row in a cell other than the one its mapping names was
          created by a placement that lost (to the lost-build sweep, or
          before an error sent the instance to cell0): it is marked
          deleted, and no claim is released, since the claims of an
          instance are those of its one live copy.

        Returns ``(build requests deleted, rows deleted)`` as uuids.
        """
        ctx = ss_context.get_admin_context()
        stale = []
        for build_request in objects.BuildRequest.get_placed(
                ctx, CONF.conductor.lost_build_timeout):
            if self._forget_build_request(ctx, build_request):
                stale.append(build_request.instance_uuid)
        strays = []
        for cell in objects.CellMapping.get_all(ctx):
            try:
                strays.extend(self._remove_strays(ctx, cell))
            except Exception:
                LOG.exception('Looking for instances of cell %s that '
                              'belong to another cell failed', cell.name)
        return stale, strays

    def _forget_build_request(self, ctx, build_request):
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

    def _remove_strays(self, ctx, cell):
        """Rows of ``cell`` whose instance mapping names another cell."""
        cctx = ss_context.target_cell(ctx, cell)
        # Only a build leaves such a row: it is building or in ERROR.
        candidates = [i for i in objects.Instance.get_all(cctx)
                      if i.vm_state in (instance_obj.BUILDING,
                                        instance_obj.ERROR)]
        if not candidates:
            return []
        mapped = objects.InstanceMapping.get_cell_ids(
            ctx, [i.uuid for i in candidates])
        removed = []
        for instance in candidates:
            cell_id = mapped.get(instance.uuid)
            if cell_id is None or cell_id == cell.id:
                continue
            LOG.warning('Instance %s has a row in cell %s but lives in '
                        'another cell; marking that row deleted',
                        instance.uuid, cell.name,
                        extra={'instance_uuid': instance.uuid})
            instance.destroy(cctx)
            removed.append(instance.uuid)
        return removed

    @messaging.expose
    def consumers_needing_claims(self, ctx, consumer_uuids):
        """Call from the scheduler's heal: which of ``consumer_uuids``
        still need their claims.

        The super-conductor owns the API database and reaches every
        cell's: an instance needs its claim while its build request waits
        for a cell, or while it lives (neither deleted nor in ERROR) in
        the cell its mapping names; a migration (the source host of a
        move) while the move is under way and its instance lives. Any
        other consumer (no mapping nor migration, a build request deleted
        before scheduling, an instance deleted or failed, a move that
        ended) needs none.
        """
        uuids = list(dict.fromkeys(consumer_uuids))
        mapped = objects.InstanceMapping.get_cell_ids(ctx, uuids)
        needed = set()
        by_cell = {}
        unmapped = [uuid for uuid in uuids if uuid not in mapped]
        if unmapped:
            needed.update(self._migrations_under_way(ctx, unmapped))
        for uuid in uuids:
            if uuid not in mapped:
                continue
            if mapped[uuid] is None:
                try:
                    objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
                    needed.add(uuid)
                except exception.BuildRequestNotFound:
                    pass
                continue
            by_cell.setdefault(mapped[uuid], []).append(uuid)
        cells = {cell.id: cell for cell in objects.CellMapping.get_all(ctx)}
        for cell_id, in_cell in by_cell.items():
            if cell_id not in cells:
                # A cell unmapped meanwhile: in doubt, keep the claims.
                needed.update(in_cell)
                continue
            cctx = ss_context.target_cell(ctx, cells[cell_id])
            for start in range(0, len(in_cell), CHUNK):
                for instance in objects.Instance.get_all(
                        cctx, uuids=in_cell[start:start + CHUNK]):
                    if instance.vm_state != instance_obj.ERROR:
                        needed.add(instance.uuid)
        return [uuid for uuid in uuids if uuid in needed]

    @staticmethod
    def _migrations_under_way(ctx, uuids):
        """Of ``uuids``, the migrations of any cell whose move has not
        ended and whose instance lives."""
        found = set()
        for cell in objects.CellMapping.get_all(ctx):
            if cell.is_cell0:
                continue
            cctx = ss_context.target_cell(ctx, cell)
            for start in range(0, len(uuids), CHUNK):
                moving = {m.uuid: m.instance_uuid
                          for m in objects.Migration.get_all(
                              cctx, uuids=uuids[start:start + CHUNK])
                          if not m.ended}
                if not moving:
                    continue
                alive = {i.uuid for i in objects.Instance.get_all(
                    cctx, uuids=sorted(set(moving.values())))}
                found.update(uuid for uuid, instance in moving.items()
                             if instance in alive)
        return found

    @staticmethod
    def _still_pending(ctx, build_request):
        """Whether the build request still waits for a cell.

        A user's delete or the API taking back a boot it could not hand
        over removes it; a second delivery of the same boot finds it
        mapped. Either way there is nothing to schedule, and scheduling
        anyway would move the claim of the instance.
        """
        uuid = build_request.instance_uuid
        try:
            objects.BuildRequest.get_by_instance_uuid(ctx, uuid)
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
        except (exception.BuildRequestNotFound,
                exception.InstanceMappingNotFound):
            LOG.info('Build request of %s is gone; nothing to build', uuid,
                     extra={'instance_uuid': uuid})
            return False
        return mapping.cell_mapping is None

    def _take(self, ctx, build_request):
        """Whether this delivery of a boot is the one to schedule it.

        Only one delivery takes a build request: a late original and a
        re-drive of the same boot never both schedule it (which would move
        the instance's claim under the other's feet).
        """
        if not self._still_pending(ctx, build_request):
            return False
        if build_request.take(ctx):
            return True
        LOG.info('Build request of %s is already being scheduled; ignoring '
                 'this delivery of its boot', build_request.instance_uuid,
                 extra={'instance_uuid': build_request.instance_uuid})
        return False

    def _build_in_cell(self, ctx, build_request, request_spec, host_list):
        """Create the instance in the chosen cell and cast its build.

        Until the cell holds the instance, a failure sends it to cell0;
        after that, it fails where it is: ERROR in its cell.
        """
        chosen, alternates = host_list[0], host_list[1:]
        uuid = build_request.instance_uuid
        instance = build_request.instance
        try:
            cell = self._cell(ctx, chosen.cell_uuid)
            cctx = ss_context.target_cell(ctx, cell)
            instance.vm_state = instance_obj.BUILDING
            instance.task_state = instance_obj.SCHEDULING
            take_host_zone(instance, request_spec, chosen)
            instance.create(cctx)
        except Exception as exc:
            LOG.exception('Creating instance %s in cell %s failed', uuid,
                          chosen.cell_uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(ctx, uuid)
            self._bury_in_cell0(ctx, build_request, exc)
            return
        try:
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
            if not mapping.set_cell(ctx, cell):
                # Someone placed it first (a sweep of lost builds).
                LOG.info('Instance %s was settled elsewhere meanwhile',
                         uuid, extra={'instance_uuid': uuid})
                instance.destroy(cctx)
                self.scheduler.try_release_resources(ctx, uuid)
                return
            try:
                recorded = build_request.destroy(ctx)
            except exception.BuildRequestNotFound:
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
            instance_action.record_event(
                cctx, uuid, 'conductor_schedule_and_build_instances',
                host=chosen.service_host,
                details='claimed on %s; alternates: %s' % (
                    chosen.service_host,
                    ', '.join(s.service_host for s in alternates) or
                    'none'))
            retry = objects.SchedulerRetries(num_attempts=1,
                                             hosts=[chosen.service_host])
            compute = compute_rpcapi.ComputeAPI.for_cell(cell)
            compute.build_and_run_instance(
                ctx, chosen.service_host, chosen.nodename, instance,
                request_spec, alternates, retry)
            metrics.BUILDS_STARTED.inc()
        except Exception as exc:
            LOG.exception('Handing instance %s to %s failed', uuid,
                          chosen.service_host, extra={'instance_uuid': uuid})
            self._fail_in_cell(ctx, cctx, build_request, instance, exc)

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

    def _bury_in_cell0(self, ctx, build_request, exc, reason='error'):
        """An instance that could not be scheduled: ERROR in cell0.

        The row comes first, then the mapping points at it (only if no
        one placed the instance meanwhile), then the build request goes.
        If cell0 cannot be written, the build request stays and
        ``fail_lost_builds`` tries again later. Returns whether this call
        placed the instance (the claims are then its to release);
        ``reason`` is what the metrics count it under.
        """
        uuid = build_request.instance_uuid
        try:
            cell0 = self._cell(ctx, cell_mapping_obj.CELL0_UUID)
            cctx = ss_context.target_cell(ctx, cell0)
            try:
                # An earlier attempt that stopped before pointing the
                # mapping at cell0 left its row: that one is the ERROR.
                instance = objects.Instance.get_by_uuid(cctx, uuid)
            except exception.InstanceNotFound:
                instance = build_request.instance
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                # Its status changed now, from BUILD to ERROR: a list with
                # changes-since shows it from this moment, the moment its
                # fault names.
                fault = objects.InstanceFault.from_exception(uuid, exc)
                instance.updated_at = fault.created_at = obj_base.utcnow()
                instance.create(cctx, fault=fault)
            mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
            if not mapping.set_cell(ctx, cell0):
                instance.destroy(cctx)
                return False
            metrics.BURIED_IN_CELL0.labels(reason=reason).inc()
            instance_action.record_event(
                cctx, uuid, 'conductor_schedule_and_build_instances',
                result=instance_action.ERROR,
                details=exception.describe(exc))
        except Exception:
            LOG.exception('Could not record instance %s in cell0', uuid,
                          extra={'instance_uuid': uuid})
            return False
        try:
            recorded = build_request.destroy(ctx)
        except exception.BuildRequestNotFound:
            # The user deleted the server meanwhile.
            instance.destroy(cctx)
            return True
        try:
            if instance.take_user_edits(recorded):
                instance.save(cctx)
        except exception.InstanceNotFound:
            pass
        return True


class CellConductorManager:
    """Runs on a cell bus: tries the alternates of a failed build."""

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, cell_db, transport=None):
        self.cell_db = cell_db
        self.transport = transport or rpc.get_transport()
        self.scheduler = scheduler_client.SchedulerClient(self.transport)
        self.compute = compute_rpcapi.ComputeAPI(self.transport, cell_db)

    def report_service(self):
        """Periodic: heartbeat this cell conductor's record, with its
        service version, in its cell database, for the computes'
        ``[upgrade_levels] conductor = auto``."""
        ctx = ss_context.targeted(ss_context.get_admin_context(),
                                  self.cell_db)
        objects.Service.heartbeat(ctx, CONF.host, service_obj.CONDUCTOR,
                                  conductor_rpcapi.TOPIC)

    def fail_lost_builds(self):
        """Periodic: builds nothing will finish end in ERROR.

        Two kinds: a build without a host (its cast to a compute, or to
        this conductor for a reschedule, was lost) that nothing touched
        for ``lost_build_timeout``; and a build on a host whose compute
        has been down for ``service_down_time`` (it crashed, or lost its
        bus, mid-build). Each ends in ERROR with a fault, written only if
        the instance is still in the state the sweep saw (a compute or a
        delete that moves it first wins), then its claim is released.
        """
        ctx = ss_context.targeted(ss_context.get_admin_context(),
                                  self.cell_db)
        for instance, why in objects.Instance.get_unhandled_builds(
                ctx, CONF.conductor.lost_build_timeout, service_obj.COMPUTE,
                CONF.service_down_time):
            uuid = instance.uuid
            seen_task_state = instance.task_state
            if why == instance_obj.LOST_NO_HOST:
                reason = LOST_IN_CELL
            else:
                reason = LOST_HOST_DOWN % instance.host
            exc = exception.BuildAbortException(instance_uuid=uuid,
                                                reason=reason)
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            fault = objects.InstanceFault.from_exception(uuid, exc)
            try:
                instance.save(ctx, expected_task_state=seen_task_state,
                              expected_vm_state=instance_obj.BUILDING,
                              fault=fault)
            except (exception.InstanceNotFound, exception.Conflict):
                continue
            metrics.LOST_BUILDS_FAILED.labels(
                reason='no_host' if why == instance_obj.LOST_NO_HOST
                else 'host_down').inc()
            LOG.warning('Build of instance %s was lost (%s); it is in '
                        'ERROR now', uuid, reason,
                        extra={'instance_uuid': uuid})
            instance_action.record_event(
                ctx, uuid, 'conductor_fail_lost_builds',
                host=instance.host, result=instance_action.ERROR,
                details=exc.format_message())
            self.scheduler.try_release_resources(ctx, uuid)

    # --- 1.3: what computes persist, done here for them ---------------------

    @messaging.expose
    def get_minimum_service_version(self, ctx):
        """Call from a compute (``[upgrade_levels] conductor = auto``):
        the lowest service version of this cell's running conductors."""
        return objects.Service.get_minimum_version(
            ss_context.targeted(ctx, self.cell_db), service_obj.CONDUCTOR)

    @messaging.expose
    @_EXPECTED
    def instance_get(self, ctx, instance_uuid, read_deleted=False):
        """Call from a compute: one instance of this cell."""
        return objects.Instance.get_by_uuid(
            ss_context.targeted(ctx, self.cell_db), instance_uuid,
            read_deleted=read_deleted)

    @staticmethod
    def _expected(expected_task_states):
        if expected_task_states is None:
            return instance_obj.ANY_TASK_STATE
        return list(expected_task_states)

    @messaging.expose
    @_EXPECTED
    def instance_save(self, ctx, instance, expected_task_states=None,
                      expected_vm_state=None, fault=None):
        """Call from a compute: write the fields it changed, if the row
        is still as it expects; answers the instance as saved. From 1.5
        with ``fault``, recorded in the same write."""
        instance.save(ss_context.targeted(ctx, self.cell_db),
                      expected_task_state=self._expected(
                          expected_task_states),
                      expected_vm_state=expected_vm_state, fault=fault)
        if fault is not None:
            instance.fault = fault
            instance.obj_reset_changes(['fault'])
        return instance

    @messaging.expose
    @_EXPECTED
    def instance_save_error(self, ctx, instance, fault,
                            expected_task_states=None,
                            expected_vm_state=None, expected_host=None):
        """Call from a compute: ERROR with ``fault``, in one write."""
        instance.vm_state = instance_obj.ERROR
        instance.task_state = None
        instance.save(ss_context.targeted(ctx, self.cell_db),
                      expected_task_state=self._expected(
                          expected_task_states),
                      expected_vm_state=expected_vm_state,
                      expected_host=expected_host, fault=fault)
        instance.fault = fault
        instance.obj_reset_changes(['fault'])
        return instance

    @messaging.expose
    @_EXPECTED
    def instance_destroy(self, ctx, instance_uuid):
        """Call from a compute: mark the instance deleted (nothing if it
        is gone already)."""
        cctx = ss_context.targeted(ctx, self.cell_db)
        try:
            objects.Instance.get_by_uuid(cctx, instance_uuid).destroy(cctx)
        except exception.InstanceNotFound:
            pass

    @messaging.expose
    def instance_get_all_by_host(self, ctx, host):
        """Call from a compute: the live instances on its host."""
        return objects.Instance.get_all(
            ss_context.targeted(ctx, self.cell_db), host=host)

    @messaging.expose
    def instance_action_event(self, ctx, instance_uuid, event, host=None,
                              result=instance_action.SUCCESS, details=None,
                              action='create'):
        """Call from a compute: record one step of ``ctx``'s request."""
        instance_action.record_event(
            ss_context.targeted(ctx, self.cell_db), instance_uuid, event,
            host=host, result=result, details=details, action=action)

    @messaging.expose
    def service_heartbeat(self, ctx, host, binary, topic, version,
                          create=True):
        """Call from a compute: refresh its service record, with the
        service version it runs (not this conductor's). Answers with
        what the operator said of the service (``Service.status``: the
        compute carries it to the scheduler, which is how a status the
        API could not tell the scheduler still gets there); a conductor
        of the release before answered None. ``create`` (1.7) is True
        only for the first heartbeat of a compute process: later ones
        raise ``ServiceNotFound`` when the operator deleted the record
        (before 1.7 every heartbeat made it again)."""
        service = objects.Service.heartbeat(
            ss_context.targeted(ctx, self.cell_db), host, binary, topic,
            version=version, create=create)
        return service.status()

    @messaging.expose
    def build_instances(self, ctx, instance, request_spec, host_list, retry):
        """Cast from a compute whose build failed: try the next alternate.

        Claims each alternate in order through the scheduler library and
        casts the build to the first one that accepts. With none left the
        instance ends in ERROR with the exhausted-hosts fault.
        """
        ctx = ss_context.targeted(ctx, self.cell_db)
        try:
            self._reschedule(ctx, instance, request_spec, host_list, retry)
        except Exception as exc:
            LOG.exception('Rescheduling instance %s failed', instance.uuid,
                          extra={'instance_uuid': instance.uuid})
            self._fail(ctx, instance, exc)

    # --- 1.8: moves ----------------------------------------------------------

    @messaging.expose
    def get_minimum_compute_version(self, ctx):
        """Call from a compute about to cast to another compute."""
        return objects.Service.get_minimum_version(
            ss_context.targeted(ctx, self.cell_db), service_obj.COMPUTE)

    @messaging.expose
    @messaging.expected_exceptions(exception.MigrationNotFound)
    def migration_get(self, ctx, migration_uuid):
        return objects.Migration.get_by_uuid(
            ss_context.targeted(ctx, self.cell_db), migration_uuid)

    @messaging.expose
    def migrations_get(self, ctx, source_compute=None, migration_types=None,
                       statuses=None):
        return objects.Migration.get_all(
            ss_context.targeted(ctx, self.cell_db),
            source_compute=source_compute, migration_types=migration_types,
            statuses=statuses)

    @messaging.expose
    @messaging.expected_exceptions(exception.MigrationNotFound,
                                   exception.Conflict)
    def migration_save(self, ctx, migration, expected_status=None):
        migration.save(ss_context.targeted(ctx, self.cell_db),
                       expected_status=expected_status)
        return migration

    @messaging.expose
    def migrate_reschedule(self, ctx, instance, migration, flavor,
                           request_spec, host_list, retry, reason):
        """Cast from a destination that refused a resize or a cold
        migration: claim the next same-cell alternate for the instance
        (which replaces its claim of the refusing host) and cast
        ``prep_resize`` to it. With none left the move is undone: the
        instance holds its source again, keeps its state and gets the
        exhausted-hosts fault; the migration ends in error."""
        ctx = ss_context.targeted(ctx, self.cell_db)
        uuid = instance.uuid
        action = migration.action
        try:
            for index, selection in enumerate(host_list):
                if not self._claim(ctx, selection, uuid):
                    continue
                retry.num_attempts += 1
                retry.hosts = retry.hosts + [selection.service_host]
                migration.dest_compute = selection.service_host
                migration.dest_node = selection.nodename
                migration.dest_host = selection.service_host
                migration.save(ctx,
                               expected_status=migration_obj.PRE_MIGRATING)
                instance_action.record_event(
                    ctx, uuid, 'conductor_migrate_server',
                    host=selection.service_host,
                    details='rescheduled to %s (attempt %d; hosts tried: '
                            '%s)' % (selection.service_host,
                                     retry.num_attempts,
                                     ', '.join(retry.hosts)),
                    action=action)
                LOG.info('Rescheduling the move of instance %s to %s '
                         '(attempt %d)', uuid, selection.service_host,
                         retry.num_attempts, extra={'instance_uuid': uuid})
                self.compute.prep_resize(ctx, selection.service_host,
                                         instance, migration, flavor,
                                         request_spec, host_list[index + 1:],
                                         retry)
                return
            exc = exception.MaxRetriesExceeded(
                reason='Exhausted all hosts available for moving instance '
                       '%s (hosts tried: %s; last: %s)' % (
                           uuid, ', '.join(retry.hosts), reason))
        except Exception as error:
            LOG.exception('Rescheduling the move of instance %s failed',
                          uuid, extra={'instance_uuid': uuid})
            exc = error
        self._undo_move(ctx, instance, migration, action, exc)

    def _undo_move(self, ctx, instance, migration, action, exc):
        """A move that found no destination: back to the source."""
        uuid = instance.uuid
        LOG.warning('Move of instance %s failed: %s', uuid,
                    exception.describe(exc), extra={'instance_uuid': uuid})
        self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                   uuid)
        try:
            migration.status = migration_obj.ERROR
            migration.save(ctx)
            current = objects.Instance.get_by_uuid(ctx, uuid)
            current.task_state = None
            current.save(ctx, expected_task_state=instance_obj.RESIZE_PREP,
                         fault=objects.InstanceFault.from_exception(
                             uuid, exc))
        except (exception.InstanceNotFound, exception.Conflict,
                exception.MigrationNotFound):
            pass
        instance_action.record_event(
            ctx, uuid, 'conductor_migrate_server',
            result=instance_action.ERROR, details=exception.describe(exc),
            action=action)

    # The task states a server holds while each kind of move is under
    # way, before it waits for its user or ends.
    _MOVING = {
        migration_obj.RESIZE: instance_obj.RESIZE_TASK_STATES,
        migration_obj.MIGRATION: instance_obj.RESIZE_TASK_STATES,
        migration_obj.LIVE_MIGRATION: (instance_obj.MIGRATING,),
        migration_obj.EVACUATION: (instance_obj.REBUILDING,
                                   instance_obj.REBUILD_SPAWNING),
    }

    def fail_lost_moves(self):
        """Periodic: no server stays moving forever.

        A move that no service advanced for ``[conductor]
        lost_build_timeout`` seconds (its message was lost with a crashed
        process, or a compute died under it) is rolled back: the migration
        ends in error first (so that a late step finds it ended and
        stops), the server holds its source again and no longer the
        destination, its task is cleared where it is, with a fault and an
        event in Error. Returns the migrations rolled back.
        """
        ctx = ss_context.targeted(ss_context.get_admin_context(),
                                  self.cell_db)
        cutoff = obj_base.utcnow() - datetime.timedelta(
            seconds=CONF.conductor.lost_build_timeout)
        lost = []
        for migration in objects.Migration.get_all(
                ctx, statuses=migration_obj.UNDER_WAY,
                updated_before=cutoff):
            seen = migration.status
            migration.status = migration_obj.ERROR
            try:
                migration.save(ctx, expected_status=seen)
            except (exception.Conflict, exception.MigrationNotFound):
                continue
            uuid = migration.instance_uuid
            try:
                instance = objects.Instance.get_by_uuid(ctx, uuid)
            except exception.InstanceNotFound:
                self.scheduler.try_release_resources(ctx, migration.uuid)
                continue
            moving = self._MOVING.get(migration.migration_type, ())
            if instance.task_state not in moving and \
                    instance.host != migration.source_compute:
                # It did move (the record was not told): the source's
                # hold is all that is left.
                self.scheduler.try_release_resources(ctx, migration.uuid)
                continue
            self.scheduler.revert_claim_from_migration(ctx, migration.uuid,
                                                       uuid)
            exc = exception.MoveLost(
                kind=migration.migration_type, instance_uuid=uuid,
                status=seen)
            LOG.warning('%s', exc.format_message(),
                        extra={'instance_uuid': uuid})
            if instance.task_state in moving:
                instance.task_state = None
                instance.host = migration.source_compute
                instance.node = migration.source_node
                if migration.old_flavor is not None:
                    instance.flavor = migration.old_flavor
                try:
                    instance.save(ctx, expected_task_state=list(moving),
                                  fault=objects.InstanceFault.from_exception(
                                      uuid, exc))
                except (exception.InstanceNotFound, exception.Conflict):
                    pass
            instance_action.record_event(
                ctx, uuid, 'conductor_fail_lost_moves',
                result=instance_action.ERROR, details=exc.format_message(),
                action=migration.action)
            lost.append(migration.uuid)
        return lost

    def confirm_old_resizes(self):
        """Periodic: resizes and migrations waiting for a confirmation
        longer than ``[DEFAULT] resize_confirm_window`` seconds are
        confirmed, as if their user had (0: never)."""
        window = CONF.resize_confirm_window
        if not window:
            return []
        ctx = ss_context.targeted(ss_context.get_admin_context(),
                                  self.cell_db)
        cutoff = obj_base.utcnow() - datetime.timedelta(seconds=window)
        confirmed = []
        for migration in objects.Migration.get_all(
                ctx, statuses=[migration_obj.FINISHED],
                updated_before=cutoff):
            migration.status = migration_obj.CONFIRMING
            try:
                migration.save(ctx, expected_status=migration_obj.FINISHED)
                instance = objects.Instance.get_by_uuid(
                    ctx, migration.instance_uuid)
            except (exception.Conflict, exception.MigrationNotFound,
                    exception.InstanceNotFound):
                continue
            LOG.info('Confirming the move of instance %s, unconfirmed for '
                     'more than %d seconds', instance.uuid, window,
                     extra={'instance_uuid': instance.uuid})
            self.compute.confirm_resize(ctx, migration.source_compute,
                                        instance, migration)
            confirmed.append(migration.uuid)
        return confirmed

    def _claim(self, ctx, selection, uuid):
        return claim_alternate(self.scheduler, ctx, selection, uuid)

    def _reschedule(self, ctx, instance, request_spec, host_list, retry):
        uuid = instance.uuid
        try:
            instance = objects.Instance.get_by_uuid(ctx, uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its reschedule',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(ctx, uuid)
            return
        for index, selection in enumerate(host_list):
            if not self._claim(ctx, selection, uuid):
                continue
            retry.num_attempts += 1
            retry.hosts = retry.hosts + [selection.service_host]
            if take_host_zone(instance, request_spec, selection):
                instance.save(ctx)
            instance_action.record_event(
                ctx, uuid, 'conductor_build_instances',
                host=selection.service_host,
                details='rescheduled to %s (attempt %d; hosts tried: %s)' % (
                    selection.service_host, retry.num_attempts,
                    ', '.join(retry.hosts)))
            LOG.info('Rescheduling instance %s to %s (attempt %d)', uuid,
                     selection.service_host, retry.num_attempts,
                     extra={'instance_uuid': uuid})
            self.compute.build_and_run_instance(
                ctx, selection.service_host, selection.nodename, instance,
                request_spec, host_list[index + 1:], retry)
            metrics.BUILDS_RESCHEDULED.inc()
            return
        metrics.RESCHEDULES_EXHAUSTED.inc()
        exc = exception.MaxRetriesExceeded(reason=EXHAUSTED % uuid)
        LOG.warning('Instance %s: %s', uuid, exc.format_message(),
                    extra={'instance_uuid': uuid})
        instance_action.record_event(
            ctx, uuid, 'conductor_build_instances',
            result=instance_action.ERROR,
            details='%s (hosts tried: %s)' % (exc.format_message(),
                                              ', '.join(retry.hosts)))
        self._fail(ctx, instance, exc)

    def _fail(self, ctx, instance, exc):
        """ERROR with a fault first, then give the claim back."""
        instance.host = None
        instance.node = None
        try:
            instance.save_error(ctx, exc)
        except exception.InstanceNotFound:
            pass
        self.scheduler.try_release_resources(ctx, instance.uuid)
