"""Rules of ``/os-services`` and ``/os-hypervisors``: admin only."""

from oslo_policy import policy

from scheduler_split.policies import base

SERVICES = 'os_compute_api:os-services:%s'
HYPERVISORS = 'os_compute_api:os-hypervisors:%s'


def _rule(name, description, method, paths):
    return policy.DocumentedRuleDefault(
        name=name, check_str=base.ADMIN, description=description,
        operations=[{'method': method, 'path': path} for path in paths],
        scope_types=['project'])


rules = [
    _rule(SERVICES % 'list', 'List the compute, conductor and scheduler '
          'services.', 'GET', ['/os-services']),
    _rule(SERVICES % 'update', 'Enable, disable or force down a compute '
          'service (which the scheduler then skips): PUT '
          '/os-services/enable, disable, disable-log-reason, force-down '
          'until 2.52, /os-services/{service_id} from 2.53.', 'PUT',
          ['/os-services/{service_id}']),
    _rule(SERVICES % 'delete', 'Delete a service record (a compute '
          'hosting no instance, with its compute nodes).', 'DELETE',
          ['/os-services/{service_id}']),
    _rule(HYPERVISORS % 'list', 'List the hypervisors.', 'GET',
          ['/os-hypervisors']),
    _rule(HYPERVISORS % 'list-detail', 'List the hypervisors with their '
          'details.', 'GET', ['/os-hypervisors/detail']),
    _rule(HYPERVISORS % 'statistics', 'Show the summed capacity and usage '
          'of every hypervisor (until 2.87).', 'GET',
          ['/os-hypervisors/statistics']),
    _rule(HYPERVISORS % 'show', 'Show one hypervisor.', 'GET',
          ['/os-hypervisors/{hypervisor_id}']),
    _rule(HYPERVISORS % 'uptime', 'Show the uptime of a hypervisor (until '
          '2.87).', 'GET', ['/os-hypervisors/{hypervisor_id}/uptime']),
    _rule(HYPERVISORS % 'search', 'Search hypervisors by host name (until '
          '2.52; from 2.53 the list\'s hypervisor_hostname_pattern query '
          'parameter, under the list rules).', 'GET',
          ['/os-hypervisors/{pattern}/search']),
    _rule(HYPERVISORS % 'servers', 'List the servers of hypervisors (until '
          '2.52; from 2.53 the with_servers query parameter, under the list '
          'and show rules).', 'GET', ['/os-hypervisors/{pattern}/servers']),
]


def list_rules():
    return rules
