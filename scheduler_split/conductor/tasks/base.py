"""What every conductor task is: one operation, run once, that puts back
what it did when it fails.

A task is made with everything it works on, then :meth:`execute` runs
it. If it raises, :meth:`ConductorTask.rollback` undoes what it had done
and records the failure where the user and the operator read it (the
instance's fault and actions, the log); the failure is then raised again
for the caller: a call answers with it, a cast (:func:`run_cast`) ends
there.
"""

import logging

from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base

LOG = logging.getLogger(__name__)


def locate(ctx, uuid):
    """``(cell mapping, a context targeting that cell, the instance as
    its cell holds it)`` of the instance ``uuid``; ``InstanceNotFound``
    or ``InstanceMappingNotFound`` once it is deleted."""
    cell = objects.InstanceMapping.get_by_instance_uuid(
        ctx, uuid).cell_mapping
    cctx = ss_context.target_cell(ctx, cell)
    return cell, cctx, objects.Instance.get_by_uuid(cctx, uuid)


def locate_in_task(ctx, uuid, task_state, what):
    """``locate`` for a cast that goes on only with the instance still in
    ``task_state``; None (logged, naming the step ``what``) once it was
    deleted or moved on: a cast has nobody to tell, and nothing to do."""
    try:
        cell, cctx, instance = locate(ctx, uuid)
    except (exception.InstanceNotFound, exception.InstanceMappingNotFound):
        LOG.info('Instance %s was deleted before its %s', uuid, what,
                 extra={'instance_uuid': uuid})
        return None
    if instance.task_state != task_state:
        LOG.info('Not doing the %s of instance %s: it is %s/%s now', what,
                 uuid, instance.vm_state, instance.task_state,
                 extra={'instance_uuid': uuid})
        return None
    return cell, cctx, instance


class ConductorTask:
    """One long operation of a conductor, read top to bottom in
    ``_execute``."""

    # Whether the last failure of execute() was rolled back.
    rolled_back = False
    # When execute() began: the start of the instance-action events the
    # task records (its step).
    started = None

    def execute(self):
        """Run the operation and return its answer. If it fails, roll
        back what it did, then raise the failure again."""
        self.started = obj_base.utcnow()
        try:
            return self._execute()
        except Exception as exc:
            self.rolled_back = self.rollback(exc)
            raise

    def _execute(self):
        raise NotImplementedError

    def rollback(self, exc):
        """Undo what ``_execute`` did before it failed with ``exc``, and
        record why; return whether it did (a failure past the point a
        task can undo, once a compute was handed the work, is that
        compute's to finish or the sweeps' to settle). Nothing by
        default."""
        return False


def run_cast(task):
    """Run ``task`` for a cast: nobody waits for its outcome. A failure
    the task rolled back is recorded already and ends here, as does an
    expected outcome (``exception.is_expected``), logged in one line;
    any other goes on to the bus's dispatcher, which logs its
    traceback."""
    try:
        task.execute()
    except Exception as exc:
        if task.rolled_back:
            return
        if not exception.is_expected(exc):
            raise
        uuids = _instances_of(task)
        exception.log_failure(
            LOG, exc, '%s of instance %s stopped', type(task).__name__,
            ', '.join(uuids) or '(none)',
            extra={'instance_uuid': uuids[0]} if len(uuids) == 1 else {})


def _instances_of(task):
    """The uuids of the instances ``task`` works on: a move names its
    instance by uuid, a build or reschedule holds the instance or the
    build requests."""
    if getattr(task, 'uuid', None):
        return [task.uuid]
    instance = getattr(task, 'instance', None)
    if instance is not None:
        return [instance.uuid]
    return [br.instance_uuid for br in getattr(task, 'build_requests', ())]
