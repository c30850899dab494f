"""What every service script does first: config, logging, objects."""

import importlib.metadata
import logging
import os
import signal
import sys
import threading
import time

from oslo_config import cfg
from oslo_log import log as oslo_logging

from scheduler_split.cmd import preflight
from scheduler_split import conf
from scheduler_split.db import outage
from scheduler_split import objects
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def register_logging_options(conf):
    """oslo.log's options, with the level of the record (not always
    ERROR) before each line of a traceback: a WARNING that carries one
    reads as a WARNING."""
    oslo_logging.register_options(conf)
    conf.set_default('logging_exception_prefix',
                     '%(asctime)s.%(msecs)03d %(process)d %(levelname)s '
                     '%(name)s %(instance)s')


register_logging_options(CONF)


def version():
    """The installed release of scheduler-split."""
    try:
        return importlib.metadata.version('scheduler-split')
    except importlib.metadata.PackageNotFoundError:
        return 'unknown (not installed)'


def add_version_argument(parser):
    """``--version`` for a script that parses with argparse."""
    parser.add_argument('--version', action='version',
                        version='%(prog)s ' + version())


def summary(doc):
    """The one-line description of a script: its module docstring's
    first line, after the script's name."""
    line = doc.strip().splitlines()[0].split(': ', 1)[-1]
    return line[:1].upper() + line[1:]


def parse_args(argv, description=None):
    """Read the command line and the configuration files, set up
    logging; a configuration that cannot be read, or a value in it that
    does not parse, ends the process with one line on standard error.
    ``--version`` prints the script's name and the release, as every
    script of the package does."""
    prog = os.path.basename(argv[0])
    try:
        CONF(argv[1:], project='scheduler-split', prog=prog,
             version='%s %s' % (prog, version()), description=description)
    except cfg.Error as exc:
        sys.exit('%s: %s' % (prog, ' '.join(str(exc).split())))
    try:
        oslo_logging.setup(CONF, 'scheduler-split')
    except cfg.Error as exc:
        sys.exit(preflight.bad_value(prog) or '%s: %s' % (
            prog, ' '.join(str(exc).split())))
    outage.one_line_outages()
    # After the logging: an option read here that is deprecated is
    # logged as such.
    problem = preflight.bad_value(prog)
    if problem:
        sys.exit(problem)
    try:
        set_cpu_affinity()
        set_switch_interval()
    except ValueError as exc:
        sys.exit(str(exc))
    objects.register_all()


# What the service script said it cannot run without (require): the
# start watches the addresses these options name.
_needs = []


def require(*needs):
    """End the script with one line on standard error, before anything
    is built, if one of ``needs`` (``preflight.TRANSPORT_URL``,
    ``preflight.API_DATABASE``, ...) is not set: the line names them and,
    when no configuration file was found, where they were looked for."""
    problem = preflight.missing(os.path.basename(sys.argv[0]), needs)
    if problem:
        sys.exit(problem)
    _needs[:] = needs


def parse_cpus(text, allowed, pid):
    """The CPUs ``[DEFAULT] cpu_affinity`` names, or None to leave the
    process where it is: ``"0,2-3"`` style lists, or ``auto`` for one of
    ``allowed`` chosen by ``pid``. ValueError for anything else, or for
    CPUs the process may not use."""
    text = text.strip()
    if not text:
        return None
    allowed = sorted(allowed)
    if text == 'auto':
        return {allowed[pid % len(allowed)]}
    cpus = set()
    for part in text.split(','):
        first, dash, last = part.strip().partition('-')
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError('[DEFAULT] cpu_affinity = %s: not "auto" nor '
                             'a list of CPUs such as 0,2-3' % text)
        low, high = int(first), int(last or first)
        if low > high:
            raise ValueError('[DEFAULT] cpu_affinity = %s: %s is an empty '
                             'range' % (text, part.strip()))
        cpus.update(range(low, high + 1))
    outside = cpus - set(allowed)
    if outside:
        raise ValueError('[DEFAULT] cpu_affinity = %s: CPU %s is not one '
                         'this process may use (%s)' % (
                             text, ', '.join(map(str, sorted(outside))),
                             ', '.join(map(str, allowed))))
    return cpus


def set_cpu_affinity():
    """Keep the process to the CPUs of ``[DEFAULT] cpu_affinity``."""
    if not hasattr(os, 'sched_setaffinity'):
        if CONF.cpu_affinity.strip():
            LOG.warning('[DEFAULT] cpu_affinity is ignored: this system '
                        'cannot set it')
        return
    cpus = parse_cpus(CONF.cpu_affinity, os.sched_getaffinity(0),
                      os.getpid())
    if cpus is None:
        return
    os.sched_setaffinity(0, cpus)
    LOG.info('Running on CPU %s ([DEFAULT] cpu_affinity = %s)',
             ','.join(map(str, sorted(cpus))), CONF.cpu_affinity)


def set_switch_interval():
    """Hand the interpreter lock over every ``[DEFAULT]
    thread_switch_interval`` seconds."""
    sys.setswitchinterval(CONF.thread_switch_interval)


def run(build):
    """Run the service ``build()`` returns until SIGTERM or SIGINT, then
    stop it gracefully. A service that cannot be built or started ends
    the process with the reason on standard error.

    While it runs the process serves its metrics on the service's
    ``[metrics]`` port, if ``enabled_services`` lists it.

    SIGTERM (or SIGINT) stops consuming, lets the messages being handled
    finish (a spawn, a scheduling call) and closes the connections;
    messages not taken yet stay on the bus for the next start. Whatever
    is still running ``[DEFAULT] graceful_shutdown_timeout`` seconds
    after the signal (a call to a broker or a database that is away, or
    a start still waiting for one) is abandoned, with a WARNING that
    names it, and the process exits 0 all the same. SIGHUP re-reads the
    mutable options of the config files (log levels, say), forgets the
    RPC version caps ``[upgrade_levels] auto`` resolved, and does
    whatever the service itself reloads (the scheduler: new cells).
    """
    stop = threading.Event()
    hup = threading.Event()
    # When the first signal came (monotonic).
    signalled = []

    def _stop(signum, frame):
        # Flags only: the start and a reload run beside the main thread,
        # which notices them within a fraction of a second.
        LOG.info('Caught signal %s, stopping', signum)
        if not signalled:
            signalled.append(time.monotonic())
        stop.set()
        # A database outage is no longer waited out.
        outage.give_up()

    def _hup(signum, frame):
        hup.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _hup)
    # A start waits for a bus or a database that is away: the operator
    # reads which one on standard error meanwhile.
    watch = preflight.StartWatch(os.path.basename(sys.argv[0]), _needs)
    starting = _Start(build)
    watch.start()
    try:
        # The start runs in a thread of its own, since it may wait for
        # ever; the main thread only waits for it or for a signal.
        starting.begin()
        while not (starting.done.wait(0.2) or stop.is_set()):
            pass
    finally:
        watch.done()
    if stop.is_set():
        return _stop_within_deadline(starting.service, signalled[0],
                                     while_starting=not starting.ok)
    if starting.error is not None:
        exc = starting.error
        if isinstance(exc, CONFIG_ERRORS):
            # An option the start read is wrong: the operator's to fix,
            # the code's traceback helps nobody.
            LOG.error('Could not start: %s', exc)
        else:
            LOG.error('Could not start', exc_info=exc)
        return fail_to_start(exc)
    svc = starting.service
    reloading = threading.Lock()
    while not stop.is_set():
        stop.wait(1)
        if hup.is_set():
            hup.clear()
            # Beside the main thread, as the start: a reload may wait
            # for the bus of a new cell, and a SIGTERM must still stop.
            threading.Thread(target=_reload, args=(svc, reloading),
                             name='reload', daemon=True).start()
    return _stop_within_deadline(svc, signalled[0])


# Configuration errors an operator makes (a value that does not parse, a
# required option not set, a file that cannot be read), as against the
# code's own mistakes with options (an option it never registered).
CONFIG_ERRORS = (cfg.ConfigFileValueError, cfg.RequiredOptError,
                 cfg.ConfigFileParseError, cfg.ConfigFilesNotFoundError,
                 cfg.ConfigFilesPermissionDeniedError)


class _Start:
    """``build()`` and the start of what it built, in a daemon thread."""

    def __init__(self, build):
        self._build = build
        self.done = threading.Event()
        self.service = None
        self.error = None

    @property
    def ok(self):
        return self.done.is_set() and self.error is None

    def begin(self):
        threading.Thread(target=self._run, name='start',
                         daemon=True).start()

    def _run(self):
        try:
            self.service = self._build()
            self.service.start(serve_metrics=True)
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


def _reload(svc, reloading):
    """SIGHUP: re-read the mutable options of the config files (log
    levels, say), forget the RPC version caps ``[upgrade_levels] auto``
    resolved (it looks at the service records again), and do whatever
    the service itself reloads (the scheduler: new cells)."""
    with reloading:
        LOG.info('Caught SIGHUP, reloading')
        try:
            CONF.mutate_config_files()
            rpc.reset_auto_caps()
            svc.reload()
        except Exception:
            LOG.exception('Reloading failed; running on as before')


def _stop_within_deadline(svc, since, while_starting=False):
    """Stop ``svc`` (None: not built yet) gracefully and close the bus
    connections, for at most ``[DEFAULT] graceful_shutdown_timeout``
    seconds after ``since``, plus the service's ``extra_stop_seconds``
    (the API's for the requests in hand). What is still blocked then,
    on a broker or a database that is away, is abandoned. Either way
    the process then exits at once (0), without the interpreter's
    teardown: it would join the abandoned threads, some of which never
    end (kombu reconnects for ever), and even after a clean stop it
    takes a second or more of CPU on a busy host (a scheduler's hosts,
    every module) for nothing a stopped service needs."""
    step = ['stopping the service']

    def _stop():
        try:
            if svc is not None:
                svc.stop(graceful=True)
            step[0] = 'closing the connections to the bus'
            rpc.cleanup()
        except Exception:
            LOG.exception('Could not stop gracefully')
        step[0] = None

    stopper = threading.Thread(target=_stop, name='stop', daemon=True)
    stopper.start()
    limit = CONF.graceful_shutdown_timeout + getattr(
        svc, 'extra_stop_seconds', 0)
    stopper.join(max(0.0, since + limit - time.monotonic()))
    if step[0] is None:
        LOG.info('Stopped before it had started' if while_starting
                 else 'Stopped')
        _exit_now(0)
    left = getattr(svc, 'unfinished', list)()
    if stopper.is_alive():
        left.append(step[0])
    if while_starting:
        left.insert(0, 'its start')
    LOG.warning('Stopped after %.1f seconds ([DEFAULT] '
                'graceful_shutdown_timeout), abandoning what still runs '
                '(on a broker or a database that is away, or past the '
                'deadline): %s', time.monotonic() - since, '; '.join(left))
    _exit_now(0)


def _exit_now(code):
    """End the process with ``code`` now, its log and output written
    out first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def fail(message):
    print(message, file=sys.stderr)
    return 1


def log_destination():
    """Where this process's log goes, in words."""
    if CONF.log_file:
        return os.path.join(CONF.log_dir or '', CONF.log_file)
    if CONF.use_journal:
        return 'the journal'
    if CONF.use_syslog:
        return 'syslog'
    return 'standard output'


def fail_to_start(exc):
    """Say on standard error why the service could not start, and where
    its log is: a unit's status shows standard error even when the log
    goes to a file."""
    if isinstance(exc, cfg.Error):
        return fail('%s: cannot start: %s' % (
            os.path.basename(sys.argv[0]), ' '.join(str(exc).split())))
    # A driver's error runs over several lines (a hint, a link); the
    # first says which server refused.
    reason = outage.describe(exc) if outage.is_outage(exc) else exc
    return fail('%s: cannot start: %s: %s\nThe log: %s' % (
        os.path.basename(sys.argv[0]), type(exc).__name__, reason,
        log_destination()))
