"""Rules of ``/os-aggregates`` (admin only) and ``/os-availability-zone``
(the list for anyone, the detail for admins)."""

from oslo_policy import policy

from scheduler_split.policies import base

AGGREGATES = 'os_compute_api:os-aggregates:%s'
ZONES = 'os_compute_api:os-availability-zone:%s'


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


_ACTION = '/os-aggregates/{aggregate_id}/action'

rules = [
    _rule(AGGREGATES % 'index', base.ADMIN, 'List the host aggregates.',
          'GET', '/os-aggregates'),
    _rule(AGGREGATES % 'create', base.ADMIN, 'Create a host aggregate, '
          'optionally an availability zone.', 'POST', '/os-aggregates'),
    _rule(AGGREGATES % 'show', base.ADMIN, 'Show a host aggregate.', 'GET',
          '/os-aggregates/{aggregate_id}'),
    _rule(AGGREGATES % 'update', base.ADMIN, 'Rename a host aggregate or '
          'change its availability zone.', 'PUT',
          '/os-aggregates/{aggregate_id}'),
    _rule(AGGREGATES % 'delete', base.ADMIN, 'Delete an empty host '
          'aggregate.', 'DELETE', '/os-aggregates/{aggregate_id}'),
    _rule(AGGREGATES % 'add_host', base.ADMIN, 'Add a compute host to a '
          'host aggregate (action add_host).', 'POST', _ACTION),
    _rule(AGGREGATES % 'remove_host', base.ADMIN, 'Remove a host from a '
          'host aggregate (action remove_host).', 'POST', _ACTION),
    _rule(AGGREGATES % 'set_metadata', base.ADMIN, 'Set or unset metadata '
          'of a host aggregate, which filters and weighers read (action '
          'set_metadata).', 'POST', _ACTION),
    _rule(AGGREGATES % 'images', base.ADMIN, 'Ask the hosts of an '
          'aggregate to cache images (2.81; refused: the fake driver has '
          'no image cache).', 'POST', '/os-aggregates/{aggregate_id}/images'),
    _rule(ZONES % 'list', '@',
          'List the availability zones and whether they are available.',
          'GET', '/os-availability-zone'),
    _rule(ZONES % 'detail', base.ADMIN, 'List the availability zones with '
          'their hosts and services.', 'GET', '/os-availability-zone/detail'),
]


def list_rules():
    return rules
