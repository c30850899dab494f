"""oslo.messaging plumbing: transports per bus, serializer, servers."""

from concurrent import futures
import logging
import threading
import time

from kombu import exceptions as kombu_exc
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging.rpc import dispatcher
from oslo_utils import versionutils
from sqlalchemy.engine import url as sa_url

from scheduler_split import brokers
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import memory_bus
from scheduler_split.objects import base as objects_base

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class _BrokerAway(logging.Filter):
    """oslo.messaging's RabbitMQ driver logs every try to reach a broker
    that is away (restarting) as an ERROR, though it reconnects by
    itself and nothing is lost: here they are WARNINGs. What says the
    broker refused its credentials stays an ERROR."""

    _AWAY = ('is unreachable', 'Connection failed')

    def filter(self, record):
        if threading.current_thread().name == brokers.LOOK_THREAD:
            # A look at a bus (brokers) says what it found itself.
            return False
        if record.levelno == logging.ERROR and isinstance(
                record.msg, str) and any(
                text in record.msg for text in self._AWAY):
            record.levelno = logging.WARNING
            record.levelname = logging.getLevelName(logging.WARNING)
        return True


logging.getLogger('oslo.messaging._drivers.impl_rabbit').addFilter(
    _BrokerAway())

# The exchange every service of this project uses on its bus.
EXCHANGE = 'scheduler_split'

# Exceptions that are allowed to cross the bus back to the caller as
# themselves rather than as a RemoteError.
ALLOWED_EXMODS = ['scheduler_split.exception']

_transports = {}
_transports_lock = threading.Lock()


def register_opts(conf):
    """transport_url and the driver options, settable before the first
    transport is made.

    Queues keep oslo.messaging's default, transient: RabbitMQ refuses to
    declare one exchange with two durabilities, and oslo.messaging falls
    back only from durable to transient, so a service of a release
    defaulting to transient would fail to start beside one that declared
    the exchange durable (a rolling upgrade, a broker restart during
    one). A deployment turns ``[oslo_messaging_rabbit]
    amqp_durable_queues`` on for every service at once (the example
    configuration does; kombu publishes every message persistent); with
    transient queues, the boots a broker restart loses are re-driven by
    the super-conductor (``[conductor] build_redrive_interval``).
    """
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)


register_opts(CONF)


def _executor_args():
    """eventlet mode names its executor; threading is oslo.messaging's
    default (and naming it is deprecated)."""
    from scheduler_split import monkey_patch
    return {'executor': 'eventlet'} if monkey_patch.is_patched() else {}


def get_transport(url=None):
    """The one RPC transport of this process for the bus at ``url``.

    ``url`` defaults to ``[DEFAULT] transport_url``, the bus of the
    process's own level (the API bus for api, super-conductor; the cell bus
    for cell conductor and compute). Transports are shared per URL so that
    a process keeps one connection pool per bus.
    """
    url = memory_bus.canonical(
        url if url is not None else CONF.transport_url)
    with _transports_lock:
        transport = _transports.get(url)
        if transport is None:
            # Once per transport, not on each of the many lookups (a
            # client per boot).
            _set_listener_wait()
            transport = messaging.get_rpc_transport(
                CONF, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
            _transports[url] = transport
        return transport


# The longest an idle AMQP listener or reply waiter waits before it
# looks at its bus again. oslo.messaging's waits grow to 5 s, and a
# listener notices that it is stopped only when it looks: a service's
# SIGTERM would wait that long for each of its listeners.
LISTENER_MAX_WAIT = 0.5


def _set_listener_wait():
    """Apply ``[DEFAULT] rpc_listener_wait`` and LISTENER_MAX_WAIT to
    oslo.messaging's AMQP listeners.

    After each message a listener polls again with a timeout that starts
    at the driver's ACK_REQUEUE_EVERY_SECONDS_MIN and doubles up to its
    maximum: the short looks let a notification listener send the
    acknowledgements its dispatch threads queued. An RPC listener, and
    the reply waiter of a caller, acknowledge each message in the
    consumer's own callback and queue nothing, so for them those looks
    only cost CPU; these services listen for RPC only. The driver keeps
    both bounds in module constants, read on every poll.
    """
    from oslo_messaging._drivers import amqpdriver
    if not hasattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MAX'):
        return
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX = min(
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX, LISTENER_MAX_WAIT)
    wait = CONF.rpc_listener_wait
    if wait:
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = min(
            wait, amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX)


def url_of(transport):
    """The URL ``transport`` was got for (:func:`get_transport`)."""
    with _transports_lock:
        for url, known in _transports.items():
            if known is transport:
                return url
    return None


def cleanup():
    with _transports_lock:
        for transport in _transports.values():
            transport.cleanup()
        _transports.clear()


class RequestContextSerializer(messaging.Serializer):
    """Versioned objects as primitives, and the context as a dict.

    With ``version_manifest`` the objects go at the versions it names (a
    client capped below its newest RPC version sends what that version
    carried).
    """

    def __init__(self, version_manifest=None):
        self._base = objects_base.ObjectSerializer(version_manifest)

    def serialize_entity(self, ctxt, entity):
        return self._base.serialize_entity(ctxt, entity)

    def deserialize_entity(self, ctxt, entity):
        return self._base.deserialize_entity(ctxt, entity)

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return ss_context.RequestContext.from_dict(ctxt)


# Published mandatory: a message that no queue takes comes back to the
# sender (MessageUndeliverable) instead of being dropped by the broker.
_MANDATORY = messaging.TransportOptions(at_least_once=True)


# The (bus, topic, server) whose queue took a message of this process:
# one that refuses a message later lost its consumer (a broker restart),
# one never taken yet may only have no consumer started yet.
_taken = set()


class _Patient:
    """An RPC client, or a prepared one, whose messages wait for a queue.

    A broker that restarts loses the transient queues; each service
    declares its own again when it reconnects, some seconds later, after
    its reconnection back-off. A message sent meanwhile is refused by the
    broker, not delivered, so sending it again is safe whatever it asks:
    it is sent again until a queue takes it, for at most ``[DEFAULT]
    rpc_delivery_timeout`` seconds, then fails with
    MessageDeliveryFailure, never silently.
    """

    def __init__(self, client):
        self._client = client

    def prepare(self, **kwargs):
        return _Patient(self._client.prepare(**kwargs))

    def call(self, ctxt, method, **kwargs):
        return self._deliver(self._client.call, ctxt, method, kwargs)

    def cast(self, ctxt, method, **kwargs):
        return self._deliver(self._client.cast, ctxt, method, kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)

    def _deliver(self, send, ctxt, method, kwargs):
        deadline = None
        pause = 0.1
        while True:
            try:
                result = send(ctxt, method, **kwargs)
            except kombu_exc.OperationalError as exc:
                # A client whose tries to reach its bus are bounded
                # (``retry``) spent them before it had a connection:
                # nothing was sent.
                target = self._client.target
                raise messaging.MessageDeliveryFailure(
                    '%s for %s was not sent: its bus cannot be reached '
                    '(%s)' % (method, target.topic if target.server is None
                              else '%s.%s' % (target.topic, target.server),
                              exc))
            except messaging.MessageUndeliverable:
                now = time.monotonic()
                target = self._client.target
                topic = target.topic if target.server is None else \
                    '%s.%s' % (target.topic, target.server)
                if deadline is None:
                    deadline = now + CONF.rpc_delivery_timeout
                    if self._key() in _taken:
                        LOG.warning('No queue on the bus takes %s for %s '
                                    '(its consumer is not connected, as '
                                    'after a broker restart); sending it '
                                    'again for up to %d seconds', method,
                                    topic, CONF.rpc_delivery_timeout)
                    else:
                        # Services start in any order: a consumer that
                        # has not declared its queue yet is no fault.
                        LOG.debug('No queue on the bus takes %s for %s '
                                  'yet (its consumer has not started); '
                                  'sending it again for up to %d seconds',
                                  method, topic, CONF.rpc_delivery_timeout)
                if now >= deadline:
                    raise messaging.MessageDeliveryFailure(
                        'no queue on the bus took %s for %s within '
                        '[DEFAULT] rpc_delivery_timeout (%d seconds)' % (
                            method, topic, CONF.rpc_delivery_timeout))
                if not outage.pause(min(pause, deadline - now)):
                    raise messaging.MessageDeliveryFailure(
                        'no queue on the bus took %s for %s before this '
                        'service stopped' % (method, topic))
                pause = min(pause * 2, 1.0)
                continue
            except Exception:
                # It may have reached its receiver (a call whose answer
                # never came, or was an error).
                outage.note_effect()
                raise
            # Its receiver may act on it: work that fails after this is
            # not run again from the start (db.outage).
            outage.note_effect()
            _taken.add(self._key())
            return result

    def _key(self):
        """The bus and the queue a message of this client goes to."""
        target = self._client.target
        return (id(getattr(self._client, 'transport', None)), target.topic,
                target.server)


def get_client(transport, topic, version, server=None, version_cap=None,
               timeout=None, version_manifest=None, retry=None):
    """A client of ``topic``; ``retry`` bounds how many times a message
    tries to reach a bus that cannot be reached (None: until it can)."""
    target = messaging.Target(exchange=EXCHANGE, topic=topic, server=server,
                              version=version)
    return _Patient(messaging.get_rpc_client(
        transport, target, version_cap=version_cap,
        serializer=RequestContextSerializer(version_manifest),
        timeout=timeout, retry=retry, transport_options=_MANDATORY))


# The longest one try to reach a RabbitMQ broker takes when its packets
# are dropped rather than refused: kombu's connect timeout.
CONNECT_TRY = 5.0


def cell_retries(seconds=None):
    """How many times a message into a cell tries to reach its bus again
    before it is given up unsent: as many tries as fit in ``seconds``
    (``[DEFAULT] cell_rpc_timeout``), each counted at CONNECT_TRY, with
    the pauses that oslo.messaging's RabbitMQ driver makes between them
    (``rabbit_retry_interval``, growing by ``rabbit_retry_backoff`` up to
    ``rabbit_interval_max``). A broker that refuses connections is given
    up sooner: only the pauses are waited for."""
    seconds = CONF.cell_rpc_timeout if seconds is None else seconds
    rabbit = CONF.oslo_messaging_rabbit
    retries, spent, pause = 0, CONNECT_TRY, rabbit.rabbit_retry_interval
    while True:
        spent += pause + CONNECT_TRY
        if spent > seconds:
            return retries
        retries += 1
        pause = min(pause + rabbit.rabbit_retry_backoff,
                    rabbit.rabbit_interval_max)


def cell_call_timeout():
    """The seconds a call into a cell waits for its answer."""
    return min(CONF.cell_rpc_timeout, CONF.rpc_response_timeout)


def call_within(seconds, func, *args, **kwargs):
    """``func(*args, **kwargs)`` (a call that changes nothing: a read),
    or MessagingTimeout after ``seconds``. A call waits for its reply
    queue's connection as long as its bus is away, whatever its
    timeout; here that wait is left behind in a thread of its own."""
    result = []

    def run():
        try:
            result.append((True, func(*args, **kwargs)))
        except BaseException as exc:
            result.append((False, exc))

    thread = threading.Thread(target=run, daemon=True, name='cell-call')
    thread.start()
    thread.join(seconds)
    if not result:
        raise messaging.MessagingTimeout(
            'no answer within %s seconds' % seconds)
    ok, value = result[0]
    if not ok:
        raise value
    return value


def database_name(url):
    """A database URL fit for a log line: without its password."""
    return sa_url.make_url(url).render_as_string(hide_password=True)


def _vtuple(version):
    return versionutils.convert_version_to_tuple(version)


# Resolved "auto" caps, shared by every client of this process: key ->
# (cap, monotonic time it expires).
_auto_caps = {}
_auto_caps_lock = threading.Lock()
_auto_cap_locks = {}
_UNRESOLVED = object()


def _auto_cap_lock(key):
    with _auto_caps_lock:
        return _auto_cap_locks.setdefault(key, threading.Lock())


def reset_auto_caps():
    """Forget every resolved "auto" cap: the next send reads the service
    records again (SIGHUP)."""
    with _auto_caps_lock:
        _auto_caps.clear()


class VersionCap:
    """The highest version of one RPC API a client may send.

    ``setting`` is the client's ``[upgrade_levels]`` option: None (no
    cap), a version, or ``auto``. ``auto`` reads ``minimum_service_version``
    (the lowest service version among the running services of the kind
    the client talks to, None if none runs), maps it to this API's version
    through ``SERVICE_VERSION_HISTORY`` and keeps the answer for
    ``[upgrade_levels] auto_cache_time`` seconds under ``cache_key``. With
    no service running there is nobody to be compatible with: the newest
    version, not kept, so that the first service to appear counts.
    """

    def __init__(self, api, setting, minimum_service_version=None,
                 cache_key=None, receivers=None):
        self.api = api
        self.setting = setting
        self.minimum_service_version = minimum_service_version
        self.cache_key = (api, cache_key)
        # Who the client talks to, for the log.
        self.receivers = receivers or api

    def resolve(self):
        if self.setting != 'auto':
            return self.setting
        cap = self._cached()
        if cap is not _UNRESOLVED:
            return cap
        # One resolution at a time per key: the first send of a burst
        # reads the records, the others wait for its answer.
        with _auto_cap_lock(self.cache_key):
            cap = self._cached()
            if cap is _UNRESOLVED:
                try:
                    cap = self._resolve_auto()
                except Exception as exc:
                    # A process cut from the database (standing aside,
                    # say) still sends: with the last cap it resolved,
                    # the records being unreadable, rather than not at
                    # all. Read again at the next send.
                    cap = self._cached(expired_too=True)
                    if cap is _UNRESOLVED or \
                            not outage.is_database_outage(exc):
                        raise
                    LOG.debug('[upgrade_levels] auto: the service records '
                              'of %s cannot be read (%s); %s stays capped '
                              'at %s', self.receivers,
                              outage.describe(exc), self.api, cap)
            return cap

    def _cached(self, expired_too=False):
        with _auto_caps_lock:
            cached = _auto_caps.get(self.cache_key)
        if cached is not None and (expired_too or
                                   cached[1] > time.monotonic()):
            return cached[0]
        return _UNRESOLVED

    def _resolve_auto(self):
        # Imported here: the objects import this module's serializer.
        from scheduler_split.objects import service as service_obj
        if self.minimum_service_version is None:
            raise ValueError('[upgrade_levels] %s = auto needs service '
                             'records to read' % self.api)
        minimum = self.minimum_service_version()
        if minimum is None:
            LOG.debug('[upgrade_levels] auto: no running service among %s; '
                      '%s not capped', self.receivers, self.api)
            return None
        cap = service_obj.rpc_version_for(minimum, self.api)
        LOG.info('[upgrade_levels] auto: %s capped at %s for %s (oldest '
                 'running service version %d)', self.api, cap,
                 self.receivers, minimum)
        with _auto_caps_lock:
            _auto_caps[self.cache_key] = (
                cap, time.monotonic() + CONF.upgrade_levels.auto_cache_time)
        return cap


class Client:
    """The RPC client of one API, capped for rolling upgrades.

    ``object_versions`` maps each version of the API to the object
    versions it carries; a message is serialized at the entry of the cap
    (the newest version the receivers understand), so that an older
    receiver gets objects it can read.
    """

    def __init__(self, transport, topic, version, object_versions, cap,
                 timeout=None, retry=None):
        self.transport = transport
        self.topic = topic
        self.version = version
        self.object_versions = object_versions
        self.cap = cap
        self.timeout = timeout
        self.retry = retry
        self._clients = {}
        self._lock = threading.Lock()

    def _manifest(self, cap):
        """The object versions of the newest API version up to ``cap``."""
        if cap is None:
            return self.object_versions[self.version]
        known = [v for v in self.object_versions
                 if _vtuple(v) <= _vtuple(cap)]
        if not known:
            raise ValueError('%s API version %s is older than any this '
                             'release can send (%s)' % (
                                 self.topic, cap,
                                 ', '.join(sorted(self.object_versions))))
        return self.object_versions[max(known, key=_vtuple)]

    def _client(self, cap):
        with self._lock:
            client = self._clients.get(cap)
            if client is None:
                client = self._clients[cap] = get_client(
                    self.transport, self.topic, self.version,
                    version_cap=cap, timeout=self.timeout,
                    version_manifest=self._manifest(cap), retry=self.retry)
            return client

    def prepare(self, *versions, **kwargs):
        """``(call context, version)`` for a message: of ``versions``
        (newest first) the first the cap allows."""
        cap = self.cap.resolve()
        if cap is not None and _vtuple(cap) >= _vtuple(self.version):
            # Receivers as new as this client, or newer: nothing to cap.
            cap = None
        for version in versions:
            if cap is None or _vtuple(version) <= _vtuple(cap):
                return (self._client(cap).prepare(version=version, **kwargs),
                        version)
        raise messaging.RPCVersionCapError(version=versions[-1],
                                           version_cap=cap)


def get_server(transport, topic, endpoints, server):
    target = messaging.Target(exchange=EXCHANGE, topic=topic, server=server)
    # Only methods marked @messaging.expose answer on the bus; a manager's
    # periodic and start-up methods do not.
    access_policy = dispatcher.ExplicitRPCAccessPolicy
    executor_args = _executor_args()
    rpc_server = messaging.get_rpc_server(
        transport, target, endpoints, serializer=RequestContextSerializer(),
        access_policy=access_policy, **executor_args)
    if not executor_args:
        # The pool start() builds (oslo.messaging's threading executor
        # is futurist's): one whose shutdown wakes its idle workers.
        # futurist's notice a shutdown only after a second idle, so
        # every stop of a service waited that second for nothing.
        rpc_server._executor_cls = _WorkerPool
    return rpc_server


class _WorkerPool(futures.ThreadPoolExecutor):
    """The threads an RPC server handles its messages in: oslo.messaging
    submits each message and, in ``wait()``, shuts the pool down once no
    more arrive, waiting for the messages in hand only."""

    def __init__(self, max_workers):
        super().__init__(max_workers=max_workers,
                         thread_name_prefix='rpc-worker')
        self._in_hand = 0
        self._in_hand_lock = threading.Lock()

    def submit(self, fn, *args, **kwargs):
        future = super().submit(fn, *args, **kwargs)
        with self._in_hand_lock:
            self._in_hand += 1
        future.add_done_callback(self._done)
        return future

    def _done(self, future):
        with self._in_hand_lock:
            self._in_hand -= 1

    @property
    def in_hand(self):
        """Messages taken and not handled yet: what a stop waits for."""
        return self._in_hand
