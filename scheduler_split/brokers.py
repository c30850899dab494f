"""New connections to the brokers of a RabbitMQ bus, apart from the
pools of its transport: whether one of them answers now
(:func:`look_at_bus`), and how many listeners consume a queue
(:func:`consumers`). A pooled connection to a broker whose packets are
dropped looks open until its heartbeat misses; a new one answers within
its timeout or not at all. Each broker of a cluster is tried at once,
in threads named :data:`LOOK_THREAD`, whose driver logs are left out
(the caller says what it found)."""

import threading

import oslo_messaging as messaging

from scheduler_split import conf
from scheduler_split import memory_bus

CONF = conf.CONF

# The threads that open those connections.
LOOK_THREAD = 'bus-look'


def _rabbit_url(url):
    """``url`` (None for ``[DEFAULT] transport_url``) parsed, if it is a
    RabbitMQ bus with brokers; None for another bus."""
    url = memory_bus.canonical(url if url is not None else
                               CONF.transport_url)
    parsed = messaging.TransportURL.parse(CONF, url)
    if parsed.transport not in ('rabbit', 'kombu', 'amqp') or \
            not parsed.hosts:
        return None
    return parsed


def _first_broker(parsed, timeout, use):
    """``use(connection)`` on a new connection to whichever broker of
    ``parsed`` completes an AMQP handshake first (each tried at once,
    with the TLS and login options of ``[oslo_messaging_rabbit]``), then
    the connection closed; what it returned. Raises
    MessageDeliveryFailure if none answered within ``timeout`` seconds
    or every one failed."""
    from oslo_messaging._drivers import common as driver_common
    from oslo_messaging._drivers import impl_rabbit
    answered = threading.Event()
    errors = []
    results = []
    lock = threading.Lock()

    def look(host):
        try:
            connection = impl_rabbit.Connection(
                CONF, messaging.TransportURL(
                    CONF, transport=parsed.transport,
                    virtual_host=parsed.virtual_host, hosts=[host],
                    query=parsed.query),
                driver_common.PURPOSE_LISTEN, retry=0)
            try:
                result = use(connection)
            finally:
                connection.close()
        except Exception as exc:
            with lock:
                errors.append('%s:%s: %s' % (host.hostname, host.port,
                                             exc))
                if len(errors) == len(parsed.hosts):
                    answered.set()
            return
        with lock:
            results.append(result)
        answered.set()

    for host in parsed.hosts:
        threading.Thread(target=look, args=(host,), daemon=True,
                         name=LOOK_THREAD).start()
    if not answered.wait(timeout):
        raise messaging.MessageDeliveryFailure(
            'no broker answered within %s seconds' % timeout)
    with lock:
        if results:
            return results[0]
        raise messaging.MessageDeliveryFailure(
            'no broker took a connection (%s)' % '; '.join(errors))


def look_at_bus(url, timeout):
    """Raise unless the bus at ``url`` takes a new connection within
    ``timeout`` seconds: for RabbitMQ, one of its brokers completes an
    AMQP handshake; the in-memory bus always does, and other drivers are
    not looked at. A new connection, not one of the pool: a pooled
    connection to a broker whose packets are dropped looks open until
    its heartbeat misses."""
    parsed = _rabbit_url(url)
    if parsed is not None:
        _first_broker(parsed, timeout, lambda connection: None)


def consumers(url, exchange, topic, timeout):
    """How many listeners consume the queue of ``topic`` on the bus at
    ``url`` (every process of a service that shares it), as a broker
    says within ``timeout`` seconds (RabbitMQ names the queue after the
    topic alone), or as the in-memory bus counts them in this process;
    None for another bus, or if no broker answered. A queue not
    declared yet has none."""
    url = memory_bus.canonical(url if url is not None else
                               CONF.transport_url)
    if not url:
        return None
    if url.startswith(memory_bus.SCHEME + ':'):
        return memory_bus.consumers(url, exchange, topic)
    parsed = _rabbit_url(url)
    if parsed is None:
        return None

    def count(connection):
        try:
            return connection.channel.queue_declare(
                queue=topic, passive=True).consumer_count
        except Exception as exc:
            # The broker's NOT_FOUND (404): no listener ever declared it.
            if getattr(exc, 'code', None) != 404:
                raise
            return 0

    try:
        return _first_broker(parsed, timeout, count)
    except messaging.MessageDeliveryFailure:
        return None
