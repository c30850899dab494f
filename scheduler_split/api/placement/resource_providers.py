"""``/placement/resource_providers`` and what a provider has: its
inventories, usages, aggregates, traits and allocations.

Every compute node is a resource provider and the root of its own tree
(no parent); its name is its hypervisor hostname and its generation the
one every claim and release bumps. Its inventory is what its compute
reports, its usages and allocations what the scheduler's claims hold,
its aggregates the host aggregates of its host (same uuids), and it has
no traits.
"""

import webob

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params

PREFIX = '/placement'


def url_of(req, uuid):
    return '%s%s/resource_providers/%s' % (req.script_name, PREFIX, uuid)


def _links(req, version, uuid):
    url = url_of(req, uuid)
    rels = ['inventories', 'usages']
    if version >= (1, 1):
        rels.append('aggregates')
    if version >= (1, 6):
        rels.append('traits')
    if version >= (1, 11):
        rels.append('allocations')
    return [{'rel': 'self', 'href': url}] + [
        {'rel': rel, 'href': '%s/%s' % (url, rel)} for rel in rels]


def view(req, version, provider):
    body = {'uuid': provider['uuid'], 'name': provider['name'],
            'generation': provider['generation'],
            'links': _links(req, version, provider['uuid'])}
    if version >= (1, 14):
        body['parent_provider_uuid'] = None
        body['root_provider_uuid'] = provider['uuid']
    return body


def _index_params(version):
    allowed = {'name', 'uuid'}
    for since, name in (((1, 3), 'member_of'), ((1, 4), 'resources'),
                        ((1, 14), 'in_tree'), ((1, 18), 'required')):
        if version >= since:
            allowed.add(name)
    return allowed


def filters_of(req, ctx, version, allowed):
    """The scheduler's filters of the query parameters ``allowed`` that
    ``req`` holds (``member_of``, ``resources``, ``in_tree``, ``required``
    and ``uuid``, ``name``)."""
    query = req.GET
    scheduler = handler.scheduler(req)
    found = {}
    if 'uuid' in allowed and 'uuid' in query:
        found['uuid'] = params.provider_uuid(query['uuid'], 'uuid')
    if 'name' in allowed and 'name' in query:
        found['name'] = query['name']
    if 'member_of' in allowed and 'member_of' in query:
        required, forbidden = params.member_of(req, 'member_of', version)
        found['member_of'] = required
        found['forbidden_aggregates'] = sorted(forbidden)
    if 'resources' in allowed and 'resources' in query:
        found['resources'] = params.resources(
            query['resources'], scheduler.resource_classes(ctx))
    if 'in_tree' in allowed and 'in_tree' in query:
        found['in_tree'] = [params.provider_uuid(query['in_tree'],
                                                 'in_tree')]
    if 'required' in allowed and 'required' in query:
        params.add_traits(found, params.traits(
            req, ctx, 'required', version,
            lambda ctx, names: scheduler.traits(ctx, names=names)))
    return found


@handler.serve()
def index(req, ctx, version):
    """``GET /resource_providers``: the providers the filters select."""
    allowed = _index_params(version)
    params.check_names(req, allowed)
    filters = filters_of(req, ctx, version, allowed)
    found = handler.scheduler(req).providers(ctx, filters)
    return {'resource_providers': [view(req, version, p) for p in found]}


def _provider(req, ctx, uuid, detail=True):
    found = handler.scheduler(req).providers(ctx, {'uuid': uuid}, limit=1,
                                             detail=detail)
    if not found:
        raise errors.not_found('No resource provider with uuid %s found'
                               % uuid)
    return found[0]


@handler.serve()
def show(req, ctx, version, uuid):
    return view(req, version, _provider(req, ctx, uuid, detail=False))


@handler.serve()
def inventories(req, ctx, version, uuid):
    provider = _provider(req, ctx, uuid)
    return {'inventories': provider['inventories'],
            'resource_provider_generation': provider['generation']}


@handler.serve()
def inventory(req, ctx, version, uuid, resource_class):
    provider = _provider(req, ctx, uuid)
    record = provider['inventories'].get(resource_class)
    if record is None:
        raise errors.not_found('No inventory of class %s for %s'
                               % (resource_class, uuid))
    return dict(record, resource_provider_generation=provider['generation'])


@handler.serve()
def usages(req, ctx, version, uuid):
    provider = _provider(req, ctx, uuid)
    return {'resource_provider_generation': provider['generation'],
            'usages': provider['usages']}


@handler.serve()
def aggregates(req, ctx, version, uuid):
    if version < (1, 1):
        raise errors.not_found()
    provider = _provider(req, ctx, uuid)
    body = {'aggregates': provider['aggregates']}
    if version >= (1, 19):
        body['resource_provider_generation'] = provider['generation']
    return body


_TRAITS = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'uniqueItems': True,
                   'items': {'type': 'string', 'minLength': 1,
                             'maxLength': 255}},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}


@handler.serve(rule=handler.WRITE_RULE)
def update_traits(req, ctx, version, uuid):
    """``PUT /resource_providers/{uuid}/traits``: the provider's traits
    become those named, if it is still at the generation named."""
    if version < (1, 6):
        raise errors.not_found()
    body = handler.body(req, _TRAITS)
    written = handler.scheduler(req).set_provider_traits(
        ctx, uuid, body['traits'], body['resource_provider_generation'])
    return {'traits': written['traits'],
            'resource_provider_generation': written['generation']}


@handler.serve(rule=handler.WRITE_RULE)
def delete_traits(req, ctx, version, uuid):
    """``DELETE /resource_providers/{uuid}/traits``: the provider has no
    trait any more (until its compute reports its own again)."""
    if version < (1, 6):
        raise errors.not_found()
    handler.scheduler(req).set_provider_traits(ctx, uuid, [], None)
    return webob.Response(status=204)


@handler.serve()
def traits(req, ctx, version, uuid):
    if version < (1, 6):
        raise errors.not_found()
    provider = _provider(req, ctx, uuid)
    return {'traits': provider['traits'],
            'resource_provider_generation': provider['generation']}


@handler.serve()
def allocations(req, ctx, version, uuid):
    """``GET /resource_providers/{uuid}/allocations``: every consumer's
    allocations on the provider. The scheduler keeps no consumer
    generation (allocations change only through its claims), so from
    1.28 on each says ``consumer_generation: null``."""
    held = handler.scheduler(req).provider_allocations(ctx, uuid)
    if held is None:
        raise errors.not_found(
            "Resource provider '%s' not found: No resource provider with "
            "uuid %s found" % (uuid, uuid))
    body = {}
    for consumer, resources in held['allocations'].items():
        body[consumer] = {'resources': resources}
        if version >= (1, 28):
            body[consumer]['consumer_generation'] = None
    return {'allocations': body,
            'resource_provider_generation': held['generation']}
