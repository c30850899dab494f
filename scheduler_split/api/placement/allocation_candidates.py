"""``GET /placement/allocation_candidates`` (from 1.10): the ways a
request could be placed now, each an allocation request over one
provider tree (and the providers sharing with it), with a summary of
every provider of the trees answered.

The scheduler finds them (:mod:`scheduler_split.scheduler.candidates`,
scheduler RPC 1.11): the unsuffixed group may take each class from
another provider of the tree or from a sharing provider, each suffixed
group (1.25) lands on one provider, ``group_policy=isolate`` keeps them
apart, ``root_required`` (1.35) asks traits of the root, and
``same_subtree`` (1.36) keeps the groups it names under one of their
providers; groups without resources are allowed there only. A
provider's room is its capacity, ``(total - reserved) *
allocation_ratio``, less what is allocated, and one allocation keeps to
its ``min_unit``, ``max_unit`` and ``step_size``.
"""

import re

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params

_GROUPED = ('resources', 'required', 'member_of', 'in_tree')
_POLICIES = ('none', 'isolate')


def _suffix(version):
    return '[1-9][0-9]*' if version < (1, 33) else '[A-Za-z0-9_-]{1,64}'


def _check_names(req, version):
    allowed = {'resources'}
    grouped = []
    for since, name in (((1, 16), 'limit'), ((1, 17), 'required'),
                        ((1, 21), 'member_of'), ((1, 25), 'group_policy'),
                        ((1, 31), 'in_tree'), ((1, 35), 'root_required'),
                        ((1, 36), 'same_subtree')):
        if version >= since:
            allowed.add(name)
    if version >= (1, 25):
        grouped = [kind for kind in _GROUPED
                   if kind != 'in_tree' or version >= (1, 31)]
    params.check_names(req, allowed,
                       [kind + _suffix(version) for kind in grouped])
    return grouped


def _groups(req, ctx, version):
    """``{suffix: group}`` of the request groups: each ``resources``,
    ``member_of`` (lists of aggregate uuids), ``forbidden`` (aggregate
    uuids) and ``in_tree`` (provider uuids)."""
    grouped = _check_names(req, version)
    suffixes = {''}
    for name in req.GET:
        for kind in grouped:
            if re.fullmatch(kind + _suffix(version), name):
                suffixes.add(name[len(kind):])
    groups = {}
    scheduler = handler.scheduler(req)
    classes = []

    def known_classes():
        if not classes:
            classes.extend(scheduler.resource_classes(ctx))
        return classes

    def catalog(ctx, names):
        return scheduler.traits(ctx, names=names)

    if version < (1, 36):
        # Placement names every orphan before it reads any value.
        for kind, what in (('required', 'traits'),
                           ('member_of', 'member_of')):
            orphans = [kind + s for s in sorted(suffixes)
                       if kind + s in req.GET and 'resources' + s
                       not in req.GET]
            if orphans:
                raise errors.bad_request(
                    'All %s parameters must be associated with resources.%s'
                    'Found the following orphaned %s keys: %s'
                    % (what, '  ' if kind == 'required' else ' ', what,
                       ', '.join(orphans)))
    for suffix in sorted(suffixes):
        names = {kind: kind + suffix for kind in _GROUPED}
        if not any(name in req.GET for name in names.values()):
            continue
        group = {'resources': {}, 'member_of': [], 'forbidden': set(),
                 'in_tree': [], 'traits': (set(), set(), [])}
        if names['resources'] in req.GET:
            group['resources'] = params.resources(
                req.GET[names['resources']], known_classes())
        if names['member_of'] in req.GET:
            group['member_of'], group['forbidden'] = params.member_of(
                req, names['member_of'], version)
        if names['in_tree'] in req.GET:
            group['in_tree'] = [params.provider_uuid(
                req.GET[names['in_tree']], names['in_tree'])]
        if names['required'] in req.GET:
            group['traits'] = params.traits(req, ctx, names['required'],
                                            version, catalog)
        groups[suffix] = group
    _check_groups(req, groups, version)
    return groups


def _check_groups(req, groups, version):
    """Placement's 400s for groups without resources."""
    resourceless = sorted(s for s, g in groups.items() if not g['resources'])
    if version >= (1, 36):
        subtree = set()
        for value in req.GET.getall('same_subtree'):
            subtree.update(part.strip() for part in value.split(','))
        if groups and len(resourceless) == len(groups):
            raise errors.coded(400, 'There must be at least one resources '
                               'or resources[$S] parameter.',
                               'placement.query.missing_value', version)
        bad = [s for s in resourceless if s not in subtree]
        if bad:
            raise errors.coded(
                400, 'Resourceless suffixed group request should be '
                'specified in `same_subtree` query param: bad group(s) - '
                '%s.' % bad, 'placement.query.bad_value', version)
        unknown = sorted(s for s in subtree if s not in groups)
        if unknown:
            raise errors.coded(
                400, 'Real suffixes should be specified in `same_subtree`: '
                '%s not found in %s.' % (unknown, sorted(groups)),
                'placement.query.bad_value', version)
    else:
        orphans = ['required%s' % s for s in resourceless
                   if any(groups[s]['traits'][:2]) or groups[s]['traits'][2]]
        if orphans:
            raise errors.bad_request(
                'All traits parameters must be associated with resources.  '
                'Found the following orphaned traits keys: %s'
                % ', '.join(orphans))
        orphans = ['member_of%s' % s for s in resourceless
                   if groups[s]['member_of'] or groups[s]['forbidden']]
        if orphans:
            raise errors.bad_request(
                'All member_of parameters must be associated with '
                'resources. Found the following orphaned member_of keys: '
                '%s' % ', '.join(orphans))
        if resourceless:
            raise errors.bad_request(
                'All request groups must specify resources.')
    if not groups:
        raise errors.bad_request(
            "Invalid query string parameters: 'resources' is a required "
            "property" if version < (1, 25) else
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')


def _policy(req, groups):
    # Repeated, the first counts.
    policy = (req.GET.getall('group_policy') or [None])[0]
    if policy is not None and policy not in _POLICIES:
        raise errors.bad_request(
            "Invalid query string parameters: '%s' is not one of %s"
            % (policy, list(_POLICIES)))
    if policy is None and len([s for s in groups if s]) > 1:
        raise errors.bad_request(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')
    return policy


def _same_subtree(req):
    lists = []
    for value in req.GET.getall('same_subtree'):
        suffixes = sorted({part.strip() for part in value.split(',')})
        if '' in suffixes:
            raise errors.coded(400, 'Empty string (unsuffixed group) can not '
                               'be specified in `same_subtree` ',
                               'placement.query.bad_value', (1, 36))
        lists.append(suffixes)
    return lists


def _wire(group):
    """A group as the scheduler's RPC carries it: lists only."""
    required, forbidden, any_of = group['traits']
    return {'resources': group['resources'],
            'member_of': [sorted(names) for names in group['member_of']],
            'forbidden': sorted(group['forbidden']),
            'in_tree': list(group['in_tree']),
            'traits': [sorted(required), sorted(forbidden),
                       [sorted(names) for names in any_of]]}


def _allocation_request(version, candidate):
    allocations = candidate['allocations']
    if version < (1, 12):
        return {'allocations': [
            {'resource_provider': {'uuid': uuid}, 'resources': resources}
            for uuid, resources in sorted(allocations.items())]}
    body = {'allocations': {uuid: {'resources': resources}
                            for uuid, resources in allocations.items()}}
    if version >= (1, 34):
        body['mappings'] = candidate['mappings']
    return body


def _summary(version, summary, requested):
    body = {'resources': {
        rc: {'capacity': capacity, 'used': summary['usages'].get(rc, 0)}
        for rc, capacity in summary['capacity'].items()
        if version >= (1, 27) or rc in requested}}
    if version >= (1, 17):
        body['traits'] = summary['traits']
    if version >= (1, 29):
        body['parent_provider_uuid'] = summary['parent_provider_uuid']
        body['root_provider_uuid'] = summary['root_provider_uuid']
    return body


@handler.serve(rule='placement:allocation_candidates:list')
def index(req, ctx, version):
    if version < (1, 10):
        raise errors.not_found()
    same_subtree = _same_subtree(req) if version >= (1, 36) else []
    groups = _groups(req, ctx, version)
    policy = _policy(req, groups) if version >= (1, 25) else None
    # Repeated, the first of a parameter counts, as in Placement.
    limit = (params.limit(req.GET.getall('limit')[0])
             if 'limit' in req.GET else None)
    root_traits = None
    if 'root_required' in req.GET:
        if len(req.GET.getall('root_required')) > 1:
            raise errors.coded(400, "Query parameter 'root_required' may "
                               "be specified only once.",
                               'placement.query.duplicate_key', version)
        required, forbidden, any_of = params.traits(
            req, ctx, 'root_required', version,
            lambda ctx, names: handler.scheduler(req).traits(
                ctx, names=names))
        root_traits = [sorted(required), sorted(forbidden), []]
    requested = set()
    for group in groups.values():
        requested.update(group['resources'])
    found = handler.scheduler(req).allocation_candidates(
        ctx, {suffix: _wire(group) for suffix, group in groups.items()},
        policy, root_traits, same_subtree, limit,
        nested=version >= (1, 29))
    return {
        'allocation_requests': [_allocation_request(version, candidate)
                                for candidate in found['candidates']],
        'provider_summaries': {
            uuid: _summary(version, summary, requested)
            for uuid, summary in found['providers'].items()},
    }
