"""The in-memory bus: one isolated set of queues per virtual host, with
what a broker does for the rabbit driver."""

import threading

import oslo_messaging as messaging
import pytest

from scheduler_split import context
from scheduler_split import memory_bus
from scheduler_split import rpc

URL_A = 'memory:///cellA'
URL_B = 'memory:///cellB'
TIMEOUT = 10


class RecordingEndpoint:
    """Records every call and cast it receives."""

    target = messaging.Target(version='1.0')

    def __init__(self, name):
        self.name = name
        self.calls = []
        self.cast_arrived = threading.Event()

    @messaging.expose
    def whoami(self, ctx, value):
        self.calls.append(('whoami', value))
        return {'cell': self.name, 'value': value}

    @messaging.expose
    def notify(self, ctx, value):
        self.calls.append(('notify', value))
        self.cast_arrived.set()


@pytest.fixture
def bus():
    """Start servers on topic 'conductor'; stop and forget them after."""
    memory_bus.reset()
    servers = []

    def _serve(url, name):
        transport = rpc.get_transport(url)
        endpoint = RecordingEndpoint(name)
        server = rpc.get_server(transport, 'conductor', [endpoint],
                                server='conductor-' + name)
        server.start()
        servers.append(server)
        client = rpc.get_client(transport, 'conductor', '1.0',
                                timeout=TIMEOUT)
        return endpoint, client

    yield _serve
    for server in servers:
        server.stop()
    for server in servers:
        server.wait()
    rpc.cleanup()
    memory_bus.reset()


@pytest.fixture
def ctx():
    return context.RequestContext(user_id='user', project_id='project')


def test_call_on_one_cell_reaches_only_that_cells_conductor(bus, ctx):
    endpoint_a, client_a = bus(URL_A, 'A')
    endpoint_b, client_b = bus(URL_B, 'B')

    answers = [client_a.call(ctx, 'whoami', value=i) for i in range(5)]

    assert answers == [{'cell': 'A', 'value': i} for i in range(5)]
    assert endpoint_a.calls == [('whoami', i) for i in range(5)]
    assert endpoint_b.calls == []


def test_call_on_the_other_cell_reaches_only_its_conductor(bus, ctx):
    endpoint_a, client_a = bus(URL_A, 'A')
    endpoint_b, client_b = bus(URL_B, 'B')

    assert client_b.call(ctx, 'whoami', value='x') == {'cell': 'B',
                                                       'value': 'x'}
    assert client_a.call(ctx, 'whoami', value='y') == {'cell': 'A',
                                                       'value': 'y'}

    assert endpoint_a.calls == [('whoami', 'y')]
    assert endpoint_b.calls == [('whoami', 'x')]


def test_cast_is_delivered_to_its_cell_only(bus, ctx):
    endpoint_a, client_a = bus(URL_A, 'A')
    endpoint_b, client_b = bus(URL_B, 'B')

    client_b.cast(ctx, 'notify', value=42)

    assert endpoint_b.cast_arrived.wait(TIMEOUT)
    assert endpoint_b.calls == [('notify', 42)]
    # A call after the cast on A's bus is answered by A, which never saw
    # the cast.
    assert client_a.call(ctx, 'whoami', value=1)['cell'] == 'A'
    assert endpoint_a.calls == [('whoami', 1)]


def test_call_on_a_bus_without_conductor_is_refused_not_answered_elsewhere(
        bus, ctx):
    """No queue takes it: as RabbitMQ returns a mandatory message, the
    client sends it again for rpc_delivery_timeout, then fails."""
    endpoint_a, _ = bus(URL_A, 'A')
    rpc.CONF.set_override('rpc_delivery_timeout', 1)
    try:
        client = rpc.get_client(rpc.get_transport('memory:///nobody'),
                                'conductor', '1.0', timeout=1)
        with pytest.raises(messaging.MessageDeliveryFailure):
            client.call(ctx, 'whoami', value=1)
    finally:
        rpc.CONF.clear_override('rpc_delivery_timeout')
    assert endpoint_a.calls == []


def test_a_cast_to_a_stopped_server_waits_for_its_next_start(ctx):
    """A server's queues outlive it, as the rabbit driver's do."""
    memory_bus.reset()
    transport = rpc.get_transport('memory:///restart')
    first = RecordingEndpoint('first')
    server = rpc.get_server(transport, 'conductor', [first], 'host1')
    server.start()
    server.stop()
    server.wait()
    client = rpc.get_client(transport, 'conductor', '1.0', server='host1',
                            timeout=TIMEOUT)
    client.cast(ctx, 'notify', value='while stopped')
    second = RecordingEndpoint('second')
    server = rpc.get_server(transport, 'conductor', [second], 'host1')
    server.start()
    try:
        assert second.cast_arrived.wait(TIMEOUT)
        assert second.calls == [('notify', 'while stopped')]
        assert first.calls == []
    finally:
        server.stop()
        server.wait()
        rpc.cleanup()
        memory_bus.reset()


def test_a_call_nobody_answers_in_time_is_a_timeout(bus, ctx):
    endpoint, _ = bus(URL_A, 'A')
    release = threading.Event()
    endpoint.whoami = messaging.expose(
        lambda ctx, value: release.wait(TIMEOUT))
    client = rpc.get_client(rpc.get_transport(URL_A), 'conductor', '1.0',
                            timeout=0.2)
    try:
        with pytest.raises(messaging.MessagingTimeout):
            client.call(ctx, 'whoami', value=1)
    finally:
        release.set()


class ElsewhereError(Exception):
    pass


def test_failures_cross_as_over_rabbitmq(bus, ctx):
    """This project's exceptions (and builtins) come back as themselves,
    those of any other module as a RemoteError naming them."""
    from scheduler_split import exception

    endpoint, client = bus(URL_A, 'A')

    def not_found(ctx, value):
        raise exception.InstanceNotFound(instance_id=value)

    def broken(ctx, value):
        raise ElsewhereError(value)

    endpoint.whoami = messaging.expose(not_found)
    with pytest.raises(exception.InstanceNotFound) as raised:
        client.call(ctx, 'whoami', value='abc')
    assert 'abc' in str(raised.value)
    endpoint.whoami = messaging.expose(broken)
    with pytest.raises(messaging.RemoteError) as raised:
        client.call(ctx, 'whoami', value='abc')
    assert raised.value.exc_type == 'ElsewhereError'


def test_answers_are_copies_made_through_json(bus, ctx):
    endpoint, client = bus(URL_A, 'A')
    kept = {'hosts': ['h1']}
    endpoint.whoami = messaging.expose(lambda ctx, value: kept)
    answer = client.call(ctx, 'whoami', value=1)
    answer['hosts'].append('h2')
    assert kept == {'hosts': ['h1']}
    # Tuples become lists on the way, as on the wire.
    endpoint.whoami = messaging.expose(lambda ctx, value: (1, 2))
    assert client.call(ctx, 'whoami', value=1) == [1, 2]


def test_old_kombu_memory_urls_are_the_same_bus(bus, ctx):
    """Cells that earlier all-in-one state directories recorded."""
    endpoint, _ = bus('kombu+memory:////cellA', 'A')
    client = rpc.get_client(rpc.get_transport(URL_A), 'conductor', '1.0',
                            timeout=TIMEOUT)
    assert client.call(ctx, 'whoami', value=3)['cell'] == 'A'


def test_notifications_reach_a_listener_on_the_bus(ctx):
    memory_bus.reset()
    transport = messaging.get_notification_transport(
        rpc.CONF, url='memory:///notices')
    notifier = messaging.Notifier(transport, driver='messagingv2',
                                  publisher_id='test', topics=['notices'])
    notifier.info(ctx.to_dict(), 'sent.before', {'n': 1})
    seen = []
    arrived = threading.Event()

    class Endpoint:
        def info(self, ctxt, publisher_id, event_type, payload, metadata):
            seen.append((event_type, payload))
            if len(seen) == 2:
                arrived.set()

    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='notices')], [Endpoint()],
        executor='threading')
    listener.start()
    try:
        notifier.info(ctx.to_dict(), 'sent.after', {'n': 2})
        assert arrived.wait(TIMEOUT)
        assert seen == [('sent.before', {'n': 1}), ('sent.after', {'n': 2})]
    finally:
        listener.stop()
        listener.wait()
        memory_bus.reset()


def test_transports_are_shared_per_url(bus):
    assert rpc.get_transport(URL_A) is rpc.get_transport(URL_A)
    assert rpc.get_transport(URL_A) is not rpc.get_transport(URL_B)


def test_only_exposed_methods_answer_on_the_bus():
    import oslo_messaging as messaging

    from scheduler_split import context
    from scheduler_split import rpc

    class Endpoint:
        target = messaging.Target(version='1.0')

        @messaging.expose
        def ping(self, ctx):
            return 'pong'

        def housekeeping(self, ctx):
            return 'should not run'

    transport = rpc.get_transport('memory:///exposure')
    server = rpc.get_server(transport, 'exposed', [Endpoint()], 'h')
    server.start()
    try:
        client = rpc.get_client(transport, 'exposed', '1.0', timeout=5)
        ctx = context.get_admin_context()
        assert client.call(ctx, 'ping') == 'pong'
        with pytest.raises(Exception) as raised:
            client.call(ctx, 'housekeeping')
        assert 'housekeeping' in str(raised.value)
    finally:
        server.stop()
        server.wait()
