"""Rules of ``/servers/{server_id}/os-server-password``: the encrypted
password of a server's guest, for its project."""

from oslo_policy import policy

from scheduler_split.policies import base

SERVER_PASSWORD = 'os_compute_api:os-server-password:%s'
_PATH = '/servers/{server_id}/os-server-password'

rules = [
    policy.DocumentedRuleDefault(
        name=SERVER_PASSWORD % 'show',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show the encrypted administrative password of a '
                    'server.',
        operations=[{'method': 'GET', 'path': _PATH}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVER_PASSWORD % 'clear',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Clear the encrypted administrative password of a '
                    'server (the guest\'s password itself does not '
                    'change).',
        operations=[{'method': 'DELETE', 'path': _PATH}],
        scope_types=['project']),
]


def list_rules():
    return rules
