"""``/os-hypervisors``: what each compute node has and what is used.

Capacity and the hypervisor's details are what computes report to the
scheduler; usage is the scheduler's allocations. Both come through the
scheduler's client library (``get_compute_nodes``); state and status are
those of the node's compute service in its cell. A node whose compute
service record is gone is not listed (as in Nova).
"""

import json
import logging
import time
import urllib.parse

import oslo_messaging as messaging
from oslo_utils import strutils
from oslo_utils import uuidutils

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split.api import services as services_api
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy

LOG = logging.getLogger(__name__)

# The last microversion of statistics, uptime, and of the usage fields of
# the detailed view.
LAST_WITH_USAGE = (2, 87)
# The last microversion of the search and servers routes.
LAST_WITH_ROUTES = (2, 52)

# When this API process started: the fake hypervisors' uptime.
_STARTED = time.monotonic()

_BOOLEAN_VALUES = ('true', 'false', '1', '0', 'yes', 'no', 'on', 'off',
                   't', 'f', 'y', 'n')


class _Node:
    """A compute node with its compute service."""

    def __init__(self, node, service):
        self.node = node
        self.service = service

    def __getattr__(self, name):
        try:
            return self.node[name]
        except KeyError:
            raise AttributeError(name)

    def total(self, rc):
        inventory = self.node['inventory'].get(rc)
        return inventory[0] if inventory else 0

    def reserved(self, rc):
        inventory = self.node['inventory'].get(rc)
        return inventory[1] if inventory else 0

    def used(self, rc):
        return self.node['used'].get(rc, 0)

    def usage(self):
        """Nova's usage fields; reserved memory and disk count as used,
        as Nova's resource tracker counts them."""
        vcpus, memory_mb = self.total('VCPU'), self.total('MEMORY_MB')
        local_gb = self.total('DISK_GB')
        memory_used = self.used('MEMORY_MB') + self.reserved('MEMORY_MB')
        disk_used = self.used('DISK_GB') + self.reserved('DISK_GB')
        return {
            'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb,
            'vcpus_used': self.used('VCPU'),
            'memory_mb_used': memory_used,
            'local_gb_used': disk_used,
            'free_ram_mb': memory_mb - memory_used,
            'free_disk_gb': local_gb - disk_used,
            'current_workload': 0,
            'running_vms': self.node['running_vms'],
            'disk_available_least': local_gb - disk_used,
        }


def _check_usage_version(version):
    if version > LAST_WITH_USAGE:
        raise errors.not_found('The resource could not be found.')


def list_nodes(req, ctx):
    """Every compute node that has a compute service, by id."""
    try:
        nodes = req.compute_api.scheduler.get_compute_nodes(ctx)
    except messaging.MessagingException as exc:
        raise exception.ServiceUnavailable(
            reason='the scheduler, which knows the hypervisors, could not '
                   'be reached (%s)' % exc)
    # The nodes of a cell that cannot be reached are left out, as Nova
    # leaves them out.
    services = {s.host: s for s in services_api.cell_services(ctx, down=[])
                if s.binary == services_api.COMPUTE}
    found = []
    for node in nodes:
        service = services.get(node['host'])
        if service is None:
            LOG.debug('Compute node %s has no compute service record; not '
                      'listed', node['host'])
            continue
        found.append(_Node(node, service))
    return found


def _servers(ctx, node):
    """``[{name, uuid}]`` of the servers on the node, from its cell."""
    cctx = ss_context.target_cell(ctx, node.service.cell)
    return [{'name': instance.display_name or '', 'uuid': instance.uuid}
            for instance in objects.Instance.get_all(
                cctx, host=node.host,
                node=node.node['hypervisor_hostname'])]


def _render(ctx, node, version, detail, with_servers=False, servers=None):
    service = node.service
    new_ids = version >= (2, 53)
    body = {
        'id': node.uuid if new_ids else node.id,
        'hypervisor_hostname': node.hypervisor_hostname,
        'state': 'up' if service.is_up else 'down',
        'status': 'disabled' if service.disabled else 'enabled',
    }
    if detail:
        body['hypervisor_type'] = node.hypervisor_type or 'fake'
        body['hypervisor_version'] = node.hypervisor_version or 0
        body['host_ip'] = node.host_ip or ''
        body['service'] = {
            'id': service.uuid if new_ids else service.id,
            'host': node.host,
            'disabled_reason': service.disabled_reason,
        }
        if version <= LAST_WITH_USAGE:
            body.update(node.usage())
            if version >= (2, 28):
                body['cpu_info'] = (json.loads(node.cpu_info)
                                    if node.cpu_info else {})
            else:
                body['cpu_info'] = node.cpu_info or ''
        else:
            body['uptime'] = _uptime()
    if with_servers:
        servers = _servers(ctx, node)
    if servers:
        body['servers'] = servers
    elif with_servers and version >= (2, 75):
        body['servers'] = []
    return body


def _uptime():
    """``uptime``'s line for the fake hypervisors: how long this API has
    run, in its format."""
    seconds = int(time.monotonic() - _STARTED)
    now = time.strftime('%H:%M:%S', time.gmtime())
    return ' %s up %d:%02d,  0 users,  load average: 0.00, 0.00, 0.00' % (
        now, seconds // 3600, (seconds // 60) % 60)


def _bool_param(req, name):
    raw = req.GET.get(name)
    if raw is None:
        return False
    try:
        return strutils.bool_from_string(raw, strict=True)
    except ValueError:
        raise errors.bad_request(
            "Invalid input for query parameters %s. Value: %s. '%s' is not "
            "one of %s" % (name, raw, raw, list(_BOOLEAN_VALUES)))


def _query_v253(req):
    allowed = {'limit', 'marker', 'hypervisor_hostname_pattern',
               'with_servers'}
    schemas.refuse_unknown_query(req, allowed)
    for name in req.GET:
        if len(req.GET.getall(name)) > 1:
            raise errors.bad_request(
                'Invalid input for query parameters %s. Value: %s. %s is '
                'not of type single value' % (name, req.GET.getall(name),
                                              req.GET.getall(name)))


def _limit_and_marker(req):
    limit = req.GET.get('limit')
    if limit is not None:
        try:
            limit = int(limit)
        except ValueError:
            raise errors.bad_request('limit param must be an integer')
        if limit < 0:
            raise errors.bad_request('limit param must be positive')
    return limit, req.GET.get('marker')


def _search(nodes, pattern):
    found = [n for n in nodes if pattern in n.hypervisor_hostname]
    if not found:
        raise errors.not_found("No hypervisor matching '%s' could be found."
                               % pattern)
    return found


def _links(req, version, items, detail, limit):
    if limit is None or len(items) < limit or not items:
        return None
    params = dict(req.GET)
    params['marker'] = items[-1]['id']
    path = '/v2.1/os-hypervisors' + ('/detail' if detail else '')
    return [{'rel': 'next',
             'href': req.host_url + path + '?' +
             urllib.parse.urlencode(sorted(params.items()))}]


def _listing(req, ctx, version, detail):
    rule = ('os_compute_api:os-hypervisors:list-detail' if detail
            else 'os_compute_api:os-hypervisors:list')
    policy.authorize(ctx, rule, target={})
    limit = marker = None
    pattern = None
    with_servers = False
    if version >= (2, 53):
        _query_v253(req)
        pattern = req.GET.get('hypervisor_hostname_pattern')
        with_servers = _bool_param(req, 'with_servers')
    if version >= (2, 33):
        limit, marker = _limit_and_marker(req)
    nodes = list_nodes(req, ctx)
    if pattern is not None:
        if 'limit' in req.GET or marker:
            raise errors.bad_request(
                'Paging over hypervisors with the '
                'hypervisor_hostname_pattern query parameter is not '
                'supported.')
        nodes = _search(nodes, pattern)
        limit = None
    if marker is not None:
        key = 'uuid' if version >= (2, 53) else 'id'
        position = [str(n.node[key]) for n in nodes]
        if marker not in position:
            raise errors.bad_request('marker [%s] not found' % marker)
        nodes = nodes[position.index(marker) + 1:]
    if limit is not None:
        nodes = nodes[:limit]
    items = [_render(ctx, n, version, detail, with_servers=with_servers)
             for n in nodes]
    body = {'hypervisors': items}
    links = _links(req, version, items, detail, limit)
    if links:
        body['hypervisors_links'] = links
    return body


def index(req, ctx, version):
    return _listing(req, ctx, version, detail=False)


def detail(req, ctx, version):
    return _listing(req, ctx, version, detail=True)


def _find(req, ctx, version, hypervisor_id):
    if version >= (2, 53):
        if not uuidutils.is_uuid_like(hypervisor_id):
            raise errors.bad_request('Invalid uuid %s' % hypervisor_id)
        key, wanted = 'uuid', hypervisor_id
    else:
        try:
            key, wanted = 'id', int(hypervisor_id)
        except ValueError:
            raise errors.not_found("Hypervisor with ID '%s' could not be "
                                   "found." % hypervisor_id)
    for node in list_nodes(req, ctx):
        if node.node[key] == wanted:
            return node
    raise errors.not_found("Hypervisor with ID '%s' could not be found."
                           % hypervisor_id)


def show(req, ctx, version, hypervisor_id):
    with_servers = False
    if version >= (2, 53):
        schemas.refuse_unknown_query(req, {'with_servers'})
        with_servers = _bool_param(req, 'with_servers')
    policy.authorize(ctx, 'os_compute_api:os-hypervisors:show', target={})
    node = _find(req, ctx, version, hypervisor_id)
    return {'hypervisor': _render(ctx, node, version, detail=True,
                                  with_servers=with_servers)}


def uptime(req, ctx, version, hypervisor_id):
    _check_usage_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hypervisors:uptime', target={})
    node = _find(req, ctx, version, hypervisor_id)
    body = _render(ctx, node, version, detail=False)
    body['uptime'] = _uptime()
    return {'hypervisor': body}


def _check_routes_version(version):
    if version > LAST_WITH_ROUTES:
        raise errors.not_found('The resource could not be found.')


def search(req, ctx, version, pattern):
    _check_routes_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hypervisors:search', target={})
    nodes = _search(list_nodes(req, ctx), pattern)
    return {'hypervisors': [_render(ctx, n, version, detail=False)
                            for n in nodes]}


def servers(req, ctx, version, pattern):
    _check_routes_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hypervisors:servers', target={})
    nodes = _search(list_nodes(req, ctx), pattern)
    return {'hypervisors': [_render(ctx, n, version, detail=False,
                                    servers=_servers(ctx, n))
                            for n in nodes]}


def statistics(req, ctx, version):
    _check_usage_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hypervisors:statistics',
                     target={})
    totals = {'count': 0, 'vcpus': 0, 'memory_mb': 0, 'local_gb': 0,
              'vcpus_used': 0, 'memory_mb_used': 0, 'local_gb_used': 0,
              'free_ram_mb': 0, 'free_disk_gb': 0, 'current_workload': 0,
              'running_vms': 0, 'disk_available_least': 0}
    for node in list_nodes(req, ctx):
        totals['count'] += 1
        for name, value in node.usage().items():
            totals[name] += value
    return {'hypervisor_statistics': totals}
