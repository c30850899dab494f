"""oslo.messaging plumbing: transports per bus, serializer, servers."""

import threading

import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging.rpc import dispatcher

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import memory_bus
from scheduler_split.objects import base as objects_base

CONF = conf.CONF

# The exchange every service of this project uses on its bus.
EXCHANGE = 'scheduler_split'

# Exceptions that are allowed to cross the bus back to the caller as
# themselves rather than as a RemoteError.
ALLOWED_EXMODS = ['scheduler_split.exception']

_transports = {}
_transports_lock = threading.Lock()

memory_bus.register()


def register_opts(conf):
    """transport_url and the driver options, settable before the first
    transport is made."""
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
    url = url if url is not None else CONF.transport_url
    with _transports_lock:
        transport = _transports.get(url)
        if transport is None:
            transport = messaging.get_rpc_transport(
                CONF, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
            _transports[url] = transport
        return transport


def cleanup():
    with _transports_lock:
        for transport in _transports.values():
            transport.cleanup()
        _transports.clear()


class RequestContextSerializer(messaging.Serializer):
    """Versioned objects as primitives, and the context as a dict."""

    def __init__(self):
        self._base = objects_base.ObjectSerializer()

    def serialize_entity(self, ctxt, entity):
        return self._base.serialize_entity(ctxt, entity)

    def deserialize_entity(self, ctxt, entity):
        return self._base.deserialize_entity(ctxt, entity)

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return ss_context.RequestContext.from_dict(ctxt)


def get_client(transport, topic, version, server=None, version_cap=None,
               timeout=None):
    target = messaging.Target(exchange=EXCHANGE, topic=topic, server=server,
                              version=version)
    return messaging.get_rpc_client(transport, target,
                                    version_cap=version_cap,
                                    serializer=RequestContextSerializer(),
                                    timeout=timeout)


def get_server(transport, topic, endpoints, server):
    target = messaging.Target(exchange=EXCHANGE, topic=topic, server=server)
    # Only methods marked @messaging.expose answer on the bus; a manager's
    # periodic and start-up methods do not.
    access_policy = dispatcher.ExplicitRPCAccessPolicy
    return messaging.get_rpc_server(transport, target, endpoints,
                                    serializer=RequestContextSerializer(),
                                    access_policy=access_policy,
                                    **_executor_args())
