"""``/placement/resource_providers`` and what a provider has: its
inventories, usages, aggregates, traits and allocations.

Every compute node is a resource provider and the root of its tree; its
name is its hypervisor hostname and its generation the one every claim
and release bumps. Its inventory is what its compute reports, its usages
and allocations what the scheduler's claims hold. Providers made here
(``POST``) have no compute host: roots of their own trees or children
of another provider. A provider's aggregates are those written here and
the host aggregates of its host (same uuids).
"""

import copy
import datetime
import json
import uuid as uuidlib

import webob

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params
from scheduler_split import exception

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
        body['parent_provider_uuid'] = provider.get('parent_provider_uuid')
        body['root_provider_uuid'] = provider.get('root_provider_uuid',
                                                  provider['uuid'])
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


@handler.serve(rule='placement:resource_providers:list')
def index(req, ctx, version):
    """``GET /resource_providers``: the providers the filters select."""
    allowed = _index_params(version)
    params.check_names(req, allowed)
    filters = filters_of(req, ctx, version, allowed)
    found = handler.scheduler(req).providers(ctx, filters)
    return {'resource_providers': [view(req, version, p) for p in found]}


_CREATE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'maxLength': 200},
        'uuid': {'type': 'string', 'format': 'uuid'},
    },
    'required': ['name'],
    'additionalProperties': False,
}
_PARENT = {'anyOf': [{'type': 'string', 'format': 'uuid'},
                     {'type': 'null'}]}


def _schema(version, create):
    schema = copy.deepcopy(_CREATE)
    if not create:
        del schema['properties']['uuid']
    if version >= (1, 14):
        schema['properties']['parent_provider_uuid'] = _PARENT
    return schema


def _uuid(value):
    return str(uuidlib.UUID(value)) if value is not None else None


def _answer(req, ctx, version, uuid, status=200):
    response = webob.Response(status=status)
    if req.method == 'POST':
        response.location = url_of(req, uuid)
    if status == 201:
        del response.content_type
    else:
        provider = find_provider(req, ctx, uuid, detail=False)
        response.content_type = 'application/json'
        response.charset = 'UTF-8'
        response.text = json.dumps(view(req, version, provider))
        if version >= (1, 15):
            response.cache_control = 'no-cache'
            response.last_modified = datetime.datetime.now(
                datetime.timezone.utc)
    return response


@handler.serve(rule='placement:resource_providers:create')
def create(req, ctx, version):
    """``POST /resource_providers``: a provider without a compute host,
    a root or a child of ``parent_provider_uuid``. From 1.20 the answer
    is the provider (200), before an empty 201; both say where it is."""
    body = handler.body(req, _schema(version, create=True))
    uuid = handler.scheduler(req).create_provider(
        ctx, body['name'], _uuid(body.get('uuid')),
        _uuid(body.get('parent_provider_uuid')))
    return _answer(req, ctx, version, uuid,
                   status=200 if version >= (1, 20) else 201)


@handler.serve(rule='placement:resource_providers:update')
def update(req, ctx, version, uuid):
    """``PUT /resource_providers/{uuid}``: its name and (1.14) its
    parent; from 1.37 a child may move to another parent or become a
    root."""
    body = handler.body(req, _schema(version, create=False))
    find_provider(req, ctx, uuid, detail=False)
    parent = None
    if 'parent_provider_uuid' in body:
        parent = {'uuid': _uuid(body['parent_provider_uuid'])}
    handler.scheduler(req).update_provider(
        ctx, uuid, body['name'], parent,
        allow_reparenting=version >= (1, 37))
    return _answer(req, ctx, version, uuid)


@handler.serve(rule='placement:resource_providers:delete')
def delete(req, ctx, version, uuid):
    """``DELETE /resource_providers/{uuid}``: a provider no consumer
    holds anything of and without children."""
    try:
        handler.scheduler(req).delete_provider(ctx, uuid)
    except exception.ResourceProviderNotFound:
        raise errors.not_found('No resource provider with uuid %s found '
                               'for delete' % uuid)
    return handler.no_content()


_AGGREGATE_LIST = {'type': 'array', 'uniqueItems': True,
                   'items': {'type': 'string', 'format': 'uuid'}}
_AGGREGATES = {
    'type': 'object',
    'properties': {
        'aggregates': _AGGREGATE_LIST,
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}


@handler.serve(rule='placement:resource_providers:aggregates:update')
def update_aggregates(req, ctx, version, uuid):
    """``PUT /resource_providers/{uuid}/aggregates``: the aggregates the
    provider is in (1.1); from 1.19 with the generation read."""
    if version < (1, 1):
        raise errors.not_found()
    provider = find_provider(req, ctx, uuid, detail=False)
    if version >= (1, 19):
        body = handler.body(req, _AGGREGATES)
        if body['resource_provider_generation'] != provider['generation']:
            raise errors.coded(
                409, "Resource provider's generation already changed. "
                "Please update the generation and try again.",
                'placement.concurrent_update', version)
        wanted, generation = body['aggregates'], provider['generation']
    else:
        wanted, generation = handler.body(req, _AGGREGATE_LIST), None
    handler.scheduler(req).set_provider_aggregates(ctx, uuid, wanted,
                                                   generation)
    return aggregates.__wrapped__(req, ctx, version, uuid)


def find_provider(req, ctx, uuid, detail=True):
    """The provider ``uuid`` as the scheduler reads it; a 404 if there
    is none."""
    found = handler.scheduler(req).providers(ctx, {'uuid': uuid}, limit=1,
                                             detail=detail)
    if not found:
        raise errors.not_found('No resource provider with uuid %s found'
                               % uuid)
    return found[0]


@handler.serve(rule='placement:resource_providers:show')
def show(req, ctx, version, uuid):
    return view(req, version, find_provider(req, ctx, uuid, detail=False))


@handler.serve(rule='placement:resource_providers:inventories:list')
def inventories(req, ctx, version, uuid):
    provider = find_provider(req, ctx, uuid)
    return {'inventories': provider['inventories'],
            'resource_provider_generation': provider['generation']}


@handler.serve(rule='placement:resource_providers:inventories:show')
def inventory(req, ctx, version, uuid, resource_class):
    provider = find_provider(req, ctx, uuid)
    record = provider['inventories'].get(resource_class)
    if record is None:
        raise errors.not_found('No inventory of class %s for %s'
                               % (resource_class, uuid))
    return dict(record, resource_provider_generation=provider['generation'])


@handler.serve(rule='placement:resource_providers:usages')
def usages(req, ctx, version, uuid):
    provider = find_provider(req, ctx, uuid)
    return {'resource_provider_generation': provider['generation'],
            'usages': provider['usages']}


@handler.serve(rule='placement:resource_providers:aggregates:list')
def aggregates(req, ctx, version, uuid):
    if version < (1, 1):
        raise errors.not_found()
    provider = find_provider(req, ctx, uuid)
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


@handler.serve(rule='placement:resource_providers:traits:update')
def update_traits(req, ctx, version, uuid):
    """``PUT /resource_providers/{uuid}/traits``: the provider's traits
    become those named, if it is still at the generation named."""
    if version < (1, 6):
        raise errors.not_found()
    body = handler.body(req, _TRAITS)
    try:
        written = handler.scheduler(req).set_provider_traits(
            ctx, uuid, body['traits'], body['resource_provider_generation'])
    except exception.ResourceProviderConcurrentUpdate:
        raise errors.coded(
            409, "Resource provider's generation already changed. Please "
            "update the generation and try again.",
            'placement.concurrent_update', version)
    return {'traits': written['traits'],
            'resource_provider_generation': written['generation']}


@handler.serve(rule='placement:resource_providers:traits:delete')
def delete_traits(req, ctx, version, uuid):
    """``DELETE /resource_providers/{uuid}/traits``: the provider has no
    trait any more (until its compute reports its own again)."""
    if version < (1, 6):
        raise errors.not_found()
    handler.scheduler(req).set_provider_traits(ctx, uuid, [], None)
    return handler.no_content()


@handler.serve(rule='placement:resource_providers:traits:list')
def traits(req, ctx, version, uuid):
    if version < (1, 6):
        raise errors.not_found()
    provider = find_provider(req, ctx, uuid)
    return {'traits': provider['traits'],
            'resource_provider_generation': provider['generation']}


@handler.serve(rule='placement:resource_providers:allocations:list')
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
