"""``POST /placement/reshaper`` (1.30): inventories and allocations
moved in one transaction, as a compute moves its VGPUs from its root
provider to child providers without a moment where a unit is counted
twice or not at all."""

import copy

from scheduler_split.api.placement import allocations
from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import inventories
from scheduler_split import exception


def _schema(version):
    one = allocations.schema(version, post=True)
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object', 'minProperties': 1,
                'patternProperties': {allocations.UUID: copy.deepcopy(
                    inventories.PUT_SCHEMA)},
                'additionalProperties': False},
            'allocations': {
                'type': 'object',
                'patternProperties': {allocations.UUID: one},
                'additionalProperties': False},
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


@handler.serve(rule='placement:reshaper:reshape')
def reshape(req, ctx, version):
    if version < (1, 30):
        raise errors.not_found()
    data = handler.body(req, _schema(version))
    wanted = {}
    for uuid, value in data['inventories'].items():
        records = {}
        for resource_class, fields in value['inventories'].items():
            records[resource_class] = inventories.fields(fields)
            inventories.check_capacity(version, uuid, resource_class,
                                       records[resource_class], 'update')
        wanted[uuid] = {'generation': value['resource_provider_generation'],
                        'inventories': records}
    consumers = {allocations.normal_uuid(uuid):
                 allocations.spec(value, version)
                 for uuid, value in data['allocations'].items()}
    try:
        handler.scheduler(req).reshape(ctx, wanted, consumers)
    except exception.ResourceProviderNotFound as exc:
        raise errors.coded(
            400, 'Resource provider in inventories not found: %s'
            % exc.format_message(), 'placement.resource_provider.not_found',
            version)
    except exception.InventoryInUse as exc:
        raise errors.coded(409, 'update conflict: ' + exc.format_message(),
                           'placement.inventory.inuse', version)
    except (exception.ResourceProviderConcurrentUpdate,
            exception.ReshapeGenerationConflict,
            exception.AllocationsRaced) as exc:
        raise errors.coded(409, 'update conflict: ' + exc.format_message(),
                           'placement.concurrent_update', version)
    except exception.InventoryClassUnknown as exc:
        raise errors.bad_request('malformed reshaper data: '
                                 + exc.format_message())
    return handler.no_content()
