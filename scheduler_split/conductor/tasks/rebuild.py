"""A rebuild on the server's own host: the super-conductor checks a new
image against that host, then hands the rebuild to its compute.

The API wrote the server's new image (and name, metadata, key, user
data) and set it ``rebuilding``. With a new image, the scheduler is
asked, through its library, whether the server's host still passes the
filters that judge the request (the image's properties, the host's
aggregates and zone) for it; the server keeps the claim it holds, and
nothing new is claimed. A server in ERROR holds no claim (see
``conductor/reconcile.py``): its rebuild claims its host again in the
same call, new image or not. The compute then rebuilds the server
(``scheduler_split/compute/rebuild.py``).

A host that refuses (the new image does not pass there, or it has no
room left for a server in ERROR), or a failure before the compute was
told, leaves the server as it was, with its old image: nothing on the
host changed. The refusal is its fault and the ``rebuild`` action's
event in Error. (Nova puts it in ERROR; here a server in ERROR holds no
claim, and the server still runs on its host.)
"""

import logging

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor.tasks import base
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_action

CONF = conf.CONF
LOG = logging.getLogger(__name__)

EVENT = 'conductor_rebuild_server'


class RebuildTask(base.ConductorTask):
    """Check a rebuild's new image against the server's host and cast the
    rebuild to it."""

    def __init__(self, scheduler, ctx, instance, orig_image_ref,
                 image_properties=None, preserve_ephemeral=False,
                 computes=compute_rpcapi.ComputeAPI.for_cell):
        self.scheduler = scheduler
        self.ctx = ctx
        self.uuid = instance.uuid
        self.orig_image_ref = orig_image_ref
        self.image_properties = image_properties
        self.preserve_ephemeral = preserve_ephemeral
        self.computes = computes
        self.cell = self.cctx = self.instance = self.vm_state = None

    def _execute(self):
        found = base.locate_in_task(self.ctx, self.uuid,
                                    instance_obj.REBUILDING, 'rebuild')
        if found is None:
            return
        self.cell, self.cctx, self.instance = found
        instance = self.instance
        self.vm_state = instance.vm_state
        details = 'rebuilding on %s' % instance.host
        new_image = instance.image_ref != self.orig_image_ref
        reclaim = self.vm_state == instance_obj.ERROR
        spec = None
        if new_image or reclaim:
            spec = self._spec()
            self.scheduler.check_rebuild(self.ctx, spec, instance.host,
                                         instance.node, claim=reclaim)
            if new_image:
                details = 'image %s passes on %s' % (instance.image_ref,
                                                     instance.host)
            if reclaim:
                details += '; %s claimed again' % instance.host
        instance_action.record_event(self.cctx, self.uuid, EVENT,
                                     host=CONF.host, details=details,
                                     action='rebuild',
                                     start_time=self.started)
        self.computes(self.cell).rebuild_in_place(
            self.ctx, instance.host, instance, self.orig_image_ref,
            preserve_ephemeral=self.preserve_ephemeral)
        if new_image:
            # Later moves of the server are placed for its new image.
            try:
                spec.save(self.ctx)
            except Exception:
                LOG.exception('Could not keep the new image of instance %s '
                              'in its request spec', self.uuid,
                              extra={'instance_uuid': self.uuid})

    def _spec(self):
        """The server's request spec with its new image: what the
        scheduler checks the host against, and what is kept."""
        instance = self.instance
        spec = objects.RequestSpec.of_instance(self.ctx, instance)
        spec.image_ref = instance.image_ref
        spec.image_properties = dict(self.image_properties or {})
        spec.num_instances = 1
        spec.retry = None
        spec.ignore_hosts = None
        spec.force_hosts = None
        spec.force_nodes = None
        spec.requested_cell = None
        return spec

    def rollback(self, exc):
        if self.instance is None:
            return False
        exception.log_failure(LOG, exc, 'Starting the rebuild of instance '
                              '%s on %s failed', self.uuid,
                              self.instance.host,
                              extra={'instance_uuid': self.uuid})
        instance = self.instance
        instance.task_state = None
        instance.image_ref = self.orig_image_ref
        try:
            instance.save(
                self.cctx, expected_task_state=instance_obj.REBUILDING,
                fault=objects.InstanceFault.from_exception(self.uuid, exc),
                event=dict(event=EVENT, host=CONF.host,
                           result=instance_action.ERROR,
                           details=exception.describe(exc),
                           action='rebuild', start_time=self.started))
        except (exception.InstanceNotFound, exception.Conflict):
            return True
        return True
