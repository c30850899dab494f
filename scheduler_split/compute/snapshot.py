"""What a compute does for an image of a server (compute RPC 1.8): the
data of a snapshot or a backup (``createImage``, ``createBackup``).

The API made the image, ``queued``, and set the server's task state to
``image_snapshot`` guarded by none; the compute goes on only while the
server still has that task, has its driver upload the server's disk as
the image's data, and clears the task. A failed upload deletes the image
and leaves the server as it was, with a fault and an instance-action
event in Error, as in Nova.
"""

import logging

import oslo_messaging as messaging

from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

LOG = logging.getLogger(__name__)

SNAPSHOT_EVENT = 'compute_snapshot_instance'
SNAPSHOTTING = instance_obj.IMAGE_SNAPSHOT


def delete_image(ctx, image_id):
    """Best effort, from a compute host: an image nothing needs."""
    try:
        image_client.delete_image(ctx, image_id, over_api=True)
    except exception.ImageNotFound:
        pass
    except Exception as exc:
        LOG.warning('Could not delete image %s: %s', image_id, exc)


class SnapshotMixin:
    """The 1.8 snapshot cast of :class:`ComputeManager`."""

    @messaging.expose
    def snapshot_instance(self, ctx, instance, image_id):
        """Cast from the API: upload the server's disk as the data of the
        queued image ``image_id``."""
        uuid = instance.uuid
        started = obj_base.utcnow()
        with self._locks(uuid):
            current = self._current(ctx, uuid, [SNAPSHOTTING],
                                    'snapshot_instance')
            if current is None:
                delete_image(ctx, image_id)
                return
            try:
                self.driver.snapshot(ctx, current, image_id)
            except exception.ImageNotFound:
                # Deleted meanwhile (a backup rotation of none keeps
                # none): nothing is wrong with the server.
                LOG.info('Image %s of instance %s was deleted before its '
                         'upload', image_id, uuid,
                         extra={'instance_uuid': uuid})
                current.task_state = None
                try:
                    self.conductor.instance_save(
                        ctx, current, expected_task_states=[SNAPSHOTTING])
                except (exception.InstanceNotFound, exception.Conflict):
                    pass
                return
            except Exception as exc:
                self._snapshot_failed(ctx, current, image_id, exc, started)
                return
            current.task_state = None
            current.power_state = self.driver.get_power_state(current)
            try:
                self.conductor.instance_save(
                    ctx, current, expected_task_states=[SNAPSHOTTING],
                    event=dict(event=SNAPSHOT_EVENT, host=self.host,
                               result=instance_action.SUCCESS,
                               details='uploaded as image %s' % image_id,
                               action='createImage', start_time=started))
            except (exception.InstanceNotFound, exception.Conflict):
                # A delete came meanwhile; the image is made all the same.
                return
            LOG.info('Instance %s: image %s uploaded from %s', uuid,
                     image_id, self.host, extra={'instance_uuid': uuid})

    def _snapshot_failed(self, ctx, instance, image_id, exc, started):
        uuid = instance.uuid
        LOG.warning('Snapshot of instance %s on %s failed: %s', uuid,
                    self.host, exc, extra={'instance_uuid': uuid})
        delete_image(ctx, image_id)
        self._record_event(ctx, uuid, SNAPSHOT_EVENT,
                           result=instance_action.ERROR,
                           details=exception.describe(exc),
                           action='createImage', start_time=started)
        instance.task_state = None
        instance.power_state = self.driver.get_power_state(instance)
        fault = objects.InstanceFault.from_exception(uuid, exc,
                                                     host=self.host)
        try:
            self.conductor.instance_save_with_fault(
                ctx, instance, fault, expected_task_states=[SNAPSHOTTING])
        except (exception.InstanceNotFound, exception.Conflict):
            pass
