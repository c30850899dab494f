"""The compute service: builds and deletes instances on one host."""

import functools
import logging
import threading

import oslo_messaging as messaging

from scheduler_split.compute import evacuation
from scheduler_split.compute import fencing
from scheduler_split.compute import inspect
from scheduler_split.compute import lifecycle
from scheduler_split.compute import locks
from scheduler_split.compute import moves
from scheduler_split.compute import power_sync
from scheduler_split.compute import rebuild
from scheduler_split.compute import resource_tracker
from scheduler_split.compute import shelve
from scheduler_split.compute import snapshot
from scheduler_split.compute.virt import driver as virt_driver
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The event each attempt to build an instance on a host records in the
# instance's create action, whether the spawn worked or not.
BUILD_EVENT = 'compute_build_and_run_instance'

RPC_VERSION = '1.8'

# How many times a compute sends one step of a build to its conductor
# when no answer comes (each waits [DEFAULT] rpc_response_timeout).
BUILD_SAVE_TRIES = 3
# What says nothing about a step of a build: no answer, or a conductor
# cut from its database (another try may reach one that is not).
UNANSWERED = outage.BUS_UNAVAILABLE + (exception.DatabaseUnavailable,)


def _waiting_for_a_host(current):
    """Whether the build of ``current`` (the instance as read now) waits
    for its next host: its claim, if any, is that host's."""
    return (not current.deleted and
            current.vm_state == instance_obj.BUILDING and
            current.task_state == instance_obj.SCHEDULING)


def _claimed_elsewhere(current, host):
    """Whether the claim of ``current`` is not ``host``'s to drop: it
    lives on another host, or its build waits for the next one."""
    if current.deleted:
        return False
    return _waiting_for_a_host(current) or current.host not in (None, host)


class ComputeManager(lifecycle.LifecycleMixin, moves.MovesMixin,
                     evacuation.EvacuationMixin, rebuild.RebuildMixin,
                     inspect.InspectMixin, shelve.ShelveMixin,
                     fencing.FencingMixin, power_sync.PowerSyncMixin,
                     snapshot.SnapshotMixin):
    """One hypervisor host. It holds no database credentials: every
    instance record it reads or writes, its instance-action events and
    its service heartbeat go through its cell conductor (object
    indirection, as in Nova), so a compromised host cannot rewrite the
    database; capacity goes to the scheduler through its library."""

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, host, transport=None, driver=None):
        self.host = host
        self.transport = transport or rpc.get_transport()
        self.driver = driver or virt_driver.load(host)
        self.scheduler = scheduler_client.SchedulerClient(self.transport)
        self.conductor = conductor_rpcapi.CellConductorAPI(self.transport)
        self.resource_tracker = resource_tracker.ResourceTracker(
            host, self.driver, self.scheduler, self.conductor)
        self._locks = locks.InstanceLocks()
        # Builds this process is running now; a build on this host that
        # is not among them will not finish (see settle_instances).
        self._building = set()
        self._building_guard = threading.Lock()
        self.resource_tracker.builds_in_flight = lambda: len(self._building)
        # Why builds failed whose ERROR could not be saved yet.
        self._unsaved_errors = {}
        self._first_settle = True
        self._evacuations_cleaned = False
        self._init_fencing()

    def init_host(self):
        """At start: nothing to read yet; the first run of the periodic
        :meth:`settle_instances`, right after the start, settles what a
        previous run of this host left behind (the conductor may not be
        listening yet, so the start does not wait for it). A driver that
        cannot reach its hypervisor stops the start."""
        self.driver.register_event_listener(self.sync_power_state)
        self.driver.init_host()
        self._first_settle = True

    def cleanup_host(self):
        """At the stop: the driver lets go of its hypervisor."""
        self.driver.cleanup_host()

    def settle_instances(self):
        """Periodic (and first right after the start): no build on this
        host stays in BUILD unless this process is running it.

        A build that this compute is not building (it was spawning when
        the service stopped, or its ERROR could not be saved while the
        database was away) cannot be resumed: it ends in ERROR with a
        fault, written only if it is still building, then gives its
        claim back. At the first run after a start, a delete that was in
        progress is finished too.
        """
        ctx = ss_context.get_admin_context()
        if not self._evacuations_cleaned:
            # Until it has worked once: the conductor may not be
            # listening yet at the start.
            try:
                self.clean_up_evacuations(ctx)
                self._evacuations_cleaned = True
            except Exception as exc:
                if not outage.is_outage(exc):
                    LOG.exception('Could not look for servers evacuated '
                                  'off %s yet; trying again later',
                                  self.host)
                else:
                    outage.report(LOG, exc, 'Could not look for servers '
                                  'evacuated off %s yet (%s); trying again '
                                  'later', self.host, outage.describe(exc))
        first, self._first_settle = self._first_settle, False
        try:
            self.resolve_unconfirmed(ctx)
            instances = self.conductor.instance_get_all_by_host(
                ctx, self.host)
        except Exception:
            self._first_settle = first
            raise
        for instance in instances:
            uuid = instance.uuid
            if instance.task_state == instance_obj.DELETING:
                # A delete whose cast was lost, or whose last steps failed
                # (the database was away): finish it. A fresh one is left
                # to its own cast.
                if first or self._older_than_a_check(instance):
                    self.terminate_instance(ctx, instance)
                continue
            if instance.task_state in lifecycle.TASK_STATES:
                # Not a build: a power action this process no longer runs
                # after a restart is cleared; otherwise its cast does it.
                if first:
                    self._settle_lifecycle(ctx, instance)
                continue
            if instance.vm_state != instance_obj.BUILDING:
                continue
            with self._locks(uuid):
                if self._is_building(uuid):
                    continue
                # The list may be stale by now: a build that finished
                # here, or failed and was rescheduled to another host,
                # must be left alone. Read it again; the write below is
                # guarded by what this read saw, the host included.
                try:
                    instance = self.conductor.instance_get(ctx, uuid)
                except exception.InstanceNotFound:
                    continue
                if (instance.host != self.host or
                        instance.vm_state != instance_obj.BUILDING or
                        instance.task_state == instance_obj.DELETING):
                    continue
                exc = self._unsaved_errors.get(uuid)
                if exc is None and self._give_back(ctx, instance):
                    continue
                if exc is None:
                    exc = exception.BuildAbortException(
                        instance_uuid=uuid,
                        reason='the compute service on %s stopped or lost '
                               'its database during the build' % self.host)
                LOG.warning('Instance %s is building on %s but no build '
                            'runs here; putting it in ERROR', uuid,
                            self.host, extra={'instance_uuid': uuid})
                self._fail(ctx, instance, exc,
                           expected_task_states=[instance.task_state])

    def _give_back(self, ctx, instance):
        """A build this host no longer runs (the service restarted while
        it spawned) goes back to its cell conductor, which takes it on to
        its next alternate, from its plan, with its claim; whatever the
        spawn left here goes. False if it cannot (no plan: a build of an
        earlier release, or conductors too old): it is then failed, as
        before."""
        uuid = instance.uuid
        try:
            handed = self.conductor.give_back_build(ctx, uuid, self.host)
        except messaging.RPCVersionCapError:
            return False
        except (exception.InstanceNotFound, exception.Conflict):
            # Finished, deleted or moved on meanwhile.
            return True
        if not handed:
            return False
        LOG.warning('Instance %s was building on %s when the service '
                    'stopped; handed back to the cell conductor for its '
                    'next alternate', uuid, self.host,
                    extra={'instance_uuid': uuid})
        self._destroy(instance)
        return True

    @staticmethod
    def _older_than_a_check(instance):
        changed = instance.updated_at or instance.created_at
        if changed is None:
            return True
        age = (obj_base.naive_utc(obj_base.utcnow()) -
               obj_base.naive_utc(changed))
        return age.total_seconds() > (
            CONF.compute.unfinished_build_check_interval)

    def _is_building(self, uuid):
        with self._building_guard:
            return uuid in self._building

    def report(self):
        """Periodic: send capacity and liveness to the scheduler."""
        self.resource_tracker.report(ss_context.get_admin_context())

    def heartbeat(self):
        """Periodic, beside :meth:`report` so that a slow conductor never
        delays what the scheduler hears: refresh the service record. A
        heartbeat answered ends a silence (see :mod:`.fencing`, whose
        periodic check runs apart: a call may hang while the bus is
        away)."""
        self.resource_tracker.heartbeat(ss_context.get_admin_context())
        self.heard_from_conductor()

    @messaging.expose
    def build_and_run_instance(self, ctx, instance, request_spec, host_list,
                               retry, node):
        """Cast from a conductor: spawn ``instance`` on this host.

        The scheduler already claimed this host for the instance. A
        reschedulable failure gives the claim back and casts
        ``build_instances`` to this cell's conductor with the remaining
        alternates; any other failure ends in ERROR with a fault.
        """
        uuid = instance.uuid
        with self._locks(uuid):
            with self._building_guard:
                self._building.add(uuid)
            try:
                self._build(ctx, instance, request_spec, host_list, retry,
                            node)
            except UNANSWERED as exc:
                # The conductor never answered a step, even after the
                # tries: what becomes of the build is settled once it
                # answers again (resolve_unconfirmed, settle_instances),
                # and its VM, if it spawned, is fenced meanwhile if the
                # silence lasts.
                spawned = self._unanswered(instance)
                LOG.warning('Build of instance %s on %s got no answer from '
                            'its conductor (%s); %s', uuid, self.host, exc,
                            'its VM waits for the conductor to answer'
                            if spawned else 'nothing runs here for it',
                            extra={'instance_uuid': uuid})
            except Exception as exc:
                # A cast has nobody to report to: whatever went wrong, the
                # instance must not stay in BUILD.
                exception.log_failure(LOG, exc, 'Build of instance %s '
                                      'failed', uuid,
                                      extra={'instance_uuid': uuid})
                self._fail(ctx, instance, exc)
            finally:
                with self._building_guard:
                    self._building.discard(uuid)

    def _notify(self, ctx, instance, phase, exc=None):
        notifications.emit(
            ctx, 'scheduler-split-compute:%s' % self.host,
            'instance.create.%s' % phase,
            functools.partial(notifications.InstanceCreatePayload
                              .from_instance, instance, exc),
            error=exc is not None)

    def _build(self, ctx, instance, request_spec, host_list, retry, node):
        uuid = instance.uuid
        # When this host's attempt began: its event's start.
        started = obj_base.utcnow()
        try:
            # The cast carries the instance as its conductor wrote it; the
            # save below writes only what the build changes, and only if
            # the row is still SCHEDULING, so it needs no fresh read.
            instance.obj_reset_changes()
            instance.host = self.host
            instance.node = node
            instance.task_state = instance_obj.SPAWNING
            # Where the driver puts the root disk, if it says.
            instance.root_device_name = getattr(self.driver,
                                                'root_device_name', None)
            # Only a build the conductor handed over (SCHEDULING) starts;
            # a delete that came first (DELETING) wins.
            instance = self._save_build(
                ctx, instance, [instance_obj.SCHEDULING],
                lambda current: (current.task_state ==
                                 instance_obj.SPAWNING and
                                 current.host == self.host))
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its build started',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(ctx, uuid)
            return
        except exception.Conflict:
            # Deleted, or settled as lost, before the build started - or
            # this is a second delivery of a build some host already runs,
            # or a cast the build's plan moved on from (it goes to another
            # host): either way the claim is not this host's to drop.
            current = self.conductor.instance_get(ctx, uuid,
                                                  read_deleted=True)
            LOG.info('Build of instance %s not started: it is %s/%s',
                     uuid, current.vm_state, current.task_state,
                     extra={'instance_uuid': uuid})
            if not current.host and not _waiting_for_a_host(current):
                self.scheduler.try_release_resources(ctx, uuid)
            return
        self._notify(ctx, instance, 'start')
        try:
            self.driver.spawn(ctx, instance)
            self._spawned(instance)
        except exception.RescheduledException as exc:
            self.resource_tracker.build_failed(ctx)
            self._notify(ctx, instance, 'error', exc)
            self._record(ctx, uuid, instance_action.ERROR,
                         '%s; rescheduling' % exc.format_message(),
                         started)
            self._reschedule(ctx, instance, request_spec, host_list, retry,
                             exc)
            return
        except Exception as exc:
            LOG.warning('Build of instance %s failed: %s', uuid, exc,
                        extra={'instance_uuid': uuid})
            self.resource_tracker.build_failed(ctx)
            self._notify(ctx, instance, 'error', exc)
            self._record(ctx, uuid, instance_action.ERROR,
                         exception.describe(exc), started)
            self._fail(ctx, instance, exc)
            return
        self.resource_tracker.build_succeeded(ctx)
        instance.vm_state = instance_obj.ACTIVE
        instance.task_state = None
        instance.power_state = instance_obj.RUNNING
        instance.launched_at = obj_base.utcnow()
        # What the build ended as, if not ACTIVE here.
        current = None
        try:
            # The event of the attempt goes with the save: one call.
            instance = self._save_build(
                ctx, instance, [instance_obj.SPAWNING],
                lambda current: (current.vm_state == instance_obj.ACTIVE and
                                 current.host == self.host),
                event=dict(event=BUILD_EVENT, host=self.host,
                           result=instance_action.SUCCESS,
                           details='spawned on %s' % self.host,
                           start_time=started))
        except exception.InstanceNotFound:
            # Deleted while spawning, the row gone already: clean up here.
            LOG.info('Instance %s was deleted during its build', uuid,
                     extra={'instance_uuid': uuid})
            self._destroy(instance)
            self.scheduler.try_release_resources(ctx, uuid)
            return
        except exception.Conflict:
            # Deleted while spawning (the terminate queued behind this
            # build finishes the delete), or handed on to an alternate
            # while this host was thought down: the claim is then the
            # other host's. Or an earlier try of this save was written
            # and its answer lost: the build is done.
            current = self.conductor.instance_get(ctx, uuid,
                                                  read_deleted=True)
            if (not current.deleted and current.host == self.host and
                    current.vm_state == instance_obj.ACTIVE):
                instance = current
                current = None
        if current is not None:
            LOG.info('Build of instance %s on %s ended elsewhere: it is '
                     '%s/%s on %s', uuid, self.host, current.vm_state,
                     current.task_state, current.host,
                     extra={'instance_uuid': uuid})
            self._destroy(instance)
            if not _claimed_elsewhere(current, self.host):
                self.scheduler.try_release_resources(ctx, uuid)
            return
        if self._settled(uuid):
            # Fenced while the save went unanswered; it was written.
            self.driver.power_on(instance)
        self._notify(ctx, instance, 'end')
        LOG.info('Instance %s is ACTIVE on %s', uuid, self.host,
                 extra={'instance_uuid': uuid})

    def _save_build(self, ctx, instance, expected_task_states, saved,
                    event=None):
        """Save a step of a build through the conductor, whose answer may
        never come (it died with the call, a broker restarted): on a
        timeout the instance is read again, and if it is as the save
        leaves it (``saved(current)``), that is the answer; else the save
        is sent again. After BUILD_SAVE_TRIES timeouts, the timeout."""
        for attempt in range(1, BUILD_SAVE_TRIES + 1):
            try:
                return self.conductor.instance_save(
                    ctx, instance, expected_task_states=expected_task_states,
                    event=event)
            except UNANSWERED as exc:
                if attempt == BUILD_SAVE_TRIES:
                    raise
                LOG.warning('The conductor did not answer the save of '
                            'instance %s (%s); reading it again (try %d of '
                            '%d)', instance.uuid, outage.describe(exc),
                            attempt, BUILD_SAVE_TRIES,
                            extra={'instance_uuid': instance.uuid})
            try:
                current = self.conductor.instance_get(ctx, instance.uuid)
            except UNANSWERED:
                continue
            if saved(current):
                return current

    def _record(self, ctx, uuid, result, details, started=None):
        self._record_event(ctx, uuid, BUILD_EVENT, result=result,
                           details=details, start_time=started)

    def _record_event(self, ctx, uuid, event, result=instance_action.SUCCESS,
                      details=None, action='create', start_time=None):
        """Record a step of this host that began at ``start_time`` (now,
        by default) and ends now. An audit trail: failing to reach the
        conductor is logged and never fails the step itself."""
        try:
            self.conductor.instance_action_event(
                ctx, uuid, event, host=self.host, result=result,
                details=details, action=action, start_time=start_time)
        except Exception as exc:
            if not outage.is_outage(exc):
                LOG.exception('Could not record event %s of instance %s',
                              event, uuid, extra={'instance_uuid': uuid})
                return
            outage.report(LOG, exc, 'Could not record event %s of instance '
                          '%s: %s', event, uuid, outage.describe(exc),
                          extra={'instance_uuid': uuid})

    def _reschedule(self, ctx, instance, request_spec, host_list, retry,
                    exc):
        uuid = instance.uuid
        LOG.warning('Build of instance %s on %s failed, rescheduling: %s',
                    uuid, self.host, exc.format_message(),
                    extra={'instance_uuid': uuid})
        self._destroy(instance)
        try:
            current = self.conductor.instance_get(ctx, uuid,
                                                  read_deleted=True)
        except exception.InstanceNotFound:
            current = None
        if current is not None and not current.deleted and (
                current.host, current.task_state) != (
                self.host, instance_obj.SPAWNING):
            self._not_rescheduled(ctx, current)
            return
        instance.host = None
        instance.node = None
        instance.task_state = instance_obj.SCHEDULING
        try:
            instance = self._save_build(
                ctx, instance, [instance_obj.SPAWNING],
                lambda current: (current.task_state ==
                                 instance_obj.SCHEDULING and
                                 current.host is None))
        except exception.InstanceNotFound:
            # Deleted meanwhile; the delete drops the claim too.
            self.scheduler.try_release_resources(ctx, uuid)
            return
        except exception.Conflict:
            # Deleted, or moved on meanwhile.
            self._not_rescheduled(ctx, self.conductor.instance_get(
                ctx, uuid, read_deleted=True))
            return
        # Claiming an alternate moves the claim; this early release only
        # frees the host sooner.
        self.scheduler.try_release_resources(ctx, uuid)
        self.conductor.build_instances(ctx, instance, request_spec,
                                       host_list, retry)

    def _not_rescheduled(self, ctx, current):
        """The build this host failed is no longer its own to give back
        (giving it back would take it from its new host): deleted, or
        moved on to an alternate while this host was taken for down,
        whose claim it is then."""
        LOG.info('Build of instance %s is not rescheduled from %s: it is '
                 '%s/%s on %s', current.uuid, self.host, current.vm_state,
                 current.task_state, current.host,
                 extra={'instance_uuid': current.uuid})
        if not _claimed_elsewhere(current, self.host):
            self.scheduler.try_release_resources(ctx, current.uuid)

    def _fail(self, ctx, instance, exc, expected_task_states=None):
        """ERROR with a fault first, then give the claim back.

        If the ERROR cannot be saved (the database is away), the claim
        stays and the instance stays building on this host: the next
        :meth:`settle_instances` tries again, with the same fault.
        """
        uuid = instance.uuid
        settling = bool(expected_task_states)
        if not settling:
            # A build of this process failed: its VM goes first.
            self._destroy(instance)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_error(
                ctx, instance, fault,
                expected_task_states=expected_task_states,
                expected_vm_state=(instance_obj.BUILDING
                                   if settling else None),
                expected_host=self.host if settling else None)
        except exception.InstanceNotFound:
            pass
        except exception.Conflict:
            # Finished or deleted meanwhile: not this call's to settle.
            self._unsaved_errors.pop(uuid, None)
            return
        except Exception:
            LOG.exception('Could not put instance %s in ERROR; trying '
                          'again later', uuid,
                          extra={'instance_uuid': uuid})
            self._unsaved_errors[uuid] = exc
            return
        self._unsaved_errors.pop(uuid, None)
        if settling:
            # Only once the ERROR is this call's: whatever the build left
            # on this host goes.
            self._destroy(instance)
        self.scheduler.try_release_resources(ctx, uuid)

    @messaging.expose
    def terminate_instance(self, ctx, instance):
        """Cast from the API: destroy the instance and drop its claim."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            notifications.instance_event(ctx, self._publisher(), instance,
                                         'instance.delete.start')
            self._destroy(instance)
            # The claim goes before the row, so that no claim outlives the
            # server a user sees; a release that fails is healed later.
            self.scheduler.try_release_resources(ctx, uuid)
            try:
                self.conductor.instance_destroy(ctx, uuid)
            except Exception as exc:
                if not outage.is_outage(exc):
                    raise
                # It stays deleting: the next look of settle_instances
                # finishes the delete.
                outage.report(LOG, exc, 'Could not mark instance %s deleted '
                              '(%s); the next look for unfinished work '
                              'finishes its delete', uuid,
                              outage.describe(exc),
                              extra={'instance_uuid': uuid})
                return
            self._unsaved_errors.pop(uuid, None)
            self._record_event(ctx, uuid, 'compute_terminate_instance',
                               action='delete', start_time=started)
            notifications.instance_event(ctx, self._publisher(), instance,
                                         'instance.delete.end')
            LOG.info('Instance %s deleted from %s', uuid, self.host,
                     extra={'instance_uuid': uuid})
