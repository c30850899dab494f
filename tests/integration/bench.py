"""The boot benchmark against every service as its own OS process.

    python -m tests.integration.bench --servers 1000 --hosts 100 \\
        --schedulers 2 --concurrency 8

brings up a private RabbitMQ and PostgreSQL (installed from Debian's
packages if missing, bound to 127.0.0.1), two cells with their
conductors, ``--schedulers`` schedulers sharing the scheduler topic, an
API under gunicorn and ``--hosts`` fake computes (spawn delay 0), each
its own process; waits until every compute has reported and is mapped;
then runs ``scheduler-split-bench --endpoint`` against the API, with
``--cpu-of`` naming every process it started (``api``,
``super-conductor``, ``cell-conductor``, ``scheduler``, ``compute``,
``postgresql`` and ``rabbitmq``, those of one kind summed) and
``--db-stats`` naming its database server, and tears it all down.
Options after ``--`` go to ``scheduler-split-bench`` as they are
(``-- --json``, ``-- --plot boots.png``).
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

from tests.integration import deployment as deployment_mod


BENCH_CONF = """\
[DEFAULT]
report_interval = %(report_interval)d
service_down_time = 60
[compute]
unfinished_build_check_interval = 60
[conductor]
lost_build_check_interval = 60
[filter_scheduler]
host_state_refresh_interval = 60
[scheduler]
cell_discovery_interval = 60
[fake_driver]
spawn_delay = 0
"""

# Computes started at once while bringing the deployment up.
COMPUTE_BATCH = 10


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m tests.integration.bench', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--servers', type=int, default=200)
    parser.add_argument('--hosts', type=int, default=10,
                        help='fake computes, split evenly over the two '
                             'cells (default 10)')
    parser.add_argument('--schedulers', type=int, default=2)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--api-threads', type=int, default=16,
                        help="threads of the API's gunicorn worker")
    parser.add_argument('--report-interval', type=int, default=10,
                        help="seconds between a compute's reports")
    parser.add_argument('--keep', metavar='DIR',
                        help='run in DIR and leave its logs there')
    parser.add_argument('--serve', action='store_true',
                        help='bring the deployment up, print its endpoint '
                             'and keep it running until interrupted (SIGINT '
                             'or SIGTERM), instead of running the benchmark')
    parser.add_argument('--set', metavar='GROUP.OPTION=VALUE',
                        action='append', default=[],
                        help='an option of every service, after the '
                             "bench's own (repeatable): --set "
                             'DEFAULT.rpc_listener_wait=0')
    parser.add_argument('bench_args', nargs='*',
                        help='passed on to scheduler-split-bench')
    args = parser.parse_args(argv)
    cells = len(deployment_mod.Deployment.CELLS)
    if args.hosts < cells or args.hosts % cells:
        parser.error('--hosts must be a multiple of %d' % cells)
    if min(args.servers, args.schedulers, args.concurrency) < 1:
        parser.error('--servers, --schedulers and --concurrency must be '
                     'positive')
    for item in args.set:
        name, equals, value = item.partition('=')
        if '.' not in name or not equals:
            parser.error('--set takes GROUP.OPTION=VALUE, not %r' % item)
    return args


def _options(settings):
    """The text of a configuration file setting ``settings``
    (``GROUP.OPTION=VALUE`` each)."""
    groups = {}
    for item in settings:
        name, _, value = item.partition('=')
        group, _, option = name.partition('.')
        groups.setdefault(group, []).append('%s = %s' % (option, value))
    return ''.join('[%s]\n%s\n' % (group, '\n'.join(lines))
                   for group, lines in groups.items())


# The kinds of process the deployment starts, as --cpu-of names them
# and the report lists them: the cells' conductors, the schedulers and
# the computes are each summed under one name.
KINDS = ('api', 'super-conductor', 'cell-conductor', 'scheduler', 'compute')


def _kind(name, dep):
    if name in dep.hosts:
        return 'compute'
    if name.startswith('conductor-'):
        return 'cell-conductor'
    if name.startswith('scheduler'):
        return 'scheduler'
    if name.startswith('api'):
        return 'api'
    return name


def _database_pid(database):
    """The database server's long-lived process: PostgreSQL's postmaster
    (pg_ctl, which started it, is gone), whose backends, one per
    connection, are its children; MariaDB's server process."""
    if database.name == 'postgresql':
        with open(os.path.join(database.data, 'postmaster.pid')) as f:
            return int(f.readline())
    return database.proc.pid


def measured(dep):
    """``--cpu-of`` arguments for every process of ``dep``, and
    ``--db-stats`` for its database server. Each service
    (gunicorn's master, its worker below it), the database server and the
    broker's launcher script, which runs the Erlang VM (beam.smp) as its
    child. The broker serves this deployment alone: the API's bus and
    the cells' are vhosts of it. epmd, which the VM starts as a daemon
    of its own, is not below it and not counted: it only answers the
    node's name lookups."""
    specs = ['%s=%d' % (_kind(name, dep), proc.pid)
             for name, proc in sorted(
                 dep.procs.items(),
                 key=lambda item: (KINDS.index(_kind(item[0], dep)),
                                   item[0]))]
    specs.append('%s=%d' % (dep.database.name,
                            _database_pid(dep.database)))
    specs.append('rabbitmq=%d' % dep.rabbit.proc.pid)
    return ['--cpu-of', ','.join(specs),
            '--db-stats', dep.database.stats_url()]


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # A SIGTERM tears the deployment down as an interrupt does.
    signal.signal(signal.SIGTERM, _interrupt)
    base = args.keep or tempfile.mkdtemp(prefix='scheduler-split-bench-')
    cells = len(deployment_mod.Deployment.CELLS)
    dep = deployment_mod.Deployment(
        base, schedulers=args.schedulers,
        hosts_per_cell=args.hosts // cells, api_threads=args.api_threads)
    started = time.monotonic()
    try:
        print('setting up RabbitMQ, PostgreSQL and the databases in %s'
              % base, file=sys.stderr, flush=True)
        dep.setup()
        # After every process's own files: the defaults an operator
        # runs with instead of the tests' short intervals (a hundred
        # computes asking their conductor for their instances every two
        # seconds, say), and spawns that take no time.
        dep.add_config(list(dep._commands()), 'bench.conf', BENCH_CONF
                       % {'report_interval': args.report_interval})
        if args.set:
            dep.add_config(list(dep._commands()), 'bench-set.conf',
                           _options(args.set))
        services = [name for name in dep._commands()
                    if name not in dep.hosts]
        print('starting %s' % ', '.join(services), file=sys.stderr,
              flush=True)
        dep.start(*services)
        dep.wait_for_api(timeout=120)
        # A hundred computes importing at once starve two cores: start
        # them a batch at a time, each once the last has reported.
        within = 2 * args.report_interval
        for first in range(0, len(dep.hosts), COMPUTE_BATCH):
            batch = dep.hosts[first:first + COMPUTE_BATCH]
            dep.start(*batch)
            dep.wait_for_hosts(batch, timeout=120, within=within)
            print('%d of %d computes up' % (first + len(batch),
                                            len(dep.hosts)),
                  file=sys.stderr, flush=True)
        wait = 60 + args.hosts
        dep.wait_for_hosts(dep.hosts, timeout=wait, within=within)
        dep.wait_for_service_records(dep.hosts, timeout=wait)
        dep.manage('cell_v2', 'discover_hosts')
        print('%d hosts up and mapped after %.0f s; benchmark starts'
              % (len(dep.hosts), time.monotonic() - started),
              file=sys.stderr, flush=True)
        endpoint = dep.base_url + '/v2.1'
        if args.serve:
            print('serving %s until interrupted; its processes for '
                  'scheduler-split-bench: %s'
                  % (endpoint, ' '.join(measured(dep))), flush=True)
            # Torn down on SIGTERM as on ^C; a shell that starts it in
            # the background leaves it ignoring SIGINT.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            try:
                while True:
                    signal.pause()
            except KeyboardInterrupt:
                return 0
        command = [os.path.join(deployment_mod.BIN,
                                'scheduler-split-bench'),
                   '--endpoint', endpoint,
                   '--servers', str(args.servers),
                   '--concurrency', str(args.concurrency),
                   *measured(dep), *args.bench_args]
        return subprocess.run(command).returncode
    finally:
        dep.teardown()
        if not args.keep:
            subprocess.run(['rm', '-rf', base])


if __name__ == '__main__':
    sys.exit(main())
