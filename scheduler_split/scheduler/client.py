"""The scheduler library: the one seam between the scheduler and the rest.

Nothing outside ``scheduler_split/scheduler/`` may import any other module
of the scheduler package (``tests/unit/test_seam.py`` fails if it does).
Underneath, every method is an RPC to the scheduler service on the bus the
caller lives on: the API bus for the api and the super-conductor, the cell
bus for cell conductors and computes.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import rpc
from scheduler_split.scheduler import coalesce
from scheduler_split.scheduler import rpcapi

LOG = logging.getLogger(__name__)

NoValidHost = exception.NoValidHost

# The most requests one coalesced select carries.
MAX_BATCH = 50


class SchedulerClient:
    """What the conductors, computes and the API ask of the scheduler."""

    def __init__(self, transport=None, batch_window=0.0, in_flight=1):
        """With ``batch_window`` (seconds) above 0, selects that find
        ``in_flight`` calls already out wait up to that long to share one
        call (:mod:`coalesce`)."""
        self._api = rpcapi.SchedulerAPI(transport or rpc.get_transport())
        self._coalescer = None
        if batch_window > 0:
            self._coalescer = coalesce.Coalescer(
                self._api.select_destinations, self._select_batch,
                batch_window, in_flight, MAX_BATCH)

    def select_destinations(self, ctx, request_spec, instance_uuids,
                            return_alternates=True, num_alternates=0):
        """Choose and claim one host per instance.

        Returns one list per instance: ``[chosen, alt1, ...]`` of
        Selection objects; the chosen host is already claimed for that
        instance, the alternates (at most ``num_alternates``, all in the
        chosen host's cell) are not. Raises ``NoValidHost``.
        """
        args = (ctx, request_spec, instance_uuids, return_alternates,
                num_alternates)
        if self._coalescer is not None and self._can_batch():
            return self._coalescer.select(*args)
        return self._api.select_destinations(*args)

    def _can_batch(self):
        try:
            self._api.can_batch()
        except messaging.RPCVersionCapError:
            return False
        return True

    def _select_batch(self, requests):
        ctx = requests[0][0]
        return self._api.select_destinations_batch(ctx, [
            {'context': req_ctx, 'spec_obj': spec_obj,
             'instance_uuids': uuids, 'return_alternates': alternates,
             'num_alternates': num_alternates}
            for req_ctx, spec_obj, uuids, alternates, num_alternates
            in requests])

    def update_resource_stats(self, ctx, name, stats):
        """Report a compute node's capacity, zone and liveness.

        ``name`` is ``(host, node)``; ``stats`` is a dict with ``vcpus``,
        ``memory_mb``, ``local_gb``, reserved amounts, allocation ratios,
        ``availability_zone`` and ``disabled``; from service version 5
        also the hypervisor's ``host_ip``, ``hypervisor_type``,
        ``hypervisor_version``, ``cpu_arch`` and ``cpu_info``, and
        ``service_status``: the operator's status of the compute's service
        as its cell conductor last answered a heartbeat (``disabled``,
        ``disabled_reason``, ``forced_down``, ``updated_at``), which the
        scheduler applies unless it holds a newer one.
        """
        host, node = name
        self._api.update_resource_stats(ctx, host, node, stats)

    def claim_resources(self, ctx, selection, instance_uuid):
        """Claim an alternate Selection; False if it is full or lost a race.
        """
        return self._api.claim_resources(ctx, selection, instance_uuid)

    def can_check_rebuild(self):
        """Raises oslo.messaging's ``RPCVersionCapError`` while a
        scheduler older than 1.8 runs (one that cannot check a rebuild).
        """
        self._api.can_check_rebuild()

    def check_rebuild(self, ctx, request_spec, host, node=None,
                      claim=False):
        """Whether the server's own ``host`` still takes it as
        ``request_spec`` now asks for it (a rebuild with a new image):
        the filters that judge the request run on that host alone; the
        claim the server holds stays as it is. With ``claim`` (a server
        in ERROR, which holds none) the host is claimed for it again.
        Raises ``NoValidHost`` (which says what refused it), or
        oslo.messaging's ``RPCVersionCapError`` while a scheduler older
        than 1.8 runs."""
        return self._api.check_rebuild(ctx, request_spec, host, node,
                                       claim=claim)

    def release_resources(self, ctx, instance_uuid):
        """Drop whatever the instance holds; repeating it is harmless.
        Also drops what a migration holds, given its uuid (a confirmed
        move releases the source host so)."""
        return self._api.release_resources(ctx, instance_uuid)

    def list_consumers(self, ctx, older_than, marker=None, limit=500):
        """Up to ``limit`` consumers (instances, or migrations holding a
        move's source host) with allocations made more than
        ``older_than`` seconds ago, in uuid order after ``marker``: what
        a reconciliation of claims pages through. Raises oslo.messaging's
        ``RPCVersionCapError`` while a scheduler older than 1.6 runs."""
        return self._api.get_consumers(ctx, older_than, marker, limit)

    # --- moves (scheduler RPC 1.5) -----------------------------------------
    # A move keeps both hosts accounted for: the migration's consumer
    # holds the source host's resources, the instance's the destination's.
    # Confirming releases the migration's; reverting hands them back.

    def can_move(self):
        """Whether the schedulers take the calls of moves: raises
        oslo.messaging's ``RPCVersionCapError`` if not."""
        self._api.can_move()

    def move_claim_to_migration(self, ctx, instance_uuid, migration_uuid):
        """Start of a move: the instance's allocations (the source host's)
        are held by the migration from now on, and the instance holds
        nothing until :meth:`select_destinations` (with
        ``requested_cell`` set in the RequestSpec) or
        :meth:`claim_resources` claims its destination.
        ``{provider_uuid: resources}`` moved."""
        return self._api.move_allocations(ctx, instance_uuid,
                                          migration_uuid)

    def revert_claim_from_migration(self, ctx, migration_uuid,
                                    instance_uuid):
        """A move reverted or failed: the instance holds again what the
        migration held (the source host), and its claim of the
        destination, if any, is released in the same transaction.
        ``{provider_uuid: resources}`` moved back (empty if the
        migration held nothing)."""
        return self._api.move_allocations(ctx, migration_uuid,
                                          instance_uuid)

    # --- what operators steer and see (scheduler RPC 1.2) ------------------
    # Each raises oslo.messaging's MessagingException (a timeout, or
    # RPCVersionCapError while a scheduler older than 1.2 runs) when no
    # scheduler can answer.

    def update_host_status(self, ctx, host, disabled, disabled_reason,
                           forced_down, updated_at=None):
        """Tell the schedulers the operator's status of ``host``'s
        compute service (its cell record, written at ``updated_at``, an
        ISO 8601 time: an older reading never replaces a newer one). A
        disabled or forced-down host gets no new claim. Returns the uuids
        of the host's compute nodes."""
        status = {'disabled': bool(disabled),
                  'disabled_reason': disabled_reason,
                  'forced_down': bool(forced_down)}
        return self._api.update_host_status(ctx, host, status, updated_at)

    def delete_host(self, ctx, host):
        """Forget ``host``'s compute nodes (their resource providers);
        ``Conflict`` while allocations are held on them."""
        return self._api.delete_host(ctx, host)

    def get_compute_nodes(self, ctx):
        """Every compute node, as a list of dicts: ``id``, ``uuid``,
        ``host``, ``hypervisor_hostname``, ``cell_uuid``,
        ``availability_zone``, ``inventory`` (``{rc: [total, reserved,
        allocation_ratio]}``), ``used`` (``{rc: amount}``),
        ``running_vms``, ``up``, ``service_disabled``,
        ``disabled_reason``, ``forced_down``, ``last_report_at`` and the
        hypervisor's ``host_ip``, ``hypervisor_type``,
        ``hypervisor_version``, ``cpu_arch``, ``cpu_info``."""
        return self._api.get_compute_nodes(ctx)

    def get_services(self, ctx):
        """The scheduler services' records, as dicts: ``id``, ``uuid``,
        ``host``, ``binary``, ``last_seen_up``, ``created_at``,
        ``updated_at`` (ISO 8601 times)."""
        return self._api.get_services(ctx)

    def delete_service(self, ctx, service_uuid):
        """Forget a scheduler service's record; False if unknown."""
        return self._api.delete_service(ctx, service_uuid)

    # --- host aggregates and availability zones (scheduler RPC 1.3) -------
    # Aggregates are the scheduler's data: these are the only way to read
    # or change them. An aggregate is a dict: ``id``, ``uuid``, ``name``,
    # ``availability_zone``, ``hosts``, ``metadata``, ``deleted``,
    # ``deleted_at``, ``created_at``, ``updated_at``. Errors are the
    # Aggregate* exceptions of ``scheduler_split.exception`` and
    # ``ComputeHostNotFound``; a change is seen by every scheduler
    # process on its next select.

    def aggregate_list(self, ctx):
        return self._api.aggregate_list(ctx)

    def aggregate_get(self, ctx, aggregate_id):
        """By id or uuid."""
        return self._api.aggregate_get(ctx, aggregate_id)

    def aggregate_create(self, ctx, name, availability_zone=None):
        return self._api.aggregate_create(ctx, name, availability_zone)

    def aggregate_update(self, ctx, aggregate_id, values):
        """``values``: ``name`` and/or ``availability_zone`` (None
        takes the aggregate out of its zone)."""
        return self._api.aggregate_update(ctx, aggregate_id, values)

    def aggregate_delete(self, ctx, aggregate_id):
        return self._api.aggregate_delete(ctx, aggregate_id)

    def aggregate_add_host(self, ctx, aggregate_id, host):
        return self._api.aggregate_add_host(ctx, aggregate_id, host)

    def aggregate_remove_host(self, ctx, aggregate_id, host):
        return self._api.aggregate_remove_host(ctx, aggregate_id, host)

    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        """Set keys; a None value removes its key."""
        return self._api.aggregate_set_metadata(ctx, aggregate_id, metadata)

    def get_availability_zones(self, ctx):
        """``{zone: {host: {available, active, updated_at}}}`` of the
        compute hosts."""
        return self._api.get_availability_zones(ctx)

    # --- what the Placement API reads (scheduler RPC 1.9) ------------------
    # The scheduler database in Placement's terms: every compute node is a
    # resource provider, the root of its own tree; a host aggregate is a
    # provider aggregate of the same uuid. Each raises oslo.messaging's
    # RPCVersionCapError while a scheduler older than 1.9 runs, or another
    # MessagingException when no scheduler answers.

    def providers(self, ctx, filters=None, limit=None, detail=False):
        """The resource providers ``filters`` selects, in a stable order,
        at most ``limit`` of them; asked of the scheduler a page at a time.

        ``filters`` (each optional): ``uuid``, ``name``; ``in_tree``, a
        list of provider uuids whose trees the provider must be in;
        ``member_of``, a list of lists of aggregate uuids (the provider
        in one of each list); ``forbidden_aggregates``, aggregate uuids
        it must be in none of; ``resources``, ``{resource class:
        amount}`` it must have free (within its capacity, ``(total -
        reserved) * allocation_ratio``, less what is allocated);
        ``required`` and ``forbidden``, traits it must have and must not;
        ``any_of``, lists of traits it must have one of each.

        Each provider is a dict: ``uuid``, ``name``, ``generation``,
        ``updated_at`` (ISO 8601); with ``detail`` also ``inventories``
        (``{rc: {total, reserved, allocation_ratio, min_unit, max_unit,
        step_size}}``), ``capacity`` (``{rc: amount}``), ``usages``
        (``{rc: amount allocated}``, every class of the inventory) and
        ``aggregates`` (uuids) and ``traits``."""
        found = []
        marker = None
        while limit is None or len(found) < limit:
            page = self._api.get_providers(
                ctx, filters or {}, marker,
                rpcapi.MAX_PAGE if limit is None else
                min(rpcapi.MAX_PAGE, limit - len(found)), detail)
            found.extend(page['providers'])
            marker = page['next']
            if marker is None:
                break
        return found

    def provider_allocations(self, ctx, provider_uuid):
        """``{'generation': g, 'allocations': {consumer uuid: {rc:
        used}}}`` of one provider, or None if there is no such
        provider."""
        return self._api.get_provider_allocations(ctx, provider_uuid)

    def consumer_allocations(self, ctx, consumer_uuid):
        """``{provider uuid: {'generation': g, 'resources': {rc:
        used}}}``: what one consumer (an instance, or a migration holding
        a move's source host) holds; empty if nothing."""
        return self._api.get_consumer_allocations(ctx, consumer_uuid)

    def usages(self, ctx, consumer_uuids):
        """``{'usages': {rc: amount}, 'consumer_count': n}``: what the
        consumers ``consumer_uuids`` hold, summed over every provider,
        and how many of them hold anything."""
        return self._api.get_usages(ctx, list(consumer_uuids))

    # --- what the Placement API writes (scheduler RPC 1.10) ---------------

    def traits(self, ctx, names=None, prefix=None, associated=None):
        """The names of the traits, standard and custom: those of
        ``names``, starting with ``prefix``, some provider has
        (``associated`` True) or none has (False)."""
        return self._api.get_traits(ctx, names, prefix, associated)

    def create_trait(self, ctx, name):
        """Make a custom trait: whether it is new."""
        return self._api.create_trait(ctx, name)

    def delete_trait(self, ctx, name):
        """Remove a custom trait no provider has."""
        return self._api.delete_trait(ctx, name)

    def set_provider_traits(self, ctx, provider_uuid, traits, generation):
        """Make ``traits`` a provider's, if it is still at
        ``generation`` (None: whatever it is): ``{'traits': [...],
        'generation': new generation}``."""
        return self._api.set_provider_traits(ctx, provider_uuid,
                                             list(traits), generation)

    def resource_classes(self, ctx):
        """Every standard resource class, then the custom ones."""
        return self._api.get_resource_classes(ctx)

    def create_resource_class(self, ctx, name, exists_ok=True):
        """Make a custom resource class: whether it is new."""
        return self._api.create_resource_class(ctx, name, exists_ok)

    def delete_resource_class(self, ctx, name):
        """Remove a custom resource class nothing uses."""
        return self._api.delete_resource_class(ctx, name)

    # --- providers, inventories, aggregates (scheduler RPC 1.11) ---------

    def create_provider(self, ctx, name, uuid=None, parent_uuid=None):
        """Make a resource provider without a compute host (a root, or
        the child of ``parent_uuid``): its uuid."""
        return self._api.create_provider(ctx, name, uuid, parent_uuid)

    def update_provider(self, ctx, provider_uuid, name, parent=None,
                        allow_reparenting=False):
        """Rename a provider; ``parent`` (``{'uuid': uuid or None}``)
        moves it under another provider or makes it a root."""
        return self._api.update_provider(ctx, provider_uuid, name, parent,
                                         allow_reparenting)

    def delete_provider(self, ctx, provider_uuid):
        """Delete a provider without allocations or children."""
        return self._api.delete_provider(ctx, provider_uuid)

    def set_inventories(self, ctx, provider_uuid, inventories, generation):
        """Make ``{class: fields}`` (None: nothing) a provider's whole
        inventory, if it is still at ``generation`` (None: whatever it
        is): the new generation."""
        return self._api.set_inventories(ctx, provider_uuid, inventories,
                                         generation)

    def put_inventory(self, ctx, provider_uuid, resource_class, fields,
                      generation, create=False):
        """Write one class of a provider's inventory, a new one with
        ``create``: the new generation."""
        return self._api.put_inventory(ctx, provider_uuid, resource_class,
                                       fields, generation, create)

    def delete_inventory(self, ctx, provider_uuid, resource_class):
        """Delete one class of a provider's inventory: the new
        generation."""
        return self._api.delete_inventory(ctx, provider_uuid,
                                          resource_class)

    def write_allocations(self, ctx, consumers):
        """Make ``{consumer uuid: {'allocations': {provider uuid: {class:
        amount}}, 'project_id', 'user_id', 'consumer_type',
        'generation'}}`` what those consumers hold, all or none."""
        return self._api.write_allocations(ctx, consumers)

    def delete_allocations(self, ctx, consumer_uuid):
        """Delete what a consumer holds and its record."""
        return self._api.delete_allocations(ctx, consumer_uuid)

    def consumer(self, ctx, consumer_uuid):
        """The record of a consumer written through the Placement API
        (``project_id``, ``user_id``, ``consumer_type``,
        ``generation``), or None."""
        return self._api.get_consumer(ctx, consumer_uuid)

    def allocation_candidates(self, ctx, groups, policy=None,
                              root_traits=None, same_subtree=(),
                              limit=None, nested=True):
        """``{'candidates': [{'allocations', 'mappings'}], 'providers':
        {uuid: summary}}``: Placement's allocation candidates of the
        request groups ``{suffix: group}``."""
        return self._api.get_allocation_candidates(
            ctx, groups, policy, root_traits, list(same_subtree), limit,
            nested)

    def reshape(self, ctx, inventories, consumers):
        """Placement's reshaper: ``{provider uuid: {'generation': g,
        'inventories': {class: fields}}}`` and consumers' allocations (as
        :meth:`write_allocations` takes them), in one transaction."""
        return self._api.reshape(ctx, inventories, consumers)

    def rename_resource_class(self, ctx, name, new_name):
        """Rename a custom resource class, where inventories and
        allocations use it too."""
        return self._api.rename_resource_class(ctx, name, new_name)

    def project_consumers(self, ctx, project_id, user_id=None):
        """``{consumer type: [uuid, ...]}`` of the consumers written
        through the Placement API for a project (and user)."""
        return self._api.get_project_consumers(ctx, project_id, user_id)

    def set_provider_aggregates(self, ctx, provider_uuid, aggregates,
                                generation):
        """Make ``aggregates`` those a provider was put in through the
        Placement API: the new generation."""
        return self._api.set_provider_aggregates(ctx, provider_uuid,
                                                 list(aggregates),
                                                 generation)

    def try_release_resources(self, ctx, instance_uuid):
        """``release_resources`` for failure paths: an error is logged and
        False returned, so that the caller can still settle the instance.
        Every later path (a claim elsewhere, a delete) releases again."""
        try:
            return self.release_resources(ctx, instance_uuid)
        except Exception as exc:
            if not outage.is_outage(exc):
                LOG.exception('Releasing the claim of instance %s failed',
                              instance_uuid,
                              extra={'instance_uuid': instance_uuid})
            else:
                outage.report(LOG, exc, 'Releasing the claim of instance %s '
                              'failed: %s', instance_uuid,
                              outage.describe(exc),
                              extra={'instance_uuid': instance_uuid})
            return False
