"""Client side of the conductor RPC API (topic ``conductor``).

The super-conductor listens on the API bus, each cell conductor on its
cell's bus; the same topic, told apart by the bus.

Version history:
    1.0 - schedule_and_build_instances (super), build_instances (cell)
"""

from scheduler_split import rpc

TOPIC = 'conductor'


class ConductorAPI:
    VERSION = '1.0'

    def __init__(self, transport, version_cap=None):
        self.client = rpc.get_client(transport, TOPIC, self.VERSION,
                                     version_cap=version_cap)

    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        """Cast from the API to the super-conductor (API bus)."""
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctx, 'schedule_and_build_instances',
                   build_requests=build_requests,
                   request_specs=request_specs)

    def build_instances(self, ctx, instance, request_spec, host_list, retry):
        """Cast from a compute to its cell conductor: reschedule a build."""
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctx, 'build_instances', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry)
