"""An in-process message bus: an oslo.messaging driver for ``memory://``.

The all-in-one and the functional tests run every service as threads of
one process. Their messages go through this driver instead of a broker:
every virtual host (``memory:///cell1``) is an isolated set of queues,
as RabbitMQ vhosts are, so two cells never consume each other's
``conductor`` topic.

What crosses it is what crosses RabbitMQ: the RPC layer above the driver
is oslo.messaging's own (the project's serializer turns objects into
primitives, the dispatcher checks versions and exposure), each message
and each reply is encoded to JSON and decoded on the other side (so a
receiver never shares an object with its sender, and whatever would not
survive the wire fails here too), and failures travel the way oslo's
AMQP drivers send them (only the modules in ``allowed_remote_exmods``
come back as themselves, anything else as a ``RemoteError``).

The queues behave as the rabbit driver's: a server's topic and
``topic.server`` queues are made when it starts listening and outlive
it, so a cast to a stopped compute waits for its next start; a message
sent with ``at_least_once`` to a queue nobody has made is refused with
``MessageUndeliverable``, as the broker returns a mandatory message; a
call nobody answers ends in ``MessagingTimeout``.

What it leaves out is the cost of a broker protocol spoken to nobody:
no frames, channels, acknowledgements, consumer tags or reply queues.
A consumer sleeps until a message is put in one of its queues.

``kombu+memory://`` URLs (cells that earlier all-in-one state
directories recorded) are read as ``memory://``: see :func:`canonical`.
"""

import collections
import itertools
import logging
import threading
import time
from urllib import parse

from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as driver_common
from oslo_messaging import exceptions as messaging_exc
from oslo_serialization import jsonutils

LOG = logging.getLogger(__name__)

SCHEME = 'memory'
_OLD_SCHEME = 'kombu+memory:'


def canonical(url):
    """``url`` with an old ``kombu+memory:`` scheme read as ``memory:``;
    anything else unchanged."""
    if url and url.startswith(_OLD_SCHEME):
        return SCHEME + ':' + url[len(_OLD_SCHEME):]
    return url


class _Queue:
    """Messages in arrival order, and the listeners that consume them."""

    __slots__ = ('messages', 'listeners')

    def __init__(self):
        self.messages = collections.deque()
        # Replaced, never changed in place: put() reads it without a lock.
        self.listeners = ()

    def put(self, item):
        self.messages.append(item)
        for listener in self.listeners:
            listener.wake()


class _VirtualHost:
    """The queues of one virtual host, by name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.queues = {}

    def queue(self, name, create=True):
        found = self.queues.get(name)
        if found is not None or not create:
            return found
        with self.lock:
            return self.queues.setdefault(name, _Queue())

    def matching(self, prefix):
        """The queues whose names start with ``prefix`` (fanout copies,
        notification pools)."""
        return [q for name, q in tuple(self.queues.items())
                if name[:len(prefix)] == prefix]

    def attach(self, listener, queues):
        with self.lock:
            for q in queues:
                q.listeners = q.listeners + (listener,)

    def detach(self, listener, queues):
        with self.lock:
            for q in queues:
                q.listeners = tuple(x for x in q.listeners
                                    if x is not listener)


_hosts = {}
_hosts_lock = threading.Lock()


def virtual_host(name):
    with _hosts_lock:
        host = _hosts.get(name)
        if host is None:
            host = _hosts[name] = _VirtualHost()
        return host


def reset():
    """Forget every virtual host and what waits in it (tests start from an
    empty bus)."""
    with _hosts_lock:
        _hosts.clear()


def consumers(url, exchange, topic):
    """How many listeners that are not stopped consume the queue of
    ``topic`` on ``exchange`` in the virtual host of ``url``."""
    name = parse.urlsplit(canonical(url)).path.strip('/')
    found = virtual_host(name).queue('rpc:%s:%s' % (exchange, topic),
                                     create=False)
    if found is None:
        return 0
    return sum(not listener._stopped for listener in found.listeners)


class _Reply:
    """Where the answer to one call goes."""

    __slots__ = ('arrived', 'body', 'failure')

    def __init__(self):
        self.arrived = threading.Event()
        self.body = None
        self.failure = None


class _Incoming(base.RpcIncomingMessage):

    def __init__(self, ctxt, message, reply, requeue):
        super().__init__(ctxt, message)
        self._reply = reply
        self._requeue = requeue

    def reply(self, reply=None, failure=None):
        answer = self._reply
        if answer is None or answer.arrived.is_set():
            return
        try:
            if failure is not None:
                answer.failure = driver_common.serialize_remote_exception(
                    failure)
            else:
                answer.body = jsonutils.dumps(reply)
        except Exception as exc:
            # As the AMQP drivers do with a result they cannot encode:
            # the caller gets the error rather than a timeout.
            LOG.exception('Could not encode the reply to %s',
                          self.message.get('method'))
            answer.failure = driver_common.serialize_remote_exception(
                (type(exc), exc, exc.__traceback__))
        answer.arrived.set()

    def requeue(self):
        self._requeue()

    def heartbeat(self):
        """Calls here never wait on a broker: nothing to keep alive."""


class _Listener(base.PollStyleListener):
    """Takes messages from its queues, each in turn, oldest first."""

    def __init__(self, vhost, queues):
        super().__init__()
        self._vhost = vhost
        self._queues = queues
        self._turn = itertools.cycle(range(len(queues)))
        self._arrived = threading.Event()
        self._stopped = False
        vhost.attach(self, queues)

    def wake(self):
        self._arrived.set()

    def _take(self):
        start = next(self._turn)
        queues = self._queues
        for i in range(len(queues)):
            q = queues[(start + i) % len(queues)]
            try:
                return q, q.messages.popleft()
            except IndexError:
                continue
        return None, None

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None
        while not self._stopped:
            # Cleared before looking: a message put after the look sets it
            # again, so the wait below never misses one.
            self._arrived.clear()
            q, item = self._take()
            if item is not None:
                return self._incoming(q, item)
            if timeout is not None:
                if deadline is None:
                    deadline = time.monotonic() + timeout
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._arrived.wait(left)
            else:
                self._arrived.wait()
        # Stopped: what is still queued stays for the next listener.
        return None

    def _incoming(self, q, item):
        body, reply = item
        ctxt, message = jsonutils.loads(body)
        return _Incoming(ctxt, message, reply,
                         lambda: q.put((body, reply)))

    def stop(self):
        self._stopped = True
        self._arrived.set()

    def cleanup(self):
        self._vhost.detach(self, self._queues)


class MemoryDriver(base.BaseDriver):
    """oslo.messaging's driver for ``memory:///<virtual host>``."""

    def __init__(self, conf, url, default_exchange=None,
                 allowed_remote_exmods=None):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self.vhost_name = (url.virtual_host or '').strip('/')
        self.vhost = virtual_host(self.vhost_name)

    def require_features(self, requeue=True):
        pass

    def _exchange(self, target):
        return target.exchange or self._default_exchange

    def rpc_queue_name(self, target):
        """The queue a message for ``target`` goes to, named as the rabbit
        driver names it, per exchange; for a fanout, the start of the
        names of its queues (one per server)."""
        exchange = self._exchange(target)
        if target.fanout:
            return 'rpc:%s:%s_fanout:' % (exchange, target.topic)
        if target.server:
            return 'rpc:%s:%s.%s' % (exchange, target.topic, target.server)
        return 'rpc:%s:%s' % (exchange, target.topic)

    def send(self, target, ctxt, message, wait_for_reply=None, timeout=None,
             call_monitor_timeout=None, retry=None, transport_options=None):
        body = jsonutils.dumps([ctxt, message])
        name = self.rpc_queue_name(target)
        if target.fanout:
            queues = self.vhost.matching(name)
        else:
            found = self.vhost.queue(name, create=False)
            queues = [] if found is None else [found]
        if not queues:
            if transport_options is not None and getattr(
                    transport_options, 'at_least_once', False):
                raise messaging_exc.MessageUndeliverable(
                    None, self._exchange(target), target.topic, message)
            if not wait_for_reply:
                return None
        reply = _Reply() if wait_for_reply else None
        for q in queues:
            q.put((body, reply))
        if reply is None:
            return None
        if not reply.arrived.wait(timeout):
            raise messaging_exc.MessagingTimeout(
                'Timed out waiting for a reply to %s on topic %s' % (
                    message.get('method'), target.topic))
        if reply.failure is not None:
            raise driver_common.deserialize_remote_exception(
                reply.failure, self._allowed_remote_exmods)
        return jsonutils.loads(reply.body)

    def send_notification(self, target, ctxt, message, version, retry=None):
        body = jsonutils.dumps([ctxt, message])
        prefix = 'notify:%s:%s:' % (self._exchange(target), target.topic)
        queues = self.vhost.matching(prefix)
        if not queues:
            # As the rabbit driver declares the default pool's queue on
            # sending, so that nothing sent before a listener is lost.
            queues = [self.vhost.queue(prefix)]
        for q in queues:
            q.put((body, None))

    def listen(self, target, batch_size, batch_timeout):
        exchange = self._exchange(target)
        names = ['rpc:%s:%s' % (exchange, target.topic),
                 'rpc:%s:%s.%s' % (exchange, target.topic, target.server),
                 'rpc:%s:%s_fanout:%s' % (exchange, target.topic,
                                          target.server)]
        listener = _Listener(self.vhost,
                             [self.vhost.queue(n) for n in names])
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        queues = [
            self.vhost.queue('notify:%s:%s.%s:%s' % (
                self._exchange(target), target.topic, priority, pool or ''))
            for target, priority in targets_and_priorities]
        return base.PollStyleListenerAdapter(
            _Listener(self.vhost, queues), batch_size, batch_timeout)

    def cleanup(self):
        """The virtual host outlives its transports, as a broker's does."""
