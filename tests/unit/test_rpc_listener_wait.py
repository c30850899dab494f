"""``[DEFAULT] rpc_listener_wait``: how long an idle RPC listener on
RabbitMQ waits before it looks again, set on oslo.messaging's AMQP
driver when a transport is made."""

from oslo_messaging._drivers import amqpdriver
import pytest

from scheduler_split import rpc

URL = 'rabbit://guest:guest@127.0.0.1:1/'


@pytest.fixture
def driver_wait():
    before = (amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN,
              amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX)
    yield
    (amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN,
     amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX) = before
    rpc.cleanup()


def test_a_transport_sets_the_listeners_shortest_wait(override,
                                                      driver_wait):
    override('rpc_listener_wait', 0.3)
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = 0.001

    rpc.get_transport(URL)

    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == 0.3


def test_zero_keeps_the_drivers_own(override, driver_wait):
    override('rpc_listener_wait', 0)
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = 0.001

    rpc.get_transport(URL)

    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == 0.001


def test_it_never_exceeds_the_drivers_longest_wait(override, driver_wait):
    override('rpc_listener_wait', 60)

    rpc.get_transport(URL)

    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == \
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX


def test_an_idle_listener_looks_again_at_least_every_half_second(
        override, driver_wait):
    """Which bounds how long a stopped listener takes to notice: a
    service's SIGTERM waits for it."""
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX = 5.0

    rpc.get_transport(URL)

    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX <= 0.5
