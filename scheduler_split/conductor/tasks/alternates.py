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
        _unanswered(exc, 'Claiming %s for instance %s failed; trying the '
                    'next alternate', selection.service_host, uuid)
        return None


def _unanswered(exc, what, host, uuid):
    """Log a claim of ``host`` the scheduler did not answer: an outage
    as outages are reported, anything else as a failure."""
    if outage.is_outage(exc):
        outage.report(LOG, exc, what + ': %s', host, uuid,
                      outage.describe(exc), extra={'instance_uuid': uuid})
    else:
        exception.log_failure(LOG, exc, what, host, uuid,
                              extra={'instance_uuid': uuid}, stacklevel=3)


def claim_own_host(scheduler, ctx, request_spec, host, node, uuid):
    """Claim ``host`` (``node``) again for the instance whose build goes
    back to it: True if it took the claim, written over whatever the
    instance held (on an alternate whose refusal came after its claim
    was written, say); False if the scheduler refused it; None if the
    scheduler could not be asked (the claim may have been written)."""
    try:
        scheduler.check_rebuild(ctx, request_spec, host, node, claim=True)
        return True
    except exception.NoValidHost as exc:
        LOG.info('Instance %s: its own host %s refused its claim: %s',
                 uuid, host, exc.format_message(),
                 extra={'instance_uuid': uuid})
        return False
    except Exception as exc:
        _unanswered(exc, 'Claiming its own host %s again for instance %s '
                    'failed', host, uuid)
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
