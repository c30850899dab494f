"""JSON schemas of request bodies, and the check that applies them."""

import ipaddress
import re

import jsonschema
from oslo_utils import timeutils

from scheduler_split.api import errors
from scheduler_split.objects import base as obj_base

# No leading or trailing whitespace, no control characters.
name = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': r'^(?!\s)[^\x00-\x1f\x7f]*(?<!\s)$'}
_uuid_or_empty = {'type': 'string', 'maxLength': 255}
# As Nova's parameter_types.accessIPv4/accessIPv6.
access_ip_v4 = {'type': 'string', 'format': 'ipv4'}
access_ip_v6 = {'type': 'string', 'format': 'ipv6'}
# The largest count or limit any column takes (a 32-bit signed integer).
MAX_INT = 2 ** 31 - 1
# A positive integer, or its decimal string (which the handler converts
# and checks against MAX_INT: a pattern cannot say "at most").
_positive_int = {'oneOf': [{'type': 'integer', 'minimum': 1,
                            'maximum': MAX_INT},
                           {'type': 'string',
                            'pattern': '^[1-9][0-9]{0,9}$'}]}

block_device_mapping_v2 = {
    'type': 'object',
    'properties': {
        'uuid': {'type': 'string', 'maxLength': 255},
        'source_type': {'type': 'string',
                        'enum': ['volume', 'image', 'snapshot', 'blank']},
        'destination_type': {'type': 'string',
                             'enum': ['local', 'volume']},
        'boot_index': {'type': ['integer', 'string', 'null']},
        'delete_on_termination': {'type': ['boolean', 'string']},
        'volume_size': {'type': ['integer', 'string', 'null']},
        'device_name': {'type': ['string', 'null']},
        'device_type': {'type': ['string', 'null']},
        'disk_bus': {'type': ['string', 'null']},
        'guest_format': {'type': ['string', 'null']},
        'tag': {'type': 'string'},
        'volume_type': {'type': ['string', 'null']},
        'no_device': {},
    },
    'additionalProperties': False,
}

create_server = {
    'type': 'object',
    'properties': {
        'server': {
            'type': 'object',
            'properties': {
                'name': name,
                'imageRef': _uuid_or_empty,
                'flavorRef': {'type': ['string', 'integer'],
                              'minLength': 1},
                'adminPass': {'type': 'string'},
                'metadata': {
                    'type': 'object',
                    'patternProperties': {
                        '^[a-zA-Z0-9-_:. ]{1,255}$': {
                            'type': 'string', 'maxLength': 255}},
                    'additionalProperties': False},
                'networks': {
                    'oneOf': [
                        {'type': 'string', 'enum': ['none', 'auto']},
                        {'type': 'array',
                         'items': {'type': 'object',
                                   'properties': {
                                       'uuid': {'type': 'string'},
                                       'port': {'type': ['string',
                                                         'null']},
                                       'fixed_ip': {'type': 'string'},
                                       'tag': {'type': 'string'}},
                                   'additionalProperties': False}}]},
                'block_device_mapping_v2': {
                    'type': 'array', 'items': block_device_mapping_v2},
                'min_count': _positive_int,
                'max_count': _positive_int,
                'return_reservation_id': {'type': ['boolean', 'string']},
                'availability_zone': {'type': 'string', 'minLength': 1,
                                      'maxLength': 255},
                'key_name': {'type': 'string', 'minLength': 1,
                             'maxLength': 255},
                'user_data': {'type': 'string', 'maxLength': 65535},
                'config_drive': {'type': ['boolean', 'string']},
                'description': {'type': ['string', 'null'],
                                'maxLength': 255},
                'security_groups': {
                    'type': 'array',
                    'items': {'type': 'object',
                              'properties': {'name': name},
                              'additionalProperties': False}},
                'accessIPv4': access_ip_v4,
                'accessIPv6': access_ip_v6,
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
                'tags': {'type': 'array', 'items': {'type': 'string'}},
                'hostname': {'type': 'string'},
            },
            'required': ['name', 'flavorRef'],
            'additionalProperties': False,
        },
        'os:scheduler_hints': {'$ref': '#/$defs/scheduler_hints'},
        'OS-SCH-HNT:scheduler_hints': {'$ref': '#/$defs/scheduler_hints'},
    },
    'required': ['server'],
    'additionalProperties': False,
    '$defs': {
        'instances': {'oneOf': [
            {'type': 'string', 'format': 'uuid'},
            {'type': 'array', 'items': {'type': 'string', 'format': 'uuid'},
             'uniqueItems': True}]},
        'scheduler_hints': {
            'type': 'object',
            'properties': {
                'group': {'type': 'string', 'format': 'uuid'},
                # An instance uuid or a list of them, as Nova takes them.
                'same_host': {'$ref': '#/$defs/instances'},
                'different_host': {'$ref': '#/$defs/instances'},
            },
        },
    },
}

_server_group = {
    'type': 'object',
    'properties': {
        'name': name,
        'policies': {
            'type': 'array',
            'items': {'type': 'string',
                      'enum': ['affinity', 'anti-affinity']},
            'minItems': 1, 'maxItems': 1,
        },
    },
    'required': ['name', 'policies'],
    'additionalProperties': False,
}


def _server_group_schema(group):
    return {'type': 'object',
            'properties': {'server_group': group},
            'required': ['server_group'],
            'additionalProperties': False}


# 2.1: "policies": [one of affinity, anti-affinity].
create_server_group = _server_group_schema(_server_group)
# 2.15: the soft policies too.
create_server_group_v215 = _server_group_schema(dict(
    _server_group, properties=dict(_server_group['properties'], policies=dict(
        _server_group['properties']['policies'],
        items={'type': 'string', 'enum': ['affinity', 'anti-affinity',
                                          'soft-affinity',
                                          'soft-anti-affinity']}))))
# 2.64: "policy" (one string) and "rules".
create_server_group_v264 = _server_group_schema({
    'type': 'object',
    'properties': {
        'name': name,
        'policy': {'type': 'string',
                   'enum': ['affinity', 'anti-affinity', 'soft-affinity',
                            'soft-anti-affinity']},
        'rules': {
            'type': 'object',
            'properties': {'max_server_per_host': _positive_int},
            'additionalProperties': False,
        },
    },
    'required': ['name', 'policy'],
    'additionalProperties': False,
})

_FORMATS = jsonschema.FormatChecker(['uuid'])


@_FORMATS.checks('ipv4')
def _is_ipv4(value):
    if not isinstance(value, str):
        return True
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


@_FORMATS.checks('ipv6')
def _is_ipv6(value):
    if not isinstance(value, str):
        return True
    # A scope ("%eth0") names an interface of the caller, not an address.
    if '%' in value:
        return False
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


# {id(schema): (schema, validator)}: a schema is checked and its
# validator built once, not on every request. Holding the schema keeps
# its id from being reused; schemas built per microversion are few, and
# the cache starts again past the limit.
_VALIDATORS = {}
_VALIDATORS_LIMIT = 512


def _validator(schema):
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=_FORMATS)
    if len(_VALIDATORS) >= _VALIDATORS_LIMIT:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def validate(body, schema):
    """400 in Nova's words unless ``body`` matches ``schema``."""
    exc = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(body))
    if exc is not None:
        field = '/'.join(str(p) for p in exc.absolute_path) or 'body'
        raise errors.bad_request(
            'Invalid input for field/attribute %s. Value: %s. %s'
            % (field, exc.instance, exc.message))


def refuse_unknown_query(req, allowed):
    """400 in Nova's words for a query parameter not in ``allowed``, as
    the query schemas refuse them from the microversion that closes
    them (2.75 for most lists)."""
    for name in req.GET:
        if name not in allowed:
            raise errors.bad_request(
                "Invalid input for query parameters %s. Value: %s. "
                "Additional properties are not allowed (%r was unexpected)"
                % (name, req.GET[name], name))


def non_negative_query(req, name):
    """The query parameter ``name`` as a whole number, None if absent;
    400 in Nova's words for anything but ASCII digits."""
    raw = req.GET.get(name)
    if raw is None:
        return None
    # ASCII digits only: str.isdigit() also takes "\u00b2", which int()
    # refuses.
    if not re.fullmatch('[0-9]+', raw, re.ASCII) or len(raw) > 18:
        raise errors.bad_request(
            "Invalid input for query parameters %s. Value: %s. '%s' does "
            "not match '^[0-9]*$'" % (name, raw, raw))
    return int(raw)


def time_query(req, name):
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
