"""Rules of ``/os-instance_usage_audit_log``: how far the computes' usage
audit got, for admins."""

from oslo_policy import policy

from scheduler_split.policies import base

AUDIT_LOG = 'os_compute_api:os-instance-usage-audit-log:%s'

rules = [
    policy.DocumentedRuleDefault(
        name=AUDIT_LOG % 'list',
        check_str=base.ADMIN,
        description='Show the usage audit of the last completed audit '
                    'period, on every compute host.',
        operations=[{'method': 'GET',
                     'path': '/os-instance_usage_audit_log'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=AUDIT_LOG % 'show',
        check_str=base.ADMIN,
        description='Show the usage audit of the last audit period '
                    'completed before a given time, on every compute '
                    'host.',
        operations=[{'method': 'GET',
                     'path': '/os-instance_usage_audit_log/'
                             '{before_timestamp}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
