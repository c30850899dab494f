"""``/placement/allocations``: what one consumer holds, by provider, and
the writes of the allocations of consumers that are not the scheduler's
servers (a Neutron port, an Ironic node, an operator's reservation).

A server's or a move's allocations are the scheduler's claims; its
project and user are read from the API's records (:mod:`consumers`) and
its generation is null. A consumer written here has a record of its
own in the scheduler's database: its project, user, type (1.38) and a
generation (1.28) that every write names and bumps. Every claim honours
what is written here.
"""

import copy
import uuid as uuidlib

from scheduler_split.api.placement import consumers
from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split import exception

CLASS = '^[A-Z0-9_]+$'
UUID = ('^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}'
        '-?[0-9a-fA-F]{12}$')
# The project and user of a consumer written before 1.8, which named none.
INCOMPLETE = '00000000-0000-0000-0000-000000000000'
_RESOURCES = {'type': 'object', 'minProperties': 1,
              'patternProperties': {CLASS: {'type': 'integer',
                                            'minimum': 1}},
              'additionalProperties': False}
_OWNER = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_LIST = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array', 'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {'uuid': {'type': 'string',
                                                'format': 'uuid'}},
                        'additionalProperties': False,
                        'required': ['uuid']},
                    'resources': _RESOURCES},
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False}}},
    'required': ['allocations'],
    'additionalProperties': False,
}
_DICT = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object', 'minProperties': 1,
            'patternProperties': {UUID: {
                'type': 'object',
                'properties': {'generation': {'type': 'integer'},
                               'resources': _RESOURCES},
                'required': ['resources'],
                'additionalProperties': False}},
            'additionalProperties': False},
        'project_id': _OWNER,
        'user_id': _OWNER,
    },
    'required': ['allocations', 'project_id', 'user_id'],
    'additionalProperties': False,
}


def schema(version, post=False):
    """The body of one consumer's allocations at ``version``."""
    if version < (1, 12):
        found = copy.deepcopy(_LIST)
        if version >= (1, 8):
            found['properties'].update(project_id=_OWNER, user_id=_OWNER)
            found['required'] += ['project_id', 'user_id']
        return found
    found = copy.deepcopy(_DICT)
    if post or version >= (1, 28):
        found['properties']['allocations']['minProperties'] = 0
    if version >= (1, 28):
        found['properties']['consumer_generation'] = {
            'type': ['integer', 'null']}
        found['required'].append('consumer_generation')
    if version >= (1, 34):
        # Which request group each provider answered: taken, not kept.
        found['properties']['mappings'] = {'type': 'object'}
    if version >= (1, 38):
        found['properties']['consumer_type'] = {
            'type': 'string', 'pattern': CLASS, 'minLength': 1,
            'maxLength': 255}
        found['required'].append('consumer_type')
    return found


def spec(data, version):
    """What the scheduler writes of one consumer's body."""
    if version < (1, 12):
        allocations = {}
        for item in data['allocations']:
            resources = allocations.setdefault(
                str(uuidlib.UUID(item['resource_provider']['uuid'])), {})
            resources.update(item['resources'])
    else:
        allocations = {str(uuidlib.UUID(rp)): dict(value['resources'])
                       for rp, value in data['allocations'].items()}
    spec = {'allocations': allocations,
            'project_id': data.get('project_id', INCOMPLETE),
            'user_id': data.get('user_id', INCOMPLETE),
            'consumer_type': data.get('consumer_type')}
    if version >= (1, 28):
        spec['generation'] = data['consumer_generation']
    return spec


def _write(req, ctx, version, wanted, single):
    try:
        handler.scheduler(req).write_allocations(ctx, wanted)
    except exception.InventoryClassUnknown as exc:
        if single:
            raise errors.bad_request(
                'Unable to allocate inventory for consumer %s: %s'
                % (single, exc.format_message()))
        raise errors.bad_request('Unable to allocate inventory %s'
                                 % exc.format_message())
    except exception.AllocationsRaced as exc:
        raise errors.coded(409, exc.format_message(),
                           'placement.concurrent_update', version)
    return handler.no_content()


def normal_uuid(value):
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise errors.bad_request('Malformed consumer_uuid: %s' % value)


@handler.serve(rule='placement:allocations:update')
def update(req, ctx, version, consumer_uuid):
    """``PUT /allocations/{consumer}``: what the consumer holds now,
    replacing what it held (nothing, from 1.28, deletes it all)."""
    consumer_uuid = normal_uuid(consumer_uuid)
    data = handler.body(req, schema(version))
    return _write(req, ctx, version, {consumer_uuid: spec(data, version)},
                  consumer_uuid)


@handler.serve(rule='placement:allocations:manage')
def create(req, ctx, version):
    """``POST /allocations`` (1.13): several consumers' allocations at
    once, all or none."""
    if version < (1, 13):
        return handler.not_allowed(req, version, ())
    one = schema(version, post=True)
    data = handler.body(req, {'type': 'object', 'minProperties': 1,
                              'patternProperties': {UUID: one},
                              'additionalProperties': False})
    wanted = {normal_uuid(uuid): spec(value, version)
              for uuid, value in data.items()}
    return _write(req, ctx, version, wanted, None)


@handler.serve(rule='placement:allocations:delete')
def delete(req, ctx, version, consumer_uuid):
    """``DELETE /allocations/{consumer}``: nothing held any more."""
    try:
        handler.scheduler(req).delete_allocations(ctx, consumer_uuid)
    except exception.ConsumerAllocationsNotFound as exc:
        raise errors.not_found(exc.format_message())
    return handler.no_content()


@handler.serve(rule='placement:allocations:list')
def show(req, ctx, version, consumer_uuid):
    scheduler = handler.scheduler(req)
    held = scheduler.consumer_allocations(ctx, consumer_uuid)
    body = {'allocations': held}
    if held and version >= (1, 12):
        record = scheduler.consumer(ctx, consumer_uuid)
        if record is not None:
            kind = record['consumer_type'] or consumers.UNKNOWN
            project_id, user_id = record['project_id'], record['user_id']
            generation = record['generation']
        else:
            kind, project_id, user_id = consumers.owner(ctx, consumer_uuid)
            generation = None
        body['project_id'] = project_id
        body['user_id'] = user_id
        if version >= (1, 28):
            body['consumer_generation'] = generation
        if version >= (1, 38):
            body['consumer_type'] = kind
    return body
