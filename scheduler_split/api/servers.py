"""``/v2.1/servers``."""

import copy
import hashlib
import ipaddress
import time

from oslo_utils import timeutils
import regex

from scheduler_split.api import availability_zones
from scheduler_split.api import errors
from scheduler_split.api import image_client
from scheduler_split.api import keypairs
from scheduler_split.api import microversion
from scheduler_split.api import paging
from scheduler_split.api import schemas
from scheduler_split.api import server_groups
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance as instance_obj
from scheduler_split import policy

CONF = conf.CONF

_STATUS = {
    instance_obj.BUILDING: 'BUILD',
    instance_obj.ACTIVE: 'ACTIVE',
    instance_obj.ERROR: 'ERROR',
    instance_obj.DELETED: 'DELETED',
    instance_obj.STOPPED: 'SHUTOFF',
    instance_obj.PAUSED: 'PAUSED',
    instance_obj.SUSPENDED: 'SUSPENDED',
    instance_obj.RESIZED: 'VERIFY_RESIZE',
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
_POWER = {instance_obj.NOSTATE: 0, instance_obj.RUNNING: 1,
          instance_obj.PAUSED_POWER: 3, instance_obj.SHUTDOWN: 4,
          instance_obj.SUSPENDED_POWER: 7}


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%SZ') if value else None


def _links(req, uuid):
    return [{'rel': 'self',
             'href': '%s/v2.1/servers/%s' % (req.application_url, uuid)},
            {'rel': 'bookmark',
             'href': '%s/servers/%s' % (req.application_url, uuid)}]


def status_of(instance):
    by_task = _STATUS_OF_TASK.get(instance.vm_state, {})
    if instance.task_state in by_task:
        return by_task[instance.task_state]
    return _STATUS.get(instance.vm_state, 'UNKNOWN')


def _requested_zone(ctx, instance):
    """The zone the user asked for, which pins the server; the instance's
    own ``availability_zone`` is its host's once it is scheduled."""
    try:
        spec = objects.RequestSpec.get_by_instance_uuid(ctx, instance.uuid)
    except exception.NotFound:
        return None
    return spec.availability_zone


def render_summary(req, instance):
    return {'id': instance.uuid, 'name': instance.display_name,
            'links': _links(req, instance.uuid)}


class Disclosure:
    """The optional parts of a server body the caller may see, decided by
    policy once per request rather than once per server."""

    def __init__(self, ctx):
        self.host = policy.authorize(
            ctx, 'os_compute_api:os-extended-server-attributes',
            fatal=False)
        self.flavor_extra_specs = policy.authorize(
            ctx, 'os_compute_api:servers:show:flavor-extra-specs',
            fatal=False)
        # As in Nova, the details of an internal error (a fault with code
        # 500) are for whoever passes context_is_admin.
        self.internal_fault_details = policy.check_is_admin(ctx)


def render(req, version, instance, disclosure):
    host_id = ''
    if instance.host:
        host_id = hashlib.sha224(('%s%s' % (
            instance.project_id, instance.host)).encode()).hexdigest()
    flavor = instance.flavor
    if version >= (2, 47):
        flavor_body = {'vcpus': flavor.vcpus, 'ram': flavor.memory_mb,
                       'disk': flavor.root_gb,
                       'ephemeral': flavor.ephemeral_gb,
                       'swap': flavor.swap, 'original_name': flavor.name}
        if disclosure.flavor_extra_specs:
            flavor_body['extra_specs'] = dict(flavor.extra_specs)
    else:
        flavor_body = {'id': flavor.flavorid,
                       'links': [{'rel': 'bookmark',
                                  'href': '%s/flavors/%s' % (
                                      req.application_url,
                                      flavor.flavorid)}]}
    image_body = ''
    if instance.image_ref:
        image_body = {'id': instance.image_ref,
                      'links': [{'rel': 'bookmark',
                                 'href': '%s/images/%s' % (
                                     req.application_url,
                                     instance.image_ref)}]}
    body = {
        'id': instance.uuid,
        'name': instance.display_name,
        'status': status_of(instance),
        'tenant_id': instance.project_id,
        'user_id': instance.user_id,
        'metadata': dict(instance.metadata),
        'hostId': host_id,
        'image': image_body,
        'flavor': flavor_body,
        'created': _time(instance.created_at),
        'updated': _time(instance.updated_at or instance.created_at),
        'addresses': {},
        'accessIPv4': _address(instance.get('access_ip_v4')),
        'accessIPv6': _address(instance.get('access_ip_v6')),
        'links': _links(req, instance.uuid),
        'OS-DCF:diskConfig': 'MANUAL',
        'progress': 0,
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
    if disclosure.host:
        body['OS-EXT-SRV-ATTR:host'] = instance.host
        body['OS-EXT-SRV-ATTR:hypervisor_hostname'] = instance.node
        body['OS-EXT-SRV-ATTR:instance_name'] = 'instance-%s' % \
            instance.uuid[:8]
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
        body['pinned_availability_zone'] = _requested_zone(req.ctx, instance)
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


def _access_ips(server):
    """accessIPv4/accessIPv6 of a create or update body, as Instance
    fields; an address is kept in its canonical form (RFC 5952 for IPv6).
    """
    changes = {}
    if 'accessIPv4' in server:
        changes['access_ip_v4'] = str(ipaddress.IPv4Address(
            server['accessIPv4']))
    if 'accessIPv6' in server:
        changes['access_ip_v6'] = str(ipaddress.IPv6Address(
            server['accessIPv6']))
    return changes


def _security_groups(server):
    """The security groups a create asks for.

    There is no networking service, so no group exists but the one every
    project has: ``default`` is accepted (and echoed, as Nova does), any
    other is a 400 as an unknown group is in Nova.
    """
    groups = server.get('security_groups')
    if groups is None:
        return [{'name': 'default'}]
    for group in groups:
        name = group.get('name')
        if name != 'default':
            raise errors.bad_request('Security group %s not found.' % name)
    return groups


def _last_part(ref):
    return str(ref).rstrip('/').rsplit('/', 1)[-1]


def _flavor_id(flavor_ref):
    return _last_part(flavor_ref)


def _image(ctx, server):
    """The image to boot from (see ``image_client.get``): imageRef, or
    the image block device.

    There is no block storage service: a block device may only name an
    image as the local boot disk.
    """
    image_ref = server.get('imageRef') or ''
    for bdm in server.get('block_device_mapping_v2', []):
        if (bdm.get('source_type') != 'image' or
                bdm.get('destination_type', 'local') != 'local'):
            raise errors.bad_request(
                'Only an image as the local boot disk is supported in '
                'block_device_mapping_v2: there is no block storage '
                'service.')
        if not image_ref:
            image_ref = bdm.get('uuid') or ''
    if not image_ref:
        raise errors.bad_request('Missing imageRef attribute')
    image_ref = image_ref.rstrip('/').rsplit('/', 1)[-1]
    try:
        image = image_client.get(ctx, image_ref)
    except exception.ImageNotFound:
        raise errors.bad_request('Can not find requested image')
    except exception.ImageServiceUnavailable:
        raise errors.HTTPError(503, 'The image service is unavailable.')
    if image['status'] != 'active':
        raise errors.bad_request('Image %s is not active.' % image['id'])
    return image


def _check_flavor_fits_image(flavor, image):
    """400, as Nova's, for a flavor smaller than the image's minimums; a
    flavor with no root disk (0) boots on whatever disk it is given."""
    if image['min_ram'] > flavor.memory_mb:
        raise errors.bad_request(
            "Flavor's memory is too small for requested image.")
    if flavor.root_gb and image['min_disk'] > flavor.root_gb:
        raise errors.bad_request(
            "Flavor's disk is too small for requested image.")


def _zone_and_host(ctx, value, target):
    """``zone``, ``zone:host`` or ``:host``: forcing a host takes
    ``os_compute_api:servers:create:forced_host`` (admins by default)."""
    if not value or ':' not in value:
        return value or None, None
    zone, _, host = value.partition(':')
    host = host.partition(':')[0]
    policy.authorize(ctx, 'os_compute_api:servers:create:forced_host',
                     target)
    if not host:
        raise errors.bad_request('Invalid availability_zone %s: no host '
                                 'after the colon' % value)
    return zone or None, [host]


def _count(server, key, default):
    value = server.get(key, default)
    return int(value)


def check_metadata_quota(metadata):
    """403, as Nova's, for more metadata items than ``[quota]
    metadata_items``; the schema has already checked each key (1 to 255
    characters) and value (at most 255)."""
    allowed = CONF.quota.metadata_items
    if metadata and 0 <= allowed < len(metadata):
        raise errors.HTTPError(
            403, 'Quota exceeded for metadata items: Requested %d, but the '
                 'limit is %d. Maximum number of metadata items exceeds %d'
            % (len(metadata), allowed, allowed))


def create(req, ctx, version):
    compute_api = req.compute_api
    body = req.json_body_or_error()
    schemas.validate(body, schemas.create_server)
    target = {'project_id': ctx.project_id, 'user_id': ctx.user_id}
    policy.authorize(ctx, 'os_compute_api:servers:create', target)
    server = body['server']
    if version >= (2, 37) and 'networks' not in server:
        raise errors.bad_request(
            "Invalid input for field/attribute server. Value: %s. "
            "'networks' is a required property" % server)
    networks = server.get('networks')
    if networks == 'auto' or (isinstance(networks, list) and networks):
        raise errors.bad_request(
            'Requested networks are not available: there is no networking '
            'service. Use "networks": "none".')
    if 'description' in server and version < (2, 19):
        raise errors.bad_request(
            "Invalid input for field/attribute server. Additional "
            "properties are not allowed ('description' was unexpected)")
    check_metadata_quota(server.get('metadata'))
    min_count = _count(server, 'min_count', 1)
    max_count = _count(server, 'max_count', min_count)
    if min_count > max_count:
        raise errors.bad_request('min_count must be <= max_count')
    if max_count > CONF.api.max_servers_per_request:
        raise errors.HTTPError(
            413, 'Quota exceeded for instances: Requested %d, but at most '
                 '%d may be created in one request.'
            % (max_count, CONF.api.max_servers_per_request))
    try:
        # A private flavor only for projects given access to it.
        flavor = objects.Flavor.get_by_flavor_id(
            ctx, _flavor_id(server['flavorRef']),
            project_id=None if policy.check_is_admin(ctx)
            else ctx.project_id)
    except exception.FlavorNotFound:
        raise errors.bad_request('Flavor %s could not be found.'
                                 % server['flavorRef'])
    if flavor.disabled:
        raise errors.bad_request('Flavor is disabled.')
    image = _image(ctx, server)
    _check_flavor_fits_image(flavor, image)
    security_groups = _security_groups(server)
    hints = body.get('os:scheduler_hints') or body.get(
        'OS-SCH-HNT:scheduler_hints') or {}
    hints = {k: [str(x) for x in (v if isinstance(v, list) else [v])]
             for k, v in hints.items()}
    zone, force_hosts = _zone_and_host(ctx, server.get('availability_zone'),
                                       target)
    availability_zones.check_requested_zone(req, ctx, zone)
    group = None
    if hints.get('group'):
        try:
            group = server_groups.get_visible(ctx, hints['group'][0])
        except exception.InstanceGroupNotFound as exc:
            raise errors.bad_request(exc.format_message())
    keypairs.check_key_name(ctx, server.get('key_name'))
    reservation_id, instances = compute_api.create(
        ctx, server['name'], flavor, image['id'], count=max_count,
        image_properties=image['properties'],
        min_count=min_count,
        availability_zone=zone, force_hosts=force_hosts,
        metadata=server.get('metadata'), key_name=server.get('key_name'),
        scheduler_hints=hints, description=server.get('description'),
        group=group, **_access_ips(server))
    if str(server.get('return_reservation_id', '')).lower() in ('true',
                                                                '1'):
        return 202, {'reservation_id': reservation_id}
    first = instances[0]
    return 202, {'server': {
        'id': first.uuid, 'links': _links(req, first.uuid),
        'OS-DCF:diskConfig': 'MANUAL',
        'adminPass': server.get('adminPass') or 'not-set',
        'security_groups': security_groups,
    }}


def _matches(req, instance):
    status = req.GET.get('status')
    if status and status_of(instance) != status.upper():
        return False
    # Like Nova, ``image`` and ``flavor`` take an id or a link to one.
    image = req.GET.get('image')
    if image and instance.image_ref != _last_part(image):
        return False
    flavor = req.GET.get('flavor')
    if flavor and instance.flavor.flavorid != _last_part(flavor):
        return False
    reservation_id = req.GET.get('reservation_id')
    if reservation_id and instance.get('reservation_id') != reservation_id:
        return False
    for param, value in req.environ.get('scheduler_split.admin_filters',
                                        {}).items():
        if (instance.get(param) or '') != value:
            return False
    name_filter = req.environ.get('scheduler_split.name_filter')
    if name_filter and not name_filter(instance.display_name or ''):
        return False
    tag_filter = req.environ.get('scheduler_split.tag_filter')
    if tag_filter and not tag_filter(instance):
        return False
    return True


# Longer than any server name: a pattern that long is no name filter.
_MAX_NAME_PATTERN = 255
_COUNTED_REPEAT = regex.compile(r'\{\s*([0-9]*)\s*,?\s*([0-9]*)\s*\}')
_MAX_REPEAT_PRODUCT = 10000


def _name_filter(req):
    """The ``name`` query parameter as a predicate on server names.

    It is a regular expression, as in Nova, run here in the API process:
    the ``regex`` engine's timeout bounds the time all the names of one
    listing may take together, so that a pattern with catastrophic
    backtracking gets a 400 instead of stalling the API.
    """
    pattern = req.GET.get('name')
    if not pattern:
        return None
    if len(pattern) > _MAX_NAME_PATTERN:
        raise errors.bad_request('Invalid name filter: longer than %d '
                                 'characters' % _MAX_NAME_PATTERN)
    # The engine unrolls counted repetitions as it compiles, which no
    # timeout bounds: (?:(?:a{255}){255}){255} takes seconds to compile.
    # Their product is what it unrolls at most.
    product = 1
    for bounds in _COUNTED_REPEAT.findall(pattern):
        product *= max([int(b) for b in bounds if b] + [1])
    if product > _MAX_REPEAT_PRODUCT:
        raise errors.bad_request(
            'Invalid name filter: %s repeats too much; use a simpler '
            'regular expression' % pattern)
    budget = CONF.api.name_filter_timeout_ms / 1000.0
    try:
        compiled = regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        raise errors.bad_request('Invalid name filter: %s is not a valid '
                                 'regular expression' % pattern)
    # What the matching itself took, summed over the names of this
    # listing; the rest of the request (reading the cells, say) does not
    # count against the budget.
    spent = [0.0]

    def matches(name):
        remaining = budget - spent[0]
        started = time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return compiled.search(name, timeout=remaining,
                                   concurrent=True) is not None
        except TimeoutError:
            raise errors.bad_request(
                'Invalid name filter: %s takes too long to match; use a '
                'simpler regular expression' % pattern)
        finally:
            spent[0] += time.monotonic() - started
    return matches


def _time_parameter(req, name):
    """The ISO 8601 time of query parameter ``name`` (naive UTC), or None;
    400 when it is no such time, as Nova's query schema answers."""
    raw = req.GET.get(name)
    if raw is None:
        return None
    try:
        return obj_base.naive_utc(timeutils.parse_isotime(raw))
    except (ValueError, OverflowError):
        raise errors.bad_request(
            "Invalid input for query parameters %s. Value: %s. '%s' is not "
            "a 'date-time'" % (name, raw[:64], raw[:64]))


def _listed(req, ctx, compute_api, rule, all_tenants_rule):
    policy.authorize(ctx, rule)
    all_tenants = req.GET.get('all_tenants', 'false').lower() not in (
        'false', '0', 'no', 'f', 'off')
    if 'all_tenants' in req.GET and req.GET['all_tenants'] == '':
        all_tenants = True
    if all_tenants:
        policy.authorize(ctx, all_tenants_rule)
    req.environ['scheduler_split.name_filter'] = _name_filter(req)
    from scheduler_split.api import server_metadata
    req.environ['scheduler_split.tag_filter'] = server_metadata.tag_filter(
        req, microversion.parse(req))
    admin = policy.check_is_admin(ctx)
    # As in Nova, an admin narrows by host and node, and with all_tenants
    # by project; for anyone else these are ignored.
    wanted = {}
    if admin:
        for param in ('host', 'node'):
            if req.GET.get(param):
                wanted[param] = req.GET[param]
        project = req.GET.get('project_id') or req.GET.get('tenant_id')
        if all_tenants and project:
            wanted['project_id'] = project
    req.environ['scheduler_split.admin_filters'] = wanted
    sort_keys, sort_dirs = _sort(req, admin)
    since = _time_parameter(req, 'changes-since')
    instances = [i for i in compute_api.list(ctx, all_tenants=all_tenants,
                                             changed_since=since)
                 if _matches(req, i)]
    if since is not None:
        # Deleted servers are not listed, so this only narrows the list to
        # the servers changed since then.
        instances = [i for i in instances
                     if obj_base.naive_utc(i.updated_at or i.created_at)
                     >= since]
    if sort_keys:
        # Stable sorts, last key first, give the order of all the keys.
        for key, direction in reversed(list(zip(sort_keys, sort_dirs))):
            instances.sort(key=lambda i: _sort_value(i, key),
                           reverse=direction == 'desc')
    marker = req.GET.get('marker')
    if marker:
        uuids = [i.uuid for i in instances]
        if marker not in uuids:
            raise errors.bad_request('marker [%s] not found' % marker)
        instances = instances[uuids.index(marker) + 1:]
    limit = schemas.non_negative_query(req, 'limit')
    limit = min(CONF.api.max_limit,
                CONF.api.max_limit if limit is None else limit)
    full = len(instances) > limit
    return instances[:limit], full


# What servers may be sorted by, as Nova names them; only admins sort by
# where servers run.
_SORT_KEYS = {
    'created_at': 'created_at', 'updated_at': 'updated_at',
    'launched_at': 'launched_at', 'terminated_at': 'terminated_at',
    'display_name': 'display_name', 'display_description':
    'display_description', 'uuid': 'uuid', 'vm_state': 'vm_state',
    'task_state': 'task_state', 'power_state': 'power_state',
    'availability_zone': 'availability_zone', 'project_id': 'project_id',
    'user_id': 'user_id', 'key_name': 'key_name', 'locked': 'locked',
    'hostname': 'hostname', 'host': 'host', 'node': 'node',
}
_ADMIN_SORT_KEYS = ('host', 'node')


def _sort(req, admin):
    keys = req.GET.getall('sort_key')
    dirs = req.GET.getall('sort_dir')
    for key in keys:
        if key not in _SORT_KEYS:
            raise errors.bad_request('Invalid sort_key %s' % key)
        if key in _ADMIN_SORT_KEYS and not admin:
            raise errors.HTTPError(403, 'Only administrators can sort '
                                        'servers by %s' % key)
    for direction in dirs:
        if direction not in ('asc', 'desc'):
            raise errors.bad_request('Invalid sort_dir %s' % direction)
    if dirs and len(dirs) != len(keys):
        raise errors.bad_request('The number of sort_keys and sort_dirs '
                                 'must be the same')
    return keys, dirs or ['desc'] * len(keys)


def _sort_value(instance, key):
    value = instance.get(_SORT_KEYS[key], None)
    # None sorts first, whatever the type of the others.
    return (value is not None, value if value is not None else 0)


def _page(req, servers, full):
    """``servers_links`` with a next link when more servers follow."""
    if not full or not servers:
        return {}
    return {'servers_links': paging.next_links(
        req, servers[-1].uuid, default_limit=CONF.api.max_limit)}


def index(req, ctx, version):
    instances, full = _listed(
        req, ctx, req.compute_api, 'os_compute_api:servers:index',
        'os_compute_api:servers:index:get_all_tenants')
    body = {'servers': [render_summary(req, i) for i in instances]}
    body.update(_page(req, instances, full))
    return body


def detail(req, ctx, version):
    instances, full = _listed(
        req, ctx, req.compute_api, 'os_compute_api:servers:detail',
        'os_compute_api:servers:detail:get_all_tenants')
    disclosure = Disclosure(ctx)
    body = {'servers': [render(req, version, i, disclosure)
                        for i in instances]}
    body.update(_page(req, instances, full))
    return body


def show(req, ctx, version, server_id):
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, 'os_compute_api:servers:show',
                     {'project_id': instance.project_id})
    body = render(req, version, instance, Disclosure(ctx))
    if version >= (2, 71):
        group = objects.InstanceGroup.get_by_instance_uuid(ctx, server_id)
        body['server_groups'] = [group.uuid] if group else []
    return {'server': body}


def _addresses(req, ctx, server_id, rule):
    """A server's addresses by network label; this cloud has no network
    service, so a server is on no network and the map is empty."""
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, rule, {'project_id': instance.project_id})
    return {}


def ips_index(req, ctx, version, server_id):
    return {'addresses': _addresses(req, ctx, server_id,
                                    'os_compute_api:ips:index')}


def ips_show(req, ctx, version, server_id, network_label):
    addresses = _addresses(req, ctx, server_id, 'os_compute_api:ips:show')
    if network_label not in addresses:
        raise errors.not_found('Instance is not a member of specified '
                               'network')
    return {network_label: addresses[network_label]}


# PUT /servers/{id}, as Nova's schemas.servers.update: 2.1 name and the
# access addresses (and the disk config, which only MANUAL serves);
# 2.19 description (null removes it).
update_server = {
    'type': 'object',
    'properties': {
        'server': {
            'type': 'object',
            'properties': {
                'name': schemas.name,
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
                'accessIPv4': schemas.access_ip_v4,
                'accessIPv6': schemas.access_ip_v6,
            },
            'additionalProperties': False,
        },
    },
    'required': ['server'],
    'additionalProperties': False,
}
update_server_v219 = copy.deepcopy(update_server)
update_server_v219['properties']['server']['properties']['description'] = {
    'type': ['string', 'null'], 'maxLength': 255}
# 2.90: the hostname (as Nova's parameter_types.hostname); 2.94: any FQDN.
update_server_v290 = copy.deepcopy(update_server_v219)
update_server_v290['properties']['server']['properties']['hostname'] = {
    'type': 'string', 'minLength': 2, 'maxLength': 63,
    'pattern': '^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$'}
update_server_v294 = copy.deepcopy(update_server_v219)
update_server_v294['properties']['server']['properties']['hostname'] = {
    'type': 'string', 'minLength': 1, 'maxLength': 255,
    'pattern': '^[a-zA-Z0-9-._]*$'}

# What the update answer leaves out before 2.75, from which it shows the
# server as GET does (Nova's ``show_all_attributes``).
_NOT_IN_UPDATE_BEFORE_2_75 = (
    'OS-EXT-AZ:availability_zone', 'config_drive', 'key_name',
    'OS-SRV-USG:launched_at', 'OS-SRV-USG:terminated_at',
    'OS-EXT-STS:task_state', 'OS-EXT-STS:vm_state',
    'OS-EXT-STS:power_state', 'os-extended-volumes:volumes_attached',
    'OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname',
    'OS-EXT-SRV-ATTR:instance_name')


def update(req, ctx, version, server_id):
    body = req.json_body_or_error()
    if version >= (2, 94):
        schema = update_server_v294
    elif version >= (2, 90):
        schema = update_server_v290
    elif version >= (2, 19):
        schema = update_server_v219
    else:
        schema = update_server
    schemas.validate(body, schema)
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, 'os_compute_api:servers:update',
                     {'project_id': instance.project_id,
                      'user_id': instance.user_id})
    server = body['server']
    changes = _access_ips(server)
    if 'name' in server:
        changes['display_name'] = server['name']
    if 'description' in server:
        changes['display_description'] = server['description']
    if 'hostname' in server:
        changes['hostname'] = server['hostname']
    try:
        instance = req.compute_api.update(ctx, instance, changes)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    notifications.instance_event(ctx, notifications.api_publisher(),
                                 instance, 'instance.update')
    result = render(req, version, instance, Disclosure(ctx))
    if version < (2, 75):
        for key in _NOT_IN_UPDATE_BEFORE_2_75:
            result.pop(key, None)
    if version >= (2, 71):
        group = objects.InstanceGroup.get_by_instance_uuid(ctx, server_id)
        result['server_groups'] = [group.uuid] if group else []
    return {'server': result}


def delete(req, ctx, version, server_id):
    try:
        instance = req.compute_api.get(ctx, server_id)
        policy.authorize(ctx, 'os_compute_api:servers:delete',
                         {'project_id': instance.project_id})
        req.compute_api.check_lock(ctx, instance)
        req.compute_api.delete(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    return 204, None
