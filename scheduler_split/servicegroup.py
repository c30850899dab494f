"""Whether a service is up: the one rule every service asks.

A service is up when it was heard from (a heartbeat, a compute's report)
at most ``[DEFAULT] service_down_time`` seconds ago, that instant
included, and the operator has not forced it down. A service never heard
from is down. Disabled is another fact: a disabled service that reports
is up; it only takes no new work.

As with Nova's servicegroup API, callers ask here rather than compare
times themselves: the API (os-services, evacuate), the scheduler (its
filters, alternates, hypervisor and zone views) and the queries of the
service records.
"""

import datetime

from scheduler_split import conf
from scheduler_split.objects import base as obj_base

CONF = conf.CONF

UP = 'up'
DOWN = 'down'
FORCED_DOWN = 'forced down'


def up_since(now=None, down_time=None):
    """The oldest last contact that still counts as up at ``now`` (naive
    UTC; the current time by default) when a service is down after
    ``down_time`` seconds (``[DEFAULT] service_down_time`` by default).

    Worked out once, it answers for many records (``since`` below)."""
    if now is None:
        now = obj_base.naive_utc(obj_base.utcnow())
    if down_time is None:
        down_time = CONF.service_down_time
    return now - datetime.timedelta(seconds=down_time)


def is_up(last_seen, forced_down=False, since=None):
    """Whether a service last heard from at ``last_seen`` (None: never)
    is up; ``since`` is :func:`up_since` of the moment asked about, now
    by default."""
    if forced_down or last_seen is None:
        return False
    if last_seen.tzinfo is not None:
        last_seen = obj_base.naive_utc(last_seen)
    # recent()'s test, written out: ComputeFilter asks it of every host
    # of a request.
    return last_seen >= (up_since() if since is None else since)


def state(last_seen, forced_down=False, since=None):
    """:data:`UP`, :data:`DOWN` or :data:`FORCED_DOWN`, as
    :func:`is_up` decides."""
    if forced_down:
        return FORCED_DOWN
    return UP if is_up(last_seen, since=since) else DOWN


def recent(last_seen, since=None):
    """The test of :func:`is_up` on a last contact alone, for a query:
    ``last_seen`` is the column of the records' last contact, and the
    forced-down flag (where the records have one) is the caller's to
    add."""
    return last_seen >= (up_since() if since is None else since)
