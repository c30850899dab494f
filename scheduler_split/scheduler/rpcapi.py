"""Client side of the scheduler RPC API (topic ``scheduler``).

Only :mod:`scheduler_split.scheduler.client` uses this module.

Version history:
    1.0 - select_destinations, update_resource_stats, claim_resources,
          release_resources
"""

from scheduler_split import rpc

TOPIC = 'scheduler'


class SchedulerAPI:
    VERSION = '1.0'

    def __init__(self, transport, version_cap=None):
        self.client = rpc.get_client(transport, TOPIC, self.VERSION,
                                     version_cap=version_cap)

    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates, num_alternates):
        cctxt = self.client.prepare(version='1.0')
        return cctxt.call(ctx, 'select_destinations', spec_obj=spec_obj,
                          instance_uuids=instance_uuids,
                          return_alternates=return_alternates,
                          num_alternates=num_alternates)

    def update_resource_stats(self, ctx, host, node, stats):
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctx, 'update_resource_stats', host=host, node=node,
                   stats=stats)

    def claim_resources(self, ctx, selection, instance_uuid):
        cctxt = self.client.prepare(version='1.0')
        return cctxt.call(ctx, 'claim_resources', selection=selection,
                          instance_uuid=instance_uuid)

    def release_resources(self, ctx, instance_uuid):
        cctxt = self.client.prepare(version='1.0')
        return cctxt.call(ctx, 'release_resources',
                          instance_uuid=instance_uuid)
