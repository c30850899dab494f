"""The rules of the Placement API (``/placement``): resource
providers, their inventories, usages and allocations, every project's
usage and every consumer's allocations are an operator's to see, as in
Placement, whose every rule is for admins by default.

One rule guards every read, another the writes served so far (traits
and resource classes); the version document (``GET /placement``)
answers without a token.
"""

from oslo_policy import policy

from scheduler_split.policies import base

_PROVIDER = '/placement/resource_providers/{uuid}'

rules = [
    policy.DocumentedRuleDefault(
        name='placement:read', check_str=base.ADMIN,
        description='Read the Placement API: resource providers (the '
                    'compute nodes) with their inventories, usages, '
                    'aggregates, traits and allocations, a consumer\'s '
                    'allocations, a project\'s usages, the resource '
                    'classes, the traits and allocation candidates.',
        operations=[
            {'method': 'GET', 'path': '/placement/resource_providers'},
            {'method': 'GET', 'path': _PROVIDER},
            {'method': 'GET', 'path': _PROVIDER + '/inventories'},
            {'method': 'GET',
             'path': _PROVIDER + '/inventories/{resource_class}'},
            {'method': 'GET', 'path': _PROVIDER + '/usages'},
            {'method': 'GET', 'path': _PROVIDER + '/aggregates'},
            {'method': 'GET', 'path': _PROVIDER + '/traits'},
            {'method': 'GET', 'path': _PROVIDER + '/allocations'},
            {'method': 'GET',
             'path': '/placement/allocations/{consumer_uuid}'},
            {'method': 'GET', 'path': '/placement/usages'},
            {'method': 'GET', 'path': '/placement/resource_classes'},
            {'method': 'GET', 'path': '/placement/resource_classes/{name}'},
            {'method': 'GET', 'path': '/placement/traits'},
            {'method': 'GET', 'path': '/placement/traits/{name}'},
            {'method': 'GET', 'path': '/placement/allocation_candidates'},
        ],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='placement:write', check_str=base.ADMIN,
        description='Write through the Placement API: make, rename, '
                    're-parent and delete resource providers, write their '
                    'inventories, aggregates and traits, write the '
                    'allocations of consumers that are not servers, move '
                    'inventories and allocations with the reshaper, and '
                    'make, rename and remove custom traits and custom '
                    'resource classes.',
        operations=[
            {'method': 'POST', 'path': '/placement/reshaper'},
            {'method': 'POST', 'path': '/placement/allocations'},
            {'method': 'PUT',
             'path': '/placement/allocations/{consumer_uuid}'},
            {'method': 'DELETE',
             'path': '/placement/allocations/{consumer_uuid}'},
            {'method': 'POST', 'path': '/placement/resource_providers'},
            {'method': 'PUT', 'path': _PROVIDER},
            {'method': 'DELETE', 'path': _PROVIDER},
            {'method': 'PUT', 'path': _PROVIDER + '/inventories'},
            {'method': 'POST', 'path': _PROVIDER + '/inventories'},
            {'method': 'DELETE', 'path': _PROVIDER + '/inventories'},
            {'method': 'PUT',
             'path': _PROVIDER + '/inventories/{resource_class}'},
            {'method': 'DELETE',
             'path': _PROVIDER + '/inventories/{resource_class}'},
            {'method': 'PUT', 'path': _PROVIDER + '/aggregates'},
            {'method': 'PUT', 'path': '/placement/traits/{name}'},
            {'method': 'DELETE', 'path': '/placement/traits/{name}'},
            {'method': 'PUT', 'path': _PROVIDER + '/traits'},
            {'method': 'DELETE', 'path': _PROVIDER + '/traits'},
            {'method': 'POST', 'path': '/placement/resource_classes'},
            {'method': 'PUT', 'path': '/placement/resource_classes/{name}'},
            {'method': 'DELETE',
             'path': '/placement/resource_classes/{name}'},
        ],
        scope_types=['project']),
]


def list_rules():
    return rules
