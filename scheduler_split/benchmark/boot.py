"""Boots through the compute API (``scheduler-split-bench``'s default
mode): it speaks only HTTP to a compute endpoint, as a user's client
does; given a CPU meter, it also measures what the boots cost the
processes of the system."""

import collections
import concurrent.futures
import dataclasses
import datetime
import http.client
import threading
import time
import urllib.parse

from oslo_utils import uuidutils

from scheduler_split.benchmark import api_client
from scheduler_split.benchmark import base
from scheduler_split.benchmark import cpu
from scheduler_split.benchmark import db_stats
from scheduler_split.benchmark import stats

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

# With a CPU meter: how long the processes are watched doing nothing
# before the first POST, to learn their background rate (periodic
# reports, heartbeats), and seconds between two readings of the meter.
IDLE_SECONDS = 2.0
CPU_SAMPLE_INTERVAL = 0.1
# The processes are quiet once, over QUIET_SPAN seconds, all of them
# together used less CPU than their idle rate plus QUIET_MARGIN cores. A
# tenth of a core is above the jitter of the kernel's accounting (10 ms
# ticks) and of a periodic task firing, and well below what building
# servers costs; builds that wait without working (a spawn delay) end a
# quiet span too, and the look at the servers that follows it finds them
# unfinished, so the wait goes on.
QUIET_SPAN = 1.0
QUIET_MARGIN = 0.1
# What the report says of time to ACTIVE when the CPU is measured.
TIME_TO_ACTIVE_UNMEASURED = (
    'not measured while the CPU is: the servers are not watched during '
    'the run, since every look at them costs the API and the databases '
    'CPU')


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


@dataclasses.dataclass
class TimelineRow:
    """One POST as a plot draws it: when it was posted (seconds from the
    first POST), its latency (seconds), where its server came to rest
    (ACTIVE, ERROR, BUILD when the run ended first, or ``POST failed``)
    and its time to ACTIVE when that was measured."""
    posted_at: float
    latency: float
    status: str
    to_active: float = None


@dataclasses.dataclass
class CpuWindow:
    """What the meter saw of a run: the processes' idle rate (CPU
    seconds per second each) over ``idle_span`` seconds before it, the
    Samples that open and close the measured window, the cost of each of
    the bench's looks at the servers inside it (CPU seconds each), and
    ``looks``, ``(start, end)`` of each of them in monotonic time."""
    idle: dict
    idle_span: float
    start: cpu.Sample
    end: cpu.Sample
    costs: list
    looks: list
    # With a db_stats.DbStats: the database's counts in the window, less
    # those of the looks, and over the idle span (db_stats.Reading).
    db: object = None
    db_idle: object = None


class BootBenchmark:
    """Boot servers through the compute API and time each one.

    ``concurrency`` client threads POST ``/servers`` until ``servers``
    are posted, while a watcher lists the servers changed since its last
    look (``GET /servers/detail?changes-since=``) to see each one reach
    ACTIVE or ERROR, so that the API is not asked about every server on
    every tick.

    Given a ``cpu_meter`` (a cpu.CpuMeter of the system's processes),
    the run is measured instead: nothing watches the servers while they
    are posted; after the last POST the run waits until the processes
    are quiet, then looks once at every server, and again after each
    next quiet span while some are still building. The CPU the processes
    used from just before the first POST to where the last quiet span
    began, less that of those looks, is what the boots cost. Given
    ``db_stats`` too (a db_stats.DbStats), the statements and
    transactions the database server counted over the same window, less
    those of the looks, are what the boots sent it.
    """

    def __init__(self, endpoint, token, project_id, servers, concurrency,
                 flavor, image, timeout, progress=None, cpu_meter=None,
                 db_stats=None):
        self.endpoint = endpoint.rstrip('/')
        self.token = token
        self.project_id = project_id
        self.servers = servers
        self.concurrency = concurrency
        self.flavor_ref = flavor
        self.image_ref = image
        self.timeout = timeout
        self.progress = progress or base.Progress()
        self.flavor = None
        self.image_id = None
        self.posts = []
        self.outcomes = {}
        self.attempts = {}
        self.timed_out = False
        self.poll_errors = 0
        self.cpu_meter = cpu_meter
        self.db_stats = db_stats
        # A CpuWindow once a measured run ended, and every Sample of it.
        self.cpu_window = None
        self.cpu_samples = []
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
        api_client.parse_endpoint(self.endpoint)

    def _client(self):
        """This thread's connection."""
        client = getattr(self._local, 'client', None)
        if client is None:
            client = self._local.client = api_client.ComputeClient(
                self.endpoint, self.token, self.project_id)
            with self._lock:
                self._clients.append(client)
        return client

    def _request(self, method, path, what, body=None, **kwargs):
        try:
            return self._client().request(method, path, body, **kwargs)
        except (OSError, http.client.HTTPException) as exc:
            raise base.BenchError('%s %s%s (%s) found no API: %s'
                                  % (method, self.endpoint, path, what,
                                     exc or type(exc).__name__))

    def _get(self, path, what, **kwargs):
        resp = self._request('GET', path, what, **kwargs)
        if resp.status != 200:
            raise base.BenchError('Reading %s (GET %s%s) answered %d: %s'
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
        raise base.BenchError('No flavor %r: the API offers %s' % (
            self.flavor_ref,
            ', '.join(f['name'] for f in resp.body['flavors']) or 'none'))

    def _find_image(self):
        """The image's id: looked up by name in the image catalog beside
        the compute API (``<root>/image``, the all-in-one's), unless it
        is an id already. Where nothing serves that catalog (a
        deployment's API on the built-in catalog, which takes a name as
        ``imageRef``), the name itself is sent."""
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
            if resp.status == 404:
                return self.image_ref
        if resp is not None and resp.status == 200:
            for image in resp.body.get('images', []):
                if image.get('name') == self.image_ref:
                    return image['id']
            reason = 'it has no image of that name'
        raise base.BenchError('Cannot find image %r in the image catalog '
                              'at %s/image (%s); give --image an image id'
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
            raise base.BenchError(
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
            raise base.BenchError('Could not raise the quota of project %s '
                                  'to %s: %d %s' % (self.project_id, short,
                                                    resp.status,
                                                    resp.error_message()))
        return {resource: before[resource] for resource in short}

    # --- the timed part -----------------------------------------------------

    def run(self, count_attempts=True):
        """Post every server and see each come to rest (ACTIVE or
        ERROR), or ``timeout`` seconds pass: watched as they go, or,
        given a CPU meter, measured; then count the reschedules (unless
        not ``count_attempts``: a run that only wants the servers made
        reads no actions)."""
        if self.cpu_meter is None:
            self._run_watched()
        else:
            self._run_measured()
        if count_attempts:
            self._count_attempts()

    def _posters(self):
        return [threading.Thread(target=self._post_servers,
                                 name='bench-post-%d' % i, daemon=True)
                for i in range(self.concurrency)]

    def _run_watched(self):
        self._deadline = time.monotonic() + self.timeout
        watcher = threading.Thread(target=self._watch, name='bench-watch',
                                   daemon=True)
        posters = self._posters()
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

    def _run_measured(self):
        sampler = cpu.Sampler(self.cpu_meter, CPU_SAMPLE_INTERVAL).start()
        posters = []
        try:
            idle_from = sampler.latest()
            db_from = self._db_read()
            self.progress.show('measuring the idle CPU of %s for %.0f s'
                               % (', '.join(self.cpu_meter.names),
                                  IDLE_SECONDS))
            time.sleep(IDLE_SECONDS)
            idle_to = sampler.take()
            db_start = self._db_read()
            idle = cpu.rates(idle_from, idle_to)
            self.progress.done('idle: %.2f cores busy' % sum(idle.values()))
            start = sampler.take()
            self._deadline = time.monotonic() + self.timeout
            posters = self._posters()
            for poster in posters:
                poster.start()
            for poster in posters:
                while poster.is_alive():
                    poster.join(0.2)
                    self.progress.show(self._measured_line(sampler))
            self._posting_done.set()
            self.progress.done(self._measured_line(sampler))
            end, costs, looks, db_end, db_looks = self._settle(sampler, idle)
        except BaseException:
            self._stop.set()
            for poster in posters:
                poster.join()
            raise
        finally:
            sampler.stop()
            self.cpu_samples = sampler.samples
        self.cpu_window = CpuWindow(idle, idle_to.at - idle_from.at, start,
                                    end, costs, looks)
        if self.db_stats is not None:
            counted = db_end.since(db_start)
            for look in db_looks:
                counted = counted.minus(look)
            self.cpu_window.db = counted
            self.cpu_window.db_idle = db_start.since(db_from)

    def _db_read(self):
        return self.db_stats.read() if self.db_stats is not None else None

    def _settle(self, sampler, idle):
        """After the last POST: wait until the processes are quiet, then
        look at every server; while some still build, wait for the next
        quiet span and look again. ``(the Sample where the last quiet
        span began, or the last one if the run timed out; the CPU each
        look inside the window cost, less the idle rate; when each look
        was; the database's counts before the last look, and what each
        look before it sent the database)``."""
        threshold = sum(idle.values()) + QUIET_MARGIN
        costs, looks, db_looks = [], [], []
        not_before = time.monotonic()
        while True:
            quiet = self._quiet(sampler, not_before, threshold)
            end = quiet if quiet is not None else sampler.latest()
            before = sampler.take()
            db_before = self._db_read()
            try:
                servers, _ = self._listed()
            except (base.BenchError, OSError, http.client.HTTPException):
                self.poll_errors += 1
                servers = []
            after = sampler.take()
            self._record(servers, after.at)
            looks.append((before.at, after.at))
            states = collections.Counter(
                o.status for o in self.outcomes.values())
            self.progress.done('looked at the servers: ACTIVE %d  ERROR %d  '
                               'still building %d' % (
                                   states['ACTIVE'], states['ERROR'],
                                   len(self._pending())))
            if quiet is None:
                self.timed_out = True
                return end, costs, looks, db_before, db_looks
            if not self._pending():
                return end, costs, looks, db_before, db_looks
            if self.db_stats is not None:
                db_looks.append(self._db_read().since(db_before))
            # Since the processes were quiet, what they used during the
            # look, above their background, is the look's own cost.
            elapsed = after.at - before.at
            costs.append({name: max(0.0, used - idle[name] * elapsed)
                          for name, used in after.since(before).items()})
            not_before = after.at

    def _quiet(self, sampler, not_before, threshold):
        """The Sample where the first quiet span after ``not_before``
        began, once there is one; None once the run's time is up."""
        while True:
            quiet = cpu.quiet_start(sampler.since(not_before), QUIET_SPAN,
                                    threshold)
            if quiet is not None:
                return quiet
            if time.monotonic() > self._deadline:
                return None
            self.progress.show('%s  waiting until the processes are quiet '
                               '(below %.2f cores)'
                               % (self._measured_line(sampler), threshold))
            time.sleep(CPU_SAMPLE_INTERVAL)

    def _measured_line(self, sampler):
        with self._lock:
            posted = len(self._accepted)
            failed = len(self.posts) - posted
        line = 'posted %d/%d' % (posted, self.servers)
        if failed:
            line += '  failed POSTs %d' % failed
        return line + '  %.2f cores busy' % sampler.busy(QUIET_SPAN)

    def _pending(self):
        """The accepted servers not seen ACTIVE or ERROR yet."""
        with self._lock:
            return self._accepted - set(self.outcomes)

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
            except (base.BenchError, OSError, http.client.HTTPException):
                # Tried again on the next tick; the overlap of the next
                # changes-since covers what this one missed.
                self.poll_errors += 1
                servers, answered_at = [], None
            else:
                if sweep:
                    swept = polled
            seen = time.monotonic()
            self._record(servers, seen)
            if answered_at is not None:
                since = answered_at - datetime.timedelta(
                    seconds=CHANGES_OVERLAP)
            self.progress.show(self._progress_line())
            if self._posting_done.is_set() and not self._pending():
                break
            if seen > self._deadline:
                self.timed_out = True
                break
            if self._stop.is_set():
                break
            elapsed = time.monotonic() - polled
            time.sleep(max(0.0, POLL_INTERVAL - elapsed))
        self.progress.done(self._progress_line())

    def _record(self, servers, seen):
        """Note the servers of a listing that came to rest, as first
        seen at ``seen``."""
        for server in servers:
            if server['status'] in FINAL and \
                    server['id'] not in self.outcomes:
                self.outcomes[server['id']] = Outcome(
                    server['status'], seen,
                    (server.get('fault') or {}).get('message'))

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
            following = api_client.next_page(resp.body)
            if following is None:
                return servers, answered_at
            resp = self._get(following, 'the server list', absolute=True)
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
                except (base.BenchError, OSError, http.client.HTTPException):
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
            except base.BenchError as exc:
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
        if self.cpu_window is not None and first_post is not None:
            # The servers were seen only once the processes were quiet:
            # the boots took until the window closed.
            duration = self.cpu_window.end.at - first_post
            if not active:
                duration = None
        else:
            last_active = max((o.seen for _, o in active.values()),
                              default=None)
            duration = (last_active - first_post if last_active is not None
                        else None)
        attempts = [a for a in self.attempts.values() if a]
        unread = sum(1 for a in self.attempts.values() if a is None)
        report = {
            'posted': len(accepted),
            'failed_posts': len(failed),
            'failed_post_reasons': stats.reasons(
                '%d %s' % (p.status, p.message) if p.status else p.message
                for p in failed),
            'active': len(active),
            'error': len(errors),
            'error_reasons': stats.reasons(o.fault or 'no fault message'
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
            'post_latency_ms': stats.rounded(stats.percentiles(
                [p.latency * 1000 for p in accepted]), 1),
            'time_to_active_s': stats.rounded(stats.percentiles(
                [o.seen - p.started for p, o in active.values()]), 3),
        }
        if self.cpu_meter is not None:
            report['time_to_active_s'] = None
            report['time_to_active_not_measured'] = TIME_TO_ACTIVE_UNMEASURED
            report['cpu'] = self._cpu_report(len(active))
            if self.cpu_window is not None and self.cpu_window.db:
                report['database'] = db_stats.report(
                    self.cpu_window.db, self.cpu_window.db_idle,
                    self.cpu_window.idle_span, len(active),
                    self.db_stats.what)
        return report

    def _cpu_report(self, active):
        """What each name of the meter used in the window, and per boot
        (``active`` the servers ACTIVE)."""
        window = self.cpu_window
        if window is None:
            return None
        used = window.end.since(window.start)
        looks = {name: sum(cost[name] for cost in window.costs)
                 for name in used}

        def figures(processes, seconds, idle):
            return {
                'processes': processes,
                'cpu_s': round(seconds, 3),
                'cpu_ms_per_boot': (round(seconds * 1000 / active, 1)
                                    if active else None),
                'idle_cpu_ms_per_s': round(idle * 1000, 1),
            }

        spent = {name: max(0.0, used[name] - looks[name]) for name in used}
        by_name = {name: figures(processes, spent[name], window.idle[name])
                   for name, processes in self.cpu_meter.counts.items()}
        return {
            'window_s': round(window.end.at - window.start.at, 3),
            'idle_measured_s': round(window.idle_span, 3),
            'quiet_span_s': QUIET_SPAN,
            'quiet_margin_cores': QUIET_MARGIN,
            'looks_in_window': len(window.costs),
            'looks_cpu_s': round(sum(looks.values()), 3),
            'by_name': by_name,
            'total': figures(sum(self.cpu_meter.counts.values()),
                             sum(spent.values()), sum(window.idle.values())),
            'vanished': {str(pid): name for pid, name
                         in sorted(self.cpu_meter.vanished.items())},
        }

    def timeline(self):
        """A TimelineRow of each POST, in the order they were posted."""
        if not self.posts:
            return []
        first = min(p.started for p in self.posts)
        rows = []
        for post in sorted(self.posts, key=lambda p: p.started):
            outcome = (self.outcomes.get(post.server_id)
                       if post.server_id else None)
            if not post.server_id:
                status = 'POST failed'
            else:
                status = outcome.status if outcome else 'BUILD'
            to_active = None
            if status == 'ACTIVE' and self.cpu_meter is None:
                to_active = outcome.seen - post.started
            rows.append(TimelineRow(post.started - first, post.latency,
                                    status, to_active))
        return rows

    def cpu_timeline(self, interval=0.3):
        """The meter's Samples of a measured run for a plot, in seconds
        from the first POST: ``{'names', 'at' (the midpoint of each
        interval of at least ``interval`` seconds between two Samples:
        over a single tenth of a second, the kernel's 10 ms ticks make
        the rates jump), 'cores' ({name: CPU seconds per second over
        each interval}), 'window' ((start, end)), 'looks' ([(start,
        end)] of the bench's looks at the servers), 'idle' ({name:
        cores})}``; None if the run was not measured."""
        window = self.cpu_window
        if window is None or not self.posts:
            return None
        first = min(p.started for p in self.posts)
        names = list(self.cpu_meter.counts)
        samples = self.cpu_samples
        at, cores = [], {name: [] for name in names}
        earlier = samples[0] if samples else None
        for index, later in enumerate(samples[1:], 1):
            if later.at - earlier.at < interval and \
                    index < len(samples) - 1:
                continue
            at.append((earlier.at + later.at) / 2 - first)
            for name, rate in cpu.rates(earlier, later).items():
                cores[name].append(rate)
            earlier = later
        return {'names': names, 'at': at, 'cores': cores,
                'window': (window.start.at - first, window.end.at - first),
                'looks': [(a - first, b - first) for a, b in window.looks],
                'idle': dict(window.idle)}
