"""The scheduler's RPC endpoint: what the scheduler service registers on
each bus it listens on (topic ``scheduler``).

One scheduler process serves several buses: the API bus
(``select_destinations`` from the super-conductor, releases and the
operators' calls from the API) and every cell bus (reports and releases
from computes, alternate claims from cell conductors). A bus endpoint
knows which cell it listens for, which is how a compute's report gets
its cell without the compute knowing the cell. It hands every call to
the process's :class:`process.Scheduler`, and gives the answer back at
the caller's version.
"""

import time

import oslo_messaging as messaging

from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import placement_reads
from scheduler_split.scheduler import rpcapi

RPC_VERSION = '1.11'


class SchedulerEndpoint:
    """The scheduler's RPC methods as one bus sees them (topic scheduler).
    """

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, scheduler, cell_uuid):
        self.scheduler = scheduler
        self.cell_uuid = cell_uuid

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost)
    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates, num_alternates,
                            object_versions=None):
        """Call from the super-conductor: choose and claim hosts.

        The Selections go back at the caller's ``object_versions`` (1.1);
        a caller of 1.0 sends none and gets what 1.0 carried.
        """
        started = time.monotonic()
        try:
            host_lists = self.scheduler.select_destinations(
                ctx, spec_obj, instance_uuids, return_alternates,
                num_alternates)
        except exception.NoValidHost:
            metrics.SELECT_NO_VALID_HOST.inc()
            raise
        except Exception:
            metrics.SELECT_ERROR.inc()
            raise
        finally:
            metrics.SELECT_SECONDS.observe(time.monotonic() - started)
        metrics.SELECT_PLACED.inc()
        if object_versions is None:
            object_versions = rpcapi.OBJECT_VERSIONS['1.0']
        return [[obj_base.backport(selection, object_versions)
                 for selection in host_list] for host_list in host_lists]

    @messaging.expose
    def select_destinations_batch(self, ctx, requests, object_versions):
        """Call (1.7) from the super-conductor: several requests that
        arrived together, each a dict of ``context`` (its caller's, as a
        dict), ``spec_obj``, ``instance_uuids``, ``return_alternates`` and
        ``num_alternates``.

        Answers one dict per request, in order: ``{'host_lists': ...}``
        as ``select_destinations`` answers, or ``{'error': name,
        'message': text}`` for a request that was not placed; a request
        that fails never fails its neighbours.
        """
        started = time.monotonic()
        answers = self.scheduler.select_batch([
            (ss_context.RequestContext.from_dict(request['context']),
             request['spec_obj'], request['instance_uuids'],
             request['return_alternates'], request['num_alternates'])
            for request in requests])
        elapsed = time.monotonic() - started
        metrics.SELECT_BATCHED.observe(len(requests))
        result = []
        for answer in answers:
            metrics.SELECT_SECONDS.observe(elapsed)
            if isinstance(answer, exception.NoValidHost):
                metrics.SELECT_NO_VALID_HOST.inc()
                result.append({'error': 'NoValidHost',
                               'message': answer.format_message()})
            elif isinstance(answer, Exception):
                metrics.SELECT_ERROR.inc()
                result.append({'error': type(answer).__name__,
                               'message': str(answer)})
            else:
                metrics.SELECT_PLACED.inc()
                result.append({'host_lists': [
                    [obj_base.backport(selection, object_versions)
                     for selection in host_list]
                    for host_list in answer]})
        return result

    @messaging.expose
    def update_resource_stats(self, ctx, host, node, stats):
        """Cast from a compute: its capacity, zone and liveness."""
        self.scheduler.update_resource_stats(ctx, self.cell_uuid, host,
                                             node, stats)

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost)
    def check_rebuild(self, ctx, spec_obj, host, node, claim=False):
        """Call (1.8) from the super-conductor: whether the server's own
        host passes the filters for its rebuild's new image; no claim
        unless ``claim`` (a server in ERROR claims its host again)."""
        return self.scheduler.check_rebuild(ctx, spec_obj, host, node,
                                            claim=claim)

    @messaging.expose
    def claim_resources(self, ctx, selection, instance_uuid):
        """Call from a cell conductor: claim an alternate."""
        return self.scheduler.claim_resources(ctx, selection, instance_uuid)

    @messaging.expose
    def release_resources(self, ctx, instance_uuid):
        """Call from compute, conductors or the API: drop a claim."""
        return self.scheduler.release_resources(ctx, instance_uuid)

    @messaging.expose
    def move_allocations(self, ctx, from_consumer, to_consumer):
        """Call (1.5) from a conductor or a compute moving an instance:
        hand one consumer's allocations to another."""
        return self.scheduler.move_allocations(ctx, from_consumer,
                                               to_consumer)

    @messaging.expose
    def update_host_status(self, ctx, host, status, updated_at=None):
        """Call from the API (1.2): the operator's status of a host."""
        return self.scheduler.update_host_status(ctx, host, status,
                                                 updated_at)

    @messaging.expose
    @messaging.expected_exceptions(exception.Conflict)
    def delete_host(self, ctx, host):
        """Call from the API (1.2): a compute service was deleted."""
        return self.scheduler.delete_host(ctx, host)

    @messaging.expose
    def get_compute_nodes(self, ctx):
        """Call from the API (1.2): os-hypervisors."""
        return self.scheduler.get_compute_nodes(ctx)

    @messaging.expose
    def get_services(self, ctx):
        """Call from the API (1.2): the schedulers in os-services."""
        return self.scheduler.get_services(ctx)

    @messaging.expose
    def delete_service(self, ctx, service_uuid):
        """Call from the API (1.2): a scheduler service was deleted."""
        return self.scheduler.delete_service(ctx, service_uuid)

    # Calls from the API (1.3): host aggregates and availability zones.

    @messaging.expose
    def aggregate_list(self, ctx):
        """Call from the API (1.3): every host aggregate."""
        return self.scheduler.aggregate_list(ctx)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_get(self, ctx, aggregate_id):
        """Call from the API (1.3): one aggregate, by id or uuid."""
        return self.scheduler.aggregate_get(ctx, aggregate_id)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_create(self, ctx, name, availability_zone=None):
        """Call from the API (1.3): a new aggregate."""
        return self.scheduler.aggregate_create(ctx, name, availability_zone)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_update(self, ctx, aggregate_id, values):
        """Call from the API (1.3): rename an aggregate or
        change its zone."""
        return self.scheduler.aggregate_update(ctx, aggregate_id, values)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_delete(self, ctx, aggregate_id):
        """Call from the API (1.3): delete an empty aggregate."""
        return self.scheduler.aggregate_delete(ctx, aggregate_id)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_add_host(self, ctx, aggregate_id, host):
        """Call from the API (1.3): put a compute host in an
        aggregate."""
        return self.scheduler.aggregate_add_host(ctx, aggregate_id, host)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_remove_host(self, ctx, aggregate_id, host):
        """Call from the API (1.3): take a compute host out
        of an aggregate."""
        return self.scheduler.aggregate_remove_host(ctx, aggregate_id, host)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        """Call from the API (1.3): set or unset metadata
        keys of an aggregate."""
        return self.scheduler.aggregate_set_metadata(ctx, aggregate_id,
                                                     metadata)

    @messaging.expose
    def get_availability_zones(self, ctx):
        """Call from the API (1.3): the zones of the compute
        hosts."""
        return self.scheduler.get_availability_zones(ctx)

    @messaging.expose
    def get_consumers(self, ctx, older_than, marker=None, limit=500):
        """Call (1.6) from the super-conductor's reconciliation of
        claims: up to ``limit`` consumers holding allocations made more
        than ``older_than`` seconds ago, in uuid order after
        ``marker``."""
        return self.scheduler.get_consumers(ctx, older_than, marker, limit)

    # Calls (1.9) from the API's Placement API: reads only, plain dicts.

    @messaging.expose
    def get_providers(self, ctx, filters=None, marker=None,
                      limit=placement_reads.MAX_PAGE, detail=False):
        """Call (1.9) from the API's Placement API: a page of the
        resource providers ``filters`` selects (GET
        /resource_providers, /allocation_candidates, a provider and its
        inventories, usages and aggregates); see
        :func:`placement_reads.providers`."""
        return self.scheduler.get_providers(ctx, filters, marker, limit,
                                            detail)

    @messaging.expose
    def get_provider_allocations(self, ctx, provider_uuid):
        """Call (1.9) from the API's Placement API: the allocations
        held on one provider, with its generation; None if there is no
        such provider."""
        return self.scheduler.get_provider_allocations(ctx, provider_uuid)

    @messaging.expose
    def get_consumer_allocations(self, ctx, consumer_uuid):
        """Call (1.9) from the API's Placement API: what one consumer
        (an instance or a migration) holds, by provider."""
        return self.scheduler.get_consumer_allocations(ctx, consumer_uuid)

    @messaging.expose
    def get_usages(self, ctx, consumer_uuids):
        """Call (1.9) from the API's Placement API: what a set of
        consumers (a project's instances and migrations) holds, summed
        by resource class, and how many of them hold anything."""
        return self.scheduler.get_usages(ctx, consumer_uuids)

    # Calls (1.10) from the API's Placement API: traits and resource
    # classes.

    @messaging.expose
    def get_traits(self, ctx, names=None, prefix=None, associated=None):
        """Call (1.10): the trait catalog (GET /traits)."""
        return self.scheduler.get_traits(ctx, names, prefix, associated)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def create_trait(self, ctx, name):
        """Call (1.10): make a custom trait (PUT /traits/{name})."""
        return self.scheduler.create_trait(ctx, name)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def delete_trait(self, ctx, name):
        """Call (1.10): remove a custom trait (DELETE /traits/{name})."""
        return self.scheduler.delete_trait(ctx, name)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def set_provider_traits(self, ctx, provider_uuid, traits, generation):
        """Call (1.10): a provider's traits (PUT and DELETE
        /resource_providers/{uuid}/traits)."""
        return self.scheduler.set_provider_traits(ctx, provider_uuid,
                                                  traits, generation)

    @messaging.expose
    def get_resource_classes(self, ctx):
        """Call (1.10): the resource classes (GET /resource_classes)."""
        return self.scheduler.get_resource_classes(ctx)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def create_resource_class(self, ctx, name, exists_ok=True):
        """Call (1.10): make a custom resource class (POST
        /resource_classes, PUT /resource_classes/{name})."""
        return self.scheduler.create_resource_class(ctx, name, exists_ok)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def delete_resource_class(self, ctx, name):
        """Call (1.10): remove a custom resource class (DELETE
        /resource_classes/{name})."""
        return self.scheduler.delete_resource_class(ctx, name)

    # Calls (1.11) from the API's Placement API: providers, their
    # inventories and aggregates.

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def create_provider(self, ctx, name, uuid=None, parent_uuid=None):
        """Call (1.11): make a provider (POST /resource_providers): its
        uuid."""
        return self.scheduler.create_provider(ctx, name, uuid, parent_uuid)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def update_provider(self, ctx, provider_uuid, name, parent=None,
                        allow_reparenting=False):
        """Call (1.11): rename or re-parent a provider (PUT
        /resource_providers/{uuid}); ``parent`` None leaves the parent,
        ``{'uuid': None}`` makes it a root."""
        return self.scheduler.update_provider(ctx, provider_uuid, name,
                                              parent, allow_reparenting)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def delete_provider(self, ctx, provider_uuid):
        """Call (1.11): delete a provider (DELETE
        /resource_providers/{uuid})."""
        return self.scheduler.delete_provider(ctx, provider_uuid)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def set_inventories(self, ctx, provider_uuid, inventories, generation):
        """Call (1.11): a provider's whole inventory (PUT and DELETE
        /resource_providers/{uuid}/inventories): the new generation."""
        return self.scheduler.set_inventories(ctx, provider_uuid,
                                              inventories, generation)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def put_inventory(self, ctx, provider_uuid, resource_class, fields,
                      generation, create=False):
        """Call (1.11): one class of a provider's inventory (POST
        /inventories, PUT /inventories/{class}): the new generation."""
        return self.scheduler.put_inventory(ctx, provider_uuid,
                                            resource_class, fields,
                                            generation, create)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def delete_inventory(self, ctx, provider_uuid, resource_class):
        """Call (1.11): delete one class of a provider's inventory
        (DELETE /inventories/{class}): the new generation."""
        return self.scheduler.delete_inventory(ctx, provider_uuid,
                                               resource_class)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def set_provider_aggregates(self, ctx, provider_uuid, aggregates,
                                generation):
        """Call (1.11): a provider's aggregates (PUT
        /resource_providers/{uuid}/aggregates): the new generation."""
        return self.scheduler.set_provider_aggregates(
            ctx, provider_uuid, aggregates, generation)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def write_allocations(self, ctx, consumers):
        """Call (1.11): the allocations of consumers that are not the
        scheduler's servers (PUT /allocations/{consumer}, POST
        /allocations), all or none."""
        return self.scheduler.write_allocations(ctx, consumers)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def delete_allocations(self, ctx, consumer_uuid):
        """Call (1.11): DELETE /allocations/{consumer}."""
        return self.scheduler.delete_allocations(ctx, consumer_uuid)

    @messaging.expose
    def get_consumer(self, ctx, consumer_uuid):
        """Call (1.11): the record of a consumer written through the
        Placement API (its owner, type and generation), or None."""
        return self.scheduler.get_consumer(ctx, consumer_uuid)

    @messaging.expose
    def get_allocation_candidates(self, ctx, groups, policy=None,
                                  root_traits=None, same_subtree=(),
                                  limit=None, nested=True):
        """Call (1.11): GET /allocation_candidates over provider trees
        and sharing providers."""
        return self.scheduler.get_allocation_candidates(
            ctx, groups, policy, root_traits, same_subtree, limit, nested)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def reshape(self, ctx, inventories, consumers):
        """Call (1.11): POST /reshaper, inventories and allocations moved
        in one transaction."""
        return self.scheduler.reshape(ctx, inventories, consumers)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def rename_resource_class(self, ctx, name, new_name):
        """Call (1.11): rename a custom resource class (PUT
        /resource_classes/{name} before 1.7)."""
        return self.scheduler.rename_resource_class(ctx, name, new_name)

    @messaging.expose
    def get_project_consumers(self, ctx, project_id, user_id=None):
        """Call (1.11): the consumers written through the Placement API
        for a project (and user), by consumer type."""
        return self.scheduler.get_project_consumers(ctx, project_id,
                                                    user_id)

    @messaging.expose
    def get_minimum_service_version(self, ctx):
        """Call from any scheduler client resolving ``[upgrade_levels]
        scheduler = auto``: what the running schedulers understand."""
        return self.scheduler.get_minimum_service_version(ctx)
