"""Boots through the compute API (``scheduler-split-bench``'s default
mode): it speaks only HTTP to a compute endpoint, as a user's client
does (:mod:`.boot_api`); given a CPU meter, it also measures what the
boots cost the processes of the system. This module runs the boots:
the threads that post them, the watcher that sees them come to rest, or
the measured window and its quiet spans; what the run found is drawn in
:mod:`.boot_report`."""

import collections
import concurrent.futures
import datetime
import http.client
import threading
import time

from scheduler_split.benchmark import base
from scheduler_split.benchmark import boot_api
from scheduler_split.benchmark import boot_report
from scheduler_split.benchmark import cpu

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
        self._lock = threading.Lock()
        self._next_index = 0
        self._accepted = set()
        self._posting_done = threading.Event()
        self._stop = threading.Event()
        self._quota_to_restore = None
        self._since = None
        self._deadline = None
        # A URL that is none fails here, before any work.
        self.api = boot_api.BootApi(self.endpoint, self.token,
                                    self.project_id)

    # --- before the clock starts -------------------------------------------

    def prepare(self):
        """Find the flavor and the image by name; make room in the
        project's quota for every server of the run."""
        self.flavor = self.api.find_flavor(self.flavor_ref)
        self.image_id = self.api.find_image(self.image_ref)
        self._since, self._quota_to_restore = self.api.make_room(
            self.flavor, self.servers)

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
        self.cpu_window = boot_report.CpuWindow(
            idle, idle_to.at - idle_from.at, start, end, costs, looks)
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
        threshold = sum(idle.values()) + boot_report.QUIET_MARGIN
        costs, looks, db_looks = [], [], []
        not_before = time.monotonic()
        while True:
            quiet = self._quiet(sampler, not_before, threshold)
            end = quiet if quiet is not None else sampler.latest()
            before = sampler.take()
            db_before = self._db_read()
            try:
                servers, _ = self.api.list_servers()
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
            quiet = cpu.quiet_start(sampler.since(not_before),
                                    boot_report.QUIET_SPAN, threshold)
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
        return line + '  %.2f cores busy' % sampler.busy(
            boot_report.QUIET_SPAN)

    def _pending(self):
        """The accepted servers not seen ACTIVE or ERROR yet."""
        with self._lock:
            return self._accepted - set(self.outcomes)

    def _post_servers(self):
        client = self.api.client()
        while True:
            with self._lock:
                self._next_index += 1
                index = self._next_index
            if index > self.servers or self._stop.is_set() or \
                    time.monotonic() > self._deadline:
                return
            post = boot_report.Post(name='bench-%d' % index,
                                    started=time.monotonic(), latency=None)
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
                servers, answered_at = self.api.list_servers(
                    None if sweep else since)
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
                self.outcomes[server['id']] = boot_report.Outcome(
                    server['status'], seen,
                    (server.get('fault') or {}).get('message'))

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
            futures = {pool.submit(self.api.attempts_of, i): i for i in ids}
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
                futures = {pool.submit(self.api.delete, i): i for i in ids}
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
            problem = self.api.restore_quota(self._quota_to_restore)
            if problem:
                self.progress.done('could not put back the quota of '
                                   'project %s (%s): %s'
                                   % (self.project_id,
                                      self._quota_to_restore, problem))
        elif self._quota_to_restore:
            self.progress.done('the quota of project %s stays raised for '
                               'the servers kept' % self.project_id)
        self.api.close()

    # --- what it found (boot_report) ----------------------------------------

    def report(self):
        """The run as a JSON-able dict."""
        return boot_report.report(self)

    def timeline(self):
        """A TimelineRow of each POST, in the order they were posted."""
        return boot_report.timeline(self)

    def cpu_timeline(self, interval=0.3):
        """The meter's Samples of a measured run for a plot (see
        boot_report.cpu_timeline); None if the run was not measured."""
        return boot_report.cpu_timeline(self, interval)
