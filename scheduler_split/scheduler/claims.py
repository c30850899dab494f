"""Claims against the scheduler database: the reserve phase and its undo.

A claim is one transaction: read the provider's generation, inventory and
usage, check that the request fits, write the allocations and bump the
generation with ``... WHERE generation = :seen``. Zero rows updated means
another writer (another scheduler worker, a release) changed the provider
in between: that is a :class:`ClaimConflict`, rolled back, and the caller
moves on to its next host. The database decides; no lock on a provider
is held across processes.

A member of a server group with a hard policy (``affinity``,
``anti-affinity``) is checked against the group's other members in the
same transaction. Members of one group claim one at a time: the
transaction starts by locking the group's row (``SELECT ... FOR UPDATE``;
SQLite serializes every writer anyway), so a member waits for the one
before it instead of losing a race to it, and reads the providers only
once it holds the lock. The group's generation is still bumped with the
guarded update, as a check that holds even where no row lock is taken.
"""

import datetime
import logging

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split.db import types
from scheduler_split import exception
from scheduler_split.objects import instance_group
from scheduler_split.objects import resource_request
from scheduler_split.scheduler import traits as traits_mod
from scheduler_split.scheduler import tree_fit

LOG = logging.getLogger(__name__)

RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def capacity(total, reserved, allocation_ratio):
    return int((total - reserved) * allocation_ratio)


def claim(url, provider_uuid, consumer_id, resources, group=None,
          stamp=None, request=None):
    """Allocate ``resources`` of the provider to ``consumer_id``.

    The consumer's allocations become exactly this claim: any it held on
    other providers are released in the same transaction. Returns the
    provider's new generation. Raises ``ClaimConflict`` when the provider
    (or the group) changed concurrently, ``ClaimCapacityExceeded`` when it
    is full and ``ComputeHostDisabled`` when its service is disabled (by
    the compute or by the operator) or forced down.

    ``group`` (``{"uuid", "policy", "max_per_host"}``) makes the consumer a
    member of that server group; with a hard policy the claim raises
    ``ClaimGroupPolicyViolation`` where the policy forbids the provider.

    ``stamp`` (here and in :func:`release` and :func:`move`) says who
    writes, for the providers' ``changed_by`` (:data:`CHANGED_BY`).

    ``request`` (a ``ResourceRequest``) says how the amounts spread over
    the provider's tree (see :mod:`tree_fit`): without it, or with a
    request of one group and no traits on a provider with no children,
    they all come from the provider itself.
    """
    return claim_allocation(url, provider_uuid, consumer_id, resources,
                            group, stamp, request)[0]


def claim_allocation(url, provider_uuid, consumer_id, resources,
                     group=None, stamp=None, request=None, proposed=None):
    """:func:`claim`, returning ``(the provider's new generation,
    {provider uuid: resources} written over its tree)``.

    ``proposed`` is where the caller's memory placed the request on the
    tree (``HostState.place``): taken as it is if each of its providers
    is in the tree and has room for its part (traits are memory's to
    judge, as for a claim on one provider); else the claim places the
    request itself."""
    if group and group['policy'] not in instance_group.HARD_POLICIES:
        group = None
    if group:
        _ensure_group(url, group)
    try:
        return _claim(url, provider_uuid, consumer_id, resources, group,
                      stamp or NO_STAMP, request, proposed)
    except sa_exc.DBAPIError as exc:
        # Two claims that move consumers between the same providers in
        # opposite directions can each hold a row the other updates; the
        # database then aborts one of them. That is a lost race too.
        if not engines.aborted_for_a_race(exc):
            raise
        raise exception.ClaimDeadlock(provider=provider_uuid) from exc


# The tables a claim reads and writes, through SQLAlchemy Core: a claim
# is a handful of small statements on the hot path of every boot, and the
# ORM's unit of work would cost more than the statements themselves.
_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__

_CLAIMED = _RP.alias('claimed')
# The provider, with a row per resource class of its inventory and what
# the other consumers use of it, in one statement.
_USED = sa.select(sa.func.sum(_ALLOC.c.used)).where(
    _ALLOC.c.resource_provider_id == _RP.c.id,
    _ALLOC.c.resource_class == _INV.c.resource_class,
    _ALLOC.c.consumer_id != sa.bindparam('consumer_id')).scalar_subquery()
_PROVIDER = sa.select(
    _RP.c.id, _RP.c.uuid, _RP.c.host, _RP.c.generation, _RP.c.disabled,
    _RP.c.service_disabled, _RP.c.forced_down, _INV.c.resource_class,
    _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
    _USED.label('used')).select_from(_RP.outerjoin(
        _INV, _INV.c.resource_provider_id == _RP.c.id)).where(
    sa.or_(_RP.c.uuid == sa.bindparam('uuid'),
           _RP.c.root_provider_id == sa.select(_CLAIMED.c.id).where(
               _CLAIMED.c.uuid == sa.bindparam('uuid')).scalar_subquery())
).order_by(_RP.c.id)
# What a write of a provider puts in its changed_by, given a stamp
# (``HostManager.stamp``): the writing scheduler (``w_me``) if every change
# of the row since the oldest its next reload reads (``w_floor``) is its
# own, so that the reload skips the row, whose change its memory holds
# already; else nothing, so that every scheduler's reload reads the row.
CHANGED_BY = sa.case(
    (sa.or_(_RP.c.changed_by == sa.bindparam('w_me', type_=sa.String()),
            _RP.c.changed_at.is_(None),
            _RP.c.changed_at < sa.bindparam('w_floor',
                                            type_=types.DateTime())),
     sa.bindparam('w_me', type_=sa.String())), else_=sa.null())
# The stamp of a writer that does not say who it is.
NO_STAMP = {'w_me': None, 'w_floor': None}

_BUMP = sa.update(_RP).where(
    _RP.c.id == sa.bindparam('provider_id'),
    _RP.c.generation == sa.bindparam('seen')).values(
    generation=sa.bindparam('seen') + 1, changed_by=CHANGED_BY)


# A consumer's allocations, read and dropped; the providers it left
# bumped (``b_ids``, a list).
_CONSUMER_ALLOCATIONS = sa.select(
    _ALLOC.c.resource_provider_id, _ALLOC.c.resource_class,
    _ALLOC.c.used).where(_ALLOC.c.consumer_id == sa.bindparam('b_consumer'))
_DELETE_CONSUMER_ALLOCATIONS = _ALLOC.delete().where(
    _ALLOC.c.consumer_id == sa.bindparam('b_consumer'))
_BUMP_LEFT = _RP.update().where(
    _RP.c.id.in_(sa.bindparam('b_ids', expanding=True))).values(
    generation=_RP.c.generation + 1, changed_by=CHANGED_BY)


def _claim(url, provider_uuid, consumer_id, resources, group, stamp,
           request, proposed=None):
    with engines.writer(url) as session:
        group_row = _lock_group(session, group['uuid']) if group else None
        conn = session.connection()
        rows = conn.execute(_PROVIDER, {'uuid': provider_uuid,
                                        'consumer_id': consumer_id}).all()
        # The provider and those below it, each with its inventory.
        tree = {}
        for row in rows:
            entry = tree.get(row.id)
            if entry is None:
                entry = tree[row.id] = (row, {})
            if row.resource_class is not None:
                entry[1][row.resource_class] = row
        provider = next((row for row, _ in tree.values()
                         if row.uuid == provider_uuid), None)
        if provider is None:
            raise exception.ComputeHostNotFound(host=provider_uuid)
        if (provider.disabled or provider.service_disabled or
                provider.forced_down):
            # Whatever any scheduler's memory says: the operator's status
            # (os-services) is read in the claim's transaction.
            raise exception.ComputeHostDisabled(host=provider.host)

        if len(tree) == 1 and (request is None or
                               not request.placed_by_groups()):
            allocation = _flat(provider, tree[provider.id][1], resources)
        else:
            allocation = _as_proposed(tree, proposed, resources) or \
                _on_tree(conn, provider, tree, resources, request)

        if group_row is not None:
            _check_group(session, group_row, provider, consumer_id)

        ids = {row.uuid: row.id for row, _ in tree.values()}
        seen = {row.id: row.generation for row, _ in tree.values()}
        # Every provider written, and the claimed one always: each
        # generation is bumped once, by the guarded updates below; only
        # the other providers the consumer leaves get theirs bumped here.
        bumped = sorted({ids[uuid] for uuid in allocation} | {provider.id})
        _drop_allocations(conn, consumer_id, guarded=bumped, stamp=stamp)
        rows = [{'resource_provider_id': ids[uuid],
                 'consumer_id': consumer_id, 'resource_class': rc,
                 'used': amount}
                for uuid, amounts in sorted(allocation.items())
                for rc, amount in amounts.items() if amount]
        if rows:
            conn.execute(_ALLOC.insert(), rows)
        # In id order, as every writer of several providers.
        for provider_id in bumped:
            result = conn.execute(_BUMP, dict(
                stamp, provider_id=provider_id, seen=seen[provider_id]))
            if result.rowcount != 1:
                raise exception.ClaimConflict(provider=provider_uuid,
                                              generation=seen[provider_id])
        if group_row is not None:
            _join_group(session, group_row, consumer_id)
    return provider.generation + 1, allocation


# The traits of the providers of a tree.
_TREE_TRAITS = traits_mod.PROVIDER_TRAITS.where(
    traits_mod.PROVIDER_TRAITS_TABLE.c.resource_provider_id.in_(
        sa.bindparam('ids', expanding=True)))


def _free(inv):
    return capacity(inv.total, inv.reserved, inv.allocation_ratio) - \
        (inv.used or 0)


def _flat(provider, inventory, resources):
    """``resources`` all from ``provider``: ``{its uuid: resources}``,
    or ``ClaimCapacityExceeded``."""
    for rc, amount in resources.items():
        if not amount:
            continue
        inv = inventory.get(rc)
        free = _free(inv) if inv else 0
        if amount > free:
            raise exception.ClaimCapacityExceeded(
                host=provider.host, amount=amount, resource=rc, free=free)
    return {provider.uuid: {rc: amount for rc, amount in resources.items()
                            if amount}}


def _as_proposed(tree, proposed, resources):
    """``proposed`` if it takes exactly ``resources`` and every provider
    it names is in ``tree`` with room for what it takes there; else
    None."""
    if not proposed or tree_fit.totals(proposed) != {
            rc: amount for rc, amount in resources.items() if amount}:
        return None
    inventories = {row.uuid: inventory for row, inventory in tree.values()}
    for uuid, amounts in proposed.items():
        inventory = inventories.get(uuid)
        if inventory is None:
            return None
        for rc, amount in amounts.items():
            inv = inventory.get(rc)
            if amount and (inv is None or _free(inv) < amount):
                return None
    return proposed


def _on_tree(conn, provider, tree, resources, request):
    """Where ``request`` lands on the tree of ``provider`` as the claim's
    transaction reads it (:func:`tree_fit.place`)."""
    if request is None:
        request = resource_request.ResourceRequest.of_resources(resources)
    traits = {}
    if request.required_traits() or request.forbidden_traits():
        for provider_id, name, _ in conn.execute(_TREE_TRAITS,
                                                 {'ids': sorted(tree)}):
            traits.setdefault(provider_id, set()).add(name)
    providers = [tree_fit.Provider(
        row.uuid, frozenset(traits.get(row.id, ())),
        {rc: _free(inv) for rc, inv in inventory.items()})
        for row, inventory in sorted(
            tree.values(), key=lambda entry: (entry[0].id != provider.id,
                                              entry[0].id))]
    allocation = tree_fit.place(providers, request)
    if allocation is not None:
        return allocation
    for rc, amount in sorted(request.totals().items()):
        free = sum(max(0, p.free(rc)) for p in providers)
        if amount > free:
            raise exception.ClaimCapacityExceeded(
                host=provider.host, amount=amount, resource=rc, free=free)
    raise exception.ClaimTreeRefused(host=provider.host,
                                     request=request.describe())


def _ensure_group(url, group):
    """Create the group's row on the first claim of any member."""
    cg = scheduler_models.ConsumerGroup
    try:
        with engines.writer(url) as session:
            if session.scalar(sa.select(cg.id).where(
                    cg.uuid == group['uuid'])) is None:
                session.add(cg(uuid=group['uuid'], policy=group['policy'],
                               max_per_host=group.get('max_per_host') or 1,
                               generation=0))
    except sa_exc.IntegrityError:
        # Another member's claim created it first.
        pass


def _lock_group(session, group_uuid):
    """The group's row, locked until the transaction ends."""
    cg = scheduler_models.ConsumerGroup
    return session.execute(
        sa.select(cg.id, cg.uuid, cg.policy, cg.max_per_host,
                  cg.generation).where(cg.uuid == group_uuid)
        .with_for_update()).one()


def _check_group(session, group, provider, consumer_id):
    """Refuse ``provider`` if the group's policy forbids it."""
    member = scheduler_models.ConsumerGroupMember
    alloc = scheduler_models.Allocation
    # Where the other members are, and how many on each provider.
    placed = dict(session.execute(
        sa.select(alloc.resource_provider_id,
                  sa.func.count(sa.distinct(alloc.consumer_id)))
        .join(member, member.consumer_id == alloc.consumer_id)
        .where(member.group_id == group.id,
               alloc.consumer_id != consumer_id)
        .group_by(alloc.resource_provider_id)).all())
    if group.policy == 'anti-affinity':
        refused = placed.get(provider.id, 0) >= group.max_per_host
    else:
        refused = bool(placed) and provider.id not in placed
    if refused:
        raise exception.ClaimGroupPolicyViolation(
            host=provider.host, policy=group.policy, group=group.uuid)


def _join_group(session, group, consumer_id):
    member = scheduler_models.ConsumerGroupMember
    if session.scalar(sa.select(member.id).where(
            member.group_id == group.id,
            member.consumer_id == consumer_id)) is None:
        session.add(member(group_id=group.id, consumer_id=consumer_id))
    cg = scheduler_models.ConsumerGroup
    result = session.execute(
        sa.update(cg).where(cg.id == group.id,
                            cg.generation == group.generation)
        .values(generation=group.generation + 1))
    if result.rowcount != 1:
        raise exception.ClaimConflict(provider='of group %s' % group.uuid,
                                      generation=group.generation)


def group_hosts(url, group_uuid):
    """Host names of the group's members with allocations, one entry per
    member (a host holding two members is listed twice)."""
    member = scheduler_models.ConsumerGroupMember
    alloc = scheduler_models.Allocation
    rp = scheduler_models.ResourceProvider
    with engines.reader(url) as session:
        rows = session.execute(
            sa.select(alloc.consumer_id, rp.host).distinct()
            .join(rp, rp.id == alloc.resource_provider_id)
            .join(member, member.consumer_id == alloc.consumer_id)
            .join(scheduler_models.ConsumerGroup,
                  scheduler_models.ConsumerGroup.id == member.group_id)
            .where(scheduler_models.ConsumerGroup.uuid == group_uuid))
        return sorted(host for _, host in rows)


def _drop_allocations(conn, consumer_id, guarded=None, stamp=NO_STAMP):
    """Delete the consumer's allocations; return {provider_id: resources}.

    The generation of every provider that lost allocations is bumped,
    except ``guarded`` (a provider id, or a collection of them), whose bump
    the caller makes itself.
    """
    if guarded is None or isinstance(guarded, int):
        guarded = () if guarded is None else (guarded,)
    consumer = {'b_consumer': consumer_id}
    rows = conn.execute(_CONSUMER_ALLOCATIONS, consumer).all()
    dropped = {}
    for provider_id, rc, used in rows:
        dropped.setdefault(provider_id, {})[rc] = used
    if rows:
        conn.execute(_DELETE_CONSUMER_ALLOCATIONS, consumer)
        bump = [pid for pid in dropped if pid not in guarded]
        if bump:
            conn.execute(_BUMP_LEFT, dict(stamp, b_ids=bump))
    return dropped


def release(url, consumer_id, stamp=None):
    """Drop every allocation of ``consumer_id``.

    Returns ``{provider_uuid: resources}`` of what was released (empty when
    the consumer held nothing, which is not an error: releases repeat
    safely).
    """
    with engines.writer(url) as session:
        dropped = _drop_allocations(session.connection(), consumer_id,
                                    stamp=stamp or NO_STAMP)
        session.execute(sa.delete(scheduler_models.ConsumerGroupMember).where(
            scheduler_models.ConsumerGroupMember.consumer_id == consumer_id))
        if not dropped:
            return {}
        uuids = dict(session.execute(
            sa.select(scheduler_models.ResourceProvider.id,
                      scheduler_models.ResourceProvider.uuid)
            .where(scheduler_models.ResourceProvider.id.in_(
                list(dropped)))).all())
        return {uuids[pid]: res for pid, res in dropped.items()}


def move(url, from_consumer, to_consumer, stamp=None):
    """Hand every allocation of ``from_consumer`` to ``to_consumer``.

    One transaction: ``to_consumer``'s allocations become exactly what
    ``from_consumer`` held (any it held before are released) and
    ``from_consumer`` holds nothing. This is how a move keeps both hosts
    accounted for: at its start the instance's allocations (the source
    host's) go to the migration, and the instance then claims the
    destination; a revert hands them back, which drops the destination's.
    The usage of no provider grows, so there is nothing to check against
    capacity; the generation of every provider involved is bumped, so that
    a claim reading it meanwhile retries.

    Returns ``(moved, dropped)``: ``{provider_uuid: resources}`` of what
    changed hands and of what ``to_consumer`` gave up. With nothing held
    by ``from_consumer`` nothing changes: ``({}, {})``.
    """
    for attempt in range(CLAIM_RETRIES):
        try:
            return _move(url, from_consumer, to_consumer,
                         stamp or NO_STAMP)
        except sa_exc.DBAPIError as exc:
            # Lost to a claim or a move locking the same providers in
            # the other order: nothing was written, so try again.
            if not engines.aborted_for_a_race(exc) \
                    or attempt == CLAIM_RETRIES - 1:
                raise


# How often a move that the database aborted for a deadlock is retried.
CLAIM_RETRIES = 5


def _move(url, from_consumer, to_consumer, stamp):
    with engines.writer(url) as session:
        conn = session.connection()
        rows = conn.execute(
            sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class,
                      _ALLOC.c.used)
            .where(_ALLOC.c.consumer_id == from_consumer)).all()
        if not rows:
            return {}, {}
        moved = {}
        for provider_id, rc, used in rows:
            moved.setdefault(provider_id, {})[rc] = used
        dropped = _drop_allocations(conn, to_consumer, guarded=moved,
                                    stamp=stamp)
        conn.execute(sa.update(_ALLOC).where(
            _ALLOC.c.consumer_id == from_consumer).values(
            consumer_id=to_consumer))
        conn.execute(sa.update(_RP).where(_RP.c.id.in_(list(moved)))
                     .values(generation=_RP.c.generation + 1,
                             changed_by=CHANGED_BY), stamp)
        ids = set(moved) | set(dropped)
        uuids = dict(conn.execute(sa.select(_RP.c.id, _RP.c.uuid).where(
            _RP.c.id.in_(list(ids)))).all())
    return ({uuids[pid]: res for pid, res in moved.items()},
            {uuids[pid]: res for pid, res in dropped.items()})


def consumers_older_than(url, seconds, marker=None, limit=None):
    """Consumers of the scheduler's claims holding an allocation made
    more than ``seconds`` ago, in uuid order: those after ``marker``, at
    most ``limit`` of them."""
    cutoff = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(seconds=seconds)
    consumer = scheduler_models.Allocation.consumer_id
    # Those written through the Placement API (a port's, a node's) are no
    # server's or move's: nothing reconciles them away.
    query = sa.select(consumer).where(
        scheduler_models.Allocation.created_at < cutoff,
        consumer.not_in(sa.select(scheduler_models.Consumer.uuid))).distinct(
    ).order_by(consumer)
    if marker is not None:
        query = query.where(consumer > marker)
    if limit is not None:
        query = query.limit(limit)
    with engines.reader(url) as session:
        return list(session.scalars(query))


def allocations_of(url, consumer_id):
    """``{provider_uuid: {rc: used}}`` that ``consumer_id`` holds."""
    with engines.reader(url) as session:
        rows = session.execute(
            sa.select(scheduler_models.ResourceProvider.uuid,
                      scheduler_models.Allocation.resource_class,
                      scheduler_models.Allocation.used)
            .join(scheduler_models.ResourceProvider,
                  scheduler_models.ResourceProvider.id ==
                  scheduler_models.Allocation.resource_provider_id)
            .where(scheduler_models.Allocation.consumer_id == consumer_id))
        result = {}
        for uuid, rc, used in rows:
            result.setdefault(uuid, {})[rc] = used
        return result
