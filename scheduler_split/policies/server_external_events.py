"""Rule of ``/os-server-external-events``: what other OpenStack services
(Neutron, Cinder, Ironic, Cyborg) tell the compute API about servers."""

from oslo_policy import policy

from scheduler_split.policies import base

rules = [
    policy.DocumentedRuleDefault(
        name='os_compute_api:os-server-external-events:create',
        check_str=base.SERVICE_OR_ADMIN,
        description='Tell the compute API of events of one or more '
                    'servers (a port plugged, a volume extended, a power '
                    'state changed).',
        operations=[{'method': 'POST',
                     'path': '/os-server-external-events'}],
        scope_types=['project']),
]


def list_rules():
    return rules
