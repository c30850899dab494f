from oslo_config import cfg

api_group = cfg.OptGroup('api', help='Options of the REST API service.')

api_opts = [
    cfg.StrOpt('auth_strategy',
               default='keystone',
               choices=[('keystone', 'validate tokens with '
                                     'keystonemiddleware'),
                        ('noauth2', 'trust X-Auth-Token "user:project"; '
                                    '"admin:admin" or no token is admin')],
               help='How the API authenticates requests.'),
    cfg.IntOpt('max_limit', default=1000, min=1,
               help='Most items one list request returns.'),
    cfg.IntOpt('max_servers_per_request', default=100, min=1,
               help='Most servers one create request may ask for '
                    '(max_count); more is answered with 413.'),
    cfg.IntOpt('retry_after', default=5, min=0,
               help='Seconds a client is told to wait (Retry-After) before '
                    'it repeats a request answered with 503 because a '
                    'database or another service could not be reached.'),
    cfg.IntOpt('name_filter_timeout_ms', default=100, min=1,
               help='Milliseconds a server list may spend matching its '
                    '"name" filter (a regular expression) against server '
                    'names; a pattern that needs longer is refused with '
                    '400, so that no pattern can stall the API.'),
    cfg.BoolOpt('enable_instance_password', default=True,
                help='Whether the answers of a create and of a rebuild '
                     'carry the server\'s admin password (adminPass): the '
                     'one the request gave, else a new random one.'),
    cfg.StrOpt('image_endpoint',
               deprecated_for_removal=True,
               deprecated_reason='Nothing reads it.',
               help='Ignored. The all-in-one serves the built-in image '
                    'catalog under /image (see [glance] source) and '
                    'advertises that URL in the clouds.yaml it writes.'),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
