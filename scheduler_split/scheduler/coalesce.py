"""Coalescing of ``select_destinations``: requests that arrive together
share one call to the schedulers.

A boot costs its caller one RPC call to a scheduler, and the scheduler
one message in and one out, whatever the boot holds. Under load many
boots wait for a scheduler at once; sending them as one call
(``select_destinations_batch``) pays for the messages once. This is the
batching of Kubernetes' scheduling queue and of Nomad's plan queue, with
the same guarantees as one by one: the scheduler places each request on
its own, in arrival order, so a request keeps its own claims and
alternates, and one that finds no host fails alone.

The rule: while fewer calls are in flight than there are schedulers to
answer them (``in_flight``), a request is sent at once, alone, and waits
for nothing. Beyond that it queues. The queue goes out as one call (of at
most ``max_size`` requests, oldest first) as soon as a call in flight
returns, or when its oldest request has waited ``window`` seconds,
whichever comes first. So one client at a time never waits; under load a
request waits at most ``window`` longer than it would have to be sent.
"""

import collections
import threading
import time

import oslo_messaging as messaging

from scheduler_split import exception


class _Request:
    __slots__ = ('args', 'deadline', 'taken', 'done', 'answer', 'error')

    def __init__(self, args, deadline):
        self.args = args
        self.deadline = deadline
        self.taken = False
        self.done = threading.Event()
        self.answer = None
        self.error = None


class Coalescer:
    """Sends ``(ctx, spec_obj, instance_uuids, return_alternates,
    num_alternates)`` requests through ``send_one`` (one request, its
    answer) or ``send_batch`` (a list of requests, a list of answers, each
    ``{'host_lists': ...}`` or ``{'error': name, 'message': text}``)."""

    def __init__(self, send_one, send_batch, window, in_flight, max_size):
        self._send_one = send_one
        self._send_batch = send_batch
        self.window = window
        self.in_flight = in_flight
        self.max_size = max_size
        self._cond = threading.Condition()
        self._queue = collections.deque()
        self._sending = 0

    def select(self, *args):
        request = _Request(args, time.monotonic() + self.window)
        with self._cond:
            if self._sending < self.in_flight and not self._queue:
                self._sending += 1
                batch = None
            else:
                batch = self._wait_turn(request)
        if batch is None:
            try:
                return self._send_one(*args)
            finally:
                self._sent()
        if batch:
            self._send(batch)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.answer

    def _wait_turn(self, request):
        """Queue ``request`` (under the lock) until it is sent: the batch
        this thread is to send, or ``[]`` if another thread took it."""
        self._queue.append(request)
        while not request.taken:
            if self._queue[0] is request:
                remaining = request.deadline - time.monotonic()
                if self._sending < self.in_flight or remaining <= 0:
                    batch = [self._queue.popleft() for _ in range(
                        min(self.max_size, len(self._queue)))]
                    for queued in batch:
                        queued.taken = True
                    self._sending += 1
                    # The next request in line starts its own wait.
                    self._cond.notify_all()
                    return batch
                self._cond.wait(remaining)
            else:
                self._cond.wait()
        return []

    def _sent(self):
        with self._cond:
            self._sending -= 1
            self._cond.notify_all()

    def _send(self, batch):
        try:
            if len(batch) == 1:
                try:
                    batch[0].answer = self._send_one(*batch[0].args)
                except Exception as exc:
                    batch[0].error = exc
                return
            try:
                answers = self._send_batch([r.args for r in batch])
            except Exception as exc:
                for queued in batch:
                    queued.error = exc
                return
            for queued, answer in zip(batch, answers):
                if 'host_lists' in answer:
                    queued.answer = answer['host_lists']
                elif answer['error'] == 'NoValidHost':
                    queued.error = exception.NoValidHost(answer['message'])
                else:
                    queued.error = messaging.RemoteError(
                        answer['error'], answer['message'])
        finally:
            self._sent()
            for queued in batch:
                queued.done.set()
