"""How a server looks in the API's answers: its status (Nova's state
map), its body at each microversion and what of it the caller may see."""

import hashlib

from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import service as service_obj
from scheduler_split import policy
from scheduler_split import servicegroup

_STATUS = {
    instance_obj.BUILDING: 'BUILD',
    instance_obj.ACTIVE: 'ACTIVE',
    instance_obj.ERROR: 'ERROR',
    instance_obj.DELETED: 'DELETED',
    instance_obj.STOPPED: 'SHUTOFF',
    instance_obj.PAUSED: 'PAUSED',
    instance_obj.SUSPENDED: 'SUSPENDED',
    instance_obj.RESIZED: 'VERIFY_RESIZE',
    instance_obj.SOFT_DELETED: 'SOFT_DELETED',
    instance_obj.SHELVED: 'SHELVED',
    instance_obj.SHELVED_OFFLOADED: 'SHELVED_OFFLOADED',
}
_RESIZING = {state: 'RESIZE' for state in instance_obj.RESIZE_TASK_STATES}
_REBUILDING = {instance_obj.REBUILDING: 'REBUILD',
               instance_obj.REBUILD_SPAWNING: 'REBUILD'}
# A task state that shows as the status, by vm state (Nova's state map).
_STATUS_OF_TASK = {
    instance_obj.ACTIVE: dict({instance_obj.REBOOTING: 'REBOOT',
                               instance_obj.REBOOTING_HARD: 'HARD_REBOOT',
                               instance_obj.MIGRATING: 'MIGRATING'},
                              **_RESIZING, **_REBUILDING),
    instance_obj.STOPPED: dict({instance_obj.REBOOTING: 'REBOOT',
                                instance_obj.REBOOTING_HARD: 'HARD_REBOOT'},
                               **_RESIZING, **_REBUILDING),
    instance_obj.PAUSED: {instance_obj.MIGRATING: 'MIGRATING'},
    instance_obj.RESIZED: {
        instance_obj.RESIZE_REVERTING: 'REVERT_RESIZE'},
    instance_obj.ERROR: dict(_REBUILDING),
}
# The same map as rules, in the order ``status_of`` applies them (a None
# state matches any): what a cell's database evaluates for a status
# filter.
STATUS_RULES = tuple(
    [(vm_state, task_state, status)
     for vm_state, by_task in _STATUS_OF_TASK.items()
     for task_state, status in by_task.items()] +
    [(vm_state, None, status) for vm_state, status in _STATUS.items()] +
    [(None, None, 'UNKNOWN')])
# The statuses Nova shows a server's progress in (always 0 here: the fake
# driver reports none).
PROGRESS_STATUSES = ('ACTIVE', 'BUILD', 'REBUILD', 'RESIZE',
                     'VERIFY_RESIZE', 'MIGRATING')
_POWER = {instance_obj.NOSTATE: 0, instance_obj.RUNNING: 1,
          instance_obj.PAUSED_POWER: 3, instance_obj.SHUTDOWN: 4,
          instance_obj.SUSPENDED_POWER: 7}


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%SZ') if value else None


def links(req, uuid):
    return [{'rel': 'self',
             'href': '%s/v2.1/servers/%s' % (req.application_url, uuid)},
            {'rel': 'bookmark',
             'href': '%s/servers/%s' % (req.application_url, uuid)}]


def status_of(instance):
    by_task = _STATUS_OF_TASK.get(instance.vm_state, {})
    if instance.task_state in by_task:
        return by_task[instance.task_state]
    return _STATUS.get(instance.vm_state, 'UNKNOWN')


def render_summary(req, instance):
    return {'id': instance.uuid, 'name': instance.display_name,
            'links': links(req, instance.uuid)}


# What 2.69 shows of a server whose cell cannot be reached.
UNKNOWN = 'UNKNOWN'


def render_unknown_summary(req, mapping):
    """A server of a cell that cannot be reached, in a list: its
    instance mapping (see ``server_list.listed``) is all there is."""
    return {'id': mapping.instance_uuid, 'status': UNKNOWN,
            'links': links(req, mapping.instance_uuid)}


def render_unknown(req, mapping):
    """The same in a detailed list: also whose it is and when it was
    created."""
    return dict(render_unknown_summary(req, mapping),
                tenant_id=mapping.project_id,
                created=_time(mapping.created_at))


class Disclosure:
    """The optional parts of a server body the caller may see, decided by
    policy once per request rather than once per server."""

    def __init__(self, ctx):
        self.host = policy.authorize(
            ctx, 'os_compute_api:os-extended-server-attributes',
            fatal=False)
        self.host_status = policy.authorize(
            ctx, 'os_compute_api:servers:show:host_status', fatal=False)
        self.flavor_extra_specs = policy.authorize(
            ctx, 'os_compute_api:servers:show:flavor-extra-specs',
            fatal=False)
        # As in Nova, the details of an internal error (a fault with code
        # 500) are for whoever passes context_is_admin.
        self.internal_fault_details = ctx.is_admin


def pinned_zones(ctx, version, instances):
    """``{uuid: the zone the user asked for}`` of ``instances``, which 2.96
    shows as the zone that pins each (an instance's own
    ``availability_zone`` is its host's once it is scheduled); one read
    for all of them."""
    if version < (2, 96):
        return {}
    return objects.RequestSpec.get_availability_zones(
        ctx, [i.uuid for i in instances])


def host_id(project_id, host):
    """What a project sees of a host (a server's ``hostId``, an action
    event's): a hash of the two, '' without a host."""
    if not host:
        return ''
    return hashlib.sha224(('%s%s' % (project_id, host)).encode()).hexdigest()


def host_statuses(ctx, version, instances, disclosure):
    """``{host: status}`` of the hosts of ``instances`` for 2.16's
    ``host_status`` (UP, DOWN, MAINTENANCE for a disabled compute,
    UNKNOWN for one with no record), read from each cell's service
    records once per request; {} when the caller may not see it."""
    if version < (2, 16) or not disclosure.host_status:
        return {}
    hosts = {i.host for i in instances if i.host}
    if not hosts:
        return {}
    found = {}
    since = servicegroup.up_since()
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            continue
        try:
            services = objects.Service.get_all(
                ss_context.target_cell(ctx, cell))
        except outage.DATABASE_UNAVAILABLE:
            # Its servers are not listed (see server_list.listed); a
            # host of it is UNKNOWN.
            continue
        for service in services:
            if (service.binary != service_obj.COMPUTE or
                    service.host not in hosts):
                continue
            if not servicegroup.is_up(service.last_seen_up,
                                      service.forced_down, since):
                found[service.host] = 'DOWN'
            elif service.disabled:
                found[service.host] = 'MAINTENANCE'
            else:
                found[service.host] = 'UP'
    return {host: found.get(host, 'UNKNOWN') for host in hosts}


def _flavor(req, version, flavor, disclosure):
    if version >= (2, 47):
        body = {'vcpus': flavor.vcpus, 'ram': flavor.memory_mb,
                'disk': flavor.root_gb, 'ephemeral': flavor.ephemeral_gb,
                'swap': flavor.swap, 'original_name': flavor.name}
        if disclosure.flavor_extra_specs:
            body['extra_specs'] = dict(flavor.extra_specs)
        return body
    return {'id': flavor.flavorid,
            'links': [{'rel': 'bookmark',
                       'href': '%s/flavors/%s' % (req.application_url,
                                                  flavor.flavorid)}]}


def _image(req, image_ref):
    if not image_ref:
        return ''
    return {'id': image_ref,
            'links': [{'rel': 'bookmark',
                       'href': '%s/images/%s' % (req.application_url,
                                                 image_ref)}]}


def render_unknown_server(req, version, mapping, spec, disclosure):
    """What 2.69 shows of one server whose cell cannot be reached: what
    its instance mapping (a row of ``InstanceMapping.get_in_cells``) and
    its request spec (None if it has none) tell."""
    body = dict(render_unknown(req, mapping),
                user_id=mapping.user_id or UNKNOWN,
                image='', **{'OS-EXT-AZ:availability_zone': UNKNOWN,
                             'OS-EXT-STS:power_state': 0})
    if spec is not None:
        body['image'] = _image(req, spec.image_ref)
        body['flavor'] = _flavor(req, version, spec.flavor, disclosure)
        body['OS-EXT-AZ:availability_zone'] = \
            spec.availability_zone or UNKNOWN
    return body


def render(req, version, instance, disclosure, zones=None, statuses=None):
    """The server body of ``instance``; ``zones`` are the
    ``pinned_zones`` of a list it is in (read for it alone if None), and
    ``statuses`` its ``host_statuses`` (the same)."""
    host_id_ = host_id(instance.project_id, instance.host)
    flavor_body = _flavor(req, version, instance.flavor, disclosure)
    image_body = _image(req, instance.image_ref)
    body = {
        'id': instance.uuid,
        'name': instance.display_name,
        'status': status_of(instance),
        'tenant_id': instance.project_id,
        'user_id': instance.user_id,
        'metadata': dict(instance.metadata),
        'hostId': host_id_,
        'image': image_body,
        'flavor': flavor_body,
        'created': _time(instance.created_at),
        'updated': _time(instance.updated_at or instance.created_at),
        'addresses': {},
        'accessIPv4': _address(instance.get('access_ip_v4')),
        'accessIPv6': _address(instance.get('access_ip_v6')),
        'links': links(req, instance.uuid),
        'OS-DCF:diskConfig': 'MANUAL',
        'OS-EXT-AZ:availability_zone': instance.availability_zone or '',
        'config_drive': '',
        'key_name': instance.key_name,
        'OS-SRV-USG:launched_at': _time(instance.launched_at),
        'OS-SRV-USG:terminated_at': _time(instance.terminated_at),
        'OS-EXT-STS:task_state': instance.task_state,
        'OS-EXT-STS:vm_state': instance.vm_state,
        'OS-EXT-STS:power_state': _POWER.get(instance.power_state, 0),
        'os-extended-volumes:volumes_attached': [],
    }
    if body['status'] in PROGRESS_STATUSES:
        body['progress'] = 0
    if disclosure.host:
        body['OS-EXT-SRV-ATTR:host'] = instance.host
        body['OS-EXT-SRV-ATTR:hypervisor_hostname'] = instance.node
        body['OS-EXT-SRV-ATTR:instance_name'] = 'instance-%s' % \
            instance.uuid[:8]
        if version >= (2, 3):
            body.update({
                'OS-EXT-SRV-ATTR:reservation_id': instance.reservation_id,
                'OS-EXT-SRV-ATTR:launch_index': instance.launch_index or 0,
                'OS-EXT-SRV-ATTR:hostname': instance.hostname or '',
                'OS-EXT-SRV-ATTR:kernel_id': instance.get('kernel_id') or '',
                'OS-EXT-SRV-ATTR:ramdisk_id':
                    instance.get('ramdisk_id') or '',
                'OS-EXT-SRV-ATTR:root_device_name':
                    instance.get('root_device_name'),
                'OS-EXT-SRV-ATTR:user_data': instance.get('user_data'),
            })
    if version >= (2, 16) and disclosure.host_status:
        if statuses is None:
            statuses = host_statuses(req.ctx, version, [instance],
                                     disclosure)
        body['host_status'] = statuses.get(instance.host, '')
    if version >= (2, 9):
        body['locked'] = bool(instance.get('locked', False))
    if version >= (2, 19):
        body['description'] = instance.display_description
    if version >= (2, 26):
        body['tags'] = list(instance.get('tags') or [])
    if version >= (2, 63):
        body['trusted_image_certificates'] = None
    if version >= (2, 73):
        body['locked_reason'] = instance.get('locked_reason')
    if version >= (2, 96):
        if zones is None:
            zones = pinned_zones(req.ctx, version, [instance])
        body['pinned_availability_zone'] = zones.get(instance.uuid)
    fault = instance.get('fault')
    if instance.vm_state == instance_obj.ERROR and fault is not None:
        body['fault'] = _render_fault(fault, disclosure)
    return body


def _render_fault(fault, disclosure):
    """A fault as its server's owner sees it.

    ``details`` (which may hold a traceback, paths and host names) are for
    admins only; everyone else sees the code and the first line of the
    message, which is what the failure was, never where in the code.
    """
    if disclosure.internal_fault_details:
        return {'code': fault.code, 'message': fault.message,
                'details': fault.details or '',
                'created': _time(fault.created_at)}
    message = (fault.message or '').split('\n', 1)[0].strip()
    return {'code': fault.code, 'message': message,
            'created': _time(fault.created_at)}


def _address(value):
    return '' if value is None else str(value)
