"""One scheduler process: the :class:`Scheduler` behind the RPC
endpoints (:mod:`endpoint`) of every bus the process listens on.

It holds the host-state cache (:mod:`host_manager`, with the compute
reports' writer, :mod:`reports`) and the parts that share it: the
selection pipeline (:mod:`manager`), what operators steer and see
(:mod:`admin`), the listing of the consumers holding claims
(:mod:`claims`), which the super-conductor's reconciliation pages
through, and what the API's Placement API reads and writes
(:mod:`placement_reads`, :mod:`placement_writes`,
:mod:`placement_providers`, :mod:`placement_allocations`,
:mod:`candidates`); it hands each call to the part that owns it. The
scheduler calls no other service.
"""

from scheduler_split import conf
from scheduler_split.scheduler import admin as admin_mod
from scheduler_split.scheduler import candidates
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import endpoint as endpoint_mod
from scheduler_split.scheduler import host_manager as host_manager_mod
from scheduler_split.scheduler import manager as manager_mod
from scheduler_split.scheduler import placement_allocations
from scheduler_split.scheduler import placement_providers
from scheduler_split.scheduler import placement_reads
from scheduler_split.scheduler import placement_writes

CONF = conf.CONF


class Scheduler:
    """One scheduler process: its host-state cache and the parts that
    share it."""

    def __init__(self, db_url=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self.host_manager = host_manager_mod.HostManager(self.db_url)
        self.manager = manager_mod.SchedulerManager(self.db_url,
                                                    self.host_manager)
        self.admin = admin_mod.SchedulerAdmin(self.db_url, self.host_manager)
        self.cell_health = self.manager.cell_health

    def endpoint(self, cell_uuid=None):
        """The RPC endpoint for one bus: the API bus or a cell's bus."""
        return endpoint_mod.SchedulerEndpoint(self, cell_uuid)

    # --- selection and claims (manager) --------------------------------------

    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates=False, num_alternates=0):
        return self.manager.select_destinations(
            ctx, spec_obj, instance_uuids, return_alternates, num_alternates)

    def select_batch(self, requests):
        return self.manager.select_batch(requests)

    def claim_resources(self, ctx, selection, instance_uuid):
        return self.manager.claim_resources(ctx, selection, instance_uuid)

    def check_rebuild(self, ctx, spec_obj, host, node, claim=False):
        return self.manager.check_rebuild(ctx, spec_obj, host, node,
                                          claim=claim)

    def release_resources(self, ctx, instance_uuid):
        return self.manager.release_resources(ctx, instance_uuid)

    def move_allocations(self, ctx, from_consumer, to_consumer):
        return self.manager.move_allocations(ctx, from_consumer,
                                             to_consumer)

    # --- compute reports (host_manager, reports) -----------------------------

    def update_resource_stats(self, ctx, cell_uuid, host, node, stats):
        # A cast: its thread goes back to the bus while the report waits
        # for its group commit.
        self.host_manager.update_from_stats(cell_uuid, host, node, stats,
                                            wait=False)

    # --- what operators steer and see (admin) --------------------------------

    def update_host_status(self, ctx, host, status, updated_at=None):
        return self.admin.update_host_status(ctx, host, status, updated_at)

    def delete_host(self, ctx, host):
        return self.admin.delete_host(ctx, host)

    def get_compute_nodes(self, ctx):
        return self.admin.get_compute_nodes(ctx)

    def get_services(self, ctx):
        return self.admin.get_services(ctx)

    def delete_service(self, ctx, service_uuid):
        return self.admin.delete_service(ctx, service_uuid)

    def report_service(self):
        self.admin.report_service()

    def get_minimum_service_version(self, ctx):
        return self.admin.get_minimum_service_version(ctx)

    def aggregate_list(self, ctx):
        return self.admin.aggregate_list(ctx)

    def aggregate_get(self, ctx, aggregate_id):
        """Call from the API (1.3): one aggregate, by id or uuid."""
        return self.admin.aggregate_get(ctx, aggregate_id)

    def aggregate_create(self, ctx, name, availability_zone=None):
        """Call from the API (1.3): a new aggregate."""
        return self.admin.aggregate_create(ctx, name, availability_zone)

    def aggregate_update(self, ctx, aggregate_id, values):
        """Call from the API (1.3): rename an aggregate or
        change its zone."""
        return self.admin.aggregate_update(ctx, aggregate_id, values)

    def aggregate_delete(self, ctx, aggregate_id):
        """Call from the API (1.3): delete an empty aggregate."""
        return self.admin.aggregate_delete(ctx, aggregate_id)

    def aggregate_add_host(self, ctx, aggregate_id, host):
        """Call from the API (1.3): put a compute host in an
        aggregate."""
        return self.admin.aggregate_add_host(ctx, aggregate_id, host)

    def aggregate_remove_host(self, ctx, aggregate_id, host):
        """Call from the API (1.3): take a compute host out
        of an aggregate."""
        return self.admin.aggregate_remove_host(ctx, aggregate_id, host)

    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        """Call from the API (1.3): set or unset metadata
        keys of an aggregate."""
        return self.admin.aggregate_set_metadata(ctx, aggregate_id,
                                                 metadata)

    def get_availability_zones(self, ctx):
        """Call from the API (1.3): the zones of the compute
        hosts."""
        return self.admin.get_availability_zones(ctx)

    # --- the consumers holding claims (claims) -----------------------------

    def get_consumers(self, ctx, older_than, marker=None, limit=500):
        return claims.consumers_older_than(self.db_url, older_than,
                                           marker=marker, limit=limit)

    # --- what the Placement API reads (placement_reads) --------------------

    def get_providers(self, ctx, filters=None, marker=None,
                      limit=placement_reads.MAX_PAGE, detail=False):
        return placement_reads.providers(self.db_url, filters, marker,
                                         limit, detail)

    def get_provider_allocations(self, ctx, provider_uuid):
        return placement_reads.provider_allocations(self.db_url,
                                                    provider_uuid)

    def get_consumer_allocations(self, ctx, consumer_uuid):
        return placement_reads.consumer_allocations(self.db_url,
                                                    consumer_uuid)

    def get_usages(self, ctx, consumer_uuids):
        return placement_reads.usages(self.db_url, consumer_uuids)

    # --- what the Placement API writes (placement_writes) ------------------

    def get_traits(self, ctx, names=None, prefix=None, associated=None):
        return placement_writes.list_traits(self.db_url, names, prefix,
                                            associated)

    def create_trait(self, ctx, name):
        return placement_writes.create_trait(self.db_url, name)

    def delete_trait(self, ctx, name):
        placement_writes.delete_trait(self.db_url, name)

    def set_provider_traits(self, ctx, provider_uuid, traits, generation):
        traits, generation = placement_writes.set_provider_traits(
            self.db_url, provider_uuid, traits, generation,
            self.host_manager.stamp())
        # This process's memory at once; the others' at their next
        # reload, which reads the provider the write changed.
        self.host_manager.refresh_host(provider_uuid)
        return {'traits': traits, 'generation': generation}

    def get_resource_classes(self, ctx):
        return placement_writes.list_resource_classes(self.db_url)

    def create_resource_class(self, ctx, name, exists_ok=True):
        return placement_writes.create_resource_class(self.db_url, name,
                                                      exists_ok)

    def delete_resource_class(self, ctx, name):
        placement_writes.delete_resource_class(self.db_url, name)

    # --- providers, inventories, aggregates (placement_providers) ---------

    def _written(self, provider_uuid, generation=None):
        # This process's memory at once; the others' at their next
        # reload, which reads the provider the write changed.
        self.host_manager.refresh_host(provider_uuid)
        return generation

    def create_provider(self, ctx, name, uuid=None, parent_uuid=None):
        return placement_providers.create_provider(self.db_url, name, uuid,
                                                   parent_uuid)

    def update_provider(self, ctx, provider_uuid, name, parent=None,
                        allow_reparenting=False):
        parent_uuid = placement_providers.UNCHANGED
        if parent is not None:
            parent_uuid = parent.get('uuid')
        placement_providers.update_provider(
            self.db_url, provider_uuid, name, parent_uuid, allow_reparenting,
            self.host_manager.stamp())
        self._written(provider_uuid)

    def delete_provider(self, ctx, provider_uuid):
        placement_providers.delete_provider(self.db_url, provider_uuid)
        self._written(provider_uuid)

    def set_inventories(self, ctx, provider_uuid, inventories, generation):
        generation = placement_providers.set_inventories(
            self.db_url, provider_uuid, inventories, generation,
            self.host_manager.stamp())
        return self._written(provider_uuid, generation)

    def put_inventory(self, ctx, provider_uuid, resource_class, fields,
                      generation, create=False):
        return self._written(provider_uuid, placement_providers.put_inventory(
            self.db_url, provider_uuid, resource_class, fields, generation,
            create, self.host_manager.stamp()))

    def delete_inventory(self, ctx, provider_uuid, resource_class):
        return self._written(provider_uuid,
                             placement_providers.delete_inventory(
                                 self.db_url, provider_uuid, resource_class,
                                 self.host_manager.stamp()))

    def write_allocations(self, ctx, consumers):
        for uuid in placement_allocations.write(self.db_url, consumers,
                                                self.host_manager.stamp()):
            self._written(uuid)

    def delete_allocations(self, ctx, consumer_uuid):
        for uuid in placement_allocations.delete(self.db_url, consumer_uuid,
                                                 self.host_manager.stamp()):
            self._written(uuid)

    def get_consumer(self, ctx, consumer_uuid):
        return placement_allocations.consumer(self.db_url, consumer_uuid)

    def get_allocation_candidates(self, ctx, groups, policy=None,
                                  root_traits=None, same_subtree=(),
                                  limit=None, nested=True):
        return candidates.find(self.db_url, groups, policy, root_traits,
                               same_subtree, limit, nested)

    def reshape(self, ctx, inventories, consumers):
        for uuid in placement_allocations.reshape(
                self.db_url, inventories, consumers,
                self.host_manager.stamp()):
            self._written(uuid)

    def rename_resource_class(self, ctx, name, new_name):
        placement_writes.rename_resource_class(self.db_url, name, new_name,
                                               self.host_manager.stamp())

    def get_project_consumers(self, ctx, project_id, user_id=None):
        return placement_allocations.of_project(self.db_url, project_id,
                                                user_id)

    def set_provider_aggregates(self, ctx, provider_uuid, aggregates,
                                generation):
        return self._written(provider_uuid, placement_providers.set_aggregates(
            self.db_url, provider_uuid, aggregates, generation,
            self.host_manager.stamp()))
