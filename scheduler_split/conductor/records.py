"""What computes persist, done for them by their cell conductor.

A compute holds no database credentials: every instance, migration,
instance-action and service record it reads or writes goes over its
cell's bus to this endpoint, which serves it beside the cell conductor's
own (one RPC server, topic ``conductor``, several endpoints), as Nova's
object indirection does. Each method is a call from a compute; what it
may answer as a normal outcome (``InstanceNotFound``, ``Conflict``,
``MigrationNotFound``) goes back as itself, without a traceback in this
conductor's log.
"""

import oslo_messaging as messaging

from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import service as service_obj

_EXPECTED = messaging.expected_exceptions(exception.InstanceNotFound,
                                          exception.Conflict)


def _expected(expected_task_states):
    if expected_task_states is None:
        return instance_obj.ANY_TASK_STATE
    return list(expected_task_states)


def _build_step(instance, expected_task_states):
    """What a compute's save does to the build's plan, as keyword
    arguments of ``Instance.save``: a build that starts (scheduling to
    spawning) starts only on the host its plan names, so that a cast
    that was overtaken (the build went on to an alternate meanwhile)
    does not start it; a build its host gives back (spawning to
    scheduling, no host: a reschedule) clears the plan's host; and a
    spawn ends (spawning to anything, the host kept) only on its host."""
    changed = instance.obj_what_changed()
    if 'task_state' not in changed:
        return {}
    if (expected_task_states == [instance_obj.SCHEDULING] and
            instance.task_state == instance_obj.SPAWNING and
            instance.host):
        return {'build_host': instance.host}
    if (expected_task_states == [instance_obj.SPAWNING] and
            instance.task_state == instance_obj.SCHEDULING and
            'host' in changed and instance.host is None):
        return {'give_back_build': True}
    if (expected_task_states == [instance_obj.SPAWNING] and
            'host' not in changed and instance.host):
        # A spawn's end: only on the host that spawns it. A host that
        # was taken for down while it spawned, and whose build moved on
        # to an alternate now spawning it, ends nothing.
        return {'expected_host': instance.host}
    return {}


class ComputeRecords:
    """The records of one cell (``cell_db``), for its computes."""

    target = messaging.Target(version=conductor_rpcapi.RPC_VERSION)

    def __init__(self, cell_db):
        self.cell_db = cell_db

    def _cell(self, ctx):
        return ss_context.targeted(ctx, self.cell_db)

    # --- 1.3 -----------------------------------------------------------------

    @messaging.expose
    def get_minimum_service_version(self, ctx):
        """Call from a compute (``[upgrade_levels] conductor = auto``):
        the lowest service version of this cell's running conductors."""
        return objects.Service.get_minimum_version(self._cell(ctx),
                                                   service_obj.CONDUCTOR)

    @messaging.expose
    @_EXPECTED
    def instance_get(self, ctx, instance_uuid, read_deleted=False):
        """Call from a compute: one instance of this cell."""
        return objects.Instance.get_by_uuid(self._cell(ctx), instance_uuid,
                                            read_deleted=read_deleted)

    @messaging.expose
    @_EXPECTED
    def instance_save(self, ctx, instance, expected_task_states=None,
                      expected_vm_state=None, fault=None, event=None):
        """Call from a compute: write the fields it changed, if the row
        is still as it expects; answers the instance as saved. From 1.5
        with ``fault``, recorded in the same write; from 1.9 with
        ``event`` (keyword arguments of ``instance_action_event`` but the
        uuid; from 1.12 ``start_time`` among them), the action event it
        records, in the same write too."""
        instance.save(self._cell(ctx),
                      expected_task_state=_expected(expected_task_states),
                      expected_vm_state=expected_vm_state, fault=fault,
                      event=event,
                      **_build_step(instance, expected_task_states))
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
        instance.save(self._cell(ctx),
                      expected_task_state=_expected(expected_task_states),
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
        cctx = self._cell(ctx)
        try:
            objects.Instance.get_by_uuid(cctx, instance_uuid).destroy(cctx)
        except exception.InstanceNotFound:
            pass

    @messaging.expose
    def instance_get_all_by_host(self, ctx, host):
        """Call from a compute: the live instances on its host."""
        return objects.Instance.get_all(self._cell(ctx), host=host)

    @messaging.expose
    def instance_action_event(self, ctx, instance_uuid, event, host=None,
                              result=instance_action.SUCCESS, details=None,
                              action='create', start_time=None):
        """Call from a compute: record one step of ``ctx``'s request,
        which began at ``start_time`` (1.12: an ISO 8601 time; a compute
        before that sends none, and the step is recorded as beginning
        when it ended)."""
        instance_action.record_event(
            self._cell(ctx), instance_uuid, event, host=host, result=result,
            details=details, action=action, start_time=start_time)

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
            self._cell(ctx), host, binary, topic, version=version,
            create=create)
        return service.status()

    # --- 1.8: moves ----------------------------------------------------------

    @messaging.expose
    def get_minimum_compute_version(self, ctx):
        """Call from a compute about to cast to another compute."""
        return objects.Service.get_minimum_version(self._cell(ctx),
                                                   service_obj.COMPUTE)

    @messaging.expose
    @messaging.expected_exceptions(exception.MigrationNotFound)
    def migration_get(self, ctx, migration_uuid):
        """Call from a compute: one migration of this cell."""
        return objects.Migration.get_by_uuid(self._cell(ctx),
                                             migration_uuid)

    @messaging.expose
    def migrations_get(self, ctx, source_compute=None, migration_types=None,
                       statuses=None):
        """Call from a compute: the migrations of this cell that match."""
        return objects.Migration.get_all(
            self._cell(ctx), source_compute=source_compute,
            migration_types=migration_types, statuses=statuses)

    @messaging.expose
    @messaging.expected_exceptions(exception.MigrationNotFound,
                                   exception.Conflict)
    def migration_save(self, ctx, migration, expected_status=None):
        """Call from a compute: write the migration's changed fields, if
        its status is still ``expected_status``."""
        migration.save(self._cell(ctx), expected_status=expected_status)
        return migration
