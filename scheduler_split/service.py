"""A running service: RPC servers on its buses plus periodic tasks."""

from concurrent import futures
import logging
import threading
import time

from scheduler_split.db import outage
from scheduler_split import metrics
from scheduler_split import rpc
from scheduler_split import stand_aside

LOG = logging.getLogger(__name__)


class PeriodicTask:
    """Calls ``func`` every ``interval`` seconds until stopped."""

    def __init__(self, name, func, interval, run_first=True):
        self.name = name
        self.func = func
        self.interval = interval
        self.run_first = run_first
        self._stop = threading.Event()
        self._thread = None
        # When the outage that stops its runs began (monotonic), if one
        # does, and whether its start was a WARNING.
        self._outage_since = None
        self._warned = False

    def _loop(self):
        if not self.run_first:
            self._stop.wait(self.interval)
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.interval)

    def run_once(self):
        """One run. A run that fails because a database or the bus is
        away logs one line when the outage starts and one with the first
        run that works again, not a traceback each time: a WARNING and
        an INFO, or both at DEBUG for a database outage the process
        reported already (``outage.report``); any other failure logs its
        traceback. A run the database aborted for a race is run again at
        once (``outage.retry_races``)."""
        try:
            outage.retry_races(self.func)
        except Exception as exc:
            if not outage.is_outage(exc):
                LOG.exception('Periodic task %s failed', self.name)
                return
            if self._outage_since is None:
                self._outage_since = time.monotonic()
                self._warned = outage.report(
                    LOG, exc, 'Periodic task %s cannot run: %s; trying '
                    'again every %s seconds', self.name,
                    outage.describe(exc), self.interval)
            else:
                LOG.debug('Periodic task %s still cannot run: %s',
                          self.name, outage.describe(exc))
            return
        if self._outage_since is not None:
            LOG.log(logging.INFO if self._warned else logging.DEBUG,
                    'Periodic task %s runs again, after %.1f seconds',
                    self.name, time.monotonic() - self._outage_since)
            self._outage_since = None

    def start(self):
        self._thread = threading.Thread(target=self._loop, name=self.name,
                                        daemon=True)
        self._thread.start()

    def cancel(self):
        """No run after the one in hand, if any."""
        self._stop.set()

    def running(self):
        """Whether its thread is still in a run (after ``cancel``)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout=None):
        """Cancel, and wait for the run in hand for up to ``timeout``
        seconds (None: until it ends)."""
        self.cancel()
        if self._thread is not None:
            self._thread.join(timeout)


# Seconds a service's start waits for the listeners that start in
# threads of their own (``listen(wait=False)``) to have a connection.
LISTEN_WAIT = 5.0


class Service:
    """One service: ``(transport, topic, server, endpoints)`` listeners.

    A service listens on one or more buses (the scheduler on the API bus
    and every cell bus) and runs periodic tasks beside them. ``kind``
    (scheduler, super-conductor, cell-conductor, compute) says which
    ``[metrics]`` options it follows.
    """

    def __init__(self, name, kind=None):
        self.name = name
        self.kind = kind or name
        self._serving_metrics = False
        self._servers = []
        self._listeners = []
        self._periodic = []
        self._started = False
        self._stopped = False
        self._servers_lock = threading.Lock()
        # Servers of listeners that stood aside, finishing what they
        # had in hand, and the threads that wait for them.
        self._leaving = []
        self._leaving_threads = []

    def listen(self, transport, topic, endpoints, server, wait=True,
               on_start=None):
        """Consume ``topic`` on a bus; at once if the service runs.

        A listener starts once it has a connection to its bus. With
        ``wait`` False it gets one in a thread of its own, so that a bus
        that cannot be reached (another cell's) holds up neither the
        start of the service nor its other buses; ``on_start()`` is
        called once it listens."""
        listener = _Listener(transport, topic, endpoints, server, wait,
                             on_start)
        self._listeners.append(listener)
        if self._started:
            self._start_server(listener)

    def listeners(self):
        return list(self._listeners)

    def watch_databases(self, urls):
        """Stand aside while ``urls`` do not answer (:mod:`.stand_aside`)."""
        watch = stand_aside.Watch(self, urls)
        self.add_periodic(watch.check, stand_aside.CHECK_INTERVAL,
                          run_first=False)
        return watch

    def _start_server(self, listener, wait=None):
        """Start a listener; unless it waits, the thread that does."""
        rpc_server = rpc.get_server(listener.transport, listener.topic,
                                    listener.endpoints, listener.server)
        if listener.wait if wait is None else wait:
            self._started_server(listener, rpc_server)
            return None
        thread = threading.Thread(
            target=self._started_server, args=(listener, rpc_server, True),
            daemon=True, name='%s-listen-%s' % (self.name, listener.topic))
        thread.start()
        return thread

    def _started_server(self, listener, rpc_server, in_thread=False):
        try:
            rpc_server.start()
        except Exception:
            if not in_thread:
                raise
            LOG.exception('%s could not listen on a bus', self.name)
            return
        with self._servers_lock:
            if self._stopped:
                # Its bus answered only once the service was stopping.
                rpc_server.stop()
                return
            self._servers.append(rpc_server)
            listener.rpc_server = rpc_server
        if listener.on_start is not None:
            listener.on_start()

    def stand_aside(self, listener):
        """``listener`` stops consuming; the messages it has in hand
        finish in a thread of their own. Whether it was consuming."""
        stopped = threading.Event()

        def finish():
            try:
                stopped.wait()
                rpc_server.wait()
            finally:
                with self._servers_lock:
                    self._leaving.remove(rpc_server)
                    self._leaving_threads.remove(thread)

        with self._servers_lock:
            rpc_server = listener.rpc_server
            if rpc_server is None or self._stopped:
                return False
            listener.rpc_server = None
            self._servers.remove(rpc_server)
            self._leaving.append(rpc_server)
            thread = threading.Thread(
                target=finish, daemon=True,
                name='%s-aside-%s' % (self.name, listener.topic))
            self._leaving_threads.append(thread)
            thread.start()
        try:
            rpc_server.stop()
        finally:
            stopped.set()
        return True

    def take_part(self, listener):
        """``listener`` consumes again (its bus connected in this
        thread). Whether it was standing aside."""
        with self._servers_lock:
            if self._stopped or listener.rpc_server is not None:
                return False
        self._start_server(listener, wait=True)
        return True

    def reload(self):
        """SIGHUP: what the service re-reads besides mutable options."""

    def add_periodic(self, func, interval, run_first=True):
        self._periodic.append(PeriodicTask('%s-%s' % (
            self.name, getattr(func, '__name__', 'task')), func, interval,
            run_first))

    def start(self, serve_metrics=False):
        """Start consuming and the periodic tasks; with ``serve_metrics``
        (a daemon process, not the all-in-one) also the metrics port of
        the process, if ``[metrics] enabled_services`` lists its kind."""
        init_host = getattr(getattr(self, 'manager', None), 'init_host',
                            None)
        if init_host is not None:
            init_host()
        with self._servers_lock:
            self._stopped = False
        starting = [self._start_server(listener)
                    for listener in self._listeners]
        # A listener of its own thread normally has its connection in
        # a moment: the start waits that long for it, not for a bus
        # that cannot be reached.
        deadline = time.monotonic() + LISTEN_WAIT
        for thread in filter(None, starting):
            thread.join(max(0.0, deadline - time.monotonic()))
        self._started = True
        for task in self._periodic:
            task.start()
        if serve_metrics:
            self._serving_metrics = metrics.Exporter.acquire(self.kind)
        else:
            metrics.register(self.kind)
        LOG.info('%s started', self.name)

    def stop(self, graceful=True):
        """Stop consuming and running periodic tasks; with ``graceful``
        also wait for in-flight work: the messages and the periodic runs
        in hand. A run or a message blocked on a broker or database that
        is away can make this wait long: a process that must stop bounds
        it and reports what is left (``unfinished``)."""
        # Every task at once: each may be in a run waiting for the bus or
        # a database, and one after the other those waits would add up.
        for task in self._periodic:
            task.cancel()
        if self._serving_metrics:
            self._serving_metrics = False
            metrics.Exporter.release()
        with self._servers_lock:
            self._stopped = True
            servers = list(self._servers)
        _each_at_once('stop', servers)
        if graceful:
            self.wait()
        for task in self._periodic:
            task.stop(timeout=10)
        cleanup_host = getattr(getattr(self, 'manager', None),
                               'cleanup_host', None)
        if graceful and cleanup_host is not None:
            cleanup_host()

    def unfinished(self):
        """What a stop still waits for, in words: the periodic runs and
        the messages in hand."""
        left = ['periodic task %s' % task.name for task in self._periodic
                if task.running()]
        with self._servers_lock:
            servers = self._servers + self._leaving
        for server in servers:
            in_hand = getattr(getattr(server, '_work_executor', None),
                              'in_hand', 0)
            if in_hand:
                left.append('%d message(s) of %s' % (
                    in_hand, server._target.topic))
        return left

    def wait(self):
        """Wait until the messages being handled are done, then close."""
        wait_all([self])


def _each_at_once(method, servers):
    """Call ``method`` of every RPC server in ``servers`` at once: each
    waits for its listener to notice (up to rpc.LISTENER_MAX_WAIT)."""
    if len(servers) == 1:
        getattr(servers[0], method)()
    elif servers:
        with futures.ThreadPoolExecutor(len(servers)) as pool:
            for done in [pool.submit(getattr(s, method)) for s in servers]:
                done.result()


def wait_all(services):
    """``wait`` for every RPC server of ``services`` at once. A stopped
    server's worker threads notice it within a second each (they poll
    their queue), so one server after another would add up to a second
    per bus; together the whole set is done in about one."""
    _each_at_once('wait', [s for service in services
                           for s in service._servers])
    for service in services:
        with service._servers_lock:
            leaving = list(service._leaving_threads)
        for thread in leaving:
            thread.join()
        service._servers = []
        for listener in service._listeners:
            listener.rpc_server = None
        LOG.info('%s stopped', service.name)


class _Listener:
    """What a service consumes on one bus, and its RPC server while it
    does."""

    def __init__(self, transport, topic, endpoints, server, wait, on_start):
        self.transport = transport
        self.topic = topic
        self.endpoints = endpoints
        self.server = server
        self.wait = wait
        self.on_start = on_start
        self.rpc_server = None
