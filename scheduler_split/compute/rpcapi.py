"""Client side of the compute RPC API (topic ``compute``, server = host).

Version history:
    1.0 - build_and_run_instance, terminate_instance
    1.1 - build_and_run_instance: host_list carries Selection 1.1 (with
          the host's availability zone)
    1.2 - Instance 1.2 (accessIPv4/accessIPv6) in build_and_run_instance
          and terminate_instance
"""

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc

CONF = conf.CONF

TOPIC = 'compute'

# The objects each version of this API carries, at the versions it
# carries them; a client capped at a version sends them so.
OBJECT_VERSIONS = {
    '1.0': {'Instance': '1.1', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.0'},
    '1.1': {'Instance': '1.1', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.2': {'Instance': '1.2', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
}


def version_cap(cell_db):
    """``[upgrade_levels] compute`` for the computes of the cell whose
    database is ``cell_db``: ``auto`` reads their service records there.
    """
    def minimum():
        ctx = ss_context.targeted(ss_context.get_admin_context(), cell_db)
        return service_obj.Service.get_minimum_version(
            ctx, service_obj.COMPUTE)
    return rpc.VersionCap(
        'compute_rpc', CONF.upgrade_levels.compute, minimum,
        cache_key=cell_db,
        receivers='the computes of %s' % rpc.database_name(cell_db))


class ComputeAPI:
    VERSION = '1.2'

    def __init__(self, transport, cell_db):
        """A client for the computes of one cell: its bus and database."""
        self.client = rpc.Client(transport, TOPIC, self.VERSION,
                                 OBJECT_VERSIONS, version_cap(cell_db))

    def build_and_run_instance(self, ctx, host, node, instance, request_spec,
                               host_list, retry):
        """Cast from a conductor to the chosen compute.

        ``host_list`` holds the alternates not tried yet, in order;
        ``retry`` records the attempt number and the hosts tried.
        """
        cctxt, _ = self.client.prepare('1.2', '1.1', '1.0', server=host)
        cctxt.cast(ctx, 'build_and_run_instance', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry, node=node)

    def terminate_instance(self, ctx, host, instance):
        """Cast from the API to the instance's compute: delete it."""
        cctxt, _ = self.client.prepare('1.2', '1.0', server=host)
        cctxt.cast(ctx, 'terminate_instance', instance=instance)
