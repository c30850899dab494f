"""How fast the system boots servers, and how the scheduler alone scales.

``scheduler-split-bench`` (:mod:`scheduler_split.cmd.bench`) runs these.
A boot run (:class:`BootBenchmark`) speaks only HTTP to a compute
endpoint, as a user's client does; a scheduler run
(:class:`SchedulerBenchmark`) speaks only to the scheduler library, on
the buses, as the conductors and computes do.
"""

import collections
import concurrent.futures
import ctypes
import dataclasses
import datetime
import email.utils
import gc
import http.client
import json
import math
import os
import sys
import threading
import time
import urllib.parse

import oslo_messaging as messaging
from oslo_utils import uuidutils

from scheduler_split.api import images
from scheduler_split.compute import resource_tracker
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import deployment
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF

# What a boot asks for: 2.37 is where ``"networks": "none"`` is spelled so.
MICROVERSION = '2.37'
# Instance actions show their events to every reader from 2.51 (before,
# to admins only).
ACTIONS_MICROVERSION = '2.51'
# Each attempt to build a server on a host records this event in the
# server's create action, whether the spawn worked or not; more than one
# means the server was rescheduled.
BUILD_ATTEMPT_EVENT = 'compute_build_and_run_instance'
# The states a build rests in.
FINAL = ('ACTIVE', 'ERROR')
# Seconds between two looks at the server list.
POLL_INTERVAL = 0.2
# How much further back than the last poll each poll of changes-since
# looks: a change stamped just before a poll may commit just after it,
# and the server's Date header, which says when the poll was, counts
# whole seconds.
CHANGES_OVERLAP = 2.0
# Seconds between two looks at every server, changed or not: a safety
# net for a change that committed later than the overlap allows (every
# change of status stamps its server, so changes-since sees it).
SWEEP_INTERVAL = 30.0
# Percentiles every report gives.
POINTS = (50, 95, 99)


class BenchError(Exception):
    """What stops a run, said so that the user knows what to change."""


def percentiles(values, points=POINTS):
    """Nearest-rank percentiles of ``values``: ``{'p50': ..., ...}``,
    each None when there are no values."""
    ordered = sorted(values)
    result = {}
    for point in points:
        if ordered:
            rank = max(1, math.ceil(point / 100.0 * len(ordered)))
            result['p%d' % point] = ordered[rank - 1]
        else:
            result['p%d' % point] = None
    return result


def _rounded(stats, digits):
    return {k: (round(v, digits) if v is not None else None)
            for k, v in stats.items()}


class Progress:
    """One line of progress on standard error.

    On a terminal the line is redrawn in place (at most ten times a
    second); anywhere else (a log, a CI job) a line is printed every few
    seconds, so that the output stays readable.
    """

    def __init__(self, stream=None, interval=5.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval if not self.tty else 0.1
        self._last = 0.0
        self._width = 0

    def show(self, text):
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            self.stream.write('\r' + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write(text + '\n')
        self.stream.flush()

    def done(self, text):
        """The last state of a step, on a line of its own."""
        if self.tty:
            self.stream.write('\r' + text.ljust(self._width) + '\n')
            self._width = 0
        else:
            self.stream.write(text + '\n')
        self.stream.flush()
        self._last = 0.0


# --- the compute API, over HTTP ----------------------------------------------

@dataclasses.dataclass
class Response:
    status: int
    body: object
    headers: http.client.HTTPMessage

    def error_message(self):
        """The message of an error in Nova's shape (``{"badRequest":
        {"code": 400, "message": ...}}``), or the start of the body."""
        if isinstance(self.body, dict) and len(self.body) == 1:
            fault = next(iter(self.body.values()))
            if isinstance(fault, dict) and fault.get('message'):
                return str(fault['message'])
        return str(self.body)[:200]

    def server_time(self):
        """When the server answered (its Date header), else this clock's
        now: what changes-since compares with the servers' update times.
        """
        date = self.headers.get('Date')
        if date:
            try:
                return email.utils.parsedate_to_datetime(date)
            except (TypeError, ValueError):
                pass
        return datetime.datetime.now(datetime.timezone.utc)


def parse_endpoint(endpoint):
    """The parts of a compute endpoint URL; BenchError if it is none."""
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme not in ('http', 'https') or not url.hostname:
        raise BenchError('--endpoint must be an http:// or https:// URL, '
                         'not %r' % endpoint)
    return url


class ComputeClient:
    """One user's HTTP connection to the compute API, kept alive between
    requests (and opened again when the server closed it). One per
    thread: an ``http.client`` connection carries one request at a time.
    """

    # Methods that may be sent again after the connection broke.
    IDEMPOTENT = ('GET', 'PUT', 'DELETE')

    def __init__(self, endpoint, token, project_id=None, timeout=60):
        url = parse_endpoint(endpoint)
        connection = (http.client.HTTPSConnection if url.scheme == 'https'
                      else http.client.HTTPConnection)
        self._conn = connection(url.hostname, url.port, timeout=timeout)
        self.base_path = url.path.rstrip('/')
        self._headers = {'Accept': 'application/json',
                         'X-Auth-Token': token}
        if project_id:
            self._headers['X-Auth-Project-Id'] = project_id

    def request(self, method, path, body=None, microversion=MICROVERSION,
                absolute=False):
        """``method`` on ``path`` (under the endpoint's path, unless
        ``absolute``); the answer, its body parsed when JSON."""
        headers = dict(self._headers)
        headers['OpenStack-API-Version'] = 'compute %s' % microversion
        data = None
        if body is not None:
            data = json.dumps(body).encode('utf-8')
            headers['Content-Type'] = 'application/json'
        target = path if absolute else self.base_path + path
        for attempt in (1, 2):
            try:
                self._conn.request(method, target, body=data,
                                   headers=headers)
                answer = self._conn.getresponse()
                raw = answer.read()
                break
            except (OSError, http.client.HTTPException):
                self._conn.close()
                # A POST that broke may have been taken: never send it
                # twice.
                if attempt == 2 or method not in self.IDEMPOTENT:
                    raise
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode('utf-8', 'replace')
        return Response(answer.status, parsed, answer.headers)

    def close(self):
        self._conn.close()


@dataclasses.dataclass
class Post:
    """One POST /servers: when it started (monotonic seconds), how long
    it took, what it answered."""
    name: str
    started: float
    latency: float
    status: int = None
    server_id: str = None
    message: str = None


@dataclasses.dataclass
class Outcome:
    """Where a server's build came to rest, as the watcher first saw it."""
    status: str
    seen: float
    fault: str = None


class BootBenchmark:
    """Boot servers through the compute API and time each one.

    ``concurrency`` client threads POST ``/servers`` until ``servers``
    are posted, while a watcher lists the servers changed since its last
    look (``GET /servers/detail?changes-since=``) to see each one reach
    ACTIVE or ERROR, so that the API is not asked about every server on
    every tick.
    """

    def __init__(self, endpoint, token, project_id, servers, concurrency,
                 flavor, image, timeout, progress=None):
        self.endpoint = endpoint.rstrip('/')
        self.token = token
        self.project_id = project_id
        self.servers = servers
        self.concurrency = concurrency
        self.flavor_ref = flavor
        self.image_ref = image
        self.timeout = timeout
        self.progress = progress or Progress()
        self.flavor = None
        self.image_id = None
        self.posts = []
        self.outcomes = {}
        self.attempts = {}
        self.timed_out = False
        self.poll_errors = 0
        self._local = threading.local()
        self._clients = []
        self._lock = threading.Lock()
        self._next_index = 0
        self._accepted = set()
        self._posting_done = threading.Event()
        self._stop = threading.Event()
        self._quota_to_restore = None
        self._since = None
        self._deadline = None
        # A URL that is none fails here, before any work.
        parse_endpoint(self.endpoint)

    def _client(self):
        """This thread's connection."""
        client = getattr(self._local, 'client', None)
        if client is None:
            client = self._local.client = ComputeClient(
                self.endpoint, self.token, self.project_id)
            with self._lock:
                self._clients.append(client)
        return client

    def _request(self, method, path, what, body=None, **kwargs):
        try:
            return self._client().request(method, path, body, **kwargs)
        except (OSError, http.client.HTTPException) as exc:
            raise BenchError('%s %s%s (%s) found no API: %s'
                             % (method, self.endpoint, path, what,
                                exc or type(exc).__name__))

    def _get(self, path, what, **kwargs):
        resp = self._request('GET', path, what, **kwargs)
        if resp.status != 200:
            raise BenchError('Reading %s (GET %s%s) answered %d: %s'
                             % (what, self.endpoint, path, resp.status,
                                resp.error_message()))
        return resp

    # --- before the clock starts -------------------------------------------

    def prepare(self):
        """Find the flavor and the image by name; make room in the
        project's quota for every server of the run."""
        self.flavor = self._find_flavor()
        self.image_id = self._find_image()
        self._quota_to_restore = self._make_room()

    def _find_flavor(self):
        resp = self._get('/flavors/detail', 'the flavors')
        for flavor in resp.body['flavors']:
            if self.flavor_ref in (flavor['name'], flavor['id']):
                return flavor
        raise BenchError('No flavor %r: the API offers %s' % (
            self.flavor_ref,
            ', '.join(f['name'] for f in resp.body['flavors']) or 'none'))

    def _find_image(self):
        """The image's id: looked up by name in the image catalog beside
        the compute API (``<root>/image``, the all-in-one's), unless it
        is an id already."""
        if uuidutils.is_uuid_like(self.image_ref):
            return self.image_ref
        client = self._client()
        root = self.endpoint.rsplit('/v2', 1)[0]
        path = client.base_path.rsplit('/v2', 1)[0] + '/image/v2/images'
        query = urllib.parse.urlencode({'name': self.image_ref})
        try:
            resp = client.request('GET', path + '?' + query, absolute=True)
        except (OSError, http.client.HTTPException) as exc:
            resp = None
            reason = str(exc)
        else:
            reason = 'it answered %d' % resp.status
        if resp is not None and resp.status == 200:
            for image in resp.body.get('images', []):
                if image.get('name') == self.image_ref:
                    return image['id']
            reason = 'it has no image of that name'
        raise BenchError('Cannot find image %r in the image catalog at '
                         '%s/image (%s); give --image an image id'
                         % (self.image_ref, root, reason))

    def _make_room(self):
        """Raise the project's quota where it is too small for the run;
        returns the limits it replaced (None if it changed none)."""
        resp = self._get('/limits', 'the limits')
        # The server's time before the run: where the watcher's first
        # look for changed servers starts.
        self._since = resp.server_time()
        absolute = resp.body['limits']['absolute']
        each = {'instances': ('maxTotalInstances', 'totalInstancesUsed', 1),
                'cores': ('maxTotalCores', 'totalCoresUsed',
                          self.flavor['vcpus']),
                'ram': ('maxTotalRAMSize', 'totalRAMUsed',
                        self.flavor['ram'])}
        short = {}
        for resource, (limit_key, used_key, amount) in each.items():
            limit = absolute[limit_key]
            wanted = absolute[used_key] + self.servers * amount
            if limit != -1 and limit < wanted:
                short[resource] = wanted
        if not short:
            return None
        if not self.project_id:
            raise BenchError(
                'The quota of your project is too small for %d more '
                'servers of %s (it needs %s); raise it (openstack quota '
                'set) or ask for fewer --servers'
                % (self.servers, self.flavor['name'],
                   ', '.join('%s=%d' % i for i in sorted(short.items()))))
        path = '/os-quota-sets/%s' % self.project_id
        before = self._get(path, 'the quota').body['quota_set']
        resp = self._request('PUT', path, 'raising the quota',
                             {'quota_set': short})
        if resp.status != 200:
            raise BenchError('Could not raise the quota of project %s to '
                             '%s: %d %s' % (self.project_id, short,
                                            resp.status,
                                            resp.error_message()))
        return {resource: before[resource] for resource in short}

    # --- the timed part -----------------------------------------------------

    def run(self):
        """Post every server and watch them until each is ACTIVE or
        ERROR, or ``timeout`` seconds passed; then count the reschedules.
        """
        self._deadline = time.monotonic() + self.timeout
        watcher = threading.Thread(target=self._watch, name='bench-watch',
                                   daemon=True)
        posters = [threading.Thread(target=self._post_servers,
                                    name='bench-post-%d' % i, daemon=True)
                   for i in range(self.concurrency)]
        watcher.start()
        for poster in posters:
            poster.start()
        try:
            for poster in posters:
                poster.join()
            self._posting_done.set()
            watcher.join()
        except BaseException:
            # Interrupted: post no more, so that the clean-up knows
            # every server of the run.
            self._stop.set()
            for poster in posters:
                poster.join()
            raise
        self._count_attempts()

    def _post_servers(self):
        client = self._client()
        while True:
            with self._lock:
                self._next_index += 1
                index = self._next_index
            if index > self.servers or self._stop.is_set() or \
                    time.monotonic() > self._deadline:
                return
            post = Post(name='bench-%d' % index, started=time.monotonic(),
                        latency=None)
            body = {'server': {'name': post.name,
                               'flavorRef': self.flavor['id'],
                               'imageRef': self.image_id,
                               'networks': 'none'}}
            try:
                resp = client.request('POST', '/servers', body)
            except (OSError, http.client.HTTPException) as exc:
                post.message = 'no answer: %s' % (exc or type(exc).__name__)
            else:
                post.status = resp.status
                if resp.status == 202:
                    post.server_id = resp.body['server']['id']
                else:
                    post.message = resp.error_message()
            post.latency = time.monotonic() - post.started
            with self._lock:
                self.posts.append(post)
                if post.server_id:
                    self._accepted.add(post.server_id)

    def _watch(self):
        since = self._since or datetime.datetime.now(datetime.timezone.utc)
        since -= datetime.timedelta(seconds=CHANGES_OVERLAP)
        swept = time.monotonic()
        while True:
            polled = time.monotonic()
            # Now and then every server, not only the changed ones (see
            # SWEEP_INTERVAL).
            sweep = polled - swept >= SWEEP_INTERVAL
            try:
                servers, answered_at = self._listed(None if sweep
                                                    else since)
            except (BenchError, OSError, http.client.HTTPException):
                # Tried again on the next tick; the overlap of the next
                # changes-since covers what this one missed.
                self.poll_errors += 1
                servers, answered_at = [], None
            else:
                if sweep:
                    swept = polled
            seen = time.monotonic()
            for server in servers:
                if server['status'] in FINAL and \
                        server['id'] not in self.outcomes:
                    self.outcomes[server['id']] = Outcome(
                        server['status'], seen,
                        (server.get('fault') or {}).get('message'))
            if answered_at is not None:
                since = answered_at - datetime.timedelta(
                    seconds=CHANGES_OVERLAP)
            self.progress.show(self._progress_line())
            if self._posting_done.is_set():
                with self._lock:
                    pending = self._accepted - set(self.outcomes)
                if not pending:
                    break
            if seen > self._deadline:
                self.timed_out = True
                break
            if self._stop.is_set():
                break
            elapsed = time.monotonic() - polled
            time.sleep(max(0.0, POLL_INTERVAL - elapsed))
        self.progress.done(self._progress_line())

    def _listed(self, since=None):
        """The servers changed since ``since`` (every server if None),
        following every page; and when the first page was answered."""
        path = '/servers/detail'
        if since is not None:
            path += '?' + urllib.parse.urlencode(
                {'changes-since': since.strftime('%Y-%m-%dT%H:%M:%S.%fZ')})
        resp = self._get(path, 'the server list')
        answered_at = resp.server_time()
        servers = list(resp.body['servers'])
        while True:
            following = [link['href'] for link in
                         resp.body.get('servers_links', [])
                         if link.get('rel') == 'next']
            if not following:
                return servers, answered_at
            url = urllib.parse.urlsplit(following[0])
            resp = self._get(url.path + '?' + url.query, 'the server list',
                             absolute=True)
            servers.extend(resp.body['servers'])

    def _progress_line(self):
        with self._lock:
            posted = len(self._accepted)
            failed = len(self.posts) - posted
            first = min((p.started for p in self.posts), default=None)
        states = collections.Counter(o.status for o in self.outcomes.values())
        line = 'posted %d/%d  ACTIVE %d  ERROR %d' % (
            posted, self.servers, states['ACTIVE'], states['ERROR'])
        if failed:
            line += '  failed POSTs %d' % failed
        if first is not None:
            elapsed = time.monotonic() - first
            line += '  %.1f boots/s  %.0f s' % (
                states['ACTIVE'] / elapsed if elapsed else 0.0, elapsed)
        return line

    def _count_attempts(self):
        """How many hosts each server's build was tried on, from the
        events of its create action, read with ``concurrency`` threads
        once the clock stopped."""
        ids = sorted(self._accepted)
        with concurrent.futures.ThreadPoolExecutor(
                self.concurrency, thread_name_prefix='bench-actions') as pool:
            futures = {pool.submit(self._attempts_of, i): i for i in ids}
            for done, future in enumerate(
                    concurrent.futures.as_completed(futures), 1):
                try:
                    self.attempts[futures[future]] = future.result()
                except (BenchError, OSError, http.client.HTTPException):
                    self.attempts[futures[future]] = None
                self.progress.show('reading build attempts %d/%d'
                                   % (done, len(ids)))
        if ids:
            self.progress.done('reading build attempts %d/%d'
                               % (len(ids), len(ids)))

    def _attempts_of(self, server_id):
        path = '/servers/%s/os-instance-actions' % server_id
        actions = self._get(path, 'the actions of %s' % server_id,
                            microversion=ACTIONS_MICROVERSION).body
        creates = [a for a in actions['instanceActions']
                   if a['action'] == 'create']
        if not creates:
            # Not in a cell yet: no attempt was made.
            return 0
        action = self._get('%s/%s' % (path, creates[0]['request_id']),
                           'the create action of %s' % server_id,
                           microversion=ACTIONS_MICROVERSION).body
        return sum(1 for e in action['instanceAction'].get('events', [])
                   if e['event'] == BUILD_ATTEMPT_EVENT)

    # --- after ---------------------------------------------------------------

    def clean_up(self, delete_servers=True):
        """Delete the servers of the run and put back the quota it
        raised; for a deployment the run leaves as it found it."""
        if delete_servers:
            with self._lock:
                ids = sorted(self._accepted)
            failed = []
            with concurrent.futures.ThreadPoolExecutor(
                    self.concurrency,
                    thread_name_prefix='bench-delete') as pool:
                futures = {pool.submit(self._delete, i): i for i in ids}
                for done, future in enumerate(
                        concurrent.futures.as_completed(futures), 1):
                    if not future.result():
                        failed.append(futures[future])
                    self.progress.show('deleting servers %d/%d'
                                       % (done, len(ids)))
            if ids:
                self.progress.done('deleted %d servers%s' % (
                    len(ids) - len(failed),
                    '; could not delete %s' % ', '.join(failed)
                    if failed else ''))
        if self._quota_to_restore and delete_servers:
            # Forced: the servers just deleted may still count.
            body = dict(self._quota_to_restore, force=True)
            try:
                resp = self._request(
                    'PUT', '/os-quota-sets/%s' % self.project_id,
                    'putting back the quota', {'quota_set': body})
                problem = (None if resp.status == 200 else
                           resp.error_message())
            except BenchError as exc:
                problem = str(exc)
            if problem:
                self.progress.done('could not put back the quota of '
                                   'project %s (%s): %s'
                                   % (self.project_id,
                                      self._quota_to_restore, problem))
        elif self._quota_to_restore:
            self.progress.done('the quota of project %s stays raised for '
                               'the servers kept' % self.project_id)
        with self._lock:
            for client in self._clients:
                client.close()

    def _delete(self, server_id):
        try:
            resp = self._client().request('DELETE', '/servers/%s'
                                          % server_id)
        except (OSError, http.client.HTTPException):
            return False
        return resp.status in (204, 404)

    # --- what it found ------------------------------------------------------

    def report(self):
        """The run as a JSON-able dict."""
        accepted = [p for p in self.posts if p.server_id]
        failed = [p for p in self.posts if not p.server_id]
        active, errors = {}, {}
        for post in accepted:
            outcome = self.outcomes.get(post.server_id)
            if outcome is None:
                continue
            (active if outcome.status == 'ACTIVE' else errors)[
                post.server_id] = (post, outcome)
        first_post = min((p.started for p in self.posts), default=None)
        last_active = max((o.seen for _, o in active.values()),
                          default=None)
        duration = (last_active - first_post if last_active is not None
                    else None)
        attempts = [a for a in self.attempts.values() if a]
        unread = sum(1 for a in self.attempts.values() if a is None)
        return {
            'posted': len(accepted),
            'failed_posts': len(failed),
            'failed_post_reasons': _reasons(
                '%d %s' % (p.status, p.message) if p.status else p.message
                for p in failed),
            'active': len(active),
            'error': len(errors),
            'error_reasons': _reasons(o.fault or 'no fault message'
                                      for _, o in errors.values()),
            'still_building': len(accepted) - len(active) - len(errors),
            'timed_out': self.timed_out,
            'reschedules': sum(a - 1 for a in attempts if a > 1),
            'rescheduled_servers': sum(1 for a in attempts if a > 1),
            'servers_without_actions_read': unread,
            'failed_polls': self.poll_errors,
            'duration_s': round(duration, 3) if duration else None,
            'boots_per_s': (round(len(active) / duration, 2)
                            if duration else None),
            'post_latency_ms': _rounded(percentiles(
                [p.latency * 1000 for p in accepted]), 1),
            'time_to_active_s': _rounded(percentiles(
                [o.seen - p.started for p, o in active.values()]), 3),
        }

    def timeline(self):
        """``(posted at, POST latency, time to ACTIVE or None)`` of each
        accepted POST, in seconds from the first POST."""
        if not self.posts:
            return []
        first = min(p.started for p in self.posts)
        rows = []
        for post in self.posts:
            if not post.server_id:
                continue
            outcome = self.outcomes.get(post.server_id)
            to_active = (outcome.seen - post.started
                         if outcome and outcome.status == 'ACTIVE' else None)
            rows.append((post.started - first, post.latency, to_active))
        return sorted(rows)


def _reasons(messages):
    """``{message: how many}``, the most frequent first."""
    return dict(collections.Counter(messages).most_common())


def plot_boots(bench, path, title):
    """Two panels to ``path``: the boots completed in each second, and
    each server's POST latency and time to ACTIVE against when it was
    posted."""
    # An optional extra (bench): imported only when a plot is asked for,
    # and drawn without a display.
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    rows = bench.timeline()
    posted_at = [r[0] for r in rows]
    finished_at = [r[0] + r[2] for r in rows if r[2] is not None]
    span = max(posted_at + finished_at + [1.0])
    figure, (top, bottom) = pyplot.subplots(2, 1, sharex=True,
                                            figsize=(10, 7))
    top.hist(finished_at, bins=range(0, math.ceil(span) + 1),
             color='tab:green')
    top.set_ylabel('boots completed per second')
    top.set_title(title)
    bottom.scatter(posted_at, [r[1] for r in rows], s=8,
                   label='POST latency', color='tab:blue')
    bottom.scatter([r[0] for r in rows if r[2] is not None],
                   [r[2] for r in rows if r[2] is not None], s=8,
                   label='time to ACTIVE', color='tab:orange')
    bottom.set_xlabel('seconds since the first POST')
    bottom.set_ylabel('seconds')
    bottom.legend(loc='upper left')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


# --- the scheduler alone -----------------------------------------------------

# What each synthetic host reports having: a plausible hypervisor of today.
SYNTHETIC_VCPUS = 32
SYNTHETIC_MEMORY_MB = 128 * 1024
SYNTHETIC_LOCAL_GB = 2048
# The flavor each select asks for, the image it boots, and how many
# alternates it wants (as many as the super-conductor asks for by default:
# [conductor] build_max_attempts - 1).
SELECT_FLAVOR = 'm1.small'
SELECT_IMAGE = 'cirros'
SELECT_ALTERNATES = 2
# A report burst whose count has not grown for this long is over: what
# has not arrived by then is lost.
REPORT_STALL = 60.0


def rss_bytes(trim=False):
    """This process's resident memory, or None where /proc has none.

    With ``trim``, after a garbage collection and after handing the
    memory the C allocator holds free back to the system (glibc's
    ``malloc_trim``): what is left is what the process still uses, not
    what a burst of messages once needed.
    """
    if trim:
        gc.collect()
        try:
            ctypes.CDLL('libc.so.6').malloc_trim(0)
        except (OSError, AttributeError):
            pass
    try:
        with open('/proc/self/statm') as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident_pages * os.sysconf('SC_PAGE_SIZE')


def synthetic_hosts(count, num_cells):
    """``[(host, cell name)]``: ``count`` hosts dealt in turn to the
    cells ``cell1`` to ``cellK`` the all-in-one sets up, each host named
    ``cellN-hostM``."""
    hosts = []
    for i in range(count):
        cell = 'cell%d' % (i % num_cells + 1)
        hosts.append(('%s-host%d' % (cell, i // num_cells + 1), cell))
    return hosts


def synthetic_stats(index):
    """What a compute's resource tracker reports (see
    ``compute/resource_tracker.py``), for a host bigger than the fake
    driver's default."""
    arch = CONF.fake_driver.cpu_arch
    return resource_tracker.report({
        'vcpus': SYNTHETIC_VCPUS,
        'memory_mb': SYNTHETIC_MEMORY_MB,
        'local_gb': SYNTHETIC_LOCAL_GB,
        'hypervisor_type': 'fake',
        'hypervisor_version': CONF.fake_driver.hypervisor_version,
        'cpu_arch': arch,
        'cpu_info': json.dumps({
            'arch': arch, 'model': 'fake', 'vendor': 'fake',
            'topology': {'cells': 1, 'sockets': 1,
                         'cores': SYNTHETIC_VCPUS, 'threads': 1},
            'features': []}),
    }, '10.%d.%d.%d' % (index >> 16 & 255, index >> 8 & 255, index & 255))


class SchedulerBenchmark:
    """The scheduler service alone, on the in-memory buses, fed by
    synthetic hosts and asked to place instances one at a time.

    Every question goes through :class:`SchedulerClient`: the reports on
    each cell's bus, as computes send them, and the selects on the API
    bus, as the super-conductor sends them.
    """

    def __init__(self, state_dir, num_hosts, num_cells, selects, timeout,
                 progress=None):
        self.state_dir = state_dir
        self.num_hosts = num_hosts
        self.num_cells = num_cells
        self.selects = selects
        self.timeout = timeout
        self.progress = progress or Progress()
        self.ctx = ss_context.get_admin_context()
        self.api = None

    def run(self):
        """Measure one size; the row of the report."""
        system = deployment.AllInOne(self.state_dir, self.num_cells,
                                     hosts_per_cell=0)
        system.setup(echo=lambda line: None)
        # Where the super-conductor asks: the API bus.
        self.api = scheduler_client.SchedulerClient(rpc.get_transport())
        scheduler = deployment.scheduler_service(system.cells)
        scheduler.start()
        try:
            return self._measure(system.cells)
        finally:
            scheduler.stop(graceful=False)
            scheduler.wait()

    def _measure(self, cell_mappings):
        # Where each compute reports: its cell's bus.
        reporters = {cell.name: scheduler_client.SchedulerClient(
            rpc.get_transport(cell.transport_url))
            for cell in cell_mappings if not cell.is_cell0}
        hosts = synthetic_hosts(self.num_hosts, self.num_cells)
        reports = [(reporters[cell], (host, host), synthetic_stats(i))
                   for i, (host, cell) in enumerate(hosts)]
        rss_before = rss_bytes(trim=True)
        rss_before_untrimmed = rss_bytes()

        first, seen = self._report_round('reports', reports)
        unchanged, _ = self._report_round('unchanged reports', reports,
                                          baseline=seen)

        spec = self._request_spec()
        times, failures = [], 0
        rss_after = rss_after_untrimmed = None
        for index in range(self.selects):
            uuid = uuidutils.generate_uuid()
            spec.instance_uuid = uuid
            started = time.monotonic()
            try:
                self.api.select_destinations(self.ctx, spec, [uuid],
                                             return_alternates=True,
                                             num_alternates=SELECT_ALTERNATES)
            except scheduler_client.NoValidHost:
                failures += 1
            times.append(time.monotonic() - started)
            if index == 0:
                rss_after_untrimmed = rss_bytes()
                rss_after = rss_bytes(trim=True)
            self.progress.show('%d hosts: select %d/%d'
                               % (self.num_hosts, index + 1, self.selects))
        self.progress.done('%d hosts: %d selects, p50 %.1f ms' % (
            self.num_hosts, self.selects,
            percentiles(times)['p50'] * 1000))
        per_host = untrimmed = None
        if rss_before is not None and rss_after is not None:
            per_host = round((rss_after - rss_before) / 1024.0 /
                             self.num_hosts, 2)
            untrimmed = round((rss_after_untrimmed - rss_before_untrimmed) /
                              1024.0 / self.num_hosts, 2)
        return {
            'hosts': self.num_hosts,
            'cells': self.num_cells,
            'reports_per_s': first['per_s'],
            'reports_lost': first['lost'],
            'unchanged_reports_per_s': unchanged['per_s'],
            'unchanged_reports_lost': unchanged['lost'],
            'selects': self.selects,
            'select_failures': failures,
            'select_ms': _rounded(percentiles(
                [t * 1000 for t in times]), 2),
            'rss_kib_per_host': per_host,
            # The same before memory freed after the report bursts (the
            # messages this process queued to itself, as the computes'
            # senders share it here) goes back to the system.
            'rss_kib_per_host_untrimmed': untrimmed,
        }

    def _last_reports(self):
        """``{host: when its last report arrived}`` as the scheduler holds
        it in memory, where it chooses hosts from (the database may learn
        of a report that changed nothing only later)."""
        seen = {}
        for hosts in self.api.get_availability_zones(self.ctx).values():
            for host, entry in hosts.items():
                seen[host] = max(seen.get(host) or '',
                                 entry['updated_at'] or '')
        return seen

    def _report_round(self, label, reports, baseline=None):
        """Cast every report at once, then poll the scheduler until it
        has absorbed them all: every host known (the first round), or
        every host's last report newer than in ``baseline``. Returns
        ``({'per_s', 'lost'}, {host: last report})``."""
        started = time.monotonic()
        for reporter, name, stats in reports:
            reporter.update_resource_stats(self.ctx, name, stats)
        absorbed, absorbed_at, seen = 0, started, {}
        while True:
            asked = time.monotonic()
            try:
                seen = self._last_reports()
            except messaging.MessagingTimeout:
                pass
            answered = time.monotonic()
            if baseline is None:
                count = len(seen)
            else:
                count = sum(1 for host, at in seen.items()
                            if at != baseline.get(host))
            if count > absorbed:
                absorbed, absorbed_at = count, answered
            self.progress.show('%d hosts: %s %d/%d' % (
                self.num_hosts, label, absorbed, len(reports)))
            if absorbed >= len(reports) or \
                    answered - absorbed_at > REPORT_STALL or \
                    answered - started > self.timeout:
                break
            # Polling a large scheduler is itself work for it: look
            # less often the longer an answer takes.
            time.sleep(max(0.05, 2 * (answered - asked)))
        elapsed = absorbed_at - started
        per_s = round(absorbed / elapsed, 1) if elapsed > 0 else None
        lost = len(reports) - absorbed
        self.progress.done('%d hosts: %s %d/%d in %.2f s%s' % (
            self.num_hosts, label, absorbed, len(reports), elapsed,
            ', %d lost' % lost if lost else ''))
        return {'per_s': per_s, 'lost': lost}, seen

    def _request_spec(self):
        """A RequestSpec as the API writes it and the super-conductor
        hands it to the scheduler: one instance of an m1.small of cirros.
        """
        flavor = next(f for f in objects.Flavor.get_all(self.ctx)
                      if f.name == SELECT_FLAVOR)
        image = images.describe(images.find(SELECT_IMAGE))
        return objects.RequestSpec(
            instance_uuid=uuidutils.generate_uuid(), project_id='bench',
            user_id='bench', flavor=flavor, image_ref=image['id'],
            num_instances=1, availability_zone=None, force_hosts=None,
            scheduler_hints={}, instance_group=None,
            image_properties=image['properties'])
