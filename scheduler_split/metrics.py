"""Prometheus metrics of every service, and the port a daemon serves on.

The metrics live in the process: a service only increments counters and
observes histograms on its hot paths (no lock held across I/O, nothing
allocated beyond the sample), and whatever is costly to know (how many
hosts the scheduler knows) is counted when Prometheus scrapes. A daemon
serves ``/metrics`` on a port of its own (``[metrics]``); the API serves
it as a route of the compute API. The all-in-one runs every service in
one process, so its API's ``/metrics`` shows all of them.

Under gunicorn each API worker is a process with its own counters: with
``PROMETHEUS_MULTIPROC_DIR`` set (an empty directory, before the workers
start), prometheus_client keeps them in files there and ``/metrics`` adds
up every worker's.
"""

import logging
import os
import socketserver
import threading
import weakref
from wsgiref import simple_server

import prometheus_client as prom
from prometheus_client import core as prom_core
from prometheus_client import multiprocess

from scheduler_split import conf

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# From a claim on an idle host (milliseconds) to a select that waits for
# a load of tens of thousands of hosts (seconds).
_SECONDS = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1.0, 2.5, 5.0,
            10.0, 30.0)
# From a cloud of one host to one of tens of thousands.
_HOSTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
          20000, 50000)

_SUBSYSTEMS = {'api': [], 'scheduler': [], 'conductor': []}


def _metric(kind, subsystem, name, documentation, labels=(), **kwargs):
    metric = kind('scheduler_split_%s_%s' % (subsystem, name),
                  documentation, labels, registry=None, **kwargs)
    _SUBSYSTEMS[subsystem].append(metric)
    return metric


# --- scheduler ---------------------------------------------------------------

SELECT_SECONDS = _metric(
    prom.Histogram, 'scheduler', 'select_destinations_seconds',
    'Time a select_destinations call took, from the request to the claimed '
    'hosts (or NoValidHost).', buckets=_SECONDS)
SELECTS = _metric(
    prom.Counter, 'scheduler', 'select_destinations',
    'select_destinations calls, by result: placed (every instance '
    'claimed), no_valid_host, error.', ['result'])
SELECT_PLACED = SELECTS.labels(result='placed')
SELECT_NO_VALID_HOST = SELECTS.labels(result='no_valid_host')
SELECT_ERROR = SELECTS.labels(result='error')
SELECT_BATCHED = _metric(
    prom.Histogram, 'scheduler', 'select_batch_requests',
    'Requests one select_destinations_batch call carried: boots that '
    'arrived at the super-conductor together and shared one call (see '
    '[conductor] schedule_batch_window).',
    buckets=(1, 2, 4, 8, 16, 32, 64))
FILTERED_HOSTS = _metric(
    prom.Histogram, 'scheduler', 'filtered_hosts',
    'Hosts the filters looked at, per instance scheduled.',
    buckets=_HOSTS)
SCORED_HOSTS = _metric(
    prom.Histogram, 'scheduler', 'scored_hosts',
    'Hosts that passed every filter and were weighed, per instance '
    'scheduled.', buckets=(0,) + _HOSTS)
CLAIMS = _metric(
    prom.Counter, 'scheduler', 'claims',
    'Claims tried on one host, by result: won; conflict (another writer '
    'changed the host first: the generation check failed); capacity (the '
    'host was full when the claim read it); refused (the host is disabled '
    'or gone, or a server group\'s policy forbids it).', ['result'])
CLAIM_WON = CLAIMS.labels(result='won')
CLAIM_CONFLICT = CLAIMS.labels(result='conflict')
CLAIM_CAPACITY = CLAIMS.labels(result='capacity')
CLAIM_REFUSED = CLAIMS.labels(result='refused')
REPORTS = _metric(
    prom.Counter, 'scheduler', 'compute_reports',
    'Reports of the computes, by outcome: absorbed (something new, '
    'written), unchanged (nothing new but liveness), superseded (a newer '
    'report of the same compute node came before it was written, and was '
    'written instead), dropped (could not be written; the next report '
    'tries again).', ['outcome'])
REPORT_ABSORBED = REPORTS.labels(outcome='absorbed')
REPORT_UNCHANGED = REPORTS.labels(outcome='unchanged')
REPORT_SUPERSEDED = REPORTS.labels(outcome='superseded')
REPORT_DROPPED = REPORTS.labels(outcome='dropped')
HOST_STATE_LOAD_SECONDS = _metric(
    prom.Histogram, 'scheduler', 'host_state_load_seconds',
    'Time a load of every host state from the scheduler database took.',
    buckets=_SECONDS)
HOST_STATE_RELOAD_SECONDS = _metric(
    prom.Histogram, 'scheduler', 'host_state_reload_seconds',
    'Time a reload of the host states changed since the last one took.',
    buckets=_SECONDS)
CELL_DOWN = _metric(
    prom.Gauge, 'scheduler', 'cell_down',
    'Whether the last look at the cell\'s database failed (1), so that its '
    'hosts get no new instances, or answered (0).', ['cell'])

# --- conductors --------------------------------------------------------------

BUILDS_STARTED = _metric(
    prom.Counter, 'conductor', 'builds_started',
    'Builds the super-conductor cast to the compute the scheduler chose.')
BUILDS_RESCHEDULED = _metric(
    prom.Counter, 'conductor', 'builds_rescheduled',
    'Failed builds a cell conductor cast to a same-cell alternate.')
RESCHEDULES_EXHAUSTED = _metric(
    prom.Counter, 'conductor', 'reschedules_exhausted',
    'Failed builds a cell conductor found no alternate for (ERROR).')
BURIED_IN_CELL0 = _metric(
    prom.Counter, 'conductor', 'builds_buried_in_cell0',
    'Instances the super-conductor put in ERROR in cell0, by reason: '
    'no_valid_host, lost (no super-conductor scheduled it in time), '
    'error.', ['reason'])
BUILDS_RECOVERED = _metric(
    prom.Counter, 'conductor', 'builds_recovered',
    'Builds a cell conductor went on with from their plan, by how: '
    'recast (cast again to the host holding their claim), rescheduled '
    '(on to their next alternate), waiting (back to their own host, '
    'every alternate refused) or given_back (their host was down).',
    ['how'])
BOOTS_REDRIVEN = _metric(
    prom.Counter, 'conductor', 'boots_redriven',
    'Boots the super-conductor cast again because no super-conductor '
    'took them in time.')
BOOTS_PASSED_ON = _metric(
    prom.Counter, 'conductor', 'boots_passed_on',
    'Boots a super-conductor standing aside for its database cast on to '
    'its peers instead of taking them.')
LOST_BUILDS_FAILED = _metric(
    prom.Counter, 'conductor', 'lost_builds_failed',
    'Lost builds a sweep put in ERROR, by reason: never_scheduled (by the '
    'super-conductor), no_host (a cell\'s build no compute took), '
    'host_down (its compute has been down too long).', ['reason'])
# Every reason shows from the start, at zero, so that a rate over it
# exists before the first one happens.
for _reason in ('no_valid_host', 'lost', 'error'):
    BURIED_IN_CELL0.labels(reason=_reason)
for _reason in ('never_scheduled', 'no_host', 'host_down'):
    LOST_BUILDS_FAILED.labels(reason=_reason)
for _how in ('recast', 'rescheduled', 'waiting', 'given_back'):
    BUILDS_RECOVERED.labels(how=_how)

# --- API ---------------------------------------------------------------------

API_REQUESTS = _metric(
    prom.Counter, 'api', 'requests',
    'Requests, by route (the template of the route table), method and '
    'status.', ['route', 'method', 'status'])
API_REQUEST_SECONDS = _metric(
    prom.Histogram, 'api', 'request_duration_seconds',
    'Time the API took to answer, by route and method.',
    ['route', 'method'], buckets=_SECONDS)


# --- what only a scrape counts -----------------------------------------------

class _KnownHosts:
    """Hosts the schedulers of this process know, per cell, counted at
    each scrape rather than on every report."""

    def __init__(self):
        self.managers = weakref.WeakSet()
        self.cell_names = {}

    def describe(self):
        return []

    def collect(self):
        known = prom_core.GaugeMetricFamily(
            'scheduler_split_scheduler_known_hosts',
            'Hosts the scheduler knows (every compute node that '
            'reported), per cell.', labels=['cell'])
        usable = prom_core.GaugeMetricFamily(
            'scheduler_split_scheduler_usable_hosts',
            'Known hosts a build may go to (reporting in time and '
            'enabled), per cell.', labels=['cell'])
        counts = {}
        for manager in list(self.managers):
            for cell, hosts in manager.hosts_by_cell().items():
                seen = counts.setdefault(cell, ({}, set()))
                seen[0].update(hosts)
                seen[1].update(uuid for uuid, ok in hosts.items() if ok)
        named = sorted(((self.cell_names.get(cell) or cell or 'none', hosts)
                        for cell, hosts in counts.items()),
                       key=lambda item: item[0])
        for name, (every, ok) in named:
            known.add_metric([name], len(every))
            usable.add_metric([name], len(ok))
        yield known
        yield usable


_HOSTS_COLLECTOR = _KnownHosts()
_SUBSYSTEMS['scheduler'].append(_HOSTS_COLLECTOR)


def watch_scheduler(manager):
    """Count the hosts ``manager`` knows at each scrape (until stopped)."""
    _HOSTS_COLLECTOR.managers.add(manager)


def unwatch_scheduler(manager):
    _HOSTS_COLLECTOR.managers.discard(manager)


def name_cell(cell_uuid, name):
    """Label the hosts of a cell with its name rather than its uuid."""
    _HOSTS_COLLECTOR.cell_names[cell_uuid] = name


# --- registration and exposition ---------------------------------------------

# The metrics each kind of service shows: a compute shows no scheduler
# counters stuck at zero.
SUBSYSTEMS = {'api': ('api',), 'scheduler': ('scheduler',),
              'super-conductor': ('conductor',),
              'cell-conductor': ('conductor',), 'compute': ()}

_registered = set()
_registered_lock = threading.Lock()


def register(kind):
    """Show the metrics of a service of ``kind`` in this process's
    registry (once, however many services of that kind it runs)."""
    with _registered_lock:
        for subsystem in SUBSYSTEMS.get(kind, ()):
            if subsystem in _registered:
                continue
            for collector in _SUBSYSTEMS[subsystem]:
                prom.REGISTRY.register(collector)
            _registered.add(subsystem)


def enabled(kind):
    return kind in CONF.metrics.enabled_services


def exposition():
    """``(body, content type)`` of a scrape of this process, or with
    ``PROMETHEUS_MULTIPROC_DIR`` of every process writing there."""
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        registry = prom.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prom.REGISTRY
    return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST


# --- a daemon's own port -----------------------------------------------------

def _port(kind):
    return getattr(CONF.metrics, '%s_port' % kind.replace('-', '_'))


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(simple_server.WSGIRequestHandler):

    def log_message(self, fmt, *args):
        LOG.debug('metrics: %s %s', self.address_string(), fmt % args)


def _app(environ, start_response):
    if environ.get('PATH_INFO', '/') not in ('/', '/metrics'):
        start_response('404 Not Found', [('Content-Type', 'text/plain')])
        return [b'Not found: metrics are at /metrics\n']
    body, content_type = exposition()
    start_response('200 OK', [('Content-Type', content_type),
                              ('Content-Length', str(len(body)))])
    return [body]


class Exporter:
    """The metrics port of a daemon process.

    One per process, however many services it runs: the first service to
    start opens it (on its kind's port), the last to stop closes it.
    """

    _lock = threading.Lock()
    _server = None
    _users = 0

    @classmethod
    def acquire(cls, kind):
        """Serve for a service of ``kind``; whether it is served. A port
        that cannot be opened is logged and the service runs on: its
        builds matter more than its metrics."""
        register(kind)
        if not enabled(kind):
            return False
        with cls._lock:
            if cls._server is None:
                address = (CONF.metrics.bind_host, _port(kind))
                try:
                    server = _Server(address, _QuietHandler)
                except OSError as exc:
                    LOG.error('Cannot serve the metrics of %s on %s:%d: '
                              '%s; set [metrics] %s_port to a free port',
                              kind, address[0], address[1], exc,
                              kind.replace('-', '_'))
                    return False
                server.set_app(_app)
                threading.Thread(target=server.serve_forever,
                                 kwargs={'poll_interval': 0.25},
                                 name='metrics', daemon=True).start()
                cls._server = server
                LOG.info('Serving metrics on http://%s:%d/metrics',
                         *server.server_address[:2])
            cls._users += 1
        return True

    @classmethod
    def release(cls):
        with cls._lock:
            cls._users -= 1
            if cls._users or cls._server is None:
                return
            server, cls._server = cls._server, None
        server.shutdown()
        server.server_close()

    @classmethod
    def address(cls):
        """``(host, port)`` being served, or None."""
        server = cls._server
        return server.server_address[:2] if server is not None else None
