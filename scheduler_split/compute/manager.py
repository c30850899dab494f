"""The compute service: builds and deletes instances on one host."""

import contextlib
import functools
import logging
import threading

import oslo_messaging as messaging

from scheduler_split.compute import resource_tracker
from scheduler_split.compute.virt import fake
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
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

RPC_VERSION = '1.2'


class _InstanceLocks:
    """One lock per instance uuid, so a delete waits for a running build.

    A lock lives only while someone holds or waits for it.
    """

    def __init__(self):
        self._locks = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def __call__(self, uuid):
        with self._guard:
            lock, users = self._locks.get(uuid, (None, 0))
            if lock is None:
                lock = threading.Lock()
            self._locks[uuid] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[uuid]
                if users == 1:
                    del self._locks[uuid]
                else:
                    self._locks[uuid] = (lock, users - 1)


class ComputeManager:

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, host, cell_db=None, transport=None, driver=None):
        self.host = host
        self.cell_db = cell_db or CONF.database.connection
        self.transport = transport or rpc.get_transport()
        self.driver = driver or fake.FakeDriver(host)
        self.scheduler = scheduler_client.SchedulerClient(self.transport)
        self.conductor = conductor_rpcapi.ConductorAPI(self.transport,
                                                       self.cell_db)
        self.resource_tracker = resource_tracker.ResourceTracker(
            host, self.driver, self.scheduler)
        self._locks = _InstanceLocks()

    def _ctx(self, ctx=None):
        return ss_context.targeted(ctx or ss_context.get_admin_context(),
                                   self.cell_db)

    def init_host(self):
        """At start: settle what a previous run of this host left behind.

        A build that was spawning when the service stopped cannot be
        resumed (its message was consumed), so it ends in ERROR with a
        fault and gives its claim back; a delete that was in progress is
        finished.
        """
        ctx = self._ctx()
        for instance in objects.Instance.get_all(ctx, host=self.host):
            if instance.task_state == instance_obj.DELETING:
                self.terminate_instance(ctx, instance)
            elif instance.vm_state == instance_obj.BUILDING:
                LOG.warning('Instance %s was building on %s when it '
                            'stopped; putting it in ERROR', instance.uuid,
                            self.host,
                            extra={'instance_uuid': instance.uuid})
                self._fail(ctx, instance, exception.BuildAbortException(
                    instance_uuid=instance.uuid,
                    reason='the compute service restarted during the '
                           'build'))

    def report(self):
        """Periodic: send capacity and liveness to the scheduler."""
        self.resource_tracker.report(self._ctx())

    @messaging.expose
    def build_and_run_instance(self, ctx, instance, request_spec, host_list,
                               retry, node):
        """Cast from a conductor: spawn ``instance`` on this host.

        The scheduler already claimed this host for the instance. A
        reschedulable failure gives the claim back and casts
        ``build_instances`` to this cell's conductor with the remaining
        alternates; any other failure ends in ERROR with a fault.
        """
        ctx = self._ctx(ctx)
        uuid = instance.uuid
        with self._locks(uuid):
            try:
                self._build(ctx, instance, request_spec, host_list, retry,
                            node)
            except Exception as exc:
                # A cast has nobody to report to: whatever went wrong, the
                # instance must not stay in BUILD.
                LOG.exception('Build of instance %s failed unexpectedly',
                              uuid, extra={'instance_uuid': uuid})
                self._fail(ctx, instance, exc)

    def _notify(self, ctx, instance, phase, exc=None):
        notifications.emit(
            ctx, 'scheduler-split-compute:%s' % self.host,
            'instance.create.%s' % phase,
            functools.partial(notifications.InstanceCreatePayload
                              .from_instance, instance, exc),
            error=exc is not None)

    def _build(self, ctx, instance, request_spec, host_list, retry, node):
        uuid = instance.uuid
        try:
            instance = objects.Instance.get_by_uuid(ctx, uuid)
            instance.host = self.host
            instance.node = node
            instance.task_state = instance_obj.SPAWNING
            # Only a build the conductor handed over (SCHEDULING) starts;
            # a delete that came first (DELETING) wins.
            instance.save(ctx, expected_task_state=instance_obj.SCHEDULING)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its build started',
                     uuid, extra={'instance_uuid': uuid})
            self.scheduler.try_release_resources(ctx, uuid)
            return
        except exception.Conflict:
            # Deleted, or settled as lost, before the build started - or
            # this is a second delivery of a build some host already runs,
            # whose claim must stay.
            current = objects.Instance.get_by_uuid(ctx, uuid,
                                                   read_deleted=True)
            LOG.info('Build of instance %s not started: it is %s/%s',
                     uuid, current.vm_state, current.task_state,
                     extra={'instance_uuid': uuid})
            if not current.host:
                self.scheduler.try_release_resources(ctx, uuid)
            return
        self._notify(ctx, instance, 'start')
        try:
            self.driver.spawn(instance)
        except exception.RescheduledException as exc:
            self._notify(ctx, instance, 'error', exc)
            self._record(ctx, uuid, instance_action.ERROR,
                         '%s; rescheduling' % exc.format_message())
            self._reschedule(ctx, instance, request_spec, host_list, retry,
                             exc)
            return
        except Exception as exc:
            LOG.warning('Build of instance %s failed: %s', uuid, exc,
                        extra={'instance_uuid': uuid})
            self._notify(ctx, instance, 'error', exc)
            self._record(ctx, uuid, instance_action.ERROR,
                         exception.describe(exc))
            self._fail(ctx, instance, exc)
            return
        self._record(ctx, uuid, instance_action.SUCCESS,
                     'spawned on %s' % self.host)
        instance.vm_state = instance_obj.ACTIVE
        instance.task_state = None
        instance.power_state = instance_obj.RUNNING
        instance.launched_at = obj_base.utcnow()
        try:
            instance.save(ctx, expected_task_state=instance_obj.SPAWNING)
        except (exception.InstanceNotFound, exception.Conflict):
            # Deleted while spawning: the terminate queued behind this
            # build finishes the delete; if the row is gone already, clean
            # up here.
            LOG.info('Instance %s was deleted during its build', uuid,
                     extra={'instance_uuid': uuid})
            self.driver.destroy(instance)
            self.scheduler.try_release_resources(ctx, uuid)
            return
        self._notify(ctx, instance, 'end')
        LOG.info('Instance %s is ACTIVE on %s', uuid, self.host,
                 extra={'instance_uuid': uuid})

    def _record(self, ctx, uuid, result, details):
        instance_action.record_event(ctx, uuid,
                                     'compute_build_and_run_instance',
                                     host=self.host, result=result,
                                     details=details)

    def _reschedule(self, ctx, instance, request_spec, host_list, retry,
                    exc):
        uuid = instance.uuid
        LOG.warning('Build of instance %s on %s failed, rescheduling: %s',
                    uuid, self.host, exc.format_message(),
                    extra={'instance_uuid': uuid})
        self.driver.destroy(instance)
        instance.host = None
        instance.node = None
        instance.task_state = instance_obj.SCHEDULING
        try:
            instance.save(ctx, expected_task_state=instance_obj.SPAWNING)
        except (exception.InstanceNotFound, exception.Conflict):
            # Deleted meanwhile; the delete drops the claim too.
            self.scheduler.try_release_resources(ctx, uuid)
            return
        # Claiming an alternate moves the claim; this early release only
        # frees the host sooner.
        self.scheduler.try_release_resources(ctx, uuid)
        self.conductor.build_instances(ctx, instance, request_spec,
                                       host_list, retry)

    def _fail(self, ctx, instance, exc):
        """ERROR with a fault first, then give the claim back."""
        self.driver.destroy(instance)
        try:
            instance.save_error(ctx, exc, host=self.host)
        except exception.InstanceNotFound:
            pass
        self.scheduler.try_release_resources(ctx, instance.uuid)

    @messaging.expose
    def terminate_instance(self, ctx, instance):
        """Cast from the API: destroy the instance and drop its claim."""
        ctx = self._ctx(ctx)
        uuid = instance.uuid
        with self._locks(uuid):
            self.driver.destroy(instance)
            # The claim goes before the row, so that no claim outlives the
            # server a user sees; a release that fails is healed later.
            self.scheduler.try_release_resources(ctx, uuid)
            try:
                instance = objects.Instance.get_by_uuid(ctx, uuid)
                instance.destroy(ctx)
            except exception.InstanceNotFound:
                pass
            instance_action.record_event(
                ctx, uuid, 'compute_terminate_instance', host=self.host,
                action='delete')
            LOG.info('Instance %s deleted from %s', uuid, self.host,
                     extra={'instance_uuid': uuid})
