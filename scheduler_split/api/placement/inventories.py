"""``/placement/resource_providers/{uuid}/inventories``: what a provider
has of each resource class, read and written.

A write names the provider's generation it read (but for the DELETEs
and the POST, which take the provider as it is) and is refused with a
409 when the provider changed since; a class some consumer holds cannot
be taken away (``placement.inventory.inuse``). An inventory's fields
left out are Placement's defaults: nothing reserved, units of 1 to the
largest integer, an allocation ratio of 1.0.
"""

import copy
import datetime
import json

import webob

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import resource_providers
from scheduler_split import exception

MAX_INT = 0x7FFFFFFF
FLOAT_MAX = 3.40282e+38
CLASS_PATTERN = '^[A-Z0-9_]+$'
CONCURRENT = 'placement.concurrent_update'
IN_USE = 'placement.inventory.inuse'

_RECORD = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'reserved': {'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
        'min_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'max_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'step_size': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
        'allocation_ratio': {'type': 'number', 'maximum': FLOAT_MAX},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}
_POST = copy.deepcopy(_RECORD)
_POST['properties']['resource_class'] = {'type': 'string',
                                         'pattern': CLASS_PATTERN}
_POST['required'] = ['total', 'resource_class']
_IN_PUT = copy.deepcopy(_RECORD)
_IN_PUT['required'] = ['total']
PUT_SCHEMA = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {'type': 'object',
                        'patternProperties': {CLASS_PATTERN: _IN_PUT},
                        'additionalProperties': False},
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}


def fields(values):
    record = dict(DEFAULTS)
    record.update({key: values[key] for key in FIELDS if key in values})
    return record


def check_capacity(version, uuid, resource_class, record, verb):
    """Placement's rule: from 1.26 the whole total may be reserved (a
    capacity of 0), before not."""
    capacity = int((record['total'] - record['reserved']) *
                   record['allocation_ratio'])
    if version >= (1, 26):
        if capacity >= 0:
            return
        what = 'greater than total'
    else:
        if capacity > 0:
            return
        what = 'greater than or equal to total'
    raise errors.bad_request(
        "Unable to %s inventory for resource provider %s: Invalid "
        "inventory for '%s' on resource provider '%s'. The reserved value "
        "is %s." % (verb, uuid, resource_class, uuid, what))


def _json(body, status=200, version=None):
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    if version is not None and version >= (1, 15):
        response.cache_control = 'no-cache'
        response.last_modified = datetime.datetime.now(
            datetime.timezone.utc)
    return response


def _one(req, ctx, version, uuid, resource_class, status=200):
    provider = resource_providers.find_provider(req, ctx, uuid)
    record = dict(provider['inventories'][resource_class],
                  resource_provider_generation=provider['generation'])
    response = _json(record, status, version)
    if status == 201:
        response.location = '%s/inventories/%s' % (
            resource_providers.url_of(req, uuid), resource_class)
    return response


def _conflict(exc, version, prefix):
    code = getattr(exc, 'placement_code', None) or CONCURRENT
    return errors.coded(409, prefix + exc.format_message(), code, version)


@handler.serve(rule='placement:resource_providers:inventories:update')
def replace(req, ctx, version, uuid):
    """``PUT .../inventories``: the provider's whole inventory."""
    resource_providers.find_provider(req, ctx, uuid)
    body = handler.body(req, PUT_SCHEMA)
    wanted = {}
    for resource_class, values in body['inventories'].items():
        wanted[resource_class] = fields(values)
        check_capacity(version, uuid, resource_class,
                       wanted[resource_class], 'update')
    try:
        handler.scheduler(req).set_inventories(
            ctx, uuid, wanted, body['resource_provider_generation'])
    except exception.ResourceProviderConcurrentUpdate as exc:
        raise _conflict(exc, version, '')
    except exception.InventoryInUse as exc:
        raise _conflict(exc, version, 'update conflict: ')
    except exception.InventoryClassUnknown as exc:
        raise errors.bad_request(
            'Unknown resource class in inventory for resource provider '
            '%s: %s' % (uuid, exc.format_message()))
    provider = resource_providers.find_provider(req, ctx, uuid)
    return _json({'resource_provider_generation': provider['generation'],
                  'inventories': provider['inventories']}, 200, version)


@handler.serve(rule='placement:resource_providers:inventories:create')
def create(req, ctx, version, uuid):
    """``POST .../inventories``: one class the provider does not have
    yet (201, where it is)."""
    resource_providers.find_provider(req, ctx, uuid)
    body = handler.body(req, _POST)
    resource_class = body['resource_class']
    record = fields(body)
    check_capacity(version, uuid, resource_class, record, 'create')
    try:
        handler.scheduler(req).put_inventory(ctx, uuid, resource_class,
                                             record, None, create=True)
    except (exception.InventoryExists,
            exception.ResourceProviderConcurrentUpdate) as exc:
        raise _conflict(exc, version, '')
    except exception.InventoryClassUnknown as exc:
        raise errors.bad_request(
            'Unable to create inventory for resource provider %s: %s'
            % (uuid, exc.format_message()))
    return _one(req, ctx, version, uuid, resource_class, status=201)


@handler.serve(rule='placement:resource_providers:inventories:delete')
def delete_all(req, ctx, version, uuid):
    """``DELETE .../inventories`` (1.5): the provider has no inventory
    left; refused while a consumer holds any of it."""
    if version < (1, 5):
        return handler.not_allowed(req, version, ('GET', 'POST', 'PUT'))
    resource_providers.find_provider(req, ctx, uuid)
    try:
        handler.scheduler(req).set_inventories(ctx, uuid, None, None)
    except exception.InventoryInUse as exc:
        raise _conflict(exc, version, '')
    except exception.ResourceProviderConcurrentUpdate:
        raise errors.coded(
            409, 'Unable to delete inventory for resource provider %s '
            'because the inventory was updated by another process. Please '
            'retry your request.' % uuid, CONCURRENT, version)
    return handler.no_content()


@handler.serve(rule='placement:resource_providers:inventories:update')
def update(req, ctx, version, uuid, resource_class):
    """``PUT .../inventories/{class}``: one class the provider has."""
    resource_providers.find_provider(req, ctx, uuid)
    body = handler.body(req, _RECORD)
    record = fields(body)
    check_capacity(version, uuid, resource_class, record, 'update')
    try:
        handler.scheduler(req).put_inventory(
            ctx, uuid, resource_class, record,
            body['resource_provider_generation'])
    except exception.ResourceProviderConcurrentUpdate as exc:
        raise _conflict(exc, version, '')
    except exception.InventoryNotFound as exc:
        raise errors.bad_request(
            'No inventory record with resource class for resource '
            'provider %s: %s' % (uuid, exc.format_message()))
    return _one(req, ctx, version, uuid, resource_class)


@handler.serve(rule='placement:resource_providers:inventories:delete')
def delete(req, ctx, version, uuid, resource_class):
    """``DELETE .../inventories/{class}``: refused while a consumer
    holds any of it."""
    resource_providers.find_provider(req, ctx, uuid)
    try:
        handler.scheduler(req).delete_inventory(ctx, uuid, resource_class)
    except exception.InventoryInUse as exc:
        raise errors.coded(
            409, 'Unable to delete inventory of class %s: %s'
            % (resource_class, exc.format_message()), CONCURRENT, version)
    except exception.InventoryNotFound as exc:
        raise errors.not_found(
            'No inventory of class %s found for delete: %s'
            % (resource_class, exc.format_message()))
    return handler.no_content()
