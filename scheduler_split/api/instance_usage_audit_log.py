"""``/os-instance_usage_audit_log``: how far the computes' usage audit
of an audit period got.

In Nova each compute's ``instance_usage_audit`` periodic task sends the
usage of its instances for the last completed audit period and writes a
task log row when it starts and when it is done; this answer counts
those rows against the compute hosts. No compute here runs that audit
(no usage notifications are sent per period): every compute host counts
as not run, no instance is audited, and the status says so in Nova's
words ("0 of N hosts done. 0 errors."). The hosts are those of the
compute services of every cell, disabled ones included (they may still
hold instances), as Nova counts them; a cell that cannot be reached adds
none. The period is Nova's default one, the calendar month (UTC).
"""

import datetime

from scheduler_split.api import errors
from scheduler_split.api import services as services_api
from scheduler_split.objects import base as obj_base
from scheduler_split import policy

_FORMATS = ('%Y-%m-%d %H:%M:%S', '%Y-%m-%d %H:%M:%S.%f')


def last_completed_period(before):
    """``(beginning, ending)`` of the last calendar month that ended
    before ``before`` (naive UTC): an audit period ends at the start of
    a month, and one that ends exactly at ``before`` is not over yet."""
    ending = datetime.datetime(before.year, before.month, 1)
    if ending >= before:
        ending = _month_before(ending)
    return _month_before(ending), ending


def _month_before(start):
    if start.month == 1:
        return start.replace(year=start.year - 1, month=12)
    return start.replace(month=start.month - 1)


def _audit_log(ctx, period):
    beginning, ending = period
    hosts = sorted({service.host for service in
                    services_api.cell_services(ctx, down=[])
                    if service.binary == services_api.COMPUTE})
    return {
        'hosts_not_run': hosts,
        'log': {},
        'num_hosts': len(hosts),
        'num_hosts_done': 0,
        'num_hosts_not_run': len(hosts),
        'num_hosts_running': 0,
        # Nova says ALL when every host is done: here, only when there
        # is no compute host at all.
        'overall_status': '%s hosts done. 0 errors.' % (
            '0 of %d' % len(hosts) if hosts else 'ALL'),
        'period_beginning': str(beginning),
        'period_ending': str(ending),
        'total_errors': 0,
        'total_instances': 0,
    }


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-instance-usage-audit-log:list',
                     target={})
    now = obj_base.naive_utc(obj_base.utcnow())
    return {'instance_usage_audit_logs': _audit_log(
        ctx, last_completed_period(now))}


def show(req, ctx, version, before_timestamp):
    """The audit of the last period completed before ``before_timestamp``
    (``YYYY-MM-DD hh:mm:ss[.ffffff]``, UTC); 400 for any other form."""
    policy.authorize(ctx, 'os_compute_api:os-instance-usage-audit-log:show',
                     target={})
    fmt = _FORMATS[1] if '.' in before_timestamp else _FORMATS[0]
    try:
        # A time in the first month there is has no period before it.
        period = last_completed_period(
            datetime.datetime.strptime(before_timestamp, fmt))
    except ValueError:
        raise errors.bad_request('Invalid timestamp for date %s'
                                 % before_timestamp)
    return {'instance_usage_audit_log': _audit_log(ctx, period)}
