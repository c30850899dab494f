"""Client side of the conductor RPC API (topic ``conductor``).

Two kinds of server answer it: the super-conductor on the API bus and
each cell conductor on its cell's bus, the same topic told apart by the
bus. Each has its client here (:class:`SuperConductorAPI`,
:class:`CellConductorAPI`); they share one version history and one
manifest of the objects each version carries, so one service version
says what a conductor of either kind understands.

Version history:
    1.0 - schedule_and_build_instances (super), build_instances (cell)
    1.1 - build_instances: host_list carries Selection 1.1 (with the
          host's availability zone)
    1.2 - Instance 1.2 (accessIPv4/accessIPv6), also inside BuildRequest,
          in schedule_and_build_instances and build_instances
    1.3 - (cell) instance_get, instance_save, instance_save_error,
          instance_destroy, instance_get_all_by_host,
          instance_action_event, service_heartbeat,
          get_minimum_service_version: a compute reads and writes its
          records only through these calls
    1.4 - consumers_needing_claims (super): the scheduler's heal asks
          which consumers still need their claims
    1.5 - (cell) Instance 1.3 (locked, locked_by, locked_reason, tags) in
          the instance calls; instance_save takes a ``fault`` to record
          with the write (a failed power action, which keeps its state)
    1.6 - RequestSpec 1.2 (the image's properties) in
          schedule_and_build_instances (super) and build_instances (cell)
    1.7 - (cell) service_heartbeat takes ``create``: False leaves a
          deleted service record deleted (ServiceNotFound)
    1.8 - moves: migrate_server, live_migrate_instance,
          evacuate_instance (super); migrate_reschedule, migration_get,
          migration_save, migrations_get, get_minimum_compute_version
          (cell); RequestSpec 1.3 (requested_cell) in
          schedule_and_build_instances and build_instances
    1.9 - (cell) instance_save takes ``event``: the action event the
          save records, written in the same transaction
    1.10 - (cell) give_back_build: a compute that restarted mid-build
          hands the build back, and the cell conductor takes it on to its
          next alternate from the build's plan
    1.11 - rebuild_instance (super): a rebuild on the server's own host,
          its new image checked by the scheduler; Instance 1.4
          (user_data, kernel_id, ramdisk_id, root_device_name)
    1.12 - unshelve_instance (super): an unshelve, placed again through
          the scheduler once its server was offloaded; unshelve_reschedule
          (cell): a compute that could not spawn an unshelved server hands
          it to the next alternate; Instance 1.5 (system_metadata);
          (cell) the action event of instance_save and
          instance_action_event takes ``start_time``, when its step began
"""

import logging

import oslo_messaging as messaging
from oslo_utils import versionutils

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.objects import cell_mapping as cell_mapping_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

TOPIC = 'conductor'

# The newest version: what both clients send at most, and what the
# conductors of this release serve.
RPC_VERSION = '1.12'

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
    '1.3': {'BuildRequest': '1.0', 'Instance': '1.2', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.4': {'BuildRequest': '1.0', 'Instance': '1.2', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.5': {'BuildRequest': '1.0', 'Instance': '1.3', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.6': {'BuildRequest': '1.0', 'Instance': '1.3', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.2', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.7': {'BuildRequest': '1.0', 'Instance': '1.3', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.2', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.8': {'BuildRequest': '1.0', 'Instance': '1.3', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.3', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1',
            'Migration': '1.0'},
    '1.9': {'BuildRequest': '1.0', 'Instance': '1.3', 'InstanceFault': '1.0',
            'Flavor': '1.0', 'RequestSpec': '1.3', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1',
            'Migration': '1.0'},
    '1.10': {'BuildRequest': '1.0', 'Instance': '1.3',
             'InstanceFault': '1.0', 'Flavor': '1.0', 'RequestSpec': '1.3',
             'InstanceGroup': '1.0', 'SchedulerRetries': '1.0',
             'Selection': '1.1', 'Migration': '1.0'},
    '1.11': {'BuildRequest': '1.0', 'Instance': '1.4',
             'InstanceFault': '1.0', 'Flavor': '1.0', 'RequestSpec': '1.3',
             'InstanceGroup': '1.0', 'SchedulerRetries': '1.0',
             'Selection': '1.1', 'Migration': '1.0'},
    '1.12': {'BuildRequest': '1.0', 'Instance': '1.5',
             'InstanceFault': '1.0', 'Flavor': '1.0', 'RequestSpec': '1.3',
             'InstanceGroup': '1.0', 'SchedulerRetries': '1.0',
             'Selection': '1.1', 'Migration': '1.0'},
}

# How long a compute waits for its conductor to say what it understands.
SERVICE_VERSION_TIMEOUT = 10


def _event_as_sent(event, version):
    """The keyword arguments of an action event (a copy) as a message of
    ``version`` carries them: ``start_time`` as an ISO 8601 string from
    1.12, left out before (a conductor before records the step as
    beginning when it ended)."""
    event = dict(event)
    start_time = event.pop('start_time', None)
    if (start_time is not None and
            versionutils.convert_version_to_tuple(version) >= (1, 12)):
        event['start_time'] = (start_time if isinstance(start_time, str)
                               else start_time.isoformat())
    return event


def _super_conductors_minimum():
    """The lowest service version of the running super-conductors, from
    their records in cell0 (where the top level's services live, as in
    Nova). Looked up when ``auto`` is resolved, not when the client is
    made: the API database may not map cell0 yet then."""
    ctx = ss_context.get_admin_context()
    cell0 = cell_mapping_obj.CellMapping.get_by_uuid(
        ctx, cell_mapping_obj.CELL0_UUID)
    return service_obj.Service.get_minimum_version(
        ss_context.target_cell(ctx, cell0), service_obj.CONDUCTOR)


class SuperConductorAPI:
    """The super-conductor's client, on the API bus: the API's boots and
    moves, the re-drives of lost boots and the scheduler's heal."""

    VERSION = RPC_VERSION

    def __init__(self, transport):
        """``[upgrade_levels] conductor = auto`` reads the super-conductors'
        service records in cell0."""
        self.transport = transport
        cap = rpc.VersionCap('conductor_rpc', CONF.upgrade_levels.conductor,
                             _super_conductors_minimum, cache_key='cell0',
                             receivers='the super-conductors')
        self.client = rpc.Client(transport, TOPIC, self.VERSION,
                                 OBJECT_VERSIONS, cap)

    def schedule_and_build_instances(self, ctx, build_requests,
                                     request_specs):
        """Cast from the API to the super-conductor (API bus)."""
        cctxt, _ = self.client.prepare('1.8', '1.6', '1.2', '1.0')
        cctxt.cast(ctx, 'schedule_and_build_instances',
                   build_requests=build_requests,
                   request_specs=request_specs)

    def consumers_needing_claims(self, ctx, consumer_uuids):
        """Call from the scheduler's heal to the super-conductor (API
        bus): those of ``consumer_uuids`` whose claims are still needed
        (build request pending, or instance live in its mapped cell)."""
        cctxt, _ = self.client.prepare('1.4')
        return cctxt.call(ctx, 'consumers_needing_claims',
                          consumer_uuids=list(consumer_uuids))

    # --- 1.8: moves ----------------------------------------------------------

    def can_move(self):
        """Whether the conductors take the calls of moves (raises
        ``RPCVersionCapError`` if not), before anything is recorded."""
        self.client.prepare('1.8')

    def migrate_server(self, ctx, instance, flavor=None, host=None,
                       timeout=None):
        """Call from the API to the super-conductor: start a resize (a
        new ``flavor``) or a cold migration (``host``: the destination an
        admin asked for, still filtered). Returns the Migration once its
        destination is claimed and the move is handed to it; raises
        ``NoValidHost`` when none takes it (nothing is left held)."""
        cctxt, _ = self.client.prepare('1.8', timeout=timeout)
        return cctxt.call(ctx, 'migrate_server', instance=instance,
                          flavor=flavor, host=host)

    def live_migrate_instance(self, ctx, instance, migration, host=None,
                              block_migration=None):
        """Cast from the API to the super-conductor: live migrate the
        server (to ``host`` if named, still filtered); ``migration`` is
        its record, made by the API."""
        cctxt, _ = self.client.prepare('1.8')
        cctxt.cast(ctx, 'live_migrate_instance', instance=instance,
                   migration=migration, host=host,
                   block_migration=block_migration)

    def evacuate_instance(self, ctx, instance, migration, host=None):
        """Cast from the API to the super-conductor: rebuild the server,
        whose host is down, elsewhere (on ``host`` if named)."""
        cctxt, _ = self.client.prepare('1.8')
        cctxt.cast(ctx, 'evacuate_instance', instance=instance,
                   migration=migration, host=host)

    # --- 1.11: rebuilds ------------------------------------------------------

    def can_rebuild(self):
        """Whether the super-conductors take ``rebuild_instance`` (raises
        ``RPCVersionCapError`` if not)."""
        self.client.prepare('1.11')

    def rebuild_instance(self, ctx, instance, orig_image_ref,
                         image_properties=None, preserve_ephemeral=False):
        """Cast from the API to the super-conductor: rebuild the server
        (``rebuilding``, its new image written) on its own host; with a
        new image (``orig_image_ref`` differs) the scheduler first checks
        the host passes the filters for it (``image_properties``)."""
        cctxt, _ = self.client.prepare('1.11')
        cctxt.cast(ctx, 'rebuild_instance', instance=instance,
                   orig_image_ref=orig_image_ref,
                   image_properties=image_properties,
                   preserve_ephemeral=preserve_ephemeral)

    # --- 1.12: unshelves ---------------------------------------------------

    def can_unshelve(self):
        """Whether the super-conductors take ``unshelve_instance``
        (raises ``RPCVersionCapError`` if not)."""
        self.client.prepare('1.12')

    def unshelve_instance(self, ctx, instance, spec_changes=None, host=None):
        """Cast from the API to the super-conductor: the server
        (``unshelving``) runs again; an offloaded one is placed by the
        scheduler in its cell, its request spec changed by
        ``spec_changes`` (RequestSpec field -> value: the availability
        zone of 2.77 and 2.91), on ``host`` if an admin named one."""
        cctxt, _ = self.client.prepare('1.12')
        cctxt.cast(ctx, 'unshelve_instance', instance=instance,
                   spec_changes=spec_changes, host=host)


class CellConductorAPI:
    """A cell conductor's client, on its cell's bus: what a compute asks
    of it (its records, reschedules of builds and moves)."""

    VERSION = RPC_VERSION

    def __init__(self, transport, cell_db=None):
        """``cell_db``: the cell's database, where its conductors record
        their service versions, for a caller that may read it; there
        ``[upgrade_levels] conductor = auto`` reads them. A compute holds
        no database credentials and leaves it None: ``auto`` then asks
        the cell's conductors over the bus which version they run."""
        self.transport = transport
        if cell_db is None:
            minimum = self.get_minimum_service_version
            key = ('bus', id(transport))
            receivers = 'the conductors of this cell'
        else:
            def minimum():
                return service_obj.Service.get_minimum_version(
                    ss_context.targeted(ss_context.get_admin_context(),
                                        cell_db), service_obj.CONDUCTOR)
            key = cell_db
            receivers = 'the conductors of %s' % rpc.database_name(cell_db)
        cap = rpc.VersionCap('conductor_rpc', CONF.upgrade_levels.conductor,
                             minimum, cache_key=key, receivers=receivers)
        self.client = rpc.Client(transport, TOPIC, self.VERSION,
                                 OBJECT_VERSIONS, cap)

    def build_instances(self, ctx, instance, request_spec, host_list, retry):
        """Cast from a compute to its cell conductor: reschedule a build."""
        cctxt, _ = self.client.prepare('1.8', '1.6', '1.2', '1.1', '1.0')
        cctxt.cast(ctx, 'build_instances', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry)

    # --- 1.3: a compute's records, through its cell conductor ---------------
    # Every one of these is a call from a compute to its cell conductor,
    # which does the database work; InstanceNotFound and Conflict come back
    # as themselves (scheduler_split.exception is an allowed remote module).

    def _call(self, ctx, method, timeout=None, **kwargs):
        cctxt, _ = self.client.prepare('1.5', '1.3', timeout=timeout)
        return cctxt.call(ctx, method, **kwargs)

    def instance_get(self, ctx, instance_uuid, read_deleted=False):
        """Call from a compute: the instance, with its latest fault."""
        return self._call(ctx, 'instance_get', instance_uuid=instance_uuid,
                          read_deleted=read_deleted)

    def instance_save(self, ctx, instance, expected_task_states=None,
                      expected_vm_state=None, event=None):
        """Call from a compute: write the instance's changed fields.

        With ``expected_task_states`` (a list; None in it stands for no
        task state) and/or ``expected_vm_state`` the write happens only
        if the row is still in one of them (else ``Conflict``). With
        ``event`` (the arguments of :meth:`instance_action_event` but the
        instance's uuid) the action event is recorded by the same write;
        a conductor before 1.9 gets it in a second call. Returns the
        instance as saved.
        """
        kwargs = dict(instance=instance,
                      expected_task_states=expected_task_states,
                      expected_vm_state=expected_vm_state)
        if event is not None:
            try:
                cctxt, sent = self.client.prepare('1.12', '1.9')
            except messaging.RPCVersionCapError:
                saved = self._call(ctx, 'instance_save', **kwargs)
                self.instance_action_event(ctx, instance.uuid, **event)
                return saved
            return cctxt.call(ctx, 'instance_save',
                              event=_event_as_sent(event, sent), **kwargs)
        return self._call(ctx, 'instance_save', **kwargs)

    def give_back_build(self, ctx, instance_uuid, host):
        """Call from a compute (1.10) that finds a build on its ``host``
        that it no longer runs (the service restarted mid-spawn): if the
        build has a plan and is still on ``host``, the cell conductor
        takes it back and on to its next alternate (True). False when it
        has no plan (a build of an earlier release): the compute fails it
        as before; ``Conflict`` or ``InstanceNotFound`` when it moved on.
        ``RPCVersionCapError`` if the cell's conductors are older."""
        cctxt, _ = self.client.prepare('1.10')
        return cctxt.call(ctx, 'give_back_build',
                          instance_uuid=instance_uuid, host=host)

    def instance_save_with_fault(self, ctx, instance, fault,
                                 expected_task_states=None):
        """Call from a compute (1.5): as :meth:`instance_save`, with
        ``fault`` recorded in the same write, whatever the vm state
        becomes (a failed power action keeps the state it had)."""
        cctxt, _ = self.client.prepare('1.5')
        return cctxt.call(ctx, 'instance_save', instance=instance,
                          expected_task_states=expected_task_states,
                          fault=fault)

    def instance_save_error(self, ctx, instance, fault,
                            expected_task_states=None,
                            expected_vm_state=None, expected_host=None):
        """Call from a compute: ERROR with ``fault`` (an InstanceFault),
        in one write, under the same expectations as
        :meth:`instance_save`, and with ``expected_host`` only while the
        instance is still on that host. Returns the instance as saved."""
        kwargs = {'expected_host': expected_host} if expected_host else {}
        return self._call(ctx, 'instance_save_error', instance=instance,
                          fault=fault,
                          expected_task_states=expected_task_states,
                          expected_vm_state=expected_vm_state, **kwargs)

    def instance_destroy(self, ctx, instance_uuid):
        """Call from a compute: mark the instance deleted."""
        return self._call(ctx, 'instance_destroy',
                          instance_uuid=instance_uuid)

    def instance_get_all_by_host(self, ctx, host):
        """Call from a compute: the live instances on ``host``."""
        return self._call(ctx, 'instance_get_all_by_host', host=host)

    def instance_action_event(self, ctx, instance_uuid, event, host=None,
                              result='Success', details=None,
                              action='create', start_time=None):
        """Call from a compute: record a finished step of the action of
        ``ctx``'s request, which began at ``start_time`` (a datetime; a
        conductor before 1.12 records it as beginning when it ended): an
        audit trail, the conductor logs a failure to write it and answers
        anyway."""
        cctxt, sent = self.client.prepare('1.12', '1.5', '1.3')
        return cctxt.call(ctx, 'instance_action_event', **_event_as_sent(
            dict(instance_uuid=instance_uuid, event=event, host=host,
                 result=result, details=details, action=action,
                 start_time=start_time), sent))

    def service_heartbeat(self, ctx, host, binary, topic, version,
                          timeout=None, create=True):
        """Call from a compute: refresh its service record, with its
        service ``version``. ``timeout``: how long an answer is worth
        waiting for (the next heartbeat supersedes this one). Answers
        with what the operator said of the service (a dict: disabled,
        disabled_reason, forced_down, updated_at); conductors of service
        versions before 5 answer None. Without ``create`` a record the
        operator deleted raises ``ServiceNotFound`` instead of being
        made again (conductors before 1.7 always make it again)."""
        cctxt, sent = self.client.prepare('1.7', '1.5', '1.3',
                                          timeout=timeout)
        kwargs = {} if sent != '1.7' else {'create': create}
        return cctxt.call(ctx, 'service_heartbeat', host=host,
                          binary=binary, topic=topic, version=version,
                          **kwargs)

    def get_minimum_service_version(self):
        """The lowest service version of the running conductors of the
        cell, as the conductor that answers reads it from their records.
        Sent uncapped: it is how a compute's ``auto`` finds the cap. A
        conductor older than 1.3 refuses it, and counts as version 0 (a
        compute of this release cannot work with it: the cap then refuses
        every call with a clear error). No answer at all is no conductor
        running: None, not kept, so that the next call asks again.
        """
        client = rpc.get_client(self.transport, TOPIC, '1.3',
                                timeout=SERVICE_VERSION_TIMEOUT)
        try:
            return client.call(ss_context.get_admin_context(),
                               'get_minimum_service_version')
        except messaging.MessagingTimeout:
            LOG.warning('No conductor of this cell answered; not capping '
                        'conductor RPC for now')
            return None
        except messaging.MessagingException as exc:
            LOG.info('No conductor said which service version it is (%s); '
                     'taking the oldest', exc)
            return 0

    # --- 1.8: moves ----------------------------------------------------------

    def migrate_reschedule(self, ctx, instance, migration, flavor,
                           request_spec, host_list, retry, reason):
        """Cast from a destination compute that refused a resize or a
        cold migration to its cell conductor: try the next alternate."""
        cctxt, _ = self.client.prepare('1.8')
        cctxt.cast(ctx, 'migrate_reschedule', instance=instance,
                   migration=migration, flavor=flavor,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry, reason=reason)

    def unshelve_reschedule(self, ctx, instance, request_spec, host_list,
                            retry):
        """Cast (1.12) from a compute that could not spawn an unshelved
        server to its cell conductor: try the next alternate."""
        cctxt, _ = self.client.prepare('1.12')
        cctxt.cast(ctx, 'unshelve_reschedule', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry)

    def migration_get(self, ctx, migration_uuid):
        """Call from a compute: a migration of this cell."""
        cctxt, _ = self.client.prepare('1.8')
        return cctxt.call(ctx, 'migration_get',
                          migration_uuid=migration_uuid)

    def migration_save(self, ctx, migration, expected_status=None):
        """Call from a compute: write the migration's changed fields, if
        its status is still ``expected_status`` (``Conflict`` if not)."""
        cctxt, _ = self.client.prepare('1.8')
        return cctxt.call(ctx, 'migration_save', migration=migration,
                          expected_status=expected_status)

    def get_minimum_compute_version(self, ctx):
        """Call from a compute about to cast to another compute of its
        cell (``[upgrade_levels] compute = auto``): the lowest service
        version of the cell's running computes, None if none runs."""
        cctxt, _ = self.client.prepare('1.8',
                                       timeout=SERVICE_VERSION_TIMEOUT)
        return cctxt.call(ctx, 'get_minimum_compute_version')

    def migrations_get(self, ctx, source_compute=None, migration_types=None,
                       statuses=None):
        """Call from a compute: migrations of this cell (at its start,
        the evacuations off its host)."""
        cctxt, _ = self.client.prepare('1.8')
        return cctxt.call(ctx, 'migrations_get',
                          source_compute=source_compute,
                          migration_types=migration_types,
                          statuses=statuses)
