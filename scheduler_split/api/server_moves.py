"""The moves of ``POST /v2.1/servers/{server_id}/action``: ``resize``
and ``migrate`` (a cold move, to a host the scheduler picks or, from
2.56, an admin names), ``confirmResize`` and ``revertResize``,
``os-migrateLive`` and ``evacuate``, each with the body its microversion
takes; the compute API casts them on, and the scheduler finding no host
for a cold move is a 400.
"""

from scheduler_split.api import action_checks
from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy

resize_schema = {
    'type': 'object',
    'properties': {
        'resize': {
            'type': 'object',
            'properties': {
                'flavorRef': {'type': ['string', 'integer'],
                              'minLength': 1},
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
            },
            'required': ['flavorRef'],
            'additionalProperties': False,
        },
    },
    'required': ['resize'],
    'additionalProperties': False,
}
migrate_schema_v256 = {
    'type': 'object',
    'properties': {
        'migrate': {
            'type': ['object', 'null'],
            'properties': {'host': {'type': ['string', 'null'],
                                    'minLength': 1, 'maxLength': 255}},
            'additionalProperties': False,
        },
    },
    'required': ['migrate'],
    'additionalProperties': False,
}


def _no_valid_host(exc):
    """The scheduler found no host: 400, as Nova words it."""
    return errors.bad_request(exc.format_message())


def resize(req, ctx, version, instance, body):
    schemas.validate(body, resize_schema)
    policy.authorize(ctx, 'os_compute_api:servers:resize',
                     action_checks.target(instance))
    flavor_ref = str(body['resize']['flavorRef'])
    try:
        flavor = objects.Flavor.get_by_flavor_id(
            ctx, flavor_ref.rstrip('/').rsplit('/', 1)[-1],
            project_id=None if ctx.is_admin
            else ctx.project_id)
    except exception.FlavorNotFound:
        raise errors.bad_request('Unable to locate requested flavor.')
    if flavor.disabled:
        raise errors.bad_request('Flavor is disabled.')
    if flavor.flavorid == instance.flavor.flavorid:
        raise errors.bad_request('When resizing, instances must change '
                                 'flavor!')
    if flavor.root_gb and flavor.root_gb < instance.flavor.root_gb:
        raise errors.bad_request('Resize error: Unable to resize disk '
                                 'down.')
    try:
        req.compute_api.resize(ctx, instance.uuid, flavor=flavor)
    except exception.NoValidHost as exc:
        raise _no_valid_host(exc)
    return 202, None


def migrate(req, ctx, version, instance, body):
    host = None
    if version >= (2, 56):
        schemas.validate(body, migrate_schema_v256)
        host = (body['migrate'] or {}).get('host')
    else:
        action_checks.null_body('migrate', body)
    policy.authorize(ctx, 'os_compute_api:os-migrate-server:migrate',
                     action_checks.target(instance))
    if host is not None:
        policy.authorize(ctx,
                         'os_compute_api:os-migrate-server:migrate:host',
                         action_checks.target(instance))
        action_checks.known_host(ctx, host)
    try:
        req.compute_api.resize(ctx, instance.uuid, host=host)
    except exception.NoValidHost as exc:
        raise _no_valid_host(exc)
    return 202, None


def _finish_move(name, rule, method, status):
    """``confirmResize`` / ``revertResize``: a null body."""
    def handler(req, ctx, version, instance, body):
        action_checks.null_body(name, body)
        policy.authorize(ctx, rule, action_checks.target(instance))
        getattr(req.compute_api, method)(ctx, instance.uuid)
        return status, None
    return handler


confirm_resize = _finish_move('confirmResize',
                              'os_compute_api:servers:confirm_resize',
                              'confirm_resize', 204)
revert_resize = _finish_move('revertResize',
                             'os_compute_api:servers:revert_resize',
                             'revert_resize', 202)


_BOOLEAN = {'type': ['boolean', 'string'],
            'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
                     'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false',
                     '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']}


def _action_schema(name, properties, required):
    return {
        'type': 'object',
        'properties': {name: {'type': 'object', 'properties': properties,
                              'required': required,
                              'additionalProperties': False}},
        'required': [name],
        'additionalProperties': False,
    }


def _live_schema(version):
    """os-migrateLive as each microversion takes it: disk_over_commit
    until 2.24, block_migration ``auto`` from 2.25, force from 2.30 to
    2.67."""
    if version < (2, 25):
        return _action_schema(
            'os-migrateLive',
            {'host': action_checks.HOST, 'block_migration': _BOOLEAN,
             'disk_over_commit': _BOOLEAN},
            ['host', 'block_migration', 'disk_over_commit'])
    properties = {'host': action_checks.HOST,
                  'block_migration': {'oneOf': [_BOOLEAN,
                                                {'enum': ['auto']}]}}
    if (2, 30) <= version < (2, 68):
        properties['force'] = _BOOLEAN
    return _action_schema('os-migrateLive', properties,
                          ['host', 'block_migration'])


def _evacuate_schema(version):
    """evacuate as each microversion takes it: onSharedStorage until
    2.13, force from 2.29 to 2.67."""
    properties = {'host': action_checks.HOST,
                  'adminPass': {'type': 'string', 'maxLength': 255}}
    required = []
    if version < (2, 14):
        properties['onSharedStorage'] = _BOOLEAN
        required = ['onSharedStorage']
    if (2, 29) <= version < (2, 68):
        properties['force'] = _BOOLEAN
    return _action_schema('evacuate', properties, required)


def migrate_live(req, ctx, version, instance, body):
    """Accepted at once (as Nova does from 2.34): the scheduling and the
    destination's checks happen behind the bus, and a failure shows in
    the server's instance action, the server running where it was."""
    schemas.validate(body, _live_schema(version))
    policy.authorize(ctx, 'os_compute_api:os-migrate-server:migrate_live',
                     action_checks.target(instance))
    args = body['os-migrateLive']
    host = args.get('host')
    if host is not None:
        action_checks.known_host(ctx, host)
    req.compute_api.live_migrate(ctx, instance.uuid, host=host,
                                 block_migration=args['block_migration'])
    return 202, None


def evacuate(req, ctx, version, instance, body):
    schemas.validate(body, _evacuate_schema(version))
    policy.authorize(ctx, 'os_compute_api:os-evacuate',
                     action_checks.target(instance))
    args = body['evacuate']
    host = args.get('host')
    if host is not None:
        action_checks.known_host(ctx, host)
    # From 2.95 an evacuated server is left stopped on its new host, as
    # Nova leaves it; before, in the state it was.
    req.compute_api.evacuate(ctx, instance.uuid, host=host,
                             stopped=version >= (2, 95))
    if version < (2, 14):
        # As Nova answers then, with the password the server would have
        # (the fake driver sets none).
        return 200, {'adminPass': args.get('adminPass') or ''}
    return 200, None
