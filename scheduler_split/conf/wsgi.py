from oslo_config import cfg

wsgi_group = cfg.OptGroup(
    'wsgi',
    help='The HTTP server that scheduler-split-api and the all-in-one '
         'serve the compute API with. Not read when the API runs under '
         'gunicorn or uWSGI, whose own settings apply there.')

wsgi_opts = [
    cfg.IntOpt('threads', default=16, min=1,
               help='Worker threads that run requests. A request arriving '
                    'while every thread is busy waits, already read in '
                    'full, until one is free; a slow client never holds a '
                    'thread.'),
    cfg.IntOpt('backlog', default=1024, min=1,
               help='Length of the listen queue: connections the kernel '
                    'accepts for the server while it is busy. The kernel '
                    'caps it at net.core.somaxconn.'),
    cfg.IntOpt('connection_limit', default=1000, min=1,
               help='Open client connections at most; past it the server '
                    'stops accepting until one closes, and new clients wait '
                    'in the listen queue.'),
    cfg.IntOpt('max_request_line', default=8192, min=256,
               help='Bytes of the request line (method, URL and version) '
                    'at most; a longer one is answered with 414.'),
    cfg.IntOpt('max_header_size', default=65536, min=1024,
               help='Bytes of the request line and headers together at '
                    'most; more is answered with 431.'),
    cfg.IntOpt('max_request_body_size', default=1048576, min=1024,
               help='Bytes of a request body at most; a larger one is '
                    'answered with 413 before it is read. The largest '
                    'body the API takes (a create with 64 KiB of user '
                    'data) is far below the default.'),
    cfg.IntOpt('max_image_size', default=1024 ** 4, min=1024,
               help='Bytes of the data of an image uploaded to the '
                    'built-in catalog (PUT /image/v2/images/{id}/file, '
                    'as compute hosts upload snapshots) at most, '
                    'as Glance\'s image_size_cap; a larger one is '
                    'answered with 413 before it is read.'),
    cfg.IntOpt('keepalive_timeout', default=60, min=1,
               help='Seconds an idle keep-alive connection stays open.'),
    cfg.IntOpt('shutdown_timeout', default=30, min=0,
               help='Seconds a stopping server waits for the requests it '
                    'is handling to be answered; it accepts no new '
                    'connection meanwhile.'),
]

# Only scheduler-split-api takes these (the all-in-one has --host and
# --port); they can be set on its command line or in [DEFAULT].
api_listen_opts = [
    cfg.HostAddressOpt('bind-host', dest='bind_host', default='127.0.0.1',
                       help='Address scheduler-split-api listens on.'),
    cfg.PortOpt('bind-port', dest='bind_port', default=8774,
                help='Port scheduler-split-api listens on; 0 picks a free '
                     'one.'),
]


def register_opts(conf):
    conf.register_group(wsgi_group)
    conf.register_opts(wsgi_opts, group=wsgi_group)


def register_cli_opts(conf):
    conf.register_cli_opts(api_listen_opts)


def list_opts():
    return {wsgi_group: wsgi_opts, 'DEFAULT': api_listen_opts}
