"""Rules of ``/os-server-groups``."""

from oslo_policy import policy

from scheduler_split.policies import base

SERVER_GROUPS = 'os_compute_api:os-server-groups:%s'

rules = [
    policy.DocumentedRuleDefault(
        name=SERVER_GROUPS % 'create',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Create a server group in the caller\'s project.',
        operations=[{'method': 'POST', 'path': '/os-server-groups'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVER_GROUPS % 'delete',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Delete a server group. Its members keep running.',
        operations=[{'method': 'DELETE',
                     'path': '/os-server-groups/{group_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVER_GROUPS % 'index',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='List the server groups of the caller\'s project.',
        operations=[{'method': 'GET', 'path': '/os-server-groups'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVER_GROUPS % 'index:all_projects',
        check_str=base.ADMIN,
        description='List the server groups of every project '
                    '(``all_projects`` query parameter). Without it, '
                    '``all_projects`` is ignored and the caller\'s own '
                    'groups are listed.',
        operations=[{'method': 'GET', 'path': '/os-server-groups'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVER_GROUPS % 'show',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show a server group.',
        operations=[{'method': 'GET',
                     'path': '/os-server-groups/{group_id}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
