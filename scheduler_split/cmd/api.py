"""scheduler-split-api: the REST API on a simple threaded WSGI server.

For production put the WSGI application of
``scheduler_split.api.wsgi_app:application`` behind a real WSGI server.
"""

import argparse
import sys
from wsgiref import simple_server

from scheduler_split.cmd import all_in_one
from scheduler_split.cmd import common


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--bind-host', default='127.0.0.1')
    parser.add_argument('--bind-port', type=int, default=8774)
    known, rest = parser.parse_known_args(sys.argv[1:])
    common.parse_args([sys.argv[0]] + rest)
    from scheduler_split.api import wsgi
    server = simple_server.make_server(
        known.bind_host, known.bind_port, wsgi.make_app(),
        server_class=all_in_one._ThreadingWSGIServer)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
