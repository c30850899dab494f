"""Client side of the scheduler RPC API (topic ``scheduler``).

Only :mod:`scheduler_split.scheduler.client` uses this module.

Version history:
    1.0 - select_destinations, update_resource_stats, claim_resources,
          release_resources
    1.1 - Selection 1.1 (with the host's availability zone) in
          claim_resources and in the answer of select_destinations, which
          takes the caller's object_versions and answers at them (a 1.0
          call is answered at the versions of 1.0);
          get_minimum_service_version
    1.2 - update_host_status, delete_host, get_compute_nodes, get_services,
          delete_service: what operators steer and see (os-services,
          os-hypervisors); all calls, carrying plain dicts only
    1.3 - aggregate_list, aggregate_get, aggregate_create,
          aggregate_update, aggregate_delete, aggregate_add_host,
          aggregate_remove_host, aggregate_set_metadata,
          get_availability_zones: host aggregates and availability zones
          (os-aggregates, os-availability-zone); calls, plain dicts only
    1.4 - RequestSpec 1.2 (the image's properties) in select_destinations
    1.5 - move_allocations (a move's claims: the source host's go to the
          migration and back); RequestSpec 1.3 (requested_cell) in
          select_destinations
    1.6 - get_consumers: the consumers holding allocations older than
          a given age, a page at a time, for the super-conductor's
          reconciliation of claims (the scheduler asks no other service)
    1.7 - select_destinations_batch: several requests placed in one call,
          each answered on its own (the super-conductor's coalescing of
          boots that arrive together)
    1.8 - check_rebuild: whether a server's own host passes the filters
          for its rebuild's new image, without a claim (or claiming it
          again for a server in ERROR)
    1.9 - get_providers, get_provider_allocations,
          get_consumer_allocations, get_usages: what the API's Placement
          API reads (resource providers, their inventories, usages,
          aggregates and allocations, a consumer's allocations, the usage
          of a set of consumers); calls, plain dicts only
    1.10 - get_traits, create_trait, delete_trait, set_provider_traits,
          get_resource_classes, create_resource_class,
          delete_resource_class: what the API's Placement API writes of
          traits (the catalog, a provider's, guarded by its generation)
          and of custom resource classes; calls, plain dicts only
    1.11 - create_provider, update_provider, delete_provider,
          set_inventories, put_inventory, delete_inventory,
          set_provider_aggregates, write_allocations, delete_allocations,
          get_consumer, get_project_consumers, rename_resource_class,
          reshape, get_allocation_candidates (over provider trees):
          what the API's Placement
          API writes of resource providers, their inventories and
          aggregates, and of the allocations of consumers that are not
          the scheduler's servers (each guarded by the providers'
          generations), and reads of those consumers; calls, plain
          dicts only
"""

import logging

import oslo_messaging as messaging

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

TOPIC = 'scheduler'

# The most providers (or consumers) one call of the Placement reads
# answers: a client pages through more.
MAX_PAGE = 500

# The objects each version of this API carries, at the versions it
# carries them, both ways; a client capped at a version sends them so,
# and the scheduler answers a call of a version so.
OBJECT_VERSIONS = {
    '1.0': {'RequestSpec': '1.1', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.0'},
    '1.1': {'RequestSpec': '1.1', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.2': {'RequestSpec': '1.1', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.3': {'RequestSpec': '1.1', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.4': {'RequestSpec': '1.2', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.5': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.6': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.7': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.8': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.9': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.10': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
             'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.11': {'RequestSpec': '1.3', 'Flavor': '1.0', 'InstanceGroup': '1.0',
             'SchedulerRetries': '1.0', 'Selection': '1.1'},
}

# How long a client waits for a scheduler to say what it understands.
SERVICE_VERSION_TIMEOUT = 10


class SchedulerAPI:
    VERSION = '1.11'

    def __init__(self, transport, cache_key=None):
        self.transport = transport
        self.client = rpc.Client(
            transport, TOPIC, self.VERSION, OBJECT_VERSIONS,
            rpc.VersionCap('scheduler_rpc', CONF.upgrade_levels.scheduler,
                           self.get_minimum_service_version,
                           cache_key=cache_key, receivers='the schedulers'))

    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates, num_alternates):
        if spec_obj.get('requested_cell'):
            # A move: kept to its cell, which a scheduler before 1.5
            # would not know.
            cctxt, version = self.client.prepare('1.5')
        else:
            cctxt, version = self.client.prepare('1.5', '1.4', '1.1',
                                                 '1.0')
        kwargs = {}
        if version != '1.0':
            kwargs['object_versions'] = OBJECT_VERSIONS[version]
        return cctxt.call(ctx, 'select_destinations', spec_obj=spec_obj,
                          instance_uuids=instance_uuids,
                          return_alternates=return_alternates,
                          num_alternates=num_alternates, **kwargs)

    def can_batch(self):
        """Raises ``RPCVersionCapError`` while the schedulers are older
        than 1.7."""
        self.client.prepare('1.7')

    def select_destinations_batch(self, ctx, requests):
        """``requests``: dicts of ``context`` (a RequestContext),
        ``spec_obj``, ``instance_uuids``, ``return_alternates`` and
        ``num_alternates``."""
        cctxt, version = self.client.prepare('1.7')
        requests = [dict(request, context=request['context'].to_dict())
                    for request in requests]
        return cctxt.call(ctx, 'select_destinations_batch',
                          requests=requests,
                          object_versions=OBJECT_VERSIONS[version])

    def update_resource_stats(self, ctx, host, node, stats):
        cctxt, _ = self.client.prepare('1.0')
        cctxt.cast(ctx, 'update_resource_stats', host=host, node=node,
                   stats=stats)

    def claim_resources(self, ctx, selection, instance_uuid):
        cctxt, _ = self.client.prepare('1.1', '1.0')
        return cctxt.call(ctx, 'claim_resources', selection=selection,
                          instance_uuid=instance_uuid)

    def release_resources(self, ctx, instance_uuid):
        cctxt, _ = self.client.prepare('1.0')
        return cctxt.call(ctx, 'release_resources',
                          instance_uuid=instance_uuid)

    def can_move(self):
        """Raises ``RPCVersionCapError`` while the schedulers are older
        than 1.5."""
        self.client.prepare('1.5')

    def move_allocations(self, ctx, from_consumer, to_consumer):
        cctxt, _ = self.client.prepare('1.5')
        return cctxt.call(ctx, 'move_allocations',
                          from_consumer=from_consumer,
                          to_consumer=to_consumer)

    def can_check_rebuild(self):
        """Raises ``RPCVersionCapError`` while the schedulers are older
        than 1.8."""
        self.client.prepare('1.8')

    def check_rebuild(self, ctx, spec_obj, host, node, claim=False):
        cctxt, _ = self.client.prepare('1.8')
        return cctxt.call(ctx, 'check_rebuild', spec_obj=spec_obj,
                          host=host, node=node, claim=claim)

    def get_consumers(self, ctx, older_than, marker, limit):
        cctxt, _ = self.client.prepare('1.6')
        return cctxt.call(ctx, 'get_consumers', older_than=older_than,
                          marker=marker, limit=limit)

    # --- 1.2: what operators steer and see ---------------------------------

    def _call_12(self, ctx, method, **kwargs):
        cctxt, _ = self.client.prepare('1.2')
        return cctxt.call(ctx, method, **kwargs)

    def update_host_status(self, ctx, host, status, updated_at):
        return self._call_12(ctx, 'update_host_status', host=host,
                             status=status, updated_at=updated_at)

    def delete_host(self, ctx, host):
        return self._call_12(ctx, 'delete_host', host=host)

    def get_compute_nodes(self, ctx):
        return self._call_12(ctx, 'get_compute_nodes')

    def get_services(self, ctx):
        return self._call_12(ctx, 'get_services')

    def delete_service(self, ctx, service_uuid):
        return self._call_12(ctx, 'delete_service',
                             service_uuid=service_uuid)

    # --- 1.3: host aggregates and availability zones ----------------------

    def _call_13(self, ctx, method, **kwargs):
        cctxt, _ = self.client.prepare('1.3')
        return cctxt.call(ctx, method, **kwargs)

    def aggregate_list(self, ctx):
        return self._call_13(ctx, 'aggregate_list')

    def aggregate_get(self, ctx, aggregate_id):
        return self._call_13(ctx, 'aggregate_get', aggregate_id=aggregate_id)

    def aggregate_create(self, ctx, name, availability_zone):
        return self._call_13(ctx, 'aggregate_create', name=name,
                             availability_zone=availability_zone)

    def aggregate_update(self, ctx, aggregate_id, values):
        return self._call_13(ctx, 'aggregate_update',
                             aggregate_id=aggregate_id, values=values)

    def aggregate_delete(self, ctx, aggregate_id):
        return self._call_13(ctx, 'aggregate_delete',
                             aggregate_id=aggregate_id)

    def aggregate_add_host(self, ctx, aggregate_id, host):
        return self._call_13(ctx, 'aggregate_add_host',
                             aggregate_id=aggregate_id, host=host)

    def aggregate_remove_host(self, ctx, aggregate_id, host):
        return self._call_13(ctx, 'aggregate_remove_host',
                             aggregate_id=aggregate_id, host=host)

    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        return self._call_13(ctx, 'aggregate_set_metadata',
                             aggregate_id=aggregate_id, metadata=metadata)

    def get_availability_zones(self, ctx):
        return self._call_13(ctx, 'get_availability_zones')

    # --- 1.9: what the Placement API reads ----------------------------------
    # Each raises RPCVersionCapError while the schedulers are older than
    # 1.9.

    def _call_19(self, ctx, method, **kwargs):
        cctxt, _ = self.client.prepare('1.9')
        return cctxt.call(ctx, method, **kwargs)

    def get_providers(self, ctx, filters, marker, limit, detail):
        return self._call_19(ctx, 'get_providers', filters=filters,
                             marker=marker, limit=limit, detail=detail)

    def get_provider_allocations(self, ctx, provider_uuid):
        return self._call_19(ctx, 'get_provider_allocations',
                             provider_uuid=provider_uuid)

    def get_consumer_allocations(self, ctx, consumer_uuid):
        return self._call_19(ctx, 'get_consumer_allocations',
                             consumer_uuid=consumer_uuid)

    def get_usages(self, ctx, consumer_uuids):
        return self._call_19(ctx, 'get_usages',
                             consumer_uuids=consumer_uuids)

    # --- 1.10: what the Placement API writes of traits --------------------

    def _call_110(self, ctx, method, **kwargs):
        cctxt, _ = self.client.prepare('1.10')
        return cctxt.call(ctx, method, **kwargs)

    def get_traits(self, ctx, names, prefix, associated):
        return self._call_110(ctx, 'get_traits', names=names, prefix=prefix,
                              associated=associated)

    def create_trait(self, ctx, name):
        return self._call_110(ctx, 'create_trait', name=name)

    def delete_trait(self, ctx, name):
        return self._call_110(ctx, 'delete_trait', name=name)

    def set_provider_traits(self, ctx, provider_uuid, traits, generation):
        return self._call_110(ctx, 'set_provider_traits',
                              provider_uuid=provider_uuid, traits=traits,
                              generation=generation)

    def get_resource_classes(self, ctx):
        return self._call_110(ctx, 'get_resource_classes')

    def create_resource_class(self, ctx, name, exists_ok):
        return self._call_110(ctx, 'create_resource_class', name=name,
                              exists_ok=exists_ok)

    def delete_resource_class(self, ctx, name):
        return self._call_110(ctx, 'delete_resource_class', name=name)

    # --- 1.11: what the Placement API writes of providers -----------------

    def _call_111(self, ctx, method, **kwargs):
        cctxt, _ = self.client.prepare('1.11')
        return cctxt.call(ctx, method, **kwargs)

    def create_provider(self, ctx, name, uuid, parent_uuid):
        return self._call_111(ctx, 'create_provider', name=name, uuid=uuid,
                              parent_uuid=parent_uuid)

    def update_provider(self, ctx, provider_uuid, name, parent,
                        allow_reparenting):
        return self._call_111(ctx, 'update_provider',
                              provider_uuid=provider_uuid, name=name,
                              parent=parent,
                              allow_reparenting=allow_reparenting)

    def delete_provider(self, ctx, provider_uuid):
        return self._call_111(ctx, 'delete_provider',
                              provider_uuid=provider_uuid)

    def set_inventories(self, ctx, provider_uuid, inventories, generation):
        return self._call_111(ctx, 'set_inventories',
                              provider_uuid=provider_uuid,
                              inventories=inventories, generation=generation)

    def put_inventory(self, ctx, provider_uuid, resource_class, fields,
                      generation, create):
        return self._call_111(ctx, 'put_inventory',
                              provider_uuid=provider_uuid,
                              resource_class=resource_class, fields=fields,
                              generation=generation, create=create)

    def delete_inventory(self, ctx, provider_uuid, resource_class):
        return self._call_111(ctx, 'delete_inventory',
                              provider_uuid=provider_uuid,
                              resource_class=resource_class)

    def write_allocations(self, ctx, consumers):
        return self._call_111(ctx, 'write_allocations', consumers=consumers)

    def delete_allocations(self, ctx, consumer_uuid):
        return self._call_111(ctx, 'delete_allocations',
                              consumer_uuid=consumer_uuid)

    def get_consumer(self, ctx, consumer_uuid):
        return self._call_111(ctx, 'get_consumer',
                              consumer_uuid=consumer_uuid)

    def get_allocation_candidates(self, ctx, groups, policy, root_traits,
                                  same_subtree, limit, nested):
        return self._call_111(ctx, 'get_allocation_candidates',
                              groups=groups, policy=policy,
                              root_traits=root_traits,
                              same_subtree=same_subtree, limit=limit,
                              nested=nested)

    def reshape(self, ctx, inventories, consumers):
        return self._call_111(ctx, 'reshape', inventories=inventories,
                              consumers=consumers)

    def rename_resource_class(self, ctx, name, new_name):
        return self._call_111(ctx, 'rename_resource_class', name=name,
                              new_name=new_name)

    def get_project_consumers(self, ctx, project_id, user_id):
        return self._call_111(ctx, 'get_project_consumers',
                              project_id=project_id, user_id=user_id)

    def set_provider_aggregates(self, ctx, provider_uuid, aggregates,
                                generation):
        return self._call_111(ctx, 'set_provider_aggregates',
                              provider_uuid=provider_uuid,
                              aggregates=aggregates, generation=generation)

    def get_minimum_service_version(self):
        """The lowest service version of the running schedulers, as the
        scheduler that answers knows from their records. Sent uncapped:
        it is how ``auto`` finds the cap. A scheduler of the release before
        service versions refuses it (it serves 1.0 only), so a refusal, or
        no answer, counts as version 0: what every scheduler understands.
        """
        client = rpc.get_client(self.transport, TOPIC, '1.1',
                                timeout=SERVICE_VERSION_TIMEOUT)
        try:
            return client.call(ss_context.get_admin_context(),
                               'get_minimum_service_version')
        except messaging.MessagingException as exc:
            LOG.info('No scheduler said which service version it is (%s); '
                     'taking the oldest', exc)
            return 0
