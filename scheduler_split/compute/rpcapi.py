"""Client side of the compute RPC API (topic ``compute``, server = host).

Version history:
    1.0 - build_and_run_instance, terminate_instance
"""

from scheduler_split import rpc

TOPIC = 'compute'


class ComputeAPI:
    VERSION = '1.0'

    def __init__(self, transport, version_cap=None):
        self.client = rpc.get_client(transport, TOPIC, self.VERSION,
                                     version_cap=version_cap)

    def build_and_run_instance(self, ctx, host, node, instance, request_spec,
                               host_list, retry):
        """Cast from a conductor to the chosen compute.

        ``host_list`` holds the alternates not tried yet, in order;
        ``retry`` records the attempt number and the hosts tried.
        """
        cctxt = self.client.prepare(server=host, version='1.0')
        cctxt.cast(ctx, 'build_and_run_instance', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry, node=node)

    def terminate_instance(self, ctx, host, instance):
        """Cast from the API to the instance's compute: delete it."""
        cctxt = self.client.prepare(server=host, version='1.0')
        cctxt.cast(ctx, 'terminate_instance', instance=instance)
