"""scheduler-split-bench: how fast servers boot, and how the scheduler
scales with its hosts.

Boot mode (the default) posts ``--servers`` boots through the compute API
from ``--concurrency`` client threads and times each server until it is
ACTIVE: against the deployment at ``--endpoint``, or, without one,
against an all-in-one it starts in a temporary directory (the fake
driver spawning at once) and stops at the end.

``--scheduler-only`` starts the scheduler service alone on the in-memory
buses, for each size of ``--hosts`` in a fresh process and fresh
databases: it times how fast a burst of reports from that many synthetic
hosts is absorbed, then ``select_destinations``.

Progress goes to standard error; the report (a table, or with ``--json``
one JSON document) to standard output.
"""

import argparse
import concurrent.futures
import json
import logging
import math
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from oslo_config import cfg

from scheduler_split import benchmark
from scheduler_split import cells
from scheduler_split.cmd import all_in_one
from scheduler_split.cmd import common
from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

PROG = 'scheduler-split-bench'
PLOT_EXTRA = "pip install 'scheduler-split[bench]'"
DEFAULT_HOSTS = 8
DEFAULT_SCHEDULER_HOSTS = '100,1000'
DEFAULT_CELLS = 2


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a whole number' % text)
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1, not %d'
                                         % value)
    return value


def _host_counts(text):
    """``100,1000,10000`` -> ``[100, 1000, 10000]``."""
    return [_positive(part.strip()) for part in text.split(',')]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description='Boot servers through the compute API and time them '
                    '(against --endpoint, or an all-in-one started for '
                    'the run), or with --scheduler-only time the '
                    'scheduler alone against synthetic hosts.')
    common.add_version_argument(parser)
    parser.add_argument('--servers', type=_positive, default=200,
                        help='Servers to boot; with --scheduler-only, '
                             'selects to time per size (default: '
                             '%(default)s).')
    parser.add_argument('--hosts',
                        help='Fake compute hosts of the all-in-one the '
                             'bench starts (default: %d); with '
                             '--scheduler-only, a comma list of sizes run '
                             'in turn (default: %s).'
                             % (DEFAULT_HOSTS, DEFAULT_SCHEDULER_HOSTS))
    parser.add_argument('--cells', type=_positive,
                        help='Cells the hosts are spread over, '
                             'ceil(hosts/cells) each (default: %d).'
                             % DEFAULT_CELLS)
    parser.add_argument('--concurrency', type=_positive, default=8,
                        help='Client threads posting boots, each with its '
                             'own connection (default: %(default)s).')
    parser.add_argument('--endpoint',
                        help='The compute endpoint of a running deployment, '
                             'e.g. http://127.0.0.1:8774/v2.1; its servers '
                             'of the run are deleted at the end (unless '
                             '--keep).')
    parser.add_argument('--token',
                        help='A Keystone token for --endpoint (default: '
                             'noauth2 as admin:admin, project admin).')
    parser.add_argument('--flavor', default='m1.tiny',
                        help='Flavor name or id (default: %(default)s).')
    parser.add_argument('--image', default='cirros',
                        help='Image name in the API\'s image catalog, or '
                             'an image id (default: %(default)s).')
    parser.add_argument('--json', action='store_true',
                        help='Print the report as one JSON document.')
    parser.add_argument('--plot', metavar='FILE.png',
                        help='Also draw the run: boots completed per second '
                             'and each server\'s POST latency and time to '
                             'ACTIVE (needs %s).' % PLOT_EXTRA)
    parser.add_argument('--scheduler-only', action='store_true',
                        help='Time the scheduler service alone: reports '
                             'from synthetic hosts and select_destinations.')
    parser.add_argument('--timeout', type=float, default=600.0,
                        help='Seconds to wait for the servers (for each '
                             'report burst with --scheduler-only) '
                             '(default: %(default)s).')
    parser.add_argument('--keep', action='store_true',
                        help='Keep what the run made: the servers (with '
                             '--endpoint), else the temporary directory '
                             'with the log and the databases.')
    parser.add_argument('--config-file', action='append', default=[],
                        help='oslo.config file for the services the bench '
                             'starts, e.g. [fake_driver] options. May '
                             'repeat.')
    parser.add_argument('--debug', action='store_true',
                        help='Log at DEBUG level (into the temporary '
                             'directory; see --keep).')
    args = parser.parse_args(argv)

    if args.timeout <= 0:
        parser.error('--timeout must be more than 0 seconds')
    if args.token and not args.endpoint:
        parser.error('--token is for --endpoint; the all-in-one the bench '
                     'starts uses noauth2')
    if args.endpoint:
        try:
            benchmark.parse_endpoint(args.endpoint)
        except benchmark.BenchError as exc:
            parser.error(str(exc))
        if args.scheduler_only:
            parser.error('--scheduler-only starts its own scheduler; it '
                         'takes no --endpoint')
        for name in ('hosts', 'cells', 'config_file'):
            if getattr(args, name):
                parser.error('--%s describes the system the bench starts; '
                             'not with --endpoint' % name.replace('_', '-'))
    if args.scheduler_only and args.plot:
        parser.error('--plot draws a boot run, not --scheduler-only')
    args.cells = args.cells or DEFAULT_CELLS
    try:
        if args.scheduler_only:
            args.host_counts = _host_counts(
                args.hosts or DEFAULT_SCHEDULER_HOSTS)
        else:
            args.host_counts = [_positive(args.hosts or str(DEFAULT_HOSTS))]
    except argparse.ArgumentTypeError as exc:
        parser.error('--hosts: %s' % exc)
    if not args.scheduler_only and not args.endpoint and \
            args.host_counts[0] < args.cells:
        parser.error('--hosts (%d) must be at least --cells (%d): every '
                     'cell needs a host' % (args.host_counts[0], args.cells))
    if args.plot:
        # Before any work: a run of many minutes must not end without
        # its plot.
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error('--plot needs matplotlib: %s' % PLOT_EXTRA)
    return args


def _configure(config_files, debug, run_dir):
    """The configuration and the log of the services the bench starts,
    as the all-in-one sets them up: the log in ``run_dir``, not on the
    terminal."""
    CONF(project='scheduler-split', default_config_files=[],
         args=[a for f in config_files for a in ('--config-file', f)])
    all_in_one._setup_logging(argparse.Namespace(
        state_dir=run_dir, verbose=False, debug=debug))


# --- boot mode ---------------------------------------------------------------

def _capacity(total, reserved, ratio):
    """What a host offers of one resource, as the scheduler counts it."""
    return int((total - reserved) * ratio)


def check_capacity(flavor_ref, servers, hosts):
    """Refuse a run whose servers cannot all fit on the fake hosts (as
    the configuration sizes them)."""
    flavor = next((f for f in cells.DEFAULT_FLAVORS
                   if flavor_ref in (f[0], f[1])), None)
    if flavor is None:
        raise benchmark.BenchError(
            'No flavor %r in the all-in-one: it has %s' % (
                flavor_ref, ', '.join(f[1] for f in cells.DEFAULT_FLAVORS)))
    _, name, ram, vcpus, disk = flavor
    fake, compute = CONF.fake_driver, CONF.compute
    fits = [_capacity(fake.vcpus, compute.reserved_host_cpus,
                      compute.cpu_allocation_ratio) // vcpus,
            _capacity(fake.memory_mb, compute.reserved_host_memory_mb,
                      compute.ram_allocation_ratio) // ram]
    if disk:
        fits.append(_capacity(fake.local_gb,
                              (compute.reserved_host_disk_mb + 1023) // 1024,
                              compute.disk_allocation_ratio) // disk)
    per_host = max(0, min(fits))
    if per_host * hosts < servers:
        raise benchmark.BenchError(
            '%d fake hosts of %d vCPUs, %d MiB and %d GiB hold at most %d '
            'servers of %s (%d each), not %d: ask for fewer --servers or '
            'more --hosts, or give the hosts more ([fake_driver] vcpus, '
            'memory_mb, local_gb in a --config-file)'
            % (hosts, fake.vcpus, fake.memory_mb, fake.local_gb,
               per_host * hosts, name, per_host, servers))


class StartedSystem:
    """The all-in-one, started for one boot run as operators run it:
    ``scheduler-split-all-in-one`` in a process of its own (the bench's
    client threads must not share its interpreter), ``hosts_per_cell``
    fake hosts in each of ``num_cells`` cells, SQLite in ``state_dir``
    and the API on a free port of 127.0.0.1."""

    # Before the user's --config-file: spawns take no time unless a
    # file says otherwise, since the run measures the control plane,
    # not a pretend hypervisor.
    DEFAULTS = '[fake_driver]\nspawn_delay = 0\n'
    # After them: the bench speaks noauth2 to the system it starts.
    OVERRIDES = '[api]\nauth_strategy = noauth2\n'
    READY = 'scheduler-split is running: compute API '

    def __init__(self, state_dir, num_cells, hosts_per_cell,
                 config_files=(), debug=False):
        self.state_dir = state_dir
        self.num_cells = num_cells
        self.hosts_per_cell = hosts_per_cell
        self.config_files = list(config_files)
        self.debug = debug
        self.proc = None
        self.output = os.path.join(state_dir, 'all-in-one.out')

    def _file(self, name, text):
        path = os.path.join(self.state_dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def start(self, timeout=600):
        """Start it and wait until its API serves; the compute
        endpoint."""
        os.makedirs(self.state_dir, exist_ok=True)
        files = ([self._file('bench-defaults.conf', self.DEFAULTS)] +
                 self.config_files +
                 [self._file('bench-overrides.conf', self.OVERRIDES)])
        command = [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
                   '--state-dir', self.state_dir,
                   '--cells', str(self.num_cells),
                   '--hosts-per-cell', str(self.hosts_per_cell),
                   '--host', '127.0.0.1', '--port', '0']
        for path in files:
            command += ['--config-file', path]
        if self.debug:
            command.append('--debug')
        out = open(self.output, 'w')
        self.proc = subprocess.Popen(command, stdout=out,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        out.close()
        deadline = time.monotonic() + timeout
        while True:
            with open(self.output) as f:
                for line in f:
                    if line.startswith(self.READY):
                        return line[len(self.READY):].split()[0].rstrip(',')
            if self.proc.poll() is not None:
                raise benchmark.BenchError(
                    'The all-in-one exited (status %s) before it served: '
                    '%s' % (self.proc.returncode, self._tail()))
            if time.monotonic() > deadline:
                raise benchmark.BenchError(
                    'The all-in-one did not serve within %d s: %s'
                    % (timeout, self._tail()))
            time.sleep(0.2)

    def _tail(self, lines=10):
        try:
            with open(self.output) as f:
                return ''.join(f.readlines()[-lines:]).strip()
        except OSError:
            return '(no output)'

    def stop(self, timeout=120):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            LOG.warning('The all-in-one did not stop within %d s; killing '
                        'it', timeout)
            self.proc.kill()
            self.proc.wait()


def run_boot(args, run_dir, progress):
    """One boot run; ``(report, the benchmark)``."""
    report = {'mode': 'boot', 'endpoint': args.endpoint, 'hosts': None,
              'cells': None, 'servers': args.servers,
              'concurrency': args.concurrency, 'flavor': args.flavor,
              'image': args.image}
    options = dict(servers=args.servers, concurrency=args.concurrency,
                   flavor=args.flavor, image=args.image,
                   timeout=args.timeout, progress=progress)
    if args.endpoint:
        bench = benchmark.BootBenchmark(
            args.endpoint, args.token or 'admin:admin',
            None if args.token else 'admin', **options)
        try:
            bench.prepare()
            bench.run()
        finally:
            bench.clean_up(delete_servers=not args.keep)
    else:
        per_cell = math.ceil(args.host_counts[0] / args.cells)
        hosts = per_cell * args.cells
        report.update(hosts=hosts, cells=args.cells)
        check_capacity(args.flavor, args.servers, hosts)
        progress.done('Starting the all-in-one: %d hosts in %d cells '
                      '(%d each) ...' % (hosts, args.cells, per_cell))
        system = StartedSystem(os.path.join(run_dir, 'state'), args.cells,
                               per_cell, args.config_file, args.debug)
        try:
            bench = benchmark.BootBenchmark(
                system.start(), 'admin:admin', 'admin', **options)
            bench.prepare()
            bench.run()
        finally:
            system.stop()
    report.update(bench.report())
    return report, bench


def format_boot(report):
    """The report of a boot run as a table."""
    where = (report['endpoint'] if report['endpoint'] else
             'an all-in-one of %d hosts in %d cells'
             % (report['hosts'], report['cells']))
    lines = [
        'Boot: %d servers of %s (%s), %d client thread%s, against %s'
        % (report['servers'], report['flavor'], report['image'],
           report['concurrency'], 's' if report['concurrency'] > 1 else '',
           where),
        '',
        '  posted          %8d   (failed POSTs: %d)'
        % (report['posted'], report['failed_posts']),
        '  ACTIVE          %8d' % report['active'],
        '  ERROR           %8d' % report['error'],
        '  still BUILD     %8d%s' % (report['still_building'],
                                     '   (timed out)' if report['timed_out']
                                     else ''),
        '  reschedules     %8d   (servers rescheduled: %d)'
        % (report['reschedules'], report['rescheduled_servers']),
    ]
    if report['boots_per_s'] is not None:
        lines.append('  boots/s         %8.2f   (%d ACTIVE in %.2f s, '
                     'first POST to last ACTIVE)'
                     % (report['boots_per_s'], report['active'],
                        report['duration_s']))
    else:
        lines.append('  boots/s              n/a   (no server ACTIVE)')
    lines += ['', '  %-16s%10s%10s%10s' % ('', 'p50', 'p95', 'p99')]
    for label, key, fmt in (('POST latency ms', 'post_latency_ms', '%10.1f'),
                            ('time to ACTIVE s', 'time_to_active_s',
                             '%10.3f')):
        values = report[key]
        lines.append('  %-16s' % label + ''.join(
            fmt % values[p] if values[p] is not None else '%10s' % 'n/a'
            for p in ('p50', 'p95', 'p99')))
    for title, key in (('ERROR reasons', 'error_reasons'),
                       ('failed POSTs', 'failed_post_reasons')):
        if report[key]:
            lines += ['', '  %s:' % title]
            lines += ['  %6d  %s' % (count, reason)
                      for reason, count in report[key].items()]
    if report['failed_polls']:
        lines += ['', '  (%d looks at the server list failed and were '
                      'made again)' % report['failed_polls']]
    if report['servers_without_actions_read']:
        lines += ['', '  (the actions of %d servers could not be read: '
                      'their reschedules are not counted)'
                  % report['servers_without_actions_read']]
    return '\n'.join(lines)


# --- scheduler-only mode -----------------------------------------------------

def _measure_scheduler(config_files, debug, run_dir, state_dir, hosts,
                       num_cells, selects, timeout):
    """One size, in a process of its own: fresh buses, transports and
    engines, and an RSS that holds nothing of the sizes before. It keeps
    to the CPUs of ``[DEFAULT] cpu_affinity``, as a scheduler would."""
    _configure(config_files, debug, run_dir)
    common.set_cpu_affinity()
    try:
        return benchmark.SchedulerBenchmark(
            state_dir, hosts, num_cells, selects, timeout).run()
    finally:
        rpc.cleanup()
        engines.dispose_all()


def run_scheduler_only(args, run_dir):
    """Every size of ``--hosts`` in turn; the report with a row each."""
    rows = []
    spawn = multiprocessing.get_context('spawn')
    for hosts in args.host_counts:
        with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=spawn) as pool:
            rows.append(pool.submit(
                _measure_scheduler, args.config_file, args.debug, run_dir,
                os.path.join(run_dir, 'hosts-%d' % hosts), hosts,
                args.cells, args.servers, args.timeout).result())
    return {'mode': 'scheduler-only', 'cells': args.cells,
            'selects': args.servers, 'flavor': benchmark.SELECT_FLAVOR,
            'num_alternates': benchmark.SELECT_ALTERNATES, 'rows': rows}


def format_scheduler(report):
    """The report of a scheduler run as a table, a row per size."""
    def number(value, fmt):
        return fmt % value if value is not None else 'n/a'

    header = ('hosts', 'reports/s', 'lost', 'unchanged/s', 'lost',
              'select p50 ms', 'p95 ms', 'p99 ms', 'RSS KiB/host',
              'untrimmed')
    rows = [header]
    for row in report['rows']:
        rows.append((
            str(row['hosts']), number(row['reports_per_s'], '%.1f'),
            str(row['reports_lost']),
            number(row['unchanged_reports_per_s'], '%.1f'),
            str(row['unchanged_reports_lost']),
            number(row['select_ms']['p50'], '%.2f'),
            number(row['select_ms']['p95'], '%.2f'),
            number(row['select_ms']['p99'], '%.2f'),
            number(row['rss_kib_per_host'], '%.2f'),
            number(row.get('rss_kib_per_host_untrimmed'), '%.2f')))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ['Scheduler alone: %d cells, %d selects of one %s each '
             '(%d alternates), per size'
             % (report['cells'], report['selects'], report['flavor'],
                report['num_alternates']), '']
    lines += ['  ' + '  '.join(cell.rjust(width)
                               for cell, width in zip(r, widths))
              for r in rows]
    lines += ['', '  RSS KiB/host: growth from before the first report to '
              'after the first select, once the memory freed since is '
              'back with the system; untrimmed: before that']
    failures = sum(row['select_failures'] for row in report['rows'])
    if failures:
        lines += ['', '  %d selects found no valid host' % failures]
    return '\n'.join(lines)


# --- the command -------------------------------------------------------------

def _close_log():
    """Close the log file before its directory goes: nothing may write
    there any more (matplotlib logs its first font scan, say)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler):
            root.removeHandler(handler)
            handler.close()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    progress = benchmark.Progress()
    run_dir = None
    try:
        if not args.endpoint:
            run_dir = tempfile.mkdtemp(prefix='scheduler-split-bench-')
            _configure(args.config_file, args.debug, run_dir)
        if args.scheduler_only:
            report = run_scheduler_only(args, run_dir)
        else:
            report, bench = run_boot(args, run_dir, progress)
        if args.json:
            print(json.dumps(report, indent=2))
        elif args.scheduler_only:
            print(format_scheduler(report))
        else:
            print(format_boot(report))
        sys.stdout.flush()
        if args.plot:
            benchmark.plot_boots(
                bench, args.plot, '%s: %d servers, concurrency %d'
                % (PROG, args.servers, args.concurrency))
            print('%s: plot written to %s' % (PROG, args.plot),
                  file=sys.stderr)
    except (benchmark.BenchError, cfg.Error) as exc:
        print('%s: %s' % (PROG, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('%s: interrupted' % PROG, file=sys.stderr)
        return 130
    finally:
        if run_dir and args.keep:
            print('%s: kept %s (the logs are scheduler-split.log, and '
                  'state/scheduler-split.log of an all-in-one it started)'
                  % (PROG, run_dir), file=sys.stderr)
        elif run_dir:
            _close_log()
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
