"""JSON schemas of request bodies."""

# No leading or trailing whitespace, no control characters.
_name = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': r'^(?!\s)[^\x00-\x1f\x7f]*(?<!\s)$'}
_uuid_or_empty = {'type': 'string', 'maxLength': 255}
_positive_int = {'oneOf': [{'type': 'integer', 'minimum': 1},
                           {'type': 'string', 'pattern': '^[1-9][0-9]*$'}]}

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
                'name': _name,
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
                              'properties': {'name': {'type': 'string'}}}},
                'accessIPv4': {'type': 'string'},
                'accessIPv6': {'type': 'string'},
                'OS-DCF:diskConfig': {'type': 'string',
                                      'enum': ['AUTO', 'MANUAL']},
                'tags': {'type': 'array', 'items': {'type': 'string'}},
                'hostname': {'type': 'string'},
            },
            'required': ['name', 'flavorRef'],
            'additionalProperties': False,
        },
        'os:scheduler_hints': {'type': 'object'},
        'OS-SCH-HNT:scheduler_hints': {'type': 'object'},
    },
    'required': ['server'],
    'additionalProperties': False,
}
