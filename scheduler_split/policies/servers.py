"""Rules of ``/servers``, including the admin-only server attributes."""

from oslo_policy import policy

from scheduler_split.policies import base

SERVERS = 'os_compute_api:servers:%s'
EXTENDED_ATTRIBUTES = 'os_compute_api:os-extended-server-attributes'

rules = [
    policy.DocumentedRuleDefault(
        name=SERVERS % 'index',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='List the servers of the caller\'s project.',
        operations=[{'method': 'GET', 'path': '/servers'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'detail',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='List the servers of the caller\'s project, with '
                    'details.',
        operations=[{'method': 'GET', 'path': '/servers/detail'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'index:get_all_tenants',
        check_str=base.ADMIN,
        description='List the servers of every project '
                    '(``all_tenants`` query parameter).',
        operations=[{'method': 'GET', 'path': '/servers'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'detail:get_all_tenants',
        check_str=base.ADMIN,
        description='List the servers of every project, with details '
                    '(``all_tenants`` query parameter).',
        operations=[{'method': 'GET', 'path': '/servers/detail'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'show',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show a server.',
        operations=[{'method': 'GET', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'show:flavor-extra-specs',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Include the extra specs of the server\'s flavor in '
                    'its ``flavor`` (microversion 2.47 and later).',
        operations=[{'method': 'GET', 'path': '/servers/detail'},
                    {'method': 'GET', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'show:host_status',
        check_str=base.ADMIN,
        description='Include the status of the server\'s compute host '
                    '(``host_status``: UP, DOWN, MAINTENANCE or UNKNOWN) '
                    'in it (microversion 2.16 and later).',
        operations=[{'method': 'GET', 'path': '/servers/detail'},
                    {'method': 'GET', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='os_compute_api:ips:index',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='List a server\'s addresses, by network.',
        operations=[{'method': 'GET', 'path': '/servers/{server_id}/ips'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name='os_compute_api:ips:show',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show a server\'s addresses on one network.',
        operations=[{'method': 'GET',
                     'path': '/servers/{server_id}/ips/{network_label}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'create',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Create servers in the caller\'s project.',
        operations=[{'method': 'POST', 'path': '/servers'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'create:forced_host',
        check_str=base.ADMIN,
        description='Force the host a server is built on with '
                    '``"availability_zone": "zone:host"`` (or '
                    '``":host"``): the scheduler considers only that '
                    'host, still filters it and claims on it.',
        operations=[{'method': 'POST', 'path': '/servers'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'update',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Update a server: its name, access addresses and '
                    '(microversion 2.19 and later) description.',
        operations=[{'method': 'PUT', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=SERVERS % 'delete',
        check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description='Delete a server.',
        operations=[{'method': 'DELETE', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=EXTENDED_ATTRIBUTES,
        check_str=base.ADMIN,
        description='Show where a server runs: ``OS-EXT-SRV-ATTR:host``, '
                    '``OS-EXT-SRV-ATTR:hypervisor_hostname`` and '
                    '``OS-EXT-SRV-ATTR:instance_name``.',
        operations=[{'method': 'GET', 'path': '/servers/detail'},
                    {'method': 'GET', 'path': '/servers/{server_id}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
