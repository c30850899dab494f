"""scheduler-split-api: the compute API on its own HTTP server.

It serves with waitress (``[wsgi]`` options) in one process. To run
several API processes on one port, serve the WSGI application
``scheduler_split.api.wsgi_app:application`` with gunicorn or uWSGI
instead.
"""

import sys

from scheduler_split.api import http_server
from scheduler_split.cmd import common
from scheduler_split.cmd import preflight
from scheduler_split import conf
from scheduler_split.conf import wsgi as wsgi_conf

CONF = conf.CONF


def main():
    wsgi_conf.register_cli_opts(CONF)
    common.parse_args(sys.argv, description=common.summary(__doc__))
    # The bus only for what the API casts to the super-conductor: it
    # answers reads and its version document without one.
    common.require(preflight.API_DATABASE)
    # The port first: nothing is built when it cannot be had.
    try:
        sock = http_server.listen_socket(CONF.bind_host, CONF.bind_port)
    except http_server.PortInUse as exc:
        return common.fail('scheduler-split-api: %s. Stop what listens '
                           'there, or set --bind-port.' % exc)

    def build():
        from scheduler_split.api import wsgi
        return http_server.APIServer(wsgi.make_app(), sock)

    return common.run(build)


if __name__ == '__main__':
    sys.exit(main())
