"""``/os-aggregates``: host aggregates, in Nova's shapes.

Aggregates are the scheduler's data: every handler asks the scheduler
through its client library, and never reads the scheduler database. A
change is in effect for every scheduler process on its next select.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import exception
from scheduler_split import policy

LOG = logging.getLogger(__name__)

INTERNAL_ZONE = 'internal'

_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': r'^\S(.*\S)?$'}
# A zone's name: no ':' (which "zone:host" boot requests use).
_ZONE = {'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255,
         'pattern': r'^[^:]*$'}
_HOST = {'type': 'string', 'minLength': 1, 'maxLength': 255}

CREATE = {
    'type': 'object',
    'properties': {'aggregate': {
        'type': 'object',
        'properties': {'name': _NAME, 'availability_zone': _ZONE},
        'required': ['name'], 'additionalProperties': False}},
    'required': ['aggregate'], 'additionalProperties': False}

UPDATE = {
    'type': 'object',
    'properties': {'aggregate': {
        'type': 'object',
        'properties': {'name': _NAME, 'availability_zone': _ZONE},
        'additionalProperties': False,
        'anyOf': [{'required': ['name']},
                  {'required': ['availability_zone']}]}},
    'required': ['aggregate'], 'additionalProperties': False}

_HOST_ACTION = {'type': 'object', 'properties': {'host': _HOST},
                'required': ['host'], 'additionalProperties': False}
ACTIONS = {
    'add_host': _HOST_ACTION,
    'remove_host': _HOST_ACTION,
    'set_metadata': {
        'type': 'object',
        'properties': {'metadata': {
            'type': 'object',
            'patternProperties': {
                '^[a-zA-Z0-9-_:. ]{1,255}$': {
                    'type': ['string', 'null'], 'maxLength': 255}},
            'additionalProperties': False}},
        'required': ['metadata'], 'additionalProperties': False},
}


ACTION_RULES = {
    'add_host': 'os_compute_api:os-aggregates:add_host',
    'remove_host': 'os_compute_api:os-aggregates:remove_host',
    'set_metadata': 'os_compute_api:os-aggregates:set_metadata',
}


def _render(aggregate, version, hosts_and_metadata=True):
    body = {key: aggregate[key] for key in (
        'id', 'name', 'availability_zone', 'deleted', 'deleted_at',
        'created_at', 'updated_at')}
    if hosts_and_metadata:
        body['hosts'] = aggregate['hosts']
        body['metadata'] = aggregate['metadata']
    if version >= (2, 41):
        body['uuid'] = aggregate['uuid']
    return body


def _scheduler(req, method, *args):
    """Call the scheduler library; 503 if no scheduler answers."""
    try:
        return getattr(req.compute_api.scheduler, method)(req.ctx, *args)
    except messaging.MessagingException as exc:
        LOG.error('No scheduler answered %s (%s)', method, exc)
        raise exception.ServiceUnavailable(
            reason='the scheduler, which keeps the host aggregates, could '
                   'not be reached')


def _aggregate_id(aggregate_id):
    try:
        return int(aggregate_id)
    except ValueError:
        raise errors.bad_request('Invalid aggregate id %s' % aggregate_id)


def _check_zone(zone):
    if zone == INTERNAL_ZONE:
        raise errors.bad_request(
            'Aggregates cannot have the internal availability zone %s'
            % INTERNAL_ZONE)


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-aggregates:index', target={})
    return {'aggregates': [_render(a, version)
                           for a in _scheduler(req, 'aggregate_list')]}


def create(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-aggregates:create', target={})
    body = req.json_body_or_error()
    schemas.validate(body, CREATE)
    values = body['aggregate']
    _check_zone(values.get('availability_zone'))
    aggregate = _scheduler(req, 'aggregate_create', values['name'],
                           values.get('availability_zone'))
    # As in Nova, the answer to a create has no hosts or metadata.
    return {'aggregate': _render(aggregate, version,
                                 hosts_and_metadata=False)}


def show(req, ctx, version, aggregate_id):
    policy.authorize(ctx, 'os_compute_api:os-aggregates:show', target={})
    aggregate = _scheduler(req, 'aggregate_get', _aggregate_id(aggregate_id))
    return {'aggregate': _render(aggregate, version)}


def update(req, ctx, version, aggregate_id):
    policy.authorize(ctx, 'os_compute_api:os-aggregates:update', target={})
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE)
    values = body['aggregate']
    _check_zone(values.get('availability_zone'))
    aggregate = _scheduler(req, 'aggregate_update',
                           _aggregate_id(aggregate_id), values)
    return {'aggregate': _render(aggregate, version)}


def delete(req, ctx, version, aggregate_id):
    policy.authorize(ctx, 'os_compute_api:os-aggregates:delete', target={})
    _scheduler(req, 'aggregate_delete', _aggregate_id(aggregate_id))
    return 200, None


def action(req, ctx, version, aggregate_id):
    body = req.json_body_or_error()
    if len(body) != 1 or next(iter(body)) not in ACTIONS:
        raise errors.bad_request(
            'Invalid action: the body must hold exactly one of %s'
            % ', '.join(sorted(ACTIONS)))
    name, args = next(iter(body.items()))
    policy.authorize(ctx, ACTION_RULES[name], target={})
    schemas.validate(args, ACTIONS[name])
    target = _aggregate_id(aggregate_id)
    if name == 'add_host':
        aggregate = _scheduler(req, 'aggregate_add_host', target,
                               args['host'])
    elif name == 'remove_host':
        aggregate = _scheduler(req, 'aggregate_remove_host', target,
                               args['host'])
    else:
        metadata = args['metadata']
        _check_zone(metadata.get('availability_zone'))
        aggregate = _scheduler(req, 'aggregate_set_metadata', target,
                               metadata)
    return {'aggregate': _render(aggregate, version)}


def cache_images(req, ctx, version, aggregate_id):
    """2.81's image pre-caching: the fake driver has no image cache."""
    if version < (2, 81):
        raise errors.not_found('The resource could not be found.')
    policy.authorize(ctx, 'os_compute_api:os-aggregates:images', target={})
    _scheduler(req, 'aggregate_get', _aggregate_id(aggregate_id))
    raise errors.bad_request('Image caching is not supported by the '
                             'compute driver of this deployment.')
