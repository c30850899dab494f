"""Versioned notifications through the oslo.messaging notifier.

Off unless ``[oslo_messaging_notifications] driver`` is set (e.g.
``messagingv2``). Payloads are versioned objects, sent as their
primitives, so a consumer can tell what version of a payload it reads:

Event types are Nova's, so that consumers of Nova's notifications read
them unchanged:

- ``scheduler.select_destinations.start`` / ``.end``: from the
  super-conductor around its one call to the scheduler (claims
  included), which is where the scheduler's notifications moved.
- ``compute_task.build_instances.error``: from the super-conductor, for
  each instance of a request the scheduler could not place.
- ``instance.create.start`` / ``.end`` / ``.error``: from the compute a
  build runs on; ``instance.delete.start`` / ``.end`` from the compute a
  server is deleted on.
- ``instance.power_off``, ``power_on``, ``reboot``, ``pause``,
  ``unpause``, ``suspend``, ``resume`` (``.start`` / ``.end``, and
  ``.error`` for a reboot that fails): from the compute;
  ``instance.lock``, ``instance.unlock`` and ``instance.update`` (a
  rename, metadata or tags) from the API.
"""

import functools
import logging
import threading

import oslo_messaging as messaging
from oslo_versionedobjects import fields

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import memory_bus
from scheduler_split.objects import base
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

_notifier = None
_enabled = None
_lock = threading.Lock()


@base.ObjectRegistry.register
class SelectDestinationsPayload(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = {
        'instance_uuids': fields.ListOfStringsField(),
        'flavor_name': fields.StringField(),
        'num_alternates': fields.IntegerField(),
        'fault_message': fields.StringField(nullable=True, default=None),
    }


@base.ObjectRegistry.register
class ComputeTaskPayload(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'flavor_name': fields.StringField(),
        'state': fields.StringField(),
        'reason': fields.StringField(nullable=True, default=None),
    }


# What every payload about an instance says of it.
_INSTANCE_FIELDS = {
    'uuid': fields.UUIDField(),
    'display_name': fields.StringField(nullable=True),
    'project_id': fields.StringField(),
    'user_id': fields.StringField(nullable=True),
    'host': fields.StringField(nullable=True),
    'node': fields.StringField(nullable=True),
    'state': fields.StringField(),
    'task_state': fields.StringField(nullable=True),
    'flavor_name': fields.StringField(),
    'image_ref': fields.StringField(nullable=True),
    'availability_zone': fields.StringField(nullable=True),
    'fault_message': fields.StringField(nullable=True, default=None),
}


def _instance_values(instance, exc):
    return dict(uuid=instance.uuid, display_name=instance.display_name,
                project_id=instance.project_id, user_id=instance.user_id,
                host=instance.host, node=instance.node,
                state=instance.vm_state, task_state=instance.task_state,
                flavor_name=instance.flavor.name,
                image_ref=instance.image_ref,
                availability_zone=instance.availability_zone,
                fault_message=exception.describe(exc) if exc else None)


@base.ObjectRegistry.register
class InstanceCreatePayload(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = dict(_INSTANCE_FIELDS)

    @classmethod
    def from_instance(cls, instance, exc=None):
        return cls(**_instance_values(instance, exc))


@base.ObjectRegistry.register
class InstanceActionPayload(base.SchedulerSplitObject):
    """The payload of ``instance.<action>.*``, ``instance.lock``,
    ``instance.unlock`` and ``instance.update``."""
    VERSION = '1.0'

    fields = dict(
        _INSTANCE_FIELDS,
        display_description=fields.StringField(nullable=True),
        power_state=fields.IntegerField(nullable=True),
        locked=fields.BooleanField(),
        locked_reason=fields.StringField(nullable=True),
        metadata=fields.DictOfStringsField(),
        tags=fields.ListOfStringsField())

    @classmethod
    def from_instance(cls, instance, exc=None):
        return cls(display_description=instance.get('display_description'),
                   power_state=instance.get('power_state'),
                   locked=bool(instance.get('locked', False)),
                   locked_reason=instance.get('locked_reason'),
                   metadata=dict(instance.get('metadata') or {}),
                   tags=list(instance.get('tags') or []),
                   **_instance_values(instance, exc))


def _get_notifier():
    global _notifier
    with _lock:
        if _notifier is None:
            transport = messaging.get_notification_transport(
                CONF, url=memory_bus.canonical(
                    CONF.oslo_messaging_notifications.transport_url or
                    CONF.transport_url))
            _notifier = messaging.Notifier(
                transport, serializer=rpc.RequestContextSerializer())
        return _notifier


def enabled():
    """Whether a notification driver other than ``noop`` is set: with
    none, oslo's notifier still serializes each payload before finding
    nowhere to send it. Read once, with the notifier (``reset`` reads it
    again)."""
    global _enabled
    if _enabled is None:
        _get_notifier()  # which registers the notifier's options
        _enabled = any(driver != 'noop' for driver
                       in CONF.oslo_messaging_notifications.driver)
    return _enabled


def reset():
    """Forget the notifier (tests change the driver between runs)."""
    global _notifier, _enabled
    with _lock:
        _notifier = None
        _enabled = None


def emit(ctx, publisher, event_type, make_payload, error=False):
    """Send ``event_type`` from ``publisher`` if notifications are on.

    ``make_payload`` builds the payload only when something will be sent.
    Failing to notify is logged; it never fails the work it reports on.
    """
    try:
        if not enabled():
            return
        notifier = _get_notifier().prepare(publisher_id=publisher)
        send = notifier.error if error else notifier.info
        send(ctx, event_type, make_payload().obj_to_primitive())
    except Exception:
        LOG.exception('Could not send notification %s', event_type)


def api_publisher():
    """The publisher of what the API sends."""
    return 'scheduler-split-api:%s' % CONF.host


def instance_event(ctx, publisher, instance, event_type, exc=None):
    """``event_type`` about ``instance`` (an InstanceActionPayload): the
    server actions the computes run and the API's lock, unlock and
    update; ``exc`` makes it an error notification saying why."""
    emit(ctx, publisher, event_type,
         functools.partial(InstanceActionPayload.from_instance, instance,
                           exc),
         error=exc is not None)
