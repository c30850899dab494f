"""The heal: release allocations no live instance needs.

Every path that ends an instance's need releases its claim; the heal
catches the ones whose release could not reach the database (a crash,
an outage). Which consumers still need their claims is the
super-conductor's to say (it owns the API database and reaches every
cell's): the scheduler asks it over the bus, in :func:`heal_allocations`
alone, and reads no other service's database.
"""

import logging

from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import rpc
from scheduler_split.scheduler import claims

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# How many consumers one question of the heal to the super-conductor
# carries.
HEAL_CHUNK = 500


def conductor_client():
    """The super-conductor's client, on the API bus."""
    return conductor_rpcapi.SuperConductorAPI(rpc.get_transport())


def heal_allocations(db_url, conductor, release, grace=None):
    """Release, with ``release(ctx, consumer)``, the allocations older
    than ``grace`` seconds (``[scheduler] heal_allocations_grace`` by
    default) that the super-conductor (``conductor``) says nobody
    needs. If it cannot answer, nothing is released. Returns the
    consumers healed."""
    if grace is None:
        grace = CONF.scheduler.heal_allocations_grace
    consumers = sorted(claims.consumers_older_than(db_url, grace))
    if not consumers:
        return []
    ctx = ss_context.get_admin_context()
    needed = set()
    try:
        for start in range(0, len(consumers), HEAL_CHUNK):
            needed.update(conductor.consumers_needing_claims(
                ctx, consumers[start:start + HEAL_CHUNK]))
    except Exception as exc:
        LOG.warning('The super-conductor could not say which of %d '
                    'allocations are still needed (%s); releasing none',
                    len(consumers), exception.describe(exc))
        return []
    healed = []
    for consumer in consumers:
        if consumer in needed:
            continue
        LOG.warning('Healing the allocation of %s: no build request or '
                    'live instance needs it', consumer,
                    extra={'instance_uuid': consumer})
        release(ctx, consumer)
        healed.append(consumer)
    return healed
