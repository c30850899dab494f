"""Allocation candidates over provider trees and sharing providers, as
Placement finds them (``GET /allocation_candidates``, scheduler RPC
1.11).

A request is a set of groups. The unsuffixed group's resources may come
from several providers of one tree, one class from each, and from
providers sharing an aggregate with the tree (``MISC_SHARES_VIA_
AGGREGATE``); its required traits must be among the traits of the
providers it takes from, its forbidden ones on none of them. Each
suffixed group is one provider of the tree (or a sharing one) with
every amount of the group and the group's traits; a group without
resources (1.36) names a provider of the tree by its traits alone.
``group_policy=isolate`` puts every suffixed group on a provider of its
own; ``root_required`` asks traits of the tree's root; ``same_subtree``
wants the providers of the groups it names under one of them.

The work is bounded: trees are read only where some provider has a
class asked for, and at most ``MAX_COMBINATIONS`` combinations are
tried and ``limit`` (or ``MAX_CANDIDATES``) candidates answered, so a
wide tree with many groups (Placement's own 8 children and 6 groups made
262,144) answers within a bounded time.
"""

import itertools

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import placement_reads

SHARES = 'MISC_SHARES_VIA_AGGREGATE'
MAX_CANDIDATES = 1000
MAX_COMBINATIONS = 100000
# How many trees one read takes.
TREES_A_PAGE = 500

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_RPT = scheduler_models.ResourceProviderTrait.__table__
_TRAIT = scheduler_models.Trait.__table__


class _Provider:
    __slots__ = ('id', 'uuid', 'parent', 'root', 'traits', 'aggregates',
                 'inventory', 'capacity', 'usages')

    def fits(self, rc, amount):
        """Whether one allocation of ``amount`` fits the provider's
        units and its room."""
        record = self.inventory.get(rc)
        if record is None:
            return False
        if amount < record['min_unit'] or amount > record['max_unit'] or \
                amount % record['step_size']:
            return False
        return self.usages.get(rc, 0) + amount <= \
            self.capacity.get(rc, 0)


def _roots(conn, classes):
    """The ids of the roots of every tree with a provider that has one of
    ``classes``, in order, and those of the sharing providers."""
    root_id = placement_reads.ROOT_ID
    having = sa.select(_INV.c.resource_provider_id).where(
        _INV.c.resource_class.in_(sorted(classes)))
    roots = sorted(set(conn.execute(sa.select(root_id).where(
        _RP.c.id.in_(having))).scalars()))
    sharing = sorted(set(conn.execute(sa.select(
        _RPT.c.resource_provider_id).join(
        _TRAIT, _TRAIT.c.id == _RPT.c.trait_id).where(
        _TRAIT.c.name == SHARES)).scalars()))
    return roots, sharing


def _load(conn, roots, sharing):
    """``{id: _Provider}`` of the trees of ``roots`` and of the sharing
    providers."""
    rows = conn.execute(placement_reads.PROVIDERS.where(
        placement_reads.ROOT_ID.in_(roots) | _RP.c.id.in_(sharing))).all()
    details = placement_reads.details(conn, rows) if rows else {}
    found = {}
    for row in rows:
        provider = _Provider()
        provider.id, provider.uuid = row.id, row.uuid
        provider.parent = row.parent_uuid
        provider.root = row.root_uuid or row.uuid
        detail = details[row.id]
        provider.traits = set(detail['traits'])
        provider.aggregates = set(detail['aggregates'])
        provider.inventory = detail['inventories']
        provider.capacity = detail['capacity']
        provider.usages = detail['usages']
        found[row.id] = provider
    return found


def _in_tree_roots(conn, uuids):
    """The uuids of the roots of the providers ``uuids``."""
    if not uuids:
        return set()
    root = _RP.alias('root_of')
    return set(conn.execute(sa.select(sa.func.coalesce(
        root.c.uuid, _RP.c.uuid)).select_from(_RP.outerjoin(
            root, root.c.id == _RP.c.root_provider_id)).where(
        _RP.c.uuid.in_(sorted(uuids)))).scalars())


def _trait_order(names):
    """As Placement lists them: the standard traits, then the custom
    ones."""
    return sorted(names, key=lambda name: (name.startswith('CUSTOM_'),
                                           name))


def _traits_ok(have, traits):
    required, forbidden, any_of = traits
    return required <= have and not (forbidden & have) and all(
        names & have for names in any_of)


def _member_ok(aggregates, group):
    if any(not (set(names) & aggregates) for names in group['member_of']):
        return False
    return not (set(group['forbidden']) & aggregates)


def _single(pool, tree, by_uuid, group):
    """The providers one suffixed group may land on."""
    found = []
    resources = group['resources']
    candidates = pool if resources else tree
    for provider in candidates:
        root = by_uuid.get(provider.root, provider)
        if not _traits_ok(provider.traits, group['traits']):
            continue
        # A suffixed group's aggregates are its provider's own.
        if not _member_ok(provider.aggregates, group):
            continue
        if group['in_tree'] and root.uuid not in group['in_tree_roots']:
            continue
        if all(provider.fits(rc, amount)
               for rc, amount in resources.items()):
            found.append({provider.uuid: dict(resources)})
    return found


def _spread(pool, by_uuid, group, tree_root):
    """The ways the unsuffixed group's classes come from the pool, one
    provider for each class."""
    resources = sorted(group['resources'].items())
    if group['in_tree']:
        # Only the providers of the trees named: no sharing one outside.
        pool = [p for p in pool if p.root in group['in_tree_roots']]
    options = []
    for rc, amount in resources:
        options.append([p for p in pool if p.fits(rc, amount)])
        if not options[-1]:
            return []
    found = []
    for chosen in itertools.product(*options):
        used = {p.uuid: p for p in chosen}
        have = set().union(*(p.traits for p in used.values()))
        if not _traits_ok(have, group['traits']):
            continue
        # An aggregate of the root spans its tree; a sharing provider
        # counts its own only.
        if any(not _member_ok(p.aggregates | tree_root.aggregates
                              if p.root == tree_root.uuid else p.aggregates,
                              group) for p in used.values()):
            continue
        allocation = {}
        for (rc, amount), provider in zip(resources, chosen):
            allocation.setdefault(provider.uuid, {})[rc] = amount
        found.append(allocation)
    return found


def _ancestors(by_uuid, uuid):
    chain = []
    while uuid is not None and uuid in by_uuid:
        chain.append(uuid)
        uuid = by_uuid[uuid].parent
    return chain


def _same_subtree(by_uuid, chosen, lists):
    for suffixes in lists:
        used = set()
        for suffix in suffixes:
            used.update(chosen.get(suffix, ()))
        if not used:
            continue
        if not any(all(top in _ancestors(by_uuid, uuid) for uuid in used)
                   for top in used):
            return False
    return True


def find(url, groups, policy=None, root_traits=None, same_subtree=(),
         limit=None, nested=True):
    """``{'candidates': [{'allocations': {provider uuid: {class:
    amount}}, 'mappings': {suffix: [provider uuid, ...]}}, ...],
    'providers': {uuid: summary}}``: the allocation candidates of
    ``groups`` (``{suffix: {'resources', 'traits': (required, forbidden,
    any_of), 'member_of', 'forbidden', 'in_tree'}}``), and a summary of
    every provider of their trees (``capacity``, ``usages``,
    ``traits``, ``parent_provider_uuid``, ``root_provider_uuid``).
    Without ``nested`` (Placement before 1.29), a candidate that takes
    from two providers of one tree is left out where trees exist, and
    the summaries are of the providers the candidates take from."""
    limit = min(limit or MAX_CANDIDATES, MAX_CANDIDATES)
    if root_traits:
        root_traits = (set(root_traits[0]), set(root_traits[1]), [])
    classes = set()
    for group in groups.values():
        classes.update(group['resources'])
        group['traits'] = tuple(
            set(part) if index < 2 else [set(names) for names in part]
            for index, part in enumerate(group['traits']))
    found, seen = [], set()
    state = {'tried': 0}
    with engines.snapshot(url) as conn:
        for group in groups.values():
            group['in_tree_roots'] = _in_tree_roots(
                conn, group.get('in_tree') or ())
            if group.get('in_tree') and not group['in_tree_roots']:
                return {'candidates': [], 'providers': {}}
        roots, sharing = _roots(conn, classes)
        summaries = {}
        # A page of trees at a time: a request that the first trees
        # answer reads no more of a large cloud.
        for start in range(0, len(roots), TREES_A_PAGE):
            providers = _load(conn, roots[start:start + TREES_A_PAGE],
                              sharing)
            page = []
            _search(providers, groups, policy, root_traits, same_subtree,
                    limit - len(found), page, seen, state)
            summaries.update(_summaries(providers, page, nested))
            found += page
            if len(found) >= limit or state['tried'] > MAX_COMBINATIONS:
                break
    return {'candidates': found, 'providers': summaries}


def _search(providers, groups, policy, root_traits, same_subtree, limit,
            found, seen, state):
    """Add to ``found`` the candidates of the trees of ``providers``."""
    by_uuid = {p.uuid: p for p in providers.values()}
    trees = {}
    for provider in providers.values():
        trees.setdefault(provider.root, []).append(provider)
    sharing = [p for p in providers.values() if SHARES in p.traits]
    for root_uuid in sorted((u for u in trees if u in by_uuid),
                            key=lambda u: by_uuid[u].id):
        if len(found) >= limit or state['tried'] > MAX_COMBINATIONS:
            return
        root = by_uuid[root_uuid]
        if root_traits and not _traits_ok(root.traits, root_traits):
            continue
        tree = sorted(trees[root_uuid], key=lambda p: p.id)
        members = {p.uuid for p in tree}
        tree_aggregates = set().union(*(p.aggregates for p in tree))
        shared = [p for p in sharing if p.uuid not in members and
                  p.aggregates & tree_aggregates]
        pool = tree + shared
        options = {}
        for suffix, group in sorted(groups.items()):
            if suffix == '':
                options[suffix] = _spread(pool, by_uuid, group, root)
            else:
                options[suffix] = _single(pool, tree, by_uuid, group)
            if not options[suffix]:
                options = None
                break
        if not options:
            continue
        suffixes = sorted(options)
        for combination in itertools.product(*(options[s]
                                               for s in suffixes)):
            state['tried'] += 1
            if state['tried'] > MAX_COMBINATIONS or len(found) >= limit:
                return
            chosen = {s: sorted(part) for s, part in zip(suffixes,
                                                         combination)}
            if policy == 'isolate':
                named = [chosen[s][0] for s in suffixes if s]
                if len(named) != len(set(named)):
                    continue
            if same_subtree and not _same_subtree(by_uuid, chosen,
                                                  same_subtree):
                continue
            allocations = {}
            for part in combination:
                for uuid, resources in part.items():
                    for rc, amount in resources.items():
                        held = allocations.setdefault(uuid, {})
                        held[rc] = held.get(rc, 0) + amount
            # Two groups on one provider must fit it together, in one
            # allocation.
            if not all(by_uuid[uuid].usages.get(rc, 0) + amount <=
                       by_uuid[uuid].capacity.get(rc, 0) and
                       amount <= by_uuid[uuid].inventory[rc]['max_unit']
                       for uuid, held in allocations.items()
                       for rc, amount in held.items()):
                continue
            key = (tuple(sorted((uuid, tuple(sorted(held.items())))
                                for uuid, held in allocations.items())),
                   tuple(sorted((s, tuple(v)) for s, v in chosen.items())))
            if key in seen:
                continue
            seen.add(key)
            found.append({'allocations': allocations, 'mappings': chosen,
                          'root': root_uuid})


def _summaries(providers, found, nested):
    """The summaries of the providers of the trees ``found`` takes from
    (without ``nested``, of the providers it takes from); each candidate
    that takes from two providers of one tree is dropped then (only a
    tree with children can give one)."""
    by_uuid = {p.uuid: p for p in providers.values()}
    trees = {}
    for provider in providers.values():
        trees.setdefault(provider.root, []).append(provider)
    if not nested:
        found[:] = [c for c in found if len(c['allocations']) == len(
            {by_uuid[uuid].root for uuid in c['allocations']})]
    summaries = {}
    for candidate in found:
        candidate.pop('root', None)
        if nested:
            roots = {by_uuid[uuid].root for uuid in candidate['allocations']}
            roots.update(by_uuid[uuid].root
                         for uuids in candidate['mappings'].values()
                         for uuid in uuids)
            involved = [p for root in roots for p in trees.get(root, ())]
        else:
            involved = [by_uuid[uuid] for uuid in candidate['allocations']]
        for provider in involved:
            summaries[provider.uuid] = {
                'capacity': provider.capacity, 'usages': provider.usages,
                'traits': _trait_order(provider.traits),
                'parent_provider_uuid': provider.parent,
                'root_provider_uuid': provider.root}
    return summaries
