"""Rules of ``/servers/{server_id}/os-instance-actions``.

The events of an action tell which hosts a build was tried on and why it
moved on; who sees how much of that is decided here.
"""

from oslo_policy import policy

from scheduler_split.policies import base

INSTANCE_ACTIONS = 'os_compute_api:os-instance-actions:%s'

_SHOW = {'method': 'GET',
         'path': '/servers/{server_id}/os-instance-actions/{request_id}'}

rules = [
    policy.DocumentedRuleDefault(
        name=INSTANCE_ACTIONS % 'list',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='List the actions of a server.',
        operations=[{'method': 'GET',
                     'path': '/servers/{server_id}/os-instance-actions'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=INSTANCE_ACTIONS % 'show',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show one action of a server.',
        operations=[_SHOW],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=INSTANCE_ACTIONS % 'events',
        check_str=base.ADMIN,
        description='Show every detail of an action\'s events: checked '
                    'after ``os_compute_api:os-instance-actions:show``. '
                    'Those allowed see the events at every microversion, '
                    'each with its ``traceback`` and, from microversion '
                    '2.62, the ``host`` it ran on. Others see the events '
                    'only from microversion 2.51, without traceback or '
                    'host.',
        operations=[_SHOW],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=INSTANCE_ACTIONS % 'events:details',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show the ``details`` of each event (microversion '
                    '2.84 and later): why a build attempt failed and, for '
                    'a reschedule, the hosts tried. Nova makes this '
                    'admin-only by default because details can name hosts '
                    'and hypervisors; here they are shown to the '
                    'server\'s project, so that a user can tell why a '
                    'build ended where it did. Set it to '
                    '``rule:context_is_admin`` to hide them.',
        operations=[_SHOW],
        scope_types=['project']),
]


def list_rules():
    return rules
