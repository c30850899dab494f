"""``GET /placement/allocation_candidates`` (from 1.10): the providers
that could take a request now, each as an allocation request and a
summary of the provider's capacity and usage.

A candidate is a provider with room for every requested amount: its
capacity, ``(total - reserved) * allocation_ratio``, less what is
allocated, as a claim counts it (a single allocation may take the whole
capacity, ``max_unit``, in steps of one, ``min_unit`` and
``step_size``). The scheduler selects them in its database, a page at a
time in provider order, and stops at ``limit``.

Every provider is the root of its own tree and none is shared, so the
one provider of a candidate satisfies every request group: the
unsuffixed one and, from 1.25, ``resourcesN`` with its ``member_ofN``
and ``in_treeN``; its allocation request holds the sum of the groups.
With ``group_policy=isolate``, two suffixed groups would need two
providers: there is no candidate. A group must ask for resources (the
resourceless groups of 1.36 are refused), and a trait named anywhere is
a 400 (none exists).
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

    for suffix in sorted(suffixes):
        names = {kind: kind + suffix for kind in _GROUPED}
        if not any(name in req.GET for name in names.values()):
            continue
        if names['resources'] not in req.GET:
            raise errors.bad_request(
                'All request groups must specify resources.')
        group = {'resources': params.resources(
            req.GET[names['resources']], known_classes()),
            'member_of': [], 'forbidden': set(), 'in_tree': [],
            'traits': (set(), set(), [])}
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
    if not groups:
        raise errors.bad_request(
            "Invalid query string parameters: 'resources' is a required "
            "property" if version < (1, 25) else
            'At least one request group (`resources` or `resources{N}`) '
            'is required.')
    return groups


def _policy(req, groups):
    policy = req.GET.get('group_policy')
    if policy is not None and policy not in _POLICIES:
        raise errors.bad_request(
            "Invalid query string parameters: '%s' is not one of %s"
            % (policy, list(_POLICIES)))
    if policy is None and len([s for s in groups if s]) > 1:
        raise errors.bad_request(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')
    return policy


def _check_same_subtree(req, groups):
    """Every group lands on the one provider of a candidate, so they are
    all in one subtree: only the suffixes named are checked."""
    for value in req.GET.getall('same_subtree'):
        for suffix in value.split(','):
            if not suffix or suffix not in groups:
                raise errors.bad_request(
                    'No such request group suffix %r in same_subtree '
                    '(each group named there must ask for resources).'
                    % suffix)


def _filters(groups):
    resources = {}
    filters = {'member_of': [], 'forbidden_aggregates': set(),
               'in_tree': []}
    for group in groups.values():
        for rc, amount in group['resources'].items():
            resources[rc] = resources.get(rc, 0) + amount
        filters['member_of'].extend(group['member_of'])
        filters['forbidden_aggregates'] |= group['forbidden']
        filters['in_tree'].extend(group['in_tree'])
        params.add_traits(filters, group['traits'])
    filters['forbidden_aggregates'] = sorted(filters['forbidden_aggregates'])
    filters['resources'] = resources
    return filters


def _allocation_request(version, uuid, resources, groups):
    if version < (1, 12):
        return {'allocations': [{'resource_provider': {'uuid': uuid},
                                 'resources': dict(resources)}]}
    body = {'allocations': {uuid: {'resources': dict(resources)}}}
    if version >= (1, 34):
        body['mappings'] = {suffix: [uuid] for suffix in groups}
    return body


def _summary(version, provider, requested):
    summary = {'resources': {
        rc: {'capacity': capacity, 'used': provider['usages'].get(rc, 0)}
        for rc, capacity in provider['capacity'].items()
        if version >= (1, 27) or rc in requested}}
    if version >= (1, 17):
        summary['traits'] = provider.get('traits', [])
    if version >= (1, 29):
        summary['parent_provider_uuid'] = None
        summary['root_provider_uuid'] = provider['uuid']
    return summary


@handler.serve()
def index(req, ctx, version):
    if version < (1, 10):
        raise errors.not_found()
    groups = _groups(req, ctx, version)
    policy = _policy(req, groups) if version >= (1, 25) else None
    if 'same_subtree' in req.GET:
        _check_same_subtree(req, groups)
    limit = params.limit(req.GET['limit']) if 'limit' in req.GET else None
    filters = _filters(groups)
    if 'root_required' in req.GET:
        # Every provider is the root of its own tree.
        params.add_traits(filters, params.traits(
            req, ctx, 'root_required', version,
            lambda ctx, names: handler.scheduler(req).traits(
                ctx, names=names)))
    if policy == 'isolate' and len([s for s in groups if s]) > 1:
        found = []
    else:
        found = handler.scheduler(req).providers(ctx, filters, limit=limit,
                                                 detail=True)
    resources = filters['resources']
    return {
        'allocation_requests': [
            _allocation_request(version, p['uuid'], resources, groups)
            for p in found],
        'provider_summaries': {
            p['uuid']: _summary(version, p, resources) for p in found},
    }
