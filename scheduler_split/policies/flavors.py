"""Rules of ``/flavors``.

Listing and showing flavors needs no rule (as in Nova); creating,
changing and deleting them, their extra specs and who may use a private
one are guarded. Which flavors a listing includes follows
``context_is_admin``: only admins may ask for non-public ones with
``is_public``; others see the public flavors and the private ones their
project was given.
"""

from oslo_policy import policy

from scheduler_split.policies import base

EXTRA_SPECS = 'os_compute_api:os-flavor-extra-specs:%s'
MANAGE = 'os_compute_api:os-flavor-manage:%s'
ACCESS = 'os_compute_api:os-flavor-access'

_SPECS = '/flavors/{flavor_id}/os-extra_specs'
_ACTION = '/flavors/{flavor_id}/action'


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


rules = [
    policy.DocumentedRuleDefault(
        name=EXTRA_SPECS % 'index',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Include a flavor\'s ``extra_specs`` in its body '
                    '(microversion 2.61 and later).',
        operations=[{'method': 'GET', 'path': '/flavors/detail'},
                    {'method': 'GET', 'path': '/flavors/{flavor_id}'}],
        scope_types=['project']),
    _rule(EXTRA_SPECS % 'show', base.PROJECT_READER_OR_ADMIN,
          'Show one extra spec of a flavor.', 'GET', _SPECS + '/{key}'),
    _rule(EXTRA_SPECS % 'create', base.ADMIN,
          'Set extra specs of a flavor.', 'POST', _SPECS),
    _rule(EXTRA_SPECS % 'update', base.ADMIN,
          'Change one extra spec of a flavor.', 'PUT', _SPECS + '/{key}'),
    _rule(EXTRA_SPECS % 'delete', base.ADMIN,
          'Delete one extra spec of a flavor.', 'DELETE',
          _SPECS + '/{key}'),
    _rule(MANAGE % 'create', base.ADMIN, 'Create a flavor.', 'POST',
          '/flavors'),
    _rule(MANAGE % 'update', base.ADMIN,
          'Change the description of a flavor (2.55).', 'PUT',
          '/flavors/{flavor_id}'),
    _rule(MANAGE % 'delete', base.ADMIN, 'Delete a flavor; servers built '
          'from it keep their copy.', 'DELETE', '/flavors/{flavor_id}'),
    _rule(ACCESS, base.ADMIN, 'List the projects that may use a private '
          'flavor.', 'GET', '/flavors/{flavor_id}/os-flavor-access'),
    _rule(ACCESS + ':add_tenant_access', base.ADMIN, 'Let a project use a '
          'private flavor (action addTenantAccess).', 'POST', _ACTION),
    _rule(ACCESS + ':remove_tenant_access', base.ADMIN, 'Stop a project '
          'from using a private flavor (action removeTenantAccess).',
          'POST', _ACTION),
]


def list_rules():
    return rules
