"""The rule of ``/metrics``: what the services are doing, for admins.

The metrics name no project's servers, but they show how busy and how
full the cloud is and how its hosts fail, which is an operator's to see.
"""

from oslo_policy import policy

from scheduler_split.policies import base

rules = [
    policy.DocumentedRuleDefault(
        name='scheduler_split:metrics', check_str=base.ADMIN,
        description='Read the Prometheus metrics of the API\'s process '
                    '(in the all-in-one, of every service).',
        operations=[{'method': 'GET', 'path': '/metrics'}],
        scope_types=['project']),
]


def list_rules():
    return rules
