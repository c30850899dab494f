"""Rules of ``/limits``, ``/os-quota-sets``, ``/os-quota-class-sets`` and
``/os-keypairs``."""

from oslo_policy import policy

from scheduler_split.policies import base

ANY = '@'
# A key pair is its user's (or an admin's).
OWNER_OR_ADMIN = '(rule:context_is_admin) or user_id:%(user_id)s'


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


_QUOTA = '/os-quota-sets/{project_id}'
rules = [
    _rule('os_compute_api:limits', ANY, 'Show the rate and absolute limits '
          'of the caller\'s project.', 'GET', '/limits'),
    _rule('os_compute_api:limits:other_project', base.ADMIN, 'Show the '
          'limits of another project (tenant_id query parameter).', 'GET',
          '/limits'),
    _rule('os_compute_api:os-quota-sets:show', base.PROJECT_READER_OR_ADMIN,
          'Show the quota of a project.', 'GET', _QUOTA),
    _rule('os_compute_api:os-quota-sets:detail',
          base.PROJECT_READER_OR_ADMIN, 'Show the quota of a project with '
          'its usage.', 'GET', _QUOTA + '/detail'),
    _rule('os_compute_api:os-quota-sets:defaults', ANY, 'Show the default '
          'quota.', 'GET', _QUOTA + '/defaults'),
    _rule('os_compute_api:os-quota-sets:update', base.ADMIN, 'Set the '
          'quota of a project.', 'PUT', _QUOTA),
    _rule('os_compute_api:os-quota-sets:delete', base.ADMIN, 'Give a '
          'project the default quota again.', 'DELETE', _QUOTA),
    _rule('os_compute_api:os-quota-class-sets:show', base.ADMIN, 'Show a '
          'quota class (the class "default" holds the defaults).', 'GET',
          '/os-quota-class-sets/{class_name}'),
    _rule('os_compute_api:os-quota-class-sets:update', base.ADMIN, 'Set a '
          'quota class.', 'PUT', '/os-quota-class-sets/{class_name}'),
    _rule('os_compute_api:os-keypairs:index', OWNER_OR_ADMIN, 'List the '
          'key pairs of a user.', 'GET', '/os-keypairs'),
    _rule('os_compute_api:os-keypairs:create', OWNER_OR_ADMIN, 'Create or '
          'import a key pair.', 'POST', '/os-keypairs'),
    _rule('os_compute_api:os-keypairs:show', OWNER_OR_ADMIN, 'Show a key '
          'pair.', 'GET', '/os-keypairs/{name}'),
    _rule('os_compute_api:os-keypairs:delete', OWNER_OR_ADMIN, 'Delete a '
          'key pair.', 'DELETE', '/os-keypairs/{name}'),
]


def list_rules():
    return rules
