"""The same-cell alternates of one instance, claimed one at a time.

The scheduler answers a build or a move with the host it claimed and, not
claimed, up to ``[conductor] build_max_attempts - 1`` alternates of the
same cell, in the order it weighed them. When the chosen host cannot take
the instance (a build failed there, a destination refused a move or a
live migration), the next alternate the scheduler still lets the instance
claim takes over: a reschedule never leaves the cell and never asks the
scheduler to choose again.
"""

import logging

from scheduler_split.db import outage
from scheduler_split import exception

LOG = logging.getLogger(__name__)


def claim_alternate(scheduler, ctx, selection, uuid):
    """Claim an alternate for the instance: True if it took the claim,
    False if the scheduler refused it (the host is full, down or
    disabled), None if the scheduler could not be asked (falsy like a
    refusal, but the claim may have been written)."""
    try:
        return scheduler.claim_resources(ctx, selection, uuid)
    except Exception as exc:
        what = ('Claiming %s for instance %s failed; trying the next '
                'alternate')
        if outage.is_outage(exc):
            outage.report(LOG, exc, what + ': %s', selection.service_host,
                          uuid, outage.describe(exc),
                          extra={'instance_uuid': uuid})
        else:
            exception.log_failure(LOG, exc, what, selection.service_host,
                                  uuid, extra={'instance_uuid': uuid})
        return None


def claim_next(scheduler, ctx, uuid, alternates):
    """Claim, for the instance, the first of ``alternates`` that takes
    it (the claim replaces whatever the instance held, as the scheduler's
    claims do). Returns ``(selection, the alternates after it)``, or
    ``(None, [])`` when none is left."""
    for index, selection in enumerate(alternates):
        if claim_alternate(scheduler, ctx, selection, uuid):
            return selection, alternates[index + 1:]
    return None, []
