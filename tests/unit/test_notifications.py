"""Notifications are built and sent only when a driver is set."""

from oslo_messaging.notify import _impl_test
import pytest

from scheduler_split import context
from scheduler_split import notifications
from tests.unit import helpers


@pytest.fixture
def notifier():
    notifications.reset()
    _impl_test.reset()
    yield
    notifications.reset()
    _impl_test.reset()


def _emit():
    built = []

    def payload():
        built.append(True)
        return helpers.make_flavor()

    notifications.emit(context.get_admin_context(), 'test-publisher',
                       'instance.create.start', payload)
    return built


@pytest.mark.parametrize('drivers', [[], ['noop']])
def test_without_a_driver_nothing_is_built_or_sent(notifier, override,
                                                   drivers):
    override('driver', drivers, group='oslo_messaging_notifications')

    assert _emit() == []
    assert _impl_test.NOTIFICATIONS == []


def test_with_a_driver_the_payload_is_built_and_sent(notifier, override):
    override('driver', ['test'], group='oslo_messaging_notifications')

    assert _emit() == [True]
    [(_, message, _, _)] = _impl_test.NOTIFICATIONS
    assert message['event_type'] == 'instance.create.start'
    assert message['publisher_id'] == 'test-publisher'
    assert message['payload']['scheduler_split_object.name'] == 'Flavor'
