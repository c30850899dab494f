"""The selection pipeline: constraints, filter, weigh, claim, alternates.

For each instance of a request: narrow the hosts to what the request
itself asks for (a cell, forced or ignored hosts), keep those every
enabled filter passes (:mod:`filters`), rank them (:mod:`weights`), then
**claim** on the best one that accepts (:mod:`claims`, the reserve phase;
releasing a claim is its undo) and pick same-cell alternates from the
rest. The hosts come from the host-state cache (:mod:`host_manager`);
the RPC endpoint (:mod:`endpoint`) hands requests in.
"""

import contextlib
import logging
import math
import random
import threading

from scheduler_split import conf
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split.objects import resource_request
from scheduler_split.scheduler import cell_health as cell_health_mod
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import constraints
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import host_manager as host_manager_mod
from scheduler_split.scheduler import weights

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The ways a host refuses a claim for good: the caller moves on.
CLAIM_REFUSED = (exception.ClaimCapacityExceeded,
                 exception.ComputeHostDisabled,
                 exception.ComputeHostNotFound)
# How often one host is tried when claims of other processes keep
# changing it under us.
CLAIM_ATTEMPTS = 5
# The fewest hosts one batch of the filter phase holds when the scheduler
# stops after enough feasible hosts: reading the request once per batch
# is what keeps the filters cheap per host.
MIN_FILTER_BATCH = 32
# The policies claims enforce, whatever filters are enabled: the
# candidates go through these again when a claim refuses a host for the
# request's server group.
GROUP_FILTERS = ('ServerGroupAntiAffinityFilter',
                 'ServerGroupAffinityFilter')


def _resources_of(spec_obj):
    """The request's resources; NoValidHost that says why when its
    flavor or image asks what no host could give."""
    try:
        return spec_obj.resources
    except resource_request.InvalidRequest as exc:
        raise exception.NoValidHost(reason=str(exc))


def _rotated(hosts, start, offset, size):
    """``size`` hosts from ``offset`` on of ``hosts`` as if it began at
    ``start`` (a slice of the list turned around, not a copy of it)."""
    count = len(hosts)
    first = start + offset
    last = min(first + size, start + count)
    if last <= count:
        return hosts[first:last]
    if first >= count:
        return hosts[first - count:last - count]
    return hosts[first:] + hosts[:last - count]


class SchedulerManager:
    """Chooses and claims hosts for requests, over one host-state cache.
    """

    def __init__(self, db_url=None, host_manager=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self.host_manager = host_manager or host_manager_mod.HostManager(
            self.db_url)
        self.filters = filters.load(CONF.filter_scheduler.enabled_filters)
        self.weighers = weights.load(CONF.filter_scheduler.weighers)
        # Which cells' databases answer (the scheduler service looks).
        self.cell_health = cell_health_mod.CellHealth()
        self.group_filters = filters.load(GROUP_FILTERS)
        self._claim_locks = {}
        self._claim_locks_guard = threading.Lock()

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

    def _request_constraints(self, spec_obj):
        """``(label, test of a host)`` of what narrows the hosts before
        any filter: what the request itself asks for (a cell, forced or
        ignored hosts), then the cells that answer (:mod:`cell_health`),
        so that a request for a host of a cell that is down says so."""
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
        down = self.cell_health.excluded
        if down:
            yield '%s%s' % (constraints.CELLS_DOWN, ', '.join(sorted(
                self.cell_health.name(uuid) for uuid in down))), \
                lambda h: h.cell_uuid not in down

    def _candidates(self, host_states, spec_obj, every_host=False):
        """Hosts that pass every enabled filter, best first; whether
        every host was looked at; and the :class:`filters.FilterPass`
        that counted what each filter removed.

        With more hosts than ``hosts_to_score`` the filter phase starts
        at a random host and stops once that many hosts passed (as
        Kubernetes' percentage of nodes to score and Nomad's limit
        iterator do): only those are weighed. A host that fails a filter
        is never a candidate; what changes is that the best of a sample
        wins, not the best of all. The random start spreads the requests
        of one scheduler, and of several, over the whole cloud.
        """
        request = spec_obj.resource_request
        indexed = constraints.indexed(self.host_manager, request)
        record = filters.FilterPass(
            self.filters, stages=constraints.model_constraints(
                request, indexed=bool(indexed)))
        record.known = len(host_states)
        hosts = host_states
        if indexed:
            # A request for devices or traits only some hosts have looks
            # at those alone. None of them: every host is looked at, so
            # that the fault says which part of the request emptied it.
            hosts = indexed
        for label, wanted in self._request_constraints(spec_obj):
            hosts = [h for h in hosts if wanted(h)]
            record.constraints.append((label, len(hosts)))
        wanted = len(hosts) if every_host else self.hosts_to_score(
            len(hosts))
        if wanted >= len(hosts):
            record.run(hosts, spec_obj)
            complete = True
        else:
            count = len(hosts)
            start = random.randrange(count)
            batch = max(wanted, MIN_FILTER_BATCH)
            complete = True
            for offset in range(0, count, batch):
                record.run(_rotated(hosts, start, offset, batch), spec_obj)
                if len(record.passed) >= wanted:
                    complete = offset + batch >= count
                    break
        if complete:
            record.constraints += record.stage_counts()
        metrics.FILTERED_HOSTS.observe(record.looked)
        metrics.SCORED_HOSTS.observe(len(record.passed))
        ranked = weights.weigh(self.weighers, record.passed, spec_obj)
        return [h for _, h in ranked], complete, record

    # --- the claim (reserve) phase -----------------------------------------

    def _claim(self, host_uuid, instance_uuid, resources, group=None,
               request=None):
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
                    # A claim writes the consumer's allocations over
                    # whatever it held: one whose commit may have been
                    # written is run again as it is.
                    _, allocation = outage.run(
                        claims.claim_allocation, self.db_url, host_uuid,
                        instance_uuid, resources, group=group,
                        stamp=self.host_manager.stamp(), request=request,
                        proposed=self._proposed(host_uuid, request),
                        what='The claim of instance %s' % instance_uuid,
                        idempotent=True)
                self.host_manager.note_claim(host_uuid, allocation,
                                             instance_uuid)
                metrics.CLAIM_WON.inc()
                return True
            except exception.ClaimConflict as exc:
                metrics.CLAIM_CONFLICT.inc()
                LOG.debug('Claim for instance %s lost a race: %s',
                          instance_uuid, exc.format_message())
                state = self.host_manager.refresh_host(host_uuid)
                if state is None or state.place(
                        request or resource_request.ResourceRequest
                        .of_resources(resources)) is None:
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

    def _proposed(self, host_uuid, request):
        """Where memory places ``request`` on the tree of a host with
        providers below it (None otherwise: the claim places it)."""
        state = self.host_manager.get(host_uuid)
        if request is None or state is None or not state.children:
            return None
        return state.place(request)

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
        request = spec_obj.resource_request
        group = spec_obj.get('instance_group')
        claim_group = group.claim_group if group is not None else None
        while candidates:
            host = candidates.pop(0)
            try:
                if self._claim(host.uuid, instance_uuid, resources,
                               group=claim_group, request=request):
                    return host
            except exception.ClaimGroupPolicyViolation as exc:
                LOG.info('Claim for instance %s refused: %s', instance_uuid,
                         exc.format_message(),
                         extra={'instance_uuid': instance_uuid})
                group.hosts = claims.group_hosts(self.db_url, group.uuid)
                for group_filter in self.group_filters:
                    candidates = group_filter.filter_all(candidates,
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
        resources = _resources_of(spec_obj)
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
                candidates, complete, record = self._candidates(
                    host_states, spec_obj)
                chosen = self._claim_first(ctx, candidates, instance_uuid,
                                           spec_obj)
                if chosen is None and not complete:
                    # Every host of the sample refused the claim: no
                    # request fails before every host was considered.
                    candidates, _, record = self._candidates(
                        host_states, spec_obj, every_host=True)
                    chosen = self._claim_first(ctx, candidates,
                                               instance_uuid, spec_obj)
                if chosen is None and not self.host_manager.loaded:
                    # Nor before every host was read: a restarted
                    # scheduler answers from the hosts read so far.
                    host_states = self.host_manager.host_states(
                        complete=True)
                    candidates, _, record = self._candidates(
                        host_states, spec_obj, every_host=True)
                    chosen = self._claim_first(ctx, candidates,
                                               instance_uuid, spec_obj)
                if chosen is None:
                    LOG.info('Instance %s: no host; %s', instance_uuid,
                             constraints.why_no_host(record, spec_obj),
                             extra={'instance_uuid': instance_uuid})
                    raise exception.NoValidHost(
                        reason=constraints.no_host_reason(record))
                claimed.append(instance_uuid)
                if group is not None:
                    # Later instances of the request see this one placed.
                    group.hosts = group.hosts + [chosen.host]
                alternates = [h for h in candidates
                              if h.cell_uuid == chosen.cell_uuid][
                    :num_alternates]
                request = spec_obj.resource_request
                request = request.to_primitive() if (
                    request.placed_by_groups() or any(
                        h.children for h in [chosen] + alternates)) \
                    else None
                result.append([self._selection(h, resources, claim_group,
                                               request)
                               for h in [chosen] + alternates])
                # The instance's action records the same (the boot's
                # event), where the user and the operator read it.
                LOG.debug('Instance %s claimed on %s with alternates %s',
                          instance_uuid, chosen.host,
                          [h.host for h in alternates],
                          extra={'instance_uuid': instance_uuid})
        except BaseException:
            # All or nothing: a request that fails keeps no claim.
            for instance_uuid in claimed:
                self.release_resources(ctx, instance_uuid)
            raise
        return result

    def select_batch(self, requests):
        """Place several requests, each as :meth:`select_destinations`
        would alone, one after another.

        ``requests`` is a list of ``(ctx, spec_obj, instance_uuids,
        return_alternates, num_alternates)``. Returns one entry per
        request, in order: its host lists, or the exception it raised.
        A request that finds no host (or fails) releases its own claims
        and leaves its neighbours' alone.
        """
        answers = []
        for ctx, spec_obj, uuids, return_alternates, num_alternates in \
                requests:
            try:
                # Run again, as a select alone is, when a database outage
                # broke it before it claimed.
                answers.append(outage.run(
                    self.select_destinations, ctx, spec_obj, uuids,
                    return_alternates, num_alternates,
                    what='Placing instances %s' % uuids))
            except Exception as exc:
                # Its caller logs what it expects, as it would alone.
                if not exception.is_expected(exc):
                    LOG.exception('Placing instances %s failed', uuids)
                answers.append(exc)
        return answers

    def check_rebuild(self, ctx, spec_obj, host, node, claim=False):
        """Whether the server's own host (``host``, ``node``) still
        passes the filters for the request as ``spec_obj`` now asks (a
        rebuild with a new image). Only the filters that judge the
        request run (``run_on_rebuild``): the host's room, load and
        neighbours are the server's already. Nothing is claimed, unless
        ``claim``: a server in ERROR holds no claim, and its rebuild
        claims its host again (refused, as any claim, when the host has
        no room or is disabled). Raises ``NoValidHost`` saying what
        refused the host."""
        uuid = self.host_manager.uuid_of((host, node))
        state = self.host_manager.get(uuid) if uuid else None
        if state is None:
            state = next((h for h in self.host_manager.host_states(
                complete=True) if h.host == host and
                (node is None or h.nodename == node)), None)
        if state is None:
            raise exception.NoValidHost(
                reason='Host %s is not known to the scheduler.' % host)
        for host_filter in self.filters:
            if not host_filter.run_on_rebuild:
                continue
            if not host_filter.filter_all([state], spec_obj):
                LOG.info('Instance %s: its host %s does not pass %s for '
                         'the rebuild', spec_obj.instance_uuid, host,
                         type(host_filter).__name__,
                         extra={'instance_uuid': spec_obj.instance_uuid})
                raise exception.NoValidHost(
                    reason='The host %s of the server does not pass %s '
                           'for the new image.'
                           % (host, type(host_filter).__name__))
        request = spec_obj.resource_request
        required = request.required_traits()
        part = constraints.model_part(request)
        if not required <= state.tree_traits() or (
                part is not None and state.place(part) is None):
            raise exception.NoValidHost(
                reason='The host %s of the server does not have the traits '
                       'the new image requires (%s).' % (
                           host, ', '.join(sorted(required))))
        if claim:
            group = spec_obj.get('instance_group')
            try:
                claimed = self._claim(
                    state.uuid, spec_obj.instance_uuid, spec_obj.resources,
                    group=group.claim_group if group is not None else None,
                    request=request)
            except exception.ClaimGroupPolicyViolation as exc:
                raise exception.NoValidHost(reason=exc.format_message())
            if not claimed:
                raise exception.NoValidHost(
                    reason='The host %s of the server cannot take its '
                           'claim again: it is full or disabled.' % host)
            # The claim replaced whatever the server still held there,
            # which memory would count twice: read the host again.
            self.host_manager.refresh_host(state.uuid)
        return True

    @staticmethod
    def _selection(host, resources, group=None, request=None):
        return objects.Selection.for_claim(
            resources, group=group, request=request,
            compute_node_uuid=host.uuid,
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
                               resources, group=selection.group,
                               request=selection.request)
        except exception.ClaimGroupPolicyViolation as exc:
            LOG.info('Alternate refused for instance %s: %s', instance_uuid,
                     exc.format_message(),
                     extra={'instance_uuid': instance_uuid})
            return False

    def release_resources(self, ctx, instance_uuid):
        released = claims.release(self.db_url, instance_uuid,
                                  stamp=self.host_manager.stamp())
        self.host_manager.note_release(released, instance_uuid)
        if released:
            LOG.info('Released the claim of instance %s', instance_uuid,
                     extra={'instance_uuid': instance_uuid})
        return bool(released)

    def move_allocations(self, ctx, from_consumer, to_consumer):
        """Hand ``from_consumer``'s allocations to ``to_consumer`` (whose
        own are released); ``{provider_uuid: resources}`` moved."""
        moved, dropped = claims.move(self.db_url, from_consumer,
                                     to_consumer,
                                     stamp=self.host_manager.stamp())
        self.host_manager.note_move(moved, dropped, from_consumer,
                                    to_consumer)
        if moved:
            LOG.info('Allocations of %s on %s now held by %s%s',
                     from_consumer, sorted(moved), to_consumer,
                     ' (released its own on %s)' % sorted(dropped)
                     if dropped else '')
        return moved
