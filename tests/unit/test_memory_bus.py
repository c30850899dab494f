"""The in-memory bus: one isolated broker per virtual host."""

import threading

import oslo_messaging as messaging
import pytest

from scheduler_split import context
from scheduler_split import memory_bus
from scheduler_split import rpc

URL_A = 'kombu+memory:////cellA'
URL_B = 'kombu+memory:////cellB'
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


def test_call_on_a_bus_without_conductor_is_not_answered_by_another_bus(
        bus, ctx):
    endpoint_a, _ = bus(URL_A, 'A')
    client = rpc.get_client(rpc.get_transport('kombu+memory:////nobody'),
                            'conductor', '1.0', timeout=1)
    with pytest.raises(messaging.MessagingTimeout):
        client.call(ctx, 'whoami', value=1)
    assert endpoint_a.calls == []


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

    transport = rpc.get_transport('kombu+memory:////exposure')
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
