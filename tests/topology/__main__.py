"""``python -m tests.topology up|down``: bring the multi-host cloud up
on this machine (as root), or clear what a run left behind.

``up`` starts it, prints its API addresses and the line that points the
``openstack`` CLI at it, and keeps it running until Ctrl-C, when every
process, namespace and file of the network is gone again.
"""

import argparse
import os
import signal
import sys
import tempfile
import threading
import time

from scheduler_split.cmd import all_in_one
from tests.topology import cloud
from tests.topology import galera
from tests.topology import network


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog='python -m tests.topology', description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    up = sub.add_parser('up', help='bring the cloud up; Ctrl-C stops it')
    up.add_argument('--mode', choices=galera.MODES, default='haproxy',
                    help='how the controllers reach Galera: through '
                         'HAProxy (one node takes every write) or each to '
                         'its own node (default: %(default)s)')
    up.add_argument('--hosts-per-cell', type=int, default=2,
                    help='compute hosts in each of the two cells '
                         '(default: %(default)s)')
    up.add_argument('--dir', help='where configuration, logs and data go '
                                  '(default: a new temporary directory)')
    for command in (up, sub.add_parser(
            'down', help='remove what a run of this prefix left behind')):
        command.add_argument('--prefix', default='ss',
                             help='the namespaces\' prefix (default: '
                                  '%(default)s)')
    up.add_argument('--subnet', default='10.231.0.0/24',
                    help='the private subnet of the hosts (default: '
                         '%(default)s)')
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse(argv if argv is not None else sys.argv[1:])
    if os.geteuid() != 0:
        print('network namespaces need root', file=sys.stderr)
        return 2
    if args.command == 'down':
        network.Network((), args.prefix).down()
        return 0
    base = args.dir or tempfile.mkdtemp(prefix='scheduler-split-cloud-')
    up, stop = threading.Event(), threading.Event()

    def _stop(signum, frame):
        # Coming up, what is up so far is torn down at once.
        if not up.is_set():
            raise KeyboardInterrupt
        stop.set()

    # Ctrl-C too, even where the shell started it with SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
    the_cloud = cloud.Cloud(base, mode=args.mode,
                            hosts_per_cell=args.hosts_per_cell,
                            prefix=args.prefix, subnet=args.subnet)
    started = time.monotonic()
    try:
        print('Bringing up 3 controllers and %d compute hosts in %s ...'
              % (len(the_cloud.hosts), base), flush=True)
        the_cloud.bring_up()
        clouds = all_in_one.write_clouds_yaml(base, the_cloud.base_url)
        print('Up in %.0f s. Hosts: %s' % (
            time.monotonic() - started, ', '.join(
                '%s %s' % item for item in the_cloud.network.hosts.items())))
        print('Compute APIs: %s' % ', '.join(
            url + '/v2.1' for url in the_cloud.api_urls))
        print('Logs: %s' % the_cloud.log_dir)
        print('export OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=scheduler-split'
              % clouds)
        print('Press Ctrl-C to stop.', flush=True)
        up.set()
        while not stop.wait(1):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        # A signal from here on waits for the teardown.
        up.set()
        print('Stopping ...', flush=True)
        the_cloud.teardown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
