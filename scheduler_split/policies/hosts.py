"""Rules of ``/os-hosts`` (until microversion 2.42), admin only."""

from oslo_policy import policy

from scheduler_split.policies import base

HOSTS = 'os_compute_api:os-hosts:%s'
_HOST = '/os-hosts/{host_name}'


def _rule(name, description, method, path):
    return policy.DocumentedRuleDefault(
        name=HOSTS % name, check_str=base.ADMIN, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


rules = [
    _rule('list', 'List the hosts and their services.', 'GET',
          '/os-hosts'),
    _rule('show', 'Show the resources of a compute host, by project.',
          'GET', _HOST),
    _rule('update', 'Enable or disable a compute host.', 'PUT', _HOST),
    _rule('reboot', 'Reboot a host (refused: the driver has no power '
          'actions).', 'GET', _HOST + '/reboot'),
    _rule('shutdown', 'Shut a host down (refused: the driver has no power '
          'actions).', 'GET', _HOST + '/shutdown'),
    _rule('start', 'Start a host (refused: the driver has no power '
          'actions).', 'GET', _HOST + '/startup'),
]


def list_rules():
    return rules
