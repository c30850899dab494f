"""A steady stream of compute reports from a process of its own.

Computes send their reports from their own processes: the work of
encoding a cast is theirs, not the scheduler's. So that the scheduler
under a stream of reports does only its own part, the stream comes from
a feeder process that casts each report through the scheduler library
(``SchedulerClient.update_resource_stats``) as a compute does, on a
memory bus whose sends hand every encoded message to a pipe. In the
scheduler's process a relay thread does what a broker does with them:
puts each message in the queue of the in-memory bus it was meant for.

The feeder sends ``rate`` reports a second, host after host in turn,
each one saying something new (its builds in flight and its host IP
change), until told to stop; then it says how many it sent.
"""

import logging
import multiprocessing
import os
import threading
import time

import oslo_messaging as messaging
from oslo_serialization import jsonutils

from scheduler_split.benchmark import base
from scheduler_split import memory_bus

LOG = logging.getLogger(__name__)

# How often the feeder looks at the clock to send what is due, and hands
# what it cast to the pipe.
TICK = 0.01
# Seconds the feeder may take to start and cast its first report.
START_TIMEOUT = 120.0


# What the feeder cast and has not handed to the pipe yet: (virtual host,
# queue name, encoded message).
_outbox = []


def _send_to_outbox(driver, target, ctxt, message, **kwargs):
    """The memory driver's ``send`` in the feeder process: the cast,
    encoded as the driver encodes it, goes to the outbox; the relay puts
    it in its queue in the scheduler's process."""
    _outbox.append((driver.vhost_name, driver.rpc_queue_name(target),
                    jsonutils.dumps([ctxt, message])))


def changed_stats(stats, index, turn):
    """``stats`` (a host's first report) as the report of its ``turn``:
    its builds in flight and its host IP differ from the turn before."""
    changed = dict(stats)
    changed['num_io_ops'] = turn % 4
    changed['host_ip'] = '%d.%d.%d.%d' % (10 + turn % 2, index >> 16 & 255,
                                          index >> 8 & 255, index & 255)
    return changed


def _feed(pipe, config_files, debug, run_dir, cpus, hosts, rate, stop,
          device_every=0):
    """The feeder process: cast reports of ``hosts`` (``[(host, cell
    transport URL)]``) at ``rate`` a second until ``stop`` is set; send
    over ``pipe`` lists of messages, then ``('sent', count)``. It runs on
    ``cpus`` (if given), not on those the scheduler's process keeps to.
    """
    from scheduler_split.benchmark import scheduler_only
    from scheduler_split.cmd import bench
    from scheduler_split import context as ss_context
    from scheduler_split import rpc
    from scheduler_split.scheduler import client as scheduler_client

    bench.configure(config_files, debug, run_dir)
    if cpus:
        os.sched_setaffinity(0, cpus)
    memory_bus.MemoryDriver.send = _send_to_outbox
    ctx = ss_context.get_admin_context()
    clients = {}
    for _, url in hosts:
        if url not in clients:
            clients[url] = scheduler_client.SchedulerClient(
                rpc.get_transport(url))
    first = [scheduler_only.synthetic_stats(i, device_every, hosts[i][0])
             for i in range(len(hosts))]
    outbox = _outbox
    sent = 0
    started = time.monotonic()
    pipe.send(('ready', None))
    while not stop.is_set():
        due = int((time.monotonic() - started) * rate) - sent
        for _ in range(max(0, due)):
            index = sent % len(hosts)
            host, url = hosts[index]
            clients[url].update_resource_stats(
                ctx, (host, host),
                changed_stats(first[index], index, sent // len(hosts) + 1))
            sent += 1
            if len(outbox) >= 100:
                pipe.send(list(outbox))
                del outbox[:]
        if outbox:
            pipe.send(list(outbox))
            del outbox[:]
        time.sleep(TICK)
    pipe.send(('sent', sent))


class ReportStream:
    """The feeder process and, in this process, the relay into the
    scheduler's buses."""

    def __init__(self, config_files, debug, run_dir, cpus, hosts, rate,
                 device_every=0):
        self.config_files = config_files
        self.debug = debug
        self.run_dir = run_dir
        self.cpus = cpus
        self.hosts = hosts
        self.rate = rate
        self.device_every = device_every
        self.sent = None
        self.relayed = 0
        self._process = None
        self._thread = None
        self._found = {}
        self._done = threading.Event()

    def start(self):
        """Start the feeder and wait for its first report."""
        spawn = multiprocessing.get_context('spawn')
        self._pipe, theirs = spawn.Pipe(duplex=False)
        self._stop = spawn.Event()
        self._process = spawn.Process(
            target=_feed, name='report-stream', daemon=True,
            args=(theirs, self.config_files, self.debug, self.run_dir,
                  self.cpus, self.hosts, self.rate, self._stop,
                  self.device_every))
        self._process.start()
        theirs.close()
        if not self._pipe.poll(START_TIMEOUT):
            self._process.kill()
            raise base.BenchError('the report stream did not start within '
                                  '%d seconds' % START_TIMEOUT)
        self._pipe.recv()
        self._thread = threading.Thread(target=self._relay,
                                        name='report-relay', daemon=True)
        self._thread.start()

    def stop(self):
        """Stop the feeder; the reports it sent, once every one is on
        the scheduler's bus."""
        self._stop.set()
        self._done.wait(START_TIMEOUT)
        self._process.join(10)
        if self.sent is None:
            raise base.BenchError('the report stream stopped without '
                                  'saying what it sent')
        return self.sent

    def _queue(self, vhost, name):
        """The queue ``name`` of ``vhost`` (the scheduler's queues do not
        change during a run)."""
        found = self._found.get((vhost, name))
        if found is None:
            found = self._found[vhost, name] = memory_bus.virtual_host(
                vhost).queue(name)
        return found

    def _relay(self):
        try:
            while True:
                try:
                    batch = self._pipe.recv()
                except EOFError:
                    return
                if isinstance(batch, tuple):
                    self.sent = batch[1]
                    return
                for vhost, name, body in batch:
                    self._queue(vhost, name).put((body, None))
                self.relayed += len(batch)
        except messaging.MessagingException:
            LOG.exception('The relay of the report stream failed')
        finally:
            self._done.set()
