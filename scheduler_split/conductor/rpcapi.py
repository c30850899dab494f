"""Client side of the conductor RPC API (topic ``conductor``).

The super-conductor listens on the API bus, each cell conductor on its
cell's bus; the same topic, told apart by the bus.

Version history:
    1.0 - schedule_and_build_instances (super), build_instances (cell)
    1.1 - build_instances: host_list carries Selection 1.1 (with the
          host's availability zone)
    1.2 - Instance 1.2 (accessIPv4/accessIPv6), also inside BuildRequest,
          in schedule_and_build_instances and build_instances
    1.4 - consumers_needing_claims (super): the scheduler's heal asks
          which consumers still need their claims
"""

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc

CONF = conf.CONF

TOPIC = 'conductor'

# The objects each version of this API carries, at the versions it
# carries them; a client capped at a version sends them so.
OBJECT_VERSIONS = {
    '1.0': {'BuildRequest': '1.0', 'Instance': '1.1', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.0'},
    '1.1': {'BuildRequest': '1.0', 'Instance': '1.1', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.2': {'BuildRequest': '1.0', 'Instance': '1.2', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.4': {'BuildRequest': '1.0', 'Instance': '1.2', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
}


def cell0_db():
    """Where the super-conductors record themselves: cell0's database."""
    ctx = ss_context.get_admin_context()
    return cell_mapping_obj.CellMapping.get_by_uuid(
        ctx, cell_mapping_obj.CELL0_UUID).database_connection


def version_cap(service_db):
    """``[upgrade_levels] conductor`` for the conductors that record
    themselves in ``service_db``: a cell's conductors in its database, or,
    given :func:`cell0_db`, the super-conductors in cell0's (looked up
    when ``auto`` is resolved)."""
    def minimum():
        db = service_db() if callable(service_db) else service_db
        ctx = ss_context.targeted(ss_context.get_admin_context(), db)
        return service_obj.Service.get_minimum_version(
            ctx, service_obj.CONDUCTOR)
    if service_db is cell0_db:
        key, receivers = 'cell0', 'the super-conductors'
    else:
        key = service_db
        receivers = 'the conductors of %s' % rpc.database_name(service_db)
    return rpc.VersionCap('conductor_rpc', CONF.upgrade_levels.conductor,
                          minimum, cache_key=key, receivers=receivers)


class ConductorAPI:
    VERSION = '1.4'

    def __init__(self, transport, service_db=cell0_db):
        """A client for the conductors on ``transport``, which record
        themselves in ``service_db`` (see :func:`version_cap`); by default
        the super-conductor on the API bus."""
        self.client = rpc.Client(transport, TOPIC, self.VERSION,
                                 OBJECT_VERSIONS, version_cap(service_db))

    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        """Cast from the API to the super-conductor (API bus)."""
        cctxt, _ = self.client.prepare('1.2', '1.0')
        cctxt.cast(ctx, 'schedule_and_build_instances',
                   build_requests=build_requests,
                   request_specs=request_specs)

    def build_instances(self, ctx, instance, request_spec, host_list, retry):
        """Cast from a compute to its cell conductor: reschedule a build."""
        cctxt, _ = self.client.prepare('1.2', '1.1', '1.0')
        cctxt.cast(ctx, 'build_instances', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry)

    def consumers_needing_claims(self, ctx, consumer_uuids):
        """Call from the scheduler's heal to the super-conductor (API
        bus): those of ``consumer_uuids`` whose claims are still needed
        (build request pending, or instance live in its mapped cell)."""
        cctxt, _ = self.client.prepare('1.4')
        return cctxt.call(ctx, 'consumers_needing_claims',
                          consumer_uuids=list(consumer_uuids))
