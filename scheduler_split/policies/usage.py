"""Rules of ``/os-simple-tenant-usage``: every project's usage is for
admins; a project's own usage is for its readers too."""

from oslo_policy import policy

from scheduler_split.policies import base

USAGE = 'os_compute_api:os-simple-tenant-usage:%s'

rules = [
    policy.DocumentedRuleDefault(
        name=USAGE % 'list', check_str=base.ADMIN,
        description='List the usage of every project over a window of '
                    'time.',
        operations=[{'method': 'GET', 'path': '/os-simple-tenant-usage'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=USAGE % 'show', check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show the usage of one project over a window of time.',
        operations=[{'method': 'GET',
                     'path': '/os-simple-tenant-usage/{tenant_id}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
