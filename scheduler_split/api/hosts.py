"""``/os-hosts`` (until microversion 2.42): the services of each host, a
compute host's resources by project, and enabling or disabling it.

A view over what os-services and os-hypervisors already read: the cell
service records, and the compute nodes as the scheduler knows them.
Enabling and disabling go the way ``os-services`` does (the cell record,
then the schedulers through their library). Maintenance mode and host
power actions are the hypervisor driver's, which the fake driver does
not have: they answer 501, as Nova does for a driver without them.
"""

import collections

from scheduler_split.api import errors
from scheduler_split.api import hypervisors
from scheduler_split.api import schemas
from scheduler_split.api import services as services_api
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import objects
from scheduler_split import policy

CONF = conf.CONF

LAST_VERSION = (2, 42)

_ENABLE = {'type': 'string', 'enum': ['enable', 'disable']}
UPDATE = {
    'type': 'object',
    'properties': {'status': _ENABLE, 'maintenance_mode': _ENABLE},
    'additionalProperties': False,
    'anyOf': [{'required': ['status']},
              {'required': ['maintenance_mode']}],
}


def _check_version(version):
    if version > LAST_VERSION:
        raise errors.not_found('The resource could not be found.')


def index(req, ctx, version):
    _check_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hosts:list', target={})
    services = (services_api.cell_services(ctx, down=[]) +
                services_api.scheduler_services(req, ctx))
    zones = services_api.zones_of_hosts(req, ctx)
    hosts = []
    for service in services:
        if service.binary == services_api.COMPUTE:
            zone = (zones.get(service.host) or
                    CONF.compute.availability_zone)
        else:
            zone = services_api.INTERNAL_ZONE
        hosts.append({'host_name': service.host,
                      'service': service.binary.partition('-')[2],
                      'zone': zone})
    wanted = req.GET.get('zone')
    if wanted:
        hosts = [h for h in hosts if h['zone'] == wanted]
    return {'hosts': hosts}


def _compute_nodes(req, ctx, host_name):
    nodes = [n for n in hypervisors.list_nodes(req, ctx)
             if n.host == host_name]
    if not nodes:
        raise errors.not_found('Host %s could not be found.' % host_name)
    return nodes


def _resource(host, project, cpu, memory_mb, disk_gb):
    return {'resource': {'host': host, 'project': project, 'cpu': cpu,
                         'memory_mb': memory_mb, 'disk_gb': disk_gb}}


def show(req, ctx, version, host_name):
    """Nova's resource lines: the host's totals, what it uses now (its
    reserved memory and disk included), what its servers' flavors add up
    to, and that per project."""
    _check_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hosts:show', target={})
    nodes = _compute_nodes(req, ctx, host_name)
    total = [0, 0, 0]
    now = [0, 0, 0]
    by_project = collections.OrderedDict()
    for node in nodes:
        usage = node.usage()
        total = [total[0] + usage['vcpus'], total[1] + usage['memory_mb'],
                 total[2] + usage['local_gb']]
        now = [now[0] + usage['vcpus_used'],
               now[1] + usage['memory_mb_used'],
               now[2] + usage['local_gb_used']]
        cctx = ss_context.target_cell(ctx, node.service.cell)
        for instance in objects.Instance.get_all(cctx, host=node.host):
            flavor = instance.flavor
            summed = by_project.setdefault(instance.project_id, [0, 0, 0])
            summed[0] += flavor.vcpus
            summed[1] += flavor.memory_mb
            summed[2] += flavor.root_gb + flavor.ephemeral_gb
    most = [sum(p[i] for p in by_project.values()) for i in range(3)]
    lines = [_resource(host_name, '(total)', *total),
             _resource(host_name, '(used_now)', *now),
             _resource(host_name, '(used_max)', *most)]
    lines += [_resource(host_name, project, *summed)
              for project, summed in by_project.items()]
    return {'host': lines}


def update(req, ctx, version, host_name):
    _check_version(version)
    policy.authorize(ctx, 'os_compute_api:os-hosts:update', target={})
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE)
    service = services_api.find_compute(ctx, host_name,
                                        services_api.COMPUTE)
    if 'maintenance_mode' in body:
        raise errors.HTTPError(501, 'Virt driver does not implement host '
                                    'maintenance mode.')
    disabled = body['status'] == 'disable'
    services_api.apply_change(req, ctx, service, disabled=disabled,
                              disabled_reason=None)
    return {'host': host_name,
            'status': 'disabled' if disabled else 'enabled'}


def _power_action(req, ctx, version, host_name, rule, action):
    _check_version(version)
    policy.authorize(ctx, rule, target={})
    _compute_nodes(req, ctx, host_name)
    raise errors.HTTPError(501, 'Virt driver does not implement host %s.'
                           % action)


def reboot(req, ctx, version, host_name):
    return _power_action(req, ctx, version, host_name,
                         'os_compute_api:os-hosts:reboot', 'reboot')


def shutdown(req, ctx, version, host_name):
    return _power_action(req, ctx, version, host_name,
                         'os_compute_api:os-hosts:shutdown', 'shutdown')


def startup(req, ctx, version, host_name):
    return _power_action(req, ctx, version, host_name,
                         'os_compute_api:os-hosts:start', 'startup')
