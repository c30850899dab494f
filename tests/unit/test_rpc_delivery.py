"""A message the broker refuses for want of a queue is sent again.

With RabbitMQ a message is published mandatory: the broker hands back one
that no queue takes (MessageUndeliverable). That happens between a broker
restart and the moment the message's consumer declared its queue again;
the sender retries until ``[DEFAULT] rpc_delivery_timeout``. The broker
itself is raced in tests/integration/test_broker_restart.py.
"""

import logging
import time

import oslo_messaging as messaging
import pytest

from scheduler_split import rpc


class Refusing:
    """An RPC client whose first ``refusals`` sends the broker hands
    back."""

    def __init__(self, refusals, topic='conductor', server=None):
        self.refusals = refusals
        self.sent = []
        self.target = messaging.Target(topic=topic, server=server)

    def _send(self, kind, ctxt, method, **kwargs):
        self.sent.append((kind, method, kwargs))
        if len(self.sent) <= self.refusals:
            raise messaging.MessageUndeliverable(
                Exception('NO_ROUTE'), 'scheduler_split', self.target.topic,
                {})
        return 'answer of %s' % method

    def call(self, ctxt, method, **kwargs):
        return self._send('call', ctxt, method, **kwargs)

    def cast(self, ctxt, method, **kwargs):
        return self._send('cast', ctxt, method, **kwargs)

    def prepare(self, **kwargs):
        return self


def test_a_call_refused_until_its_consumer_is_back_gets_its_answer(
        override):
    override('rpc_delivery_timeout', 30)
    client = Refusing(refusals=3)
    patient = rpc._Patient(client).prepare(version='1.0')

    assert patient.call({}, 'instance_get', instance_uuid='u1') == \
        'answer of instance_get'
    # The same message each time, and nothing after it was taken.
    assert client.sent == [('call', 'instance_get',
                            {'instance_uuid': 'u1'})] * 4


def test_a_cast_refused_until_its_consumer_is_back_is_delivered(override):
    override('rpc_delivery_timeout', 30)
    client = Refusing(refusals=2, topic='compute', server='cell1-compute1')

    rpc._Patient(client).cast({}, 'build_and_run_instance', node='n1')

    assert [m for _, m, _ in client.sent] == ['build_and_run_instance'] * 3


def test_a_message_no_queue_takes_fails_after_the_delivery_timeout(
        override):
    override('rpc_delivery_timeout', 1)
    client = Refusing(refusals=10 ** 6, topic='compute',
                      server='cell1-compute9')
    started = time.monotonic()

    with pytest.raises(messaging.MessageDeliveryFailure) as err:
        rpc._Patient(client).cast({}, 'terminate_instance')

    assert 1 <= time.monotonic() - started < 5
    assert 'terminate_instance' in str(err.value)
    assert 'compute.cell1-compute9' in str(err.value)
    assert 'rpc_delivery_timeout' in str(err.value)
    # Sent again with a growing pause, not in a busy loop.
    assert 3 <= len(client.sent) < 20


def test_no_delivery_timeout_fails_at_once(override):
    override('rpc_delivery_timeout', 0)
    client = Refusing(refusals=1)

    with pytest.raises(messaging.MessageDeliveryFailure):
        rpc._Patient(client).call({}, 'instance_get')
    assert len(client.sent) == 1


def test_every_client_publishes_mandatory():
    transport = messaging.get_rpc_transport(rpc.CONF, url='fake://')
    try:
        client = rpc.get_client(transport, 'conductor', '1.0')
        assert client.transport_options.at_least_once is True
        assert client.prepare(version='1.0').transport_options \
            .at_least_once is True
    finally:
        transport.cleanup()


def test_a_consumer_not_started_yet_is_waited_for_without_a_warning(
        override, caplog):
    """Services start in any order: a compute's first reports find no
    scheduler queue until the scheduler has started. That is no broker
    restart, and says nothing above DEBUG; once a queue took a message
    for the topic, a refusal is one again."""
    override('rpc_delivery_timeout', 30)
    caplog.set_level(logging.DEBUG, logger='scheduler_split.rpc')
    first = Refusing(refusals=2, topic='scheduler-starting')

    rpc._Patient(first).cast({}, 'update_resource_stats', host='h1')

    assert [r.levelname for r in caplog.records] == ['DEBUG']
    caplog.clear()
    # The broker restarted: the queue is gone until its consumer is back.
    later = Refusing(refusals=1, topic='scheduler-starting')

    rpc._Patient(later).cast({}, 'update_resource_stats', host='h1')

    assert [r.levelname for r in caplog.records] == ['WARNING']
    assert 'broker restart' in caplog.records[0].getMessage()


@pytest.mark.parametrize('seconds,retries', [(4, 0), (11, 1), (15, 1),
                                             (19, 2), (30, 3)])
def test_a_send_into_a_cell_tries_its_bus_as_often_as_fits_its_timeout(
        seconds, retries):
    # oslo.messaging's defaults: pauses of 1, 3, 5, ... seconds between
    # tries; each try counted at 5 s, as one at a dropped link takes.
    assert rpc.cell_retries(seconds) == retries


def test_a_send_that_could_not_reach_its_bus_fails_unsent():
    from kombu import exceptions as kombu_exc

    class Away(Refusing):
        def cast(self, ctxt, method, **kwargs):
            raise kombu_exc.OperationalError('[Errno 111] Connection refused')

    with pytest.raises(messaging.MessageDeliveryFailure) as caught:
        rpc._Patient(Away(0, server='cell2-compute1')).cast(
            {}, 'terminate_instance')
    assert str(caught.value) == (
        'terminate_instance for conductor.cell2-compute1 was not sent: its '
        'bus cannot be reached ([Errno 111] Connection refused)')
