"""``POST /servers/{id}/action {"rebuild": ...}``: the server again from
an image, on its own host, keeping its uuid, flavor and claim.

What the body may change, by microversion (as Nova's): the image (required),
name, metadata (replaced whole), access addresses, admin password,
``preserve_ephemeral`` and (until 2.56) personality files; the description
from 2.19, the key pair from 2.54 (null removes it), the user data from
2.57 (null removes it; personality goes), trusted image certificates from
2.63 (none are kept here: only null), the hostname from 2.90.

The answer is 202 with the server as ``PUT /servers/{id}`` shows it (all
of it from 2.75), ``rebuilding``, its key pair from 2.54 and user data
from 2.57, and its admin password; see
``ComputeAPI.rebuild`` for what happens behind it.
"""

import copy

from scheduler_split.api import errors
from scheduler_split.api import keypairs
from scheduler_split.api import passwords
from scheduler_split.api import schemas
from scheduler_split.api import server_password
from scheduler_split.api import servers
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import policy
from scheduler_split import quota

CONF = conf.CONF

_BOOLEAN = {'type': ['boolean', 'string'],
            'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
                     'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false',
                     '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']}
_TRUE = (True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on', 'YES', 'Yes',
         'yes')

_personality = {
    'type': 'array',
    'items': {'type': 'object',
              'properties': {'path': {'type': 'string'},
                             'contents': {'type': 'string',
                                          'format': 'base64'}},
              'additionalProperties': False}}

_base = {
    'type': 'object',
    'properties': {
        'rebuild': {
            'type': 'object',
            'properties': {
                'name': schemas.name,
                'imageRef': {'type': 'string', 'minLength': 1,
                             'maxLength': 255},
                'adminPass': {'type': 'string'},
                'metadata': servers.metadata_schema,
                'preserve_ephemeral': _BOOLEAN,
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
                'accessIPv4': schemas.access_ip_v4,
                'accessIPv6': schemas.access_ip_v6,
                'personality': _personality,
            },
            'required': ['imageRef'],
            'additionalProperties': False,
        },
    },
    'required': ['rebuild'],
    'additionalProperties': False,
}


def _schema(version):
    schema = copy.deepcopy(_base)
    properties = schema['properties']['rebuild']['properties']
    if version >= (2, 19):
        properties['description'] = {'type': ['string', 'null'],
                                     'maxLength': 255}
    if version >= (2, 54):
        properties['key_name'] = {'type': ['string', 'null'],
                                  'minLength': 1, 'maxLength': 255}
    if version >= (2, 57):
        properties['user_data'] = {'type': ['string', 'null'],
                                   'maxLength': 65535}
        del properties['personality']
    if version >= (2, 63):
        properties['trusted_image_certificates'] = {
            'type': ['array', 'null'], 'items': {'type': 'string'}}
    if version >= (2, 94):
        properties['hostname'] = servers.hostname_v294
    elif version >= (2, 90):
        properties['hostname'] = servers.hostname_v290
    return schema


def rebuild(req, ctx, version, instance, body):
    schemas.validate(body, _schema(version))
    args = body['rebuild']
    target = {'project_id': instance.project_id,
              'user_id': instance.user_id}
    policy.authorize(ctx, 'os_compute_api:servers:rebuild', target)
    if args.get('trusted_image_certificates'):
        raise errors.bad_request(
            'Image certificate validation is not supported: no trusted '
            'certificates may be given.')
    if args.get('personality'):
        raise errors.bad_request(
            'Personality files are not supported: use user_data.')
    image = servers.find_image(ctx, args['imageRef'])
    servers.check_flavor_fits_image(instance.flavor, image)
    changes = servers.access_ips(args)
    if 'name' in args:
        changes['display_name'] = args['name']
    if 'metadata' in args:
        quota.check_metadata_items(args['metadata'])
        changes['metadata'] = args['metadata']
    if 'description' in args:
        changes['display_description'] = args['description']
    if 'key_name' in args:
        keypairs.check_key_name(ctx, args['key_name'])
        changes['key_name'] = args['key_name']
    if 'user_data' in args:
        changes['user_data'] = servers.user_data(args['user_data'])
    if 'hostname' in args:
        changes['hostname'] = args['hostname']
    properties = image['properties']
    changes['kernel_id'] = properties.get('kernel_id')
    changes['ramdisk_id'] = properties.get('ramdisk_id')
    # The rebuilt guest's password is the new one, kept for a Windows
    # image only (see server_password); an old one opens nothing now.
    admin_pass = args.get('adminPass') or passwords.generate()
    # A key pair the rebuild names is the caller's (check_key_name
    # looked it up so); the one the server keeps is its user's.
    key_owner = ctx.user_id if 'key_name' in args else instance.user_id
    changes['system_metadata'] = server_password.system_metadata(
        ctx, key_owner, properties,
        changes.get('key_name', instance.key_name), admin_pass,
        current=instance.get('system_metadata'))
    try:
        instance = req.compute_api.rebuild(
            ctx, instance.uuid, image['id'], properties, changes,
            preserve_ephemeral=args.get('preserve_ephemeral') in _TRUE)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    result = servers.render_changed(req, ctx, version, instance)
    # As Nova's: the key pair from 2.54 and the user data from 2.57, to
    # whoever may rebuild, whatever else the answer shows.
    if version >= (2, 54):
        result['server']['key_name'] = instance.key_name
    if version >= (2, 57):
        result['server']['user_data'] = instance.get('user_data')
    # The user data is said once, at the top: Nova's rebuild answer has
    # no extended attribute of it.
    result['server'].pop('OS-EXT-SRV-ATTR:user_data', None)
    if CONF.api.enable_instance_password:
        result['server']['adminPass'] = admin_pass
    return 202, result
