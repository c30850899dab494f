"""Fencing: a compute cut off from its cell conductor never runs a
server that another host may be running.

The cell conductor takes a build on a host whose compute it has not
heard from for ``[DEFAULT] service_down_time`` on to the build's next
alternate (``cell_periodic.fail_lost_builds``). A compute measures the
same silence from its side: the time since its conductor last answered
a heartbeat, which the conductor had written before it answered. Once
that silence passes half of ``service_down_time`` (:func:`fence_after`;
looked at every :data:`CHECK_INTERVAL` seconds, apart from the
heartbeat, which may hang while the bus is away), it powers off every VM
whose build it spawned but could not confirm yet (the build's ACTIVE
save got no answer), before the conductor can hand that build to
another host. A build whose first step got no answer has spawned
nothing: the compute starts no build it could not confirm.

When the conductor answers again, each VM whose build went unconfirmed
gets what its instance's record says
(:meth:`FencingMixin.resolve_unconfirmed`): it runs (powered on again
if it was fenced) if the build was confirmed on this host after all
(the save arrived, its answer did not); it is destroyed if the build
moved on or the server was deleted, and also if the build still waits
on this host, which then gives the build back to the conductor for its
next alternate like any build this process no longer runs
(``settle_instances``).
"""

import logging
import threading
import time

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Seconds between two looks at the silence: a periodic task of its own,
# since a heartbeat may hang while the bus is away.
CHECK_INTERVAL = 1


def fence_after():
    """Seconds of silence from the conductor after which a compute
    powers off the VMs of the builds it could not confirm: half the time
    after which the conductor takes the host for down and moves its
    builds on."""
    return CONF.service_down_time / 2.0


class FencingMixin:
    """The fencing of :class:`~.manager.ComputeManager`: the VMs it
    spawned for builds it could not confirm yet, and those of them it
    powered off."""

    def _init_fencing(self):
        self._last_heard = time.monotonic()
        # uuid -> instance: builds whose VM runs here, their ACTIVE save
        # not answered yet.
        self._unconfirmed = {}
        # The uuids of those whose VM the fence powered off.
        self._fenced = set()
        self._fence_guard = threading.Lock()

    def heard_from_conductor(self):
        """The conductor answered: the silence starts over."""
        self._last_heard = time.monotonic()

    def _spawned(self, instance):
        with self._fence_guard:
            self._unconfirmed[instance.uuid] = instance

    def _destroy(self, instance):
        """The VM of ``instance`` goes: whatever its build was, it is not
        this host's to confirm any more."""
        self._settled(instance.uuid)
        self.driver.destroy(instance)

    def _settled(self, uuid):
        """The build of ``uuid`` was confirmed or ended: whether its VM
        had been fenced meanwhile."""
        with self._fence_guard:
            self._unconfirmed.pop(uuid, None)
            fenced = uuid in self._fenced
            self._fenced.discard(uuid)
            return fenced

    def _unanswered(self, instance):
        """The build of ``instance`` got no answer to a step even after
        its tries: whether its VM runs here. It stays unconfirmed, for
        the fence while the silence lasts and for
        :meth:`resolve_unconfirmed` once the conductor answers."""
        with self._fence_guard:
            return instance.uuid in self._unconfirmed

    def fence(self):
        """Periodic (:data:`CHECK_INTERVAL`): past :func:`fence_after`
        seconds of silence, power off the VMs of the unconfirmed builds.
        Each is powered off and marked under the guard that
        :meth:`_settled` takes, so that a build confirmed meanwhile
        either finds its VM marked (and powers it on again) or is not
        powered off at all."""
        silent = time.monotonic() - self._last_heard
        if silent <= fence_after():
            return
        with self._fence_guard:
            todo = [uuid for uuid in self._unconfirmed
                    if uuid not in self._fenced]
        for uuid in todo:
            with self._fence_guard:
                instance = self._unconfirmed.get(uuid)
                if instance is None:
                    # Confirmed or ended meanwhile: that outcome stands.
                    continue
                try:
                    self.driver.power_off(instance)
                except Exception:
                    LOG.exception('Could not power off instance %s, whose '
                                  'build is not confirmed; trying again',
                                  uuid, extra={'instance_uuid': uuid})
                    continue
                self._fenced.add(uuid)
            LOG.warning('Compute %s has not heard from its conductor for '
                        '%.0f seconds: powered off instance %s, whose build '
                        'it cannot confirm, so that it never runs on two '
                        'hosts', self.host, silent, uuid,
                        extra={'instance_uuid': uuid})

    def resolve_unconfirmed(self, ctx):
        """Each unconfirmed VM whose build no thread of this process runs
        any more, as its instance's record says (see the module's doc)."""
        with self._fence_guard:
            unconfirmed = dict(self._unconfirmed)
        for uuid, instance in unconfirmed.items():
            with self._locks(uuid):
                if self._is_building(uuid):
                    # Its build's own thread still waits for the answer.
                    continue
                self._resolve(ctx, uuid, instance)

    def _resolve(self, ctx, uuid, instance):
        try:
            current = self.conductor.instance_get(ctx, uuid,
                                                  read_deleted=True)
        except exception.InstanceNotFound:
            current = None
        here = (current is not None and not current.deleted and
                current.host == self.host)
        if here and current.vm_state == instance_obj.ACTIVE:
            if self._settled(uuid):
                self.driver.power_on(instance)
                LOG.info('Instance %s was confirmed ACTIVE on %s after its '
                         'VM was powered off for the silence: powered on '
                         'again', uuid, self.host,
                         extra={'instance_uuid': uuid})
            return
        self._destroy(instance)
        if here and current.vm_state == instance_obj.BUILDING:
            # settle_instances gives the build back for its next
            # alternate: it does not go on here.
            return
        LOG.info('Instance %s moved on or was deleted while its build on '
                 '%s went unconfirmed: its VM here is destroyed', uuid,
                 self.host, extra={'instance_uuid': uuid})
