"""``/v2.1/servers``: boot, list, show, update and delete a server.

How a server looks in an answer is ``server_views``'; what a list holds,
and how it is paged across cells, ``server_list``'s.
"""

import base64
import binascii
import copy
import ipaddress

from scheduler_split.api import availability_zones
from scheduler_split.api import errors
from scheduler_split.api import keypairs
from scheduler_split.api import passwords
from scheduler_split.api import schemas
from scheduler_split.api import server_groups
from scheduler_split.api import server_list
from scheduler_split.api import server_password
from scheduler_split.api import server_views
from scheduler_split.compute import api as compute
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import client as image_client
from scheduler_split import notifications
from scheduler_split import objects
from scheduler_split import policy
from scheduler_split import quota

CONF = conf.CONF


def access_ips(server):
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


def find_image(ctx, image_ref):
    """The image ``image_ref`` (an id or a link to one) as the image
    service holds it: 400 unless it exists and is active."""
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
    return find_image(ctx, image_ref)


def check_flavor_fits_image(flavor, image):
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


def user_data(value):
    """User data as given (base64, as Nova keeps it): 400 in Nova's
    words unless it decodes."""
    if value is None:
        return None
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise errors.bad_request('User data needs to be valid base 64.')
    return value


def _boot_details(server, image):
    properties = image['properties']
    return {'user_data': user_data(server.get('user_data')),
            'kernel_id': properties.get('kernel_id'),
            'ramdisk_id': properties.get('ramdisk_id')}


def _count(server, key, default):
    value = server.get(key, default)
    return int(value)


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
    quota.check_metadata_items(server.get('metadata'))
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
            ctx, server_list.last_part(server['flavorRef']),
            project_id=None if ctx.is_admin
            else ctx.project_id)
    except exception.FlavorNotFound:
        raise errors.bad_request('Flavor %s could not be found.'
                                 % server['flavorRef'])
    if flavor.disabled:
        raise errors.bad_request('Flavor is disabled.')
    image = _image(ctx, server)
    check_flavor_fits_image(flavor, image)
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
    # Made before the boot is recorded: a Windows server keeps it,
    # encrypted for its key pair (see server_password).
    admin_pass = server.get('adminPass') or passwords.generate()
    boot_details = _boot_details(server, image)
    boot_details['system_metadata'] = server_password.system_metadata(
        ctx, ctx.user_id, image['properties'], server.get('key_name'),
        admin_pass)
    reservation_id, instances = compute_api.create(ctx, compute.Boot(
        server['name'], flavor, image['id'], count=max_count,
        image_properties=image['properties'],
        min_count=min_count,
        availability_zone=zone, force_hosts=force_hosts,
        metadata=server.get('metadata'), key_name=server.get('key_name'),
        scheduler_hints=hints, description=server.get('description'),
        group=group, boot_details=boot_details,
        **access_ips(server)))
    if str(server.get('return_reservation_id', '')).lower() in ('true',
                                                                '1'):
        return 202, {'reservation_id': reservation_id}
    first = instances[0]
    answer = {'server': {
        'id': first.uuid, 'links': server_views.links(req, first.uuid),
        'OS-DCF:diskConfig': 'MANUAL',
        'security_groups': security_groups,
    }}
    if CONF.api.enable_instance_password:
        answer['server']['adminPass'] = admin_pass
    return 202, answer


def index(req, ctx, version):
    instances, full, unknown = server_list.listed(
        req, ctx, 'os_compute_api:servers:index',
        'os_compute_api:servers:index:get_all_tenants')
    body = {'servers': [server_views.render_summary(req, i)
                        for i in instances] +
            [server_views.render_unknown_summary(req, mapping)
             for mapping in unknown]}
    body.update(server_list.page_links(req, instances, full))
    return body


def detail(req, ctx, version):
    instances, full, unknown = server_list.listed(
        req, ctx, 'os_compute_api:servers:detail',
        'os_compute_api:servers:detail:get_all_tenants')
    disclosure = server_views.Disclosure(ctx)
    zones = server_views.pinned_zones(ctx, version, instances)
    statuses = server_views.host_statuses(ctx, version, instances,
                                          disclosure)
    body = {'servers': [server_views.render(req, version, i, disclosure,
                                            zones, statuses)
                        for i in instances] +
            [server_views.render_unknown(req, mapping)
             for mapping in unknown]}
    body.update(server_list.page_links(req, instances, full))
    return body


def show(req, ctx, version, server_id):
    try:
        instance = req.compute_api.get(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    except exception.CellUnavailable as exc:
        if version < (2, 69):
            raise
        return _show_unknown(req, ctx, version, server_id, exc)
    policy.authorize(ctx, 'os_compute_api:servers:show',
                     {'project_id': instance.project_id})
    body = server_views.render(req, version, instance,
                               server_views.Disclosure(ctx))
    if version >= (2, 71):
        group = objects.InstanceGroup.get_by_instance_uuid(ctx, server_id)
        body['server_groups'] = [group.uuid] if group else []
    return {'server': body}


def _show_unknown(req, ctx, version, server_id, unavailable):
    """2.69's answer for a server whose cell cannot be reached: what the
    API database knows of it, status UNKNOWN."""
    mapping = unavailable.mapping
    if not ctx.is_admin and mapping.project_id != ctx.project_id:
        raise errors.not_found('Instance %s could not be found.'
                               % server_id)
    policy.authorize(ctx, 'os_compute_api:servers:show',
                     {'project_id': mapping.project_id})
    known = objects.InstanceMapping.get_in_cells(
        ctx, [mapping.cell_mapping.id], instance_uuid=server_id)
    if not known:
        # Deleted meanwhile.
        raise errors.not_found('Instance %s could not be found.'
                               % server_id)
    try:
        spec = objects.RequestSpec.get_by_instance_uuid(ctx, server_id)
    except exception.NotFound:
        spec = None
    body = server_views.render_unknown_server(
        req, version, known[0], spec, server_views.Disclosure(ctx))
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
hostname_v290 = {'type': 'string', 'minLength': 2, 'maxLength': 63,
                 'pattern': '^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$'}
hostname_v294 = {'type': 'string', 'minLength': 1, 'maxLength': 255,
                 'pattern': '^[a-zA-Z0-9-._]*$'}
update_server_v290['properties']['server']['properties']['hostname'] = \
    hostname_v290
update_server_v294 = copy.deepcopy(update_server_v219)
update_server_v294['properties']['server']['properties']['hostname'] = \
    hostname_v294
# A server's metadata as a create or a rebuild gives it.
metadata_schema = schemas.create_server['properties']['server'][
    'properties']['metadata']

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
    changes = access_ips(server)
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
    return render_changed(req, ctx, version, instance)


def render_changed(req, ctx, version, instance):
    """The answer of an update or a rebuild: the server as GET shows it
    from 2.75, without its extended attributes before."""
    result = server_views.render(req, version, instance,
                                 server_views.Disclosure(ctx))
    if version < (2, 75):
        for key in _NOT_IN_UPDATE_BEFORE_2_75:
            result.pop(key, None)
    if version >= (2, 71):
        group = objects.InstanceGroup.get_by_instance_uuid(ctx,
                                                           instance.uuid)
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
