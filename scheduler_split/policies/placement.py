"""The rules of the Placement API (``/placement``), one per operation,
named and defaulted as Placement names and defaults them, so that a
cloud's Placement policy file applies here unchanged.

Every operation is for admins and for other services (a token with the
``service`` role: Nova's computes, Neutron's bandwidth, Cyborg and
Ironic write their providers and allocations with one); the reshaper,
which only a service's driver has reason to call, is for services
alone; a project's total usage (``GET /usages``) is also for the readers
of that project. The version document (``GET /placement``) answers
without a token.

These rules replace ``placement:read`` and ``placement:write``, which
were for admins: with ``[oslo_policy] enforce_new_defaults = False``,
or where a policy file still sets the old name, the old rule decides
too.
"""

from oslo_policy import policy

from scheduler_split.policies import base

_PROVIDERS = '/placement/resource_providers'
_PROVIDER = _PROVIDERS + '/{uuid}'

SERVICE = 'rule:service_api'
SERVICE_OR_ADMIN = base.SERVICE_OR_ADMIN
PROJECT_READER_OR_SERVICE_OR_ADMIN = 'rule:placement_project_usages'

# (rule, description, [(method, path)]) of the rules for admins and
# services.
_RULES = [
    ('resource_providers:list', 'List resource providers.',
     [('GET', _PROVIDERS)]),
    ('resource_providers:create', 'Make a resource provider.',
     [('POST', _PROVIDERS)]),
    ('resource_providers:show', 'Show a resource provider.',
     [('GET', _PROVIDER)]),
    ('resource_providers:update',
     'Rename a resource provider, or move it below another.',
     [('PUT', _PROVIDER)]),
    ('resource_providers:delete', 'Delete a resource provider.',
     [('DELETE', _PROVIDER)]),
    ('resource_providers:inventories:list',
     'List the inventories of a resource provider.',
     [('GET', _PROVIDER + '/inventories')]),
    ('resource_providers:inventories:create',
     'Add one inventory to a resource provider.',
     [('POST', _PROVIDER + '/inventories')]),
    ('resource_providers:inventories:show',
     'Show one inventory of a resource provider.',
     [('GET', _PROVIDER + '/inventories/{resource_class}')]),
    ('resource_providers:inventories:update',
     'Replace the inventories of a resource provider, or one of them.',
     [('PUT', _PROVIDER + '/inventories'),
      ('PUT', _PROVIDER + '/inventories/{resource_class}')]),
    ('resource_providers:inventories:delete',
     'Delete the inventories of a resource provider, or one of them.',
     [('DELETE', _PROVIDER + '/inventories'),
      ('DELETE', _PROVIDER + '/inventories/{resource_class}')]),
    ('resource_providers:aggregates:list',
     'List the aggregates of a resource provider.',
     [('GET', _PROVIDER + '/aggregates')]),
    ('resource_providers:aggregates:update',
     'Set the aggregates of a resource provider.',
     [('PUT', _PROVIDER + '/aggregates')]),
    ('resource_providers:usages',
     'Show what is allocated of each class of a resource provider.',
     [('GET', _PROVIDER + '/usages')]),
    ('resource_providers:allocations:list',
     'List the allocations against a resource provider.',
     [('GET', _PROVIDER + '/allocations')]),
    ('resource_providers:traits:list',
     'List the traits of a resource provider.',
     [('GET', _PROVIDER + '/traits')]),
    ('resource_providers:traits:update',
     'Set the traits of a resource provider.',
     [('PUT', _PROVIDER + '/traits')]),
    ('resource_providers:traits:delete',
     'Remove every trait of a resource provider.',
     [('DELETE', _PROVIDER + '/traits')]),
    ('allocations:list', 'Show the allocations of a consumer.',
     [('GET', '/placement/allocations/{consumer_uuid}')]),
    ('allocations:manage', 'Write the allocations of several consumers.',
     [('POST', '/placement/allocations')]),
    ('allocations:update', 'Write the allocations of a consumer.',
     [('PUT', '/placement/allocations/{consumer_uuid}')]),
    ('allocations:delete', 'Delete the allocations of a consumer.',
     [('DELETE', '/placement/allocations/{consumer_uuid}')]),
    ('allocation_candidates:list',
     'List the allocations that could satisfy a request.',
     [('GET', '/placement/allocation_candidates')]),
    ('resource_classes:list', 'List the resource classes.',
     [('GET', '/placement/resource_classes')]),
    ('resource_classes:create', 'Make a custom resource class.',
     [('POST', '/placement/resource_classes')]),
    ('resource_classes:show', 'Show a resource class.',
     [('GET', '/placement/resource_classes/{name}')]),
    ('resource_classes:update',
     'Make a custom resource class (rename one, before 1.7).',
     [('PUT', '/placement/resource_classes/{name}')]),
    ('resource_classes:delete', 'Delete a custom resource class.',
     [('DELETE', '/placement/resource_classes/{name}')]),
    ('traits:list', 'List the traits.', [('GET', '/placement/traits')]),
    ('traits:show', 'Show whether a trait exists.',
     [('GET', '/placement/traits/{name}')]),
    ('traits:update', 'Make a custom trait.',
     [('PUT', '/placement/traits/{name}')]),
    ('traits:delete', 'Delete a custom trait.',
     [('DELETE', '/placement/traits/{name}')]),
]

_REASON = ('Placement\'s rule of each operation, which services (the '
           'service role) pass too, replaces the one rule of every read '
           'and the one of every write.')
_READ = policy.DeprecatedRule(name='placement:read', check_str=base.ADMIN,
                              deprecated_reason=_REASON,
                              deprecated_since='2026.2')
_WRITE = policy.DeprecatedRule(name='placement:write',
                               check_str=base.ADMIN,
                               deprecated_reason=_REASON,
                               deprecated_since='2026.2')


def _deprecated(operations):
    return _READ if operations[0][0] == 'GET' else _WRITE


rules = [
    policy.RuleDefault(
        'placement_project_usages',
        'rule:project_reader_api or ' + SERVICE_OR_ADMIN,
        'A reader of the project asked of, another service, or an '
        'admin.'),
] + [
    policy.DocumentedRuleDefault(
        name='placement:' + name, check_str=SERVICE_OR_ADMIN,
        description=description,
        operations=[{'method': method, 'path': path}
                    for method, path in operations],
        scope_types=['project'], deprecated_rule=_deprecated(operations))
    for name, description, operations in _RULES
] + [
    policy.DocumentedRuleDefault(
        name='placement:reshaper:reshape', check_str=SERVICE,
        description='Move inventories and allocations between the '
                    'providers of a tree in one step (a service\'s '
                    'driver, as it reshapes its providers).',
        operations=[{'method': 'POST', 'path': '/placement/reshaper'}],
        scope_types=['project'], deprecated_rule=_WRITE),
    policy.DocumentedRuleDefault(
        name='placement:usages',
        check_str=PROJECT_READER_OR_SERVICE_OR_ADMIN,
        description='Show what a project (and a user) holds of each '
                    'class, over every provider.',
        operations=[{'method': 'GET', 'path': '/placement/usages'}],
        scope_types=['project'], deprecated_rule=_READ),
]


def list_rules():
    return rules
