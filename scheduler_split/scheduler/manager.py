"""The scheduler service: filter, weigh, claim, pick same-cell alternates.

One manager serves several buses: the API bus (``select_destinations``
from the super-conductor, releases from the API) and every cell bus
(reports and releases from computes, alternate claims from cell
conductors). A bus endpoint knows which cell it listens for, which is how
a compute's report gets its cell without the compute knowing the cell.
"""

import contextlib
import logging
import math
import random
import threading
import time

import oslo_messaging as messaging
from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.db import engines
from scheduler_split.db import models
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from scheduler_split import servicegroup
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import host_manager
from scheduler_split.scheduler import rpcapi
from scheduler_split.scheduler import weights

CONF = conf.CONF
LOG = logging.getLogger(__name__)

RPC_VERSION = '1.5'

# The ways a host refuses a claim for good: the caller moves on.
CLAIM_REFUSED = (exception.ClaimCapacityExceeded,
                 exception.ComputeHostDisabled,
                 exception.ComputeHostNotFound)
# How often one host is tried when claims of other processes keep
# changing it under us.
CLAIM_ATTEMPTS = 5
# How many consumers one question of the heal to the super-conductor
# carries.
HEAL_CHUNK = 500
# The fewest hosts one batch of the filter phase holds when the scheduler
# stops after enough feasible hosts: reading the request once per batch
# is what keeps the filters cheap per host.
MIN_FILTER_BATCH = 32


def _iso(value):
    return value.isoformat() if value is not None else None


class SchedulerManager:

    def __init__(self, db_url=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self.host_manager = host_manager.HostManager(self.db_url)
        self.filters = filters.load(CONF.filter_scheduler.enabled_filters)
        self.weighers = weights.load(CONF.filter_scheduler.weighers)
        self._claim_locks = {}
        self._claim_locks_guard = threading.Lock()
        self._conductor = None

    def endpoint(self, cell_uuid=None):
        """The RPC endpoint for one bus: the API bus or a cell's bus."""
        return SchedulerEndpoint(self, cell_uuid)

    # --- the filter and weigh phases ---------------------------------------

    @staticmethod
    def hosts_to_score(num_hosts):
        """How many feasible hosts a request looks for before it stops
        filtering: ``[filter_scheduler] hosts_to_score``, or
        ``hosts_to_score_percentage`` of all hosts if that is more; every
        host when ``hosts_to_score`` is 0."""
        opts = CONF.filter_scheduler
        if not opts.hosts_to_score:
            return num_hosts
        share = math.ceil(num_hosts * opts.hosts_to_score_percentage / 100)
        return min(num_hosts, max(opts.hosts_to_score, share))

    def _filter(self, hosts, spec_obj):
        for host_filter in self.filters:
            hosts = host_filter.filter_all(hosts, spec_obj)
            if not hosts:
                LOG.debug('Filter %s returned no hosts',
                          type(host_filter).__name__)
                return []
        return hosts

    @staticmethod
    def _request_constraints(spec_obj):
        """``(label, test of a host)`` of what the request itself narrows
        the hosts to before any filter: a cell, forced or ignored hosts."""
        cell = spec_obj.get('requested_cell')
        if cell:
            yield 'cell %s' % cell, lambda h: h.cell_uuid == cell
        forced = spec_obj.get('force_hosts')
        if forced:
            yield 'forced hosts %s' % forced, lambda h: h.host in forced
        ignored = spec_obj.get('ignore_hosts')
        if ignored:
            yield 'ignored hosts %s' % ignored, \
                lambda h: h.host not in ignored

    def _filter_results(self, host_states, spec_obj):
        """What each filter left of every host, for the log of a request
        that found none (the claims refused the rest)."""
        hosts = list(host_states)
        steps = ['%d hosts known' % len(hosts)]
        for label, wanted in self._request_constraints(spec_obj):
            hosts = [h for h in hosts if wanted(h)]
            steps.append('%s: %d' % (label, len(hosts)))
        for host_filter in self.filters:
            hosts = host_filter.filter_all(hosts, spec_obj)
            steps.append('%s: %d' % (type(host_filter).__name__,
                                     len(hosts)))
            if not hosts:
                break
        else:
            steps.append('every claim refused')
        return ', '.join(steps)

    def _candidates(self, host_states, spec_obj, every_host=False):
        """Hosts that pass every enabled filter, best first, and whether
        every host was looked at.

        With more hosts than ``hosts_to_score`` the filter phase starts
        at a random host and stops once that many hosts passed (as
        Kubernetes' percentage of nodes to score and Nomad's limit
        iterator do): only those are weighed. A host that fails a filter
        is never a candidate; what changes is that the best of a sample
        wins, not the best of all. The random start spreads the requests
        of one scheduler, and of several, over the whole cloud.
        """
        hosts = host_states
        for _, wanted in self._request_constraints(spec_obj):
            hosts = [h for h in hosts if wanted(h)]
        wanted = len(hosts) if every_host else self.hosts_to_score(
            len(hosts))
        if wanted >= len(hosts):
            feasible, complete = self._filter(hosts, spec_obj), True
            looked = len(hosts)
        else:
            start = random.randrange(len(hosts))
            hosts = hosts[start:] + hosts[:start]
            batch = max(wanted, MIN_FILTER_BATCH)
            feasible, complete = [], False
            for offset in range(0, len(hosts), batch):
                feasible.extend(self._filter(hosts[offset:offset + batch],
                                             spec_obj))
                if len(feasible) >= wanted:
                    complete = offset + batch >= len(hosts)
                    break
            else:
                complete = True
            looked = min(offset + batch, len(hosts))
        metrics.FILTERED_HOSTS.observe(looked)
        metrics.SCORED_HOSTS.observe(len(feasible))
        ranked = weights.weigh(self.weighers, feasible, spec_obj)
        return [h for _, h in ranked], complete

    # --- the claim (reserve) phase -----------------------------------------

    def _claim(self, host_uuid, instance_uuid, resources, group=None):
        """Claim on one host: True, or False once it is really refused.

        A lost race (ClaimConflict) says only that someone else changed
        the host (or the group) meanwhile: reload it and try again while
        it still fits. Claims of this process on one host, or for one
        group, queue on a lock, so that only other processes' claims can
        make it lose.
        ``ClaimGroupPolicyViolation`` is raised to the caller, who knows
        the request's group.
        """
        for _ in range(CLAIM_ATTEMPTS):
            try:
                # Group before host, always: members of one group claim
                # one at a time here, on whatever hosts.
                with contextlib.ExitStack() as locks:
                    if group:
                        locks.enter_context(self._claim_lock(group['uuid']))
                    locks.enter_context(self._claim_lock(host_uuid))
                    claims.claim(self.db_url, host_uuid, instance_uuid,
                                 resources, group=group)
                self.host_manager.note_claim(host_uuid, resources,
                                             instance_uuid)
                metrics.CLAIM_WON.inc()
                return True
            except exception.ClaimConflict as exc:
                metrics.CLAIM_CONFLICT.inc()
                LOG.debug('Claim for instance %s lost a race: %s',
                          instance_uuid, exc.format_message())
                state = self.host_manager.refresh_host(host_uuid)
                if state is None or not state.fits(resources):
                    return False
            except exception.ClaimGroupPolicyViolation:
                metrics.CLAIM_REFUSED.inc()
                raise
            except CLAIM_REFUSED as exc:
                if isinstance(exc, exception.ClaimCapacityExceeded):
                    metrics.CLAIM_CAPACITY.inc()
                else:
                    metrics.CLAIM_REFUSED.inc()
                LOG.info('Claim for instance %s refused: %s', instance_uuid,
                         exc.format_message(),
                         extra={'instance_uuid': instance_uuid})
                self.host_manager.refresh_host(host_uuid)
                return False
        LOG.info('Claim for instance %s lost %d races in a row on %s; '
                 'giving up on that host', instance_uuid, CLAIM_ATTEMPTS,
                 host_uuid, extra={'instance_uuid': instance_uuid})
        return False

    def _claim_lock(self, uuid):
        """The lock of one host or one group."""
        with self._claim_locks_guard:
            lock = self._claim_locks.get(uuid)
            if lock is None:
                lock = self._claim_locks[uuid] = threading.Lock()
            return lock

    def _claim_first(self, ctx, candidates, instance_uuid, spec_obj):
        """Claim on the best candidate that accepts; return it or None.

        A host that refuses is dropped from the candidates and the next
        one is tried. A refusal for the server group's policy means other
        members landed meanwhile: the candidates are filtered again
        against where the members are now.
        """
        resources = spec_obj.resources
        group = spec_obj.get('instance_group')
        claim_group = group.claim_group if group is not None else None
        while candidates:
            host = candidates.pop(0)
            try:
                if self._claim(host.uuid, instance_uuid, resources,
                               group=claim_group):
                    return host
            except exception.ClaimGroupPolicyViolation as exc:
                LOG.info('Claim for instance %s refused: %s', instance_uuid,
                         exc.format_message(),
                         extra={'instance_uuid': instance_uuid})
                group.hosts = claims.group_hosts(self.db_url, group.uuid)
                for group_filter in filters.GROUP_FILTERS:
                    candidates = group_filter().filter_all(candidates,
                                                           spec_obj)
            LOG.info('Instance %s: %s refused the claim, trying the next '
                     'host', instance_uuid, host.host,
                     extra={'instance_uuid': instance_uuid})
        return None

    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates=False, num_alternates=0):
        """Choose and claim a host per instance, plus same-cell alternates.

        Returns one list per instance: the claimed Selection first, then up
        to ``num_alternates`` unclaimed alternates from the same cell, best
        first. If any instance finds no host, every claim made for this
        request is released and ``NoValidHost`` is raised.
        """
        resources = spec_obj.resources
        num_alternates = num_alternates if return_alternates else 0
        host_states = self.host_manager.host_states()
        hinted = filters.hinted_instances(spec_obj)
        if hinted:
            self.host_manager.locate_consumers(hinted)
        group = spec_obj.get('instance_group')
        claim_group = None
        if group is not None:
            # Where the members are now, whatever the caller sent.
            group.hosts = claims.group_hosts(self.db_url, group.uuid)
            claim_group = group.claim_group
        result = []
        claimed = []
        try:
            for instance_uuid in instance_uuids:
                candidates, complete = self._candidates(host_states,
                                                        spec_obj)
                chosen = self._claim_first(ctx, candidates, instance_uuid,
                                           spec_obj)
                if chosen is None and not complete:
                    # Every host of the sample refused the claim: no
                    # request fails before every host was considered.
                    candidates, _ = self._candidates(
                        host_states, spec_obj, every_host=True)
                    chosen = self._claim_first(ctx, candidates,
                                               instance_uuid, spec_obj)
                if chosen is None:
                    LOG.info('Instance %s: no host; %s', instance_uuid,
                             self._filter_results(host_states, spec_obj),
                             extra={'instance_uuid': instance_uuid})
                    raise exception.NoValidHost(
                        reason='There are not enough hosts available.')
                claimed.append(instance_uuid)
                if group is not None:
                    # Later instances of the request see this one placed.
                    group.hosts = group.hosts + [chosen.host]
                alternates = [h for h in candidates
                              if h.cell_uuid == chosen.cell_uuid][
                    :num_alternates]
                result.append([self._selection(h, resources, claim_group)
                               for h in [chosen] + alternates])
                LOG.info('Instance %s claimed on %s with alternates %s',
                         instance_uuid, chosen.host,
                         [h.host for h in alternates],
                         extra={'instance_uuid': instance_uuid})
        except BaseException:
            # All or nothing: a request that fails keeps no claim.
            for instance_uuid in claimed:
                self.release_resources(ctx, instance_uuid)
            raise
        return result

    def hosts_by_cell(self):
        """``{cell uuid: {host uuid: takes builds}}`` of the hosts in
        memory, for a scrape of the metrics: no database is read."""
        since = servicegroup.up_since()
        result = {}
        for state in self.host_manager.states_in_memory():
            result.setdefault(state.cell_uuid, {})[state.uuid] = \
                state.takes_builds(since)
        return result

    @staticmethod
    def _selection(host, resources, group=None):
        return objects.Selection.for_claim(
            resources, group=group, compute_node_uuid=host.uuid,
            service_host=host.host, nodename=host.nodename,
            cell_uuid=host.cell_uuid, limits=None,
            availability_zone=host.availability_zone)

    def claim_resources(self, ctx, selection, instance_uuid):
        """Claim an alternate: True if claimed, False if it lost or is full.
        """
        resources = selection.resources
        state = self.host_manager.get(selection.compute_node_uuid)
        if state is not None and not state.takes_builds():
            LOG.info('Alternate %s for instance %s is down or disabled',
                     selection.service_host, instance_uuid,
                     extra={'instance_uuid': instance_uuid})
            return False
        try:
            return self._claim(selection.compute_node_uuid, instance_uuid,
                               resources, group=selection.group)
        except exception.ClaimGroupPolicyViolation as exc:
            LOG.info('Alternate refused for instance %s: %s', instance_uuid,
                     exc.format_message(),
                     extra={'instance_uuid': instance_uuid})
            return False

    def release_resources(self, ctx, instance_uuid):
        released = claims.release(self.db_url, instance_uuid)
        self.host_manager.note_release(released, instance_uuid)
        if released:
            LOG.info('Released the claim of instance %s', instance_uuid,
                     extra={'instance_uuid': instance_uuid})
        return bool(released)

    def move_allocations(self, ctx, from_consumer, to_consumer):
        """Hand ``from_consumer``'s allocations to ``to_consumer`` (whose
        own are released); ``{provider_uuid: resources}`` moved."""
        moved, dropped = claims.move(self.db_url, from_consumer,
                                     to_consumer)
        self.host_manager.note_move(moved, dropped, from_consumer,
                                    to_consumer)
        if moved:
            LOG.info('Allocations of %s on %s now held by %s%s',
                     from_consumer, sorted(moved), to_consumer,
                     ' (released its own on %s)' % sorted(dropped)
                     if dropped else '')
        return moved

    def update_resource_stats(self, ctx, cell_uuid, host, node, stats):
        self.host_manager.update_from_stats(cell_uuid, host, node, stats)

    # --- what operators steer and see (1.2) --------------------------------

    def update_host_status(self, ctx, host, status, updated_at=None):
        """The operator's status of ``host``'s compute service; the
        uuids of its compute nodes (empty if it never reported)."""
        uuids = self.host_manager.update_status(host, status, updated_at)
        LOG.info('Host %s is now %s%s (compute nodes %s)', host,
                 'disabled' if status.get('disabled') else 'enabled',
                 ', forced down' if status.get('forced_down') else '',
                 uuids)
        return uuids

    def delete_host(self, ctx, host):
        uuids = self.host_manager.delete_host(host)
        LOG.info('Deleted the compute nodes %s of host %s', uuids, host)
        return uuids

    def get_compute_nodes(self, ctx):
        return self.host_manager.compute_nodes()

    def get_services(self, ctx):
        """The records of the scheduler services, as plain dicts."""
        svc = models.SchedulerService
        with engines.writer(self.db_url) as session:
            rows = list(session.scalars(sa.select(svc).order_by(svc.id)))
            for row in rows:
                if row.uuid is None:
                    row.uuid = uuidutils.generate_uuid()
            session.flush()
            return [{'id': row.id, 'uuid': row.uuid, 'host': row.host,
                     'binary': row.binary, 'topic': row.topic,
                     'version': row.version,
                     'last_seen_up': _iso(row.last_seen_up),
                     'created_at': _iso(row.created_at),
                     'updated_at': _iso(row.updated_at)} for row in rows]

    def delete_service(self, ctx, service_uuid):
        """Forget a scheduler's record; False if there is none."""
        svc = models.SchedulerService
        with engines.writer(self.db_url) as session:
            return session.execute(sa.delete(svc).where(
                svc.uuid == service_uuid)).rowcount == 1

    # --- host aggregates and availability zones (1.3) ----------------------

    def aggregate_list(self, ctx):
        return aggregates.list_all(self.db_url)

    def aggregate_get(self, ctx, aggregate_id):
        return aggregates.get(self.db_url, aggregate_id)

    def _aggregate_write(self, write, *args, **kwargs):
        try:
            return write(self.db_url, *args, **kwargs)
        finally:
            self.host_manager.aggregates_changed()

    def aggregate_create(self, ctx, name, availability_zone=None):
        return self._aggregate_write(aggregates.create, name,
                                     availability_zone)

    def aggregate_update(self, ctx, aggregate_id, values):
        return self._aggregate_write(
            aggregates.update, aggregate_id, name=values.get('name'),
            availability_zone=values.get('availability_zone'),
            set_zone='availability_zone' in values)

    def aggregate_delete(self, ctx, aggregate_id):
        return self._aggregate_write(aggregates.delete, aggregate_id)

    def aggregate_add_host(self, ctx, aggregate_id, host):
        return self._aggregate_write(aggregates.add_host, aggregate_id, host,
                                     self.host_manager.known_hosts())

    def aggregate_remove_host(self, ctx, aggregate_id, host):
        return self._aggregate_write(aggregates.remove_host, aggregate_id,
                                     host)

    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        return self._aggregate_write(aggregates.set_metadata, aggregate_id,
                                     metadata)

    def get_availability_zones(self, ctx):
        """``{zone: {host: {available, active, updated_at}}}``: the
        zones of the known compute hosts; a host is available when its
        compute is enabled and active when it is up."""
        since = servicegroup.up_since()
        result = {}
        for zone, states in self.host_manager.zones().items():
            hosts = result.setdefault(zone, {})
            for state in states:
                entry = hosts.setdefault(state.host, {
                    'available': False, 'active': False,
                    'updated_at': None})
                entry['available'] |= not state.disabled
                entry['active'] |= state.is_up(since)
                seen = _iso(state.last_report_at)
                if seen and (entry['updated_at'] or '') < seen:
                    entry['updated_at'] = seen
        return result

    def report_service(self):
        """Periodic: heartbeat this scheduler's record, with its service
        version, in the scheduler database."""
        with engines.writer(self.db_url) as session:
            service_obj.heartbeat_row(session, models.SchedulerService,
                                      CONF.host, service_obj.SCHEDULER,
                                      'scheduler')

    def get_minimum_service_version(self, ctx):
        """The lowest service version of the running schedulers (this
        one included, recorded or not)."""
        with engines.reader(self.db_url) as session:
            minimum = service_obj.minimum_version(
                session, models.SchedulerService, service_obj.SCHEDULER)
        if minimum is None:
            return service_obj.SERVICE_VERSION
        return min(minimum, service_obj.SERVICE_VERSION)

    def heal_allocations(self, grace=None):
        """Periodic: release allocations no live instance needs.

        Every path that ends an instance's need releases its claim; this
        catches the ones whose release could not reach the database (a
        crash, an outage). Which consumers still need their claims is the
        super-conductor's to say (it owns the API database and reaches
        every cell's): the scheduler asks it over the bus and reads no
        other service's database. If it cannot answer, nothing is
        released. Returns the consumers healed.
        """
        if grace is None:
            grace = CONF.scheduler.heal_allocations_grace
        consumers = sorted(claims.consumers_older_than(self.db_url, grace))
        if not consumers:
            return []
        ctx = ss_context.get_admin_context()
        needed = set()
        try:
            for start in range(0, len(consumers), HEAL_CHUNK):
                needed.update(self.conductor.consumers_needing_claims(
                    ctx, consumers[start:start + HEAL_CHUNK]))
        except Exception as exc:
            LOG.warning('The super-conductor could not say which of %d '
                        'allocations are still needed (%s); releasing none',
                        len(consumers), exception.describe(exc))
            return []
        healed = []
        for consumer in consumers:
            if consumer in needed:
                continue
            LOG.warning('Healing the allocation of %s: no build request or '
                        'live instance needs it', consumer,
                        extra={'instance_uuid': consumer})
            self.release_resources(ctx, consumer)
            healed.append(consumer)
        return healed

    @property
    def conductor(self):
        """The super-conductor's client, on the API bus."""
        if self._conductor is None:
            self._conductor = conductor_rpcapi.ConductorAPI(
                rpc.get_transport())
        return self._conductor


class SchedulerEndpoint:
    """The scheduler's RPC methods as one bus sees them (topic scheduler).
    """

    target = messaging.Target(version=RPC_VERSION)

    def __init__(self, manager, cell_uuid):
        self.manager = manager
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
            host_lists = self.manager.select_destinations(
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
    def update_resource_stats(self, ctx, host, node, stats):
        """Cast from a compute: its capacity, zone and liveness."""
        self.manager.update_resource_stats(ctx, self.cell_uuid, host, node,
                                           stats)

    @messaging.expose
    def claim_resources(self, ctx, selection, instance_uuid):
        """Call from a cell conductor: claim an alternate."""
        return self.manager.claim_resources(ctx, selection, instance_uuid)

    @messaging.expose
    def release_resources(self, ctx, instance_uuid):
        """Call from compute, conductors or the API: drop a claim."""
        return self.manager.release_resources(ctx, instance_uuid)

    @messaging.expose
    def move_allocations(self, ctx, from_consumer, to_consumer):
        """Call (1.5) from a conductor or a compute moving an instance:
        hand one consumer's allocations to another."""
        return self.manager.move_allocations(ctx, from_consumer,
                                             to_consumer)

    @messaging.expose
    def update_host_status(self, ctx, host, status, updated_at=None):
        """Call from the API (1.2): the operator's status of a host."""
        return self.manager.update_host_status(ctx, host, status,
                                               updated_at)

    @messaging.expose
    @messaging.expected_exceptions(exception.Conflict)
    def delete_host(self, ctx, host):
        """Call from the API (1.2): a compute service was deleted."""
        return self.manager.delete_host(ctx, host)

    @messaging.expose
    def get_compute_nodes(self, ctx):
        """Call from the API (1.2): os-hypervisors."""
        return self.manager.get_compute_nodes(ctx)

    @messaging.expose
    def get_services(self, ctx):
        """Call from the API (1.2): the schedulers in os-services."""
        return self.manager.get_services(ctx)

    @messaging.expose
    def delete_service(self, ctx, service_uuid):
        """Call from the API (1.2): a scheduler service was deleted."""
        return self.manager.delete_service(ctx, service_uuid)

    # Calls from the API (1.3): host aggregates and availability zones.

    @messaging.expose
    def aggregate_list(self, ctx):
        return self.manager.aggregate_list(ctx)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_get(self, ctx, aggregate_id):
        return self.manager.aggregate_get(ctx, aggregate_id)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_create(self, ctx, name, availability_zone=None):
        return self.manager.aggregate_create(ctx, name, availability_zone)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_update(self, ctx, aggregate_id, values):
        return self.manager.aggregate_update(ctx, aggregate_id, values)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_delete(self, ctx, aggregate_id):
        return self.manager.aggregate_delete(ctx, aggregate_id)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_add_host(self, ctx, aggregate_id, host):
        return self.manager.aggregate_add_host(ctx, aggregate_id, host)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_remove_host(self, ctx, aggregate_id, host):
        return self.manager.aggregate_remove_host(ctx, aggregate_id, host)

    @messaging.expose
    @messaging.expected_exceptions(exception.SchedulerSplitException)
    def aggregate_set_metadata(self, ctx, aggregate_id, metadata):
        return self.manager.aggregate_set_metadata(ctx, aggregate_id,
                                                   metadata)

    @messaging.expose
    def get_availability_zones(self, ctx):
        return self.manager.get_availability_zones(ctx)

    @messaging.expose
    def get_minimum_service_version(self, ctx):
        """Call from any scheduler client resolving ``[upgrade_levels]
        scheduler = auto``: what the running schedulers understand."""
        return self.manager.get_minimum_service_version(ctx)
