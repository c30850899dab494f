"""Rules of ``/os-migrations`` and ``/servers/{server_id}/migrations``,
admin only, as in Nova."""

from oslo_policy import policy

from scheduler_split.policies import base


def _rule(name, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=base.ADMIN, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


rules = [
    _rule('os_compute_api:os-migrations:index',
          'List the migrations of every cell.', 'GET', '/os-migrations'),
    _rule('os_compute_api:servers:migrations:index',
          'List the live migrations of a server in progress.', 'GET',
          '/servers/{server_id}/migrations'),
    _rule('os_compute_api:servers:migrations:show',
          'Show a live migration of a server in progress.', 'GET',
          '/servers/{server_id}/migrations/{migration_id}'),
]


def list_rules():
    return rules
