"""The scheduler library: the one seam between the scheduler and the rest.

Nothing outside ``scheduler_split/scheduler/`` may import any other module
of the scheduler package (``tests/unit/test_seam.py`` fails if it does).
Underneath, every method is an RPC to the scheduler service on the bus the
caller lives on: the API bus for the api and the super-conductor, the cell
bus for cell conductors and computes.
"""

import logging

from scheduler_split import exception
from scheduler_split import rpc
from scheduler_split.scheduler import rpcapi

LOG = logging.getLogger(__name__)

NoValidHost = exception.NoValidHost


class SchedulerClient:
    """What the conductors, computes and the API ask of the scheduler."""

    def __init__(self, transport=None):
        self._api = rpcapi.SchedulerAPI(transport or rpc.get_transport())

    def select_destinations(self, ctx, request_spec, instance_uuids,
                            return_alternates=True, num_alternates=0):
        """Choose and claim one host per instance.

        Returns one list per instance: ``[chosen, alt1, ...]`` of
        Selection objects; the chosen host is already claimed for that
        instance, the alternates (at most ``num_alternates``, all in the
        chosen host's cell) are not. Raises ``NoValidHost``.
        """
        return self._api.select_destinations(
            ctx, request_spec, instance_uuids, return_alternates,
            num_alternates)

    def update_resource_stats(self, ctx, name, stats):
        """Report a compute node's capacity, zone and liveness.

        ``name`` is ``(host, node)``; ``stats`` is a dict with ``vcpus``,
        ``memory_mb``, ``local_gb``, reserved amounts, allocation ratios,
        ``availability_zone`` and ``disabled``.
        """
        host, node = name
        self._api.update_resource_stats(ctx, host, node, stats)

    def claim_resources(self, ctx, selection, instance_uuid):
        """Claim an alternate Selection; False if it is full or lost a race.
        """
        return self._api.claim_resources(ctx, selection, instance_uuid)

    def release_resources(self, ctx, instance_uuid):
        """Drop whatever the instance holds; repeating it is harmless."""
        return self._api.release_resources(ctx, instance_uuid)

    def try_release_resources(self, ctx, instance_uuid):
        """``release_resources`` for failure paths: an error is logged and
        False returned, so that the caller can still settle the instance.
        Every later path (a claim elsewhere, a delete) releases again."""
        try:
            return self.release_resources(ctx, instance_uuid)
        except Exception:
            LOG.exception('Releasing the claim of instance %s failed',
                          instance_uuid,
                          extra={'instance_uuid': instance_uuid})
            return False
