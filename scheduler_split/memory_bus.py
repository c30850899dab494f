"""An in-process message bus with one isolated broker per virtual host.

kombu's stock ``memory`` transport keeps one global broker state and one
queue table for the whole process, so two cells on ``kombu+memory:////cell1``
and ``kombu+memory:////cell2`` would consume each other's ``conductor``
queue. This transport gives every virtual host its own exchanges, bindings
and queues, as RabbitMQ vhosts do, and wakes the consumers of a queue
when a message is put there, instead of polling once a second or waking
every consumer of the virtual host.

It is registered as kombu's ``memory`` transport by :func:`register`, so
oslo.messaging's rabbit driver runs unchanged on top of it: the same
serialization, acks, reply queues and dispatch as with RabbitMQ.
"""

import queue
import threading

from kombu import transport as kombu_transport
from kombu.transport import memory
from kombu.transport import virtual
from oslo_messaging._drivers import impl_rabbit


class _Broker:
    """One virtual host: its broker state and queues."""

    def __init__(self):
        self.state = virtual.BrokerState()
        self.queues = {}
        self.lock = threading.Lock()
        # {queue name: {event}}: the connections consuming from a queue,
        # each woken through its event when a message arrives there.
        self.waiters = {}

    def wake(self, queue_name):
        for arrived in tuple(self.waiters.get(queue_name, ())):
            arrived.set()


_brokers = {}
_brokers_lock = threading.Lock()


def _broker(vhost):
    with _brokers_lock:
        broker = _brokers.get(vhost)
        if broker is None:
            broker = _brokers[vhost] = _Broker()
        return broker


def reset():
    """Forget every virtual host (tests start from an empty bus)."""
    with _brokers_lock:
        _brokers.clear()


class Channel(memory.Channel):
    # Bodies stay in memory as they are: kombu's virtual channels encode
    # them in base64 for the transports that store text.
    body_encoding = None

    @property
    def broker(self):
        # The virtual transport is its own connection object.
        return self.connection.broker

    @property
    def queues(self):
        return self.broker.queues

    @queues.setter
    def queues(self, value):
        # memory.Channel.close() resets its table; ours belongs to the
        # virtual host and outlives any one channel.
        pass

    def _new_queue(self, queue_name, **kwargs):
        with self.broker.lock:
            self.queues.setdefault(queue_name, queue.Queue())

    def _queue_for(self, queue_name):
        # Looked up on every poll of every queue a consumer reads: the
        # lock (and a new Queue) only for a queue not seen yet.
        found = self.queues.get(queue_name)
        if found is not None:
            return found
        with self.broker.lock:
            found = self.queues.get(queue_name)
            if found is None:
                found = self.queues[queue_name] = queue.Queue()
            return found

    def _put(self, queue_name, message, **kwargs):
        self._queue_for(queue_name).put(message)
        self.broker.wake(queue_name)

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs):
        for queue_name in self._lookup(exchange, routing_key):
            self._queue_for(queue_name).put(message)
            self.broker.wake(queue_name)

    def basic_consume(self, queue, no_ack, callback, consumer_tag, **kwargs):
        result = super().basic_consume(queue, no_ack, callback,
                                       consumer_tag, **kwargs)
        self.connection.listen_to(queue)
        return result

    def _delete(self, queue_name, *args, **kwargs):
        with self.broker.lock:
            self.queues.pop(queue_name, None)
            self.waiters.pop(queue_name, None)

    def close(self):
        virtual.Channel.close(self)


class Transport(memory.Transport):
    Channel = Channel
    # How long an idle consumer sleeps before it looks again; a message,
    # or a stop of its consumer, wakes it sooner. Neither kombu's
    # polling_interval nor the timeout oslo.messaging passes: for
    # memory:// URLs oslo.messaging sets the first to 0 and the second to
    # 0.05 s, which would wake every idle consumer 20 times a second.
    # Each look costs kombu's retry machinery about a millisecond: an
    # all-in-one of a hundred hosts has some 600 consumers, which looking
    # once a second kept a tenth of a core busy doing nothing.
    idle_wait = 10.0
    # The most messages one drain delivers: each call of drain_events
    # costs oslo.messaging's and kombu's retry wrappers about as much as
    # the delivery of a message, so a busy consumer takes what is
    # waiting in one call.
    drain_batch = 64

    def __init__(self, client, **kwargs):
        super().__init__(client, **kwargs)
        self.broker = _broker(client.virtual_host or '/')
        self.state = self.broker.state
        # Set when a message arrives in a queue this connection consumes,
        # or when its consumer stops.
        self.arrived = threading.Event()
        self.stopped = False

    def stop(self):
        """Its consumer stopped: end the current wait, and every later
        one at once (oslo.messaging never restarts a stopped consumer)."""
        self.stopped = True
        self.arrived.set()

    def listen_to(self, queue_name):
        with self.broker.lock:
            self.broker.waiters.setdefault(queue_name, set()).add(
                self.arrived)

    def close_connection(self, connection):
        with self.broker.lock:
            for waiters in self.broker.waiters.values():
                waiters.discard(self.arrived)
        self.stop()
        super().close_connection(connection)

    def drain_events(self, connection, timeout=None):
        """Deliver the messages waiting, at least one and at most
        ``drain_batch``; ``TimeoutError`` after ``idle_wait`` without
        one, or at once when the consumer stopped. ``timeout`` only says
        that the caller wants control back eventually."""
        get = self.cycle.get
        # Cleared before looking: a message put after the look sets it
        # again, so the wait below never misses one.
        self.arrived.clear()
        try:
            get(self._deliver, timeout=timeout)
        except queue.Empty:
            if self.stopped:
                raise TimeoutError()
            self.arrived.wait(self.idle_wait)
            try:
                get(self._deliver, timeout=timeout)
            except queue.Empty:
                raise TimeoutError()
        for _ in range(self.drain_batch - 1):
            try:
                get(self._deliver, timeout=timeout)
            except queue.Empty:
                return


def _wake_on_stop():
    """Make a stop of an oslo.messaging consumer on this bus wake it: it
    checks whether it was stopped only between two waits for messages.
    """
    original = impl_rabbit.Connection.stop_consuming
    if getattr(original, 'wakes_memory_bus', False):
        return

    def stop_consuming(self):
        original(self)
        transport = getattr(self.connection, 'transport', None)
        if isinstance(transport, Transport):
            transport.stop()

    stop_consuming.wakes_memory_bus = True
    impl_rabbit.Connection.stop_consuming = stop_consuming


def register():
    """Make ``memory://`` (and ``kombu+memory://``) use this transport."""
    kombu_transport.TRANSPORT_ALIASES['memory'] = (
        'scheduler_split.memory_bus:Transport')
    _wake_on_stop()
