"""scheduler-split-bench: how fast servers boot, how the scheduler
scales with its hosts, and how fast the server list pages.

Boot mode (the default) posts ``--servers`` boots through the compute API
from ``--concurrency`` client threads and times each server until it is
ACTIVE: against the deployment at ``--endpoint``, or, without one,
against an all-in-one it starts in a temporary directory (the fake
driver spawning at once) and stops at the end.

``--scheduler-only`` starts the scheduler service alone on the in-memory
buses, for each size of ``--hosts`` in a fresh process and fresh
databases: it times how fast bursts of reports from that many synthetic
hosts are absorbed (first reports, unchanged, changed), then
``select_destinations`` alone and under a steady stream of changed
reports (``--report-rate`` a second, from a process of its own), and how
soon a restarted scheduler answers and has loaded every host.

``--list-servers`` starts an all-in-one as boot mode does, boots
``--servers`` through its API, then times pages of the server list.

A boot run also measures the CPU the system's processes spend: that of
the all-in-one it starts (unless ``--no-cpu``), or of the processes
``--cpu-of`` names on this machine with ``--endpoint``. It then does not
watch the servers while they boot (its looks would cost the API and the
databases CPU) and reports no time to ACTIVE, but the CPU of each
process per boot.

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
import sys
import tempfile

from oslo_config import cfg

from scheduler_split.benchmark import api_client
from scheduler_split.benchmark import base
from scheduler_split.benchmark import boot
from scheduler_split.benchmark import cpu
from scheduler_split.benchmark import db_stats
from scheduler_split.benchmark import guests
from scheduler_split.benchmark import plot
from scheduler_split.benchmark import scheduler_only
from scheduler_split.benchmark import server_list
from scheduler_split.benchmark import system as bench_system
from scheduler_split.benchmark import tables
from scheduler_split.cmd import all_in_one
from scheduler_split.cmd import common
from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import rpc

CONF = conf.CONF

PROG = 'scheduler-split-bench'
PLOT_EXTRA = "pip install 'scheduler-split[bench]'"
DEFAULT_HOSTS = 8
DEFAULT_SCHEDULER_HOSTS = '100,1000,10000,100000'
DEFAULT_CELLS = 2
DEFAULT_SERVERS = 200
DEFAULT_LIST_SERVERS = 2000
DEFAULT_GUESTS = 10
DEFAULT_REPEATS = 50
DEFAULT_LIMIT = 100


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


def _processes(text):
    """``api=812,compute=900,4242`` -> ``[('api', 812), ('compute',
    900), (None, 4242)]``."""
    try:
        return cpu.parse_spec(text)
    except base.BenchError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description='Boot servers through the compute API, time them '
                    'and measure the CPU they cost (against --endpoint, '
                    'or an all-in-one started for the run), with '
                    '--scheduler-only time the scheduler alone against '
                    'synthetic hosts, or with '
                    '--list-servers time pages of the server list.')
    common.add_version_argument(parser)
    parser.add_argument('--servers', type=_positive,
                        help='Servers to boot (default: %d; with '
                             '--list-servers, %d); with --scheduler-only, '
                             'selects to time per size (default: %d).'
                             % (DEFAULT_SERVERS, DEFAULT_LIST_SERVERS,
                                DEFAULT_SERVERS))
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
    parser.add_argument('--cpu-of', metavar='SPEC', type=_processes,
                        action='append', default=[],
                        help='With --endpoint, processes of this machine '
                             'whose CPU the run measures, each with its '
                             'descendants: a comma list of NAME=PID, or '
                             'PID (named by its command); the same NAME '
                             'may name several, which are summed. May '
                             'repeat. The CPU of the all-in-one the bench '
                             'starts is measured unless --no-cpu.')
    parser.add_argument('--db-stats', metavar='URL',
                        help='With --cpu-of: a database URL of the '
                             'deployment\'s PostgreSQL (or MySQL/MariaDB) '
                             'server, as a role that may read its '
                             'statistics; the run also counts the '
                             'statements and transactions the server '
                             'took in the measured window, per boot, by '
                             'database and by statement (PostgreSQL: from '
                             'pg_stat_statements when the server loads '
                             'it).')
    parser.add_argument('--no-cpu', action='store_true',
                        help='Do not measure the CPU of the all-in-one the '
                             'bench starts: watch the servers throughout '
                             'instead, and time each to ACTIVE.')
    parser.add_argument('--json', action='store_true',
                        help='Print the report as one JSON document.')
    parser.add_argument('--plot', metavar='FILE.png',
                        help='Also draw the run: boots completed (or, '
                             'with the CPU measured, POSTs accepted) per '
                             'second, the percentiles of the POST latency '
                             'and of time to ACTIVE over time with the '
                             'errors marked, and the CPU of each process; '
                             'with --scheduler-only, each figure against '
                             'the number of hosts (needs %s).' % PLOT_EXTRA)
    parser.add_argument('--scheduler-only', action='store_true',
                        help='Time the scheduler service alone: reports '
                             'from synthetic hosts, select_destinations '
                             'alone and under a stream of reports, and a '
                             'restart.')
    parser.add_argument('--report-rate', type=int,
                        help='With --scheduler-only, the changed reports a '
                             'second sent while selects are timed under '
                             'load (default: %d; 0 skips that phase).'
                             % scheduler_only.DEFAULT_REPORT_RATE)
    parser.add_argument('--stream-seconds', type=float,
                        help='With --scheduler-only, how long selects are '
                             'timed under the stream of reports (default: '
                             '%d).' % scheduler_only.DEFAULT_STREAM_SECONDS)
    parser.add_argument('--device-hosts', type=float, metavar='FRACTION',
                        help='With --scheduler-only, the fraction of the '
                             'hosts that have %d GPUs below the compute '
                             'node, each with VGPUs (%s) and traits '
                             '(%s); every other select then asks one '
                             '(%s). Default: 0, none.' % (
                                 scheduler_only.DEVICE_GPUS,
                                 ', '.join('%s:%d' % item for item in sorted(
                                     scheduler_only.DEVICE_RESOURCES.items())),
                                 ', '.join(scheduler_only.DEVICE_TRAITS),
                                 ', '.join('%s=%s' % item for item in sorted(
                                     scheduler_only.DEVICE_EXTRA_SPECS
                                     .items()))))
    parser.add_argument('--list-servers', action='store_true',
                        help='Time the server list: boot --servers through '
                             'the API of the all-in-one the bench starts '
                             '(the fake driver spawning at once, '
                             '--concurrency at a time; no rows are written '
                             'behind the API\'s back), then time GET '
                             '/servers/detail?limit=N (the first page, and '
                             'the middle one by marker) and GET '
                             '/servers?limit=N, one after the other, '
                             '--repeats times each. The fake hosts are made '
                             'big enough for the servers unless a '
                             '--config-file sizes them.')
    parser.add_argument('--guests', action='store_true',
                        help='Boot --servers (default: %d) real guests at '
                             'once through an all-in-one with '
                             '--compute-driver libvirt started as a child '
                             'process (root, libvirtd running, the libvirt '
                             'extra): POST to ACTIVE and POST to the '
                             'guest\'s marker line on its console, and the '
                             'CPU of the control plane per boot beside '
                             'that of each guest\'s QEMU.'
                             % DEFAULT_GUESTS)
    parser.add_argument('--repeats', type=_positive,
                        help='With --list-servers, how many times each page '
                             'is asked for (default: %d).' % DEFAULT_REPEATS)
    parser.add_argument('--limit', type=_positive,
                        help='With --list-servers, the servers of a page '
                             '(default: %d).' % DEFAULT_LIMIT)
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
            api_client.parse_endpoint(args.endpoint)
        except base.BenchError as exc:
            parser.error(str(exc))
        if args.scheduler_only:
            parser.error('--scheduler-only starts its own scheduler; it '
                         'takes no --endpoint')
        if args.list_servers:
            parser.error('--list-servers starts its own all-in-one; it '
                         'takes no --endpoint')
        for name in ('hosts', 'cells', 'config_file'):
            if getattr(args, name):
                parser.error('--%s describes the system the bench starts; '
                             'not with --endpoint' % name.replace('_', '-'))
    args.cpu_of = [process for spec in args.cpu_of for process in spec]
    if args.cpu_of and not args.endpoint:
        parser.error('--cpu-of names processes of the deployment at '
                     '--endpoint; the all-in-one the bench starts is '
                     'measured without it')
    if args.db_stats and not args.cpu_of:
        parser.error('--db-stats counts over the window --cpu-of measures; '
                     'give both')
    if args.no_cpu and (args.endpoint or args.scheduler_only or
                        args.list_servers):
        parser.error('--no-cpu is for a boot run of the all-in-one the '
                     'bench starts (with --endpoint, the CPU is measured '
                     'only with --cpu-of)')
    if sum((args.scheduler_only, args.list_servers, args.guests)) > 1:
        parser.error('--scheduler-only, --list-servers and --guests are '
                     'separate runs; ask for one')
    if args.guests and (args.endpoint or args.plot):
        parser.error('--guests starts its own all-in-one and draws no '
                     'plot')
    if args.list_servers and args.plot:
        parser.error('--plot draws a boot run or a scheduler run, not '
                     '--list-servers')
    for name in ('repeats', 'limit'):
        if getattr(args, name) and not args.list_servers:
            parser.error('--%s is for --list-servers' % name)
    for name in ('report_rate', 'stream_seconds', 'device_hosts'):
        if getattr(args, name) is not None and not args.scheduler_only:
            parser.error('--%s is for --scheduler-only'
                         % name.replace('_', '-'))
    if args.report_rate is not None and args.report_rate < 0:
        parser.error('--report-rate must be 0 or more')
    if args.stream_seconds is not None and args.stream_seconds <= 0:
        parser.error('--stream-seconds must be more than 0')
    if args.device_hosts is not None and not 0 <= args.device_hosts <= 1:
        parser.error('--device-hosts must be between 0 and 1')
    # Every device_every-th host has devices.
    args.device_every = (round(1 / args.device_hosts)
                         if args.device_hosts else 0)
    args.servers = args.servers or (
        DEFAULT_LIST_SERVERS if args.list_servers else
        DEFAULT_GUESTS if args.guests else DEFAULT_SERVERS)
    args.repeats = args.repeats or DEFAULT_REPEATS
    if args.report_rate is None:
        args.report_rate = scheduler_only.DEFAULT_REPORT_RATE
    args.stream_seconds = (args.stream_seconds or
                           scheduler_only.DEFAULT_STREAM_SECONDS)
    args.limit = args.limit or DEFAULT_LIMIT
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


def configure(config_files, debug, run_dir):
    """The configuration and the log of the services the bench starts,
    as the all-in-one sets them up: the log in ``run_dir``, not on the
    terminal."""
    CONF(project='scheduler-split', default_config_files=[],
         args=[a for f in config_files for a in ('--config-file', f)])
    all_in_one.setup_logging(argparse.Namespace(
        state_dir=run_dir, verbose=False, debug=debug))


def _all_in_one(args, run_dir, progress, roomy=False):
    """The all-in-one a run starts, ``--hosts`` in ``--cells``, refused
    unless its fake hosts hold ``--servers`` (first made big enough for
    them if ``roomy``); ``(the system, not started yet, how many hosts
    it has)``."""
    per_cell = math.ceil(args.host_counts[0] / args.cells)
    hosts = per_cell * args.cells
    sizes = (bench_system.room_for(args.flavor, args.servers, hosts)
             if roomy else None)
    bench_system.check_capacity(args.flavor, args.servers, hosts)
    progress.done('Starting the all-in-one: %d hosts in %d cells '
                  '(%d each) ...' % (hosts, args.cells, per_cell))
    system = bench_system.StartedSystem(
        os.path.join(run_dir, 'state'), args.cells, per_cell,
        args.config_file, args.debug, fake_driver=sizes)
    return system, hosts


def _booting(args, endpoint, token, project_id, progress, cpu_meter=None,
             counter=None):
    """The boot run of ``--servers`` against ``endpoint``."""
    return boot.BootBenchmark(
        endpoint, token, project_id, servers=args.servers,
        concurrency=args.concurrency, flavor=args.flavor, image=args.image,
        timeout=args.timeout, progress=progress, cpu_meter=cpu_meter,
        db_stats=counter)


# --- boot mode ---------------------------------------------------------------

def run_boot(args, run_dir, progress):
    """One boot run; ``(report, the benchmark)``."""
    report = {'mode': 'boot', 'endpoint': args.endpoint, 'hosts': None,
              'cells': None, 'servers': args.servers,
              'concurrency': args.concurrency, 'flavor': args.flavor,
              'image': args.image}
    if args.endpoint:
        # Before any work: a process named wrongly stops the run here.
        meter = cpu.CpuMeter(args.cpu_of) if args.cpu_of else None
        counter = (db_stats.DbStats(args.db_stats) if args.db_stats
                   else None)
        bench = _booting(args, args.endpoint, args.token or 'admin:admin',
                         None if args.token else 'admin', progress, meter,
                         counter)
        try:
            bench.prepare()
            bench.run()
        finally:
            bench.clean_up(delete_servers=not args.keep)
    else:
        system, hosts = _all_in_one(args, run_dir, progress)
        report.update(hosts=hosts, cells=args.cells)
        try:
            endpoint = system.start()
            meter = (None if args.no_cpu else
                     cpu.CpuMeter([('all-in-one', system.proc.pid)]))
            bench = _booting(args, endpoint, 'admin:admin', 'admin',
                             progress, meter)
            bench.prepare()
            bench.run()
        finally:
            system.stop()
    report.update(bench.report())
    return report, bench


# --- scheduler-only mode -----------------------------------------------------

def _measure_scheduler(config_files, debug, run_dir, state_dir, hosts,
                       num_cells, selects, timeout, report_rate,
                       stream_seconds, device_every=0):
    """One size, in a process of its own: fresh buses, transports and
    engines, and an RSS that holds nothing of the sizes before. It keeps
    to the CPUs of ``[DEFAULT] cpu_affinity``, as a scheduler would."""
    configure(config_files, debug, run_dir)
    # The stream of reports comes from a process of its own, as a
    # compute's: on the CPUs this one had before it kept to its own.
    cpus = (sorted(os.sched_getaffinity(0))
            if hasattr(os, 'sched_getaffinity') else None)
    common.set_cpu_affinity()
    common.set_switch_interval()
    try:
        return scheduler_only.SchedulerBenchmark(
            state_dir, hosts, num_cells, selects, timeout,
            report_rate=report_rate, stream_seconds=stream_seconds,
            stream_setup=(config_files, debug, run_dir, cpus),
            device_every=device_every).run()
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
                args.cells, args.servers, args.timeout, args.report_rate,
                args.stream_seconds, args.device_every).result())
    return {'mode': 'scheduler-only', 'cells': args.cells,
            'selects': args.servers, 'flavor': scheduler_only.SELECT_FLAVOR,
            'num_alternates': scheduler_only.SELECT_ALTERNATES,
            'device_hosts': args.device_hosts or 0,
            'report_rate': args.report_rate,
            'stream_seconds': args.stream_seconds,
            'select_pause_ms': int(scheduler_only.SELECT_PAUSE * 1000),
            'reload_interval': scheduler_only.RELOAD_INTERVAL, 'rows': rows}


# --- list-servers mode -------------------------------------------------------

# What the report of a list run tells of the boots that made its servers.
BOOT_FIGURES = ('posted', 'failed_posts', 'failed_post_reasons', 'active',
                'error', 'error_reasons', 'still_building', 'timed_out',
                'boots_per_s', 'duration_s')


def run_list_servers(args, run_dir, progress):
    """Boot ``--servers`` in an all-in-one started for the run, then time
    its server list; the report."""
    system, hosts = _all_in_one(args, run_dir, progress, roomy=True)
    report = {'mode': 'list-servers', 'hosts': hosts, 'cells': args.cells,
              'servers': args.servers, 'concurrency': args.concurrency,
              'flavor': args.flavor, 'image': args.image,
              'limit': args.limit, 'repeats': args.repeats}
    try:
        endpoint = system.start()
        booting = _booting(args, endpoint, 'admin:admin', 'admin', progress)
        booting.prepare()
        booting.run(count_attempts=False)
        booted = booting.report()
        report.update((key, booted[key]) for key in BOOT_FIGURES)
        report.update(server_list.ServerListBenchmark(
            endpoint, 'admin:admin', 'admin', args.limit, args.repeats,
            progress).run())
    finally:
        system.stop()
    return report


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
    progress = base.Progress()
    run_dir = None
    try:
        if not args.endpoint:
            run_dir = tempfile.mkdtemp(prefix='scheduler-split-bench-')
            configure(args.config_file, args.debug, run_dir)
        if args.guests:
            report = guests.GuestBenchmark(
                args.servers, args.flavor, args.timeout, progress,
                args.config_file, keep_dir=run_dir if args.keep
                else None).run()
        elif args.scheduler_only:
            report = run_scheduler_only(args, run_dir)
        elif args.list_servers:
            report = run_list_servers(args, run_dir, progress)
        else:
            report, bench = run_boot(args, run_dir, progress)
        if args.json:
            print(json.dumps(report, indent=2))
        elif args.guests:
            print(guests.format_report(report))
        elif args.scheduler_only:
            print(tables.format_scheduler(report))
        elif args.list_servers:
            print(tables.format_list_servers(report))
        else:
            print(tables.format_boot(report))
        sys.stdout.flush()
        if args.plot and args.scheduler_only:
            plot.plot_scheduler(report, args.plot, '%s --scheduler-only: '
                                '%d cells' % (PROG, args.cells))
        elif args.plot:
            plot.plot_boots(bench, args.plot,
                            '%s: %s' % (PROG, plot.title(report)))
        if args.plot:
            print('%s: plot written to %s' % (PROG, args.plot),
                  file=sys.stderr)
    except (base.BenchError, cfg.Error) as exc:
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
