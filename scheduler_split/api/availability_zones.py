"""``/os-availability-zone``: the zones servers can be asked into.

A compute host's zone is its aggregates' ``availability_zone`` metadata,
else the zone its compute reports (``[compute] availability_zone``);
conductors and schedulers are in the ``internal`` zone, which only the
detail lists. The zones come from the scheduler, through its library.
"""

import logging

import oslo_messaging as messaging

from scheduler_split.api import errors
from scheduler_split.api import services
from scheduler_split import exception
from scheduler_split import policy

LOG = logging.getLogger(__name__)

INTERNAL_ZONE = 'internal'


def compute_zones(req, ctx):
    """``{zone: {host: {available, active, updated_at}}}``; 503 if no
    scheduler answers."""
    try:
        return req.compute_api.scheduler.get_availability_zones(ctx)
    except messaging.MessagingException as exc:
        LOG.error('No scheduler answered for the availability zones (%s)',
                  exc)
        raise exception.ServiceUnavailable(
            reason='the scheduler, which knows the availability zones, '
                   'could not be reached')


def check_requested_zone(req, ctx, zone):
    """At boot: 400 unless some compute host is in ``zone``.

    When no scheduler can answer (during a rolling upgrade the schedulers
    of the previous release do not know the call, and the client is
    capped below it), the boot goes on unchecked: the scheduler's
    AvailabilityZoneFilter still keeps it in the zone, and a zone with no
    host ends the build in ERROR, as in the previous release.
    """
    if not zone:
        return
    try:
        zones = req.compute_api.scheduler.get_availability_zones(ctx)
    except messaging.MessagingException as exc:
        LOG.warning('No scheduler said which availability zones exist (%s); '
                    'the boot into %s goes on unchecked', exc, zone)
        return
    if zone not in zones:
        raise errors.bad_request('The requested availability zone is not '
                                 'available')


def _zone_state(hosts):
    return {'available': any(h['available'] for h in hosts.values())}


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-availability-zone:list',
                     target={})
    zones = compute_zones(req, ctx)
    return {'availabilityZoneInfo': [
        {'zoneName': zone, 'zoneState': _zone_state(hosts), 'hosts': None}
        for zone, hosts in sorted(zones.items())]}


def _service_state(enabled, up, updated_at):
    """A service of the detail, in Nova's words: ``available`` when it
    is up, ``active`` when it is enabled."""
    return {'available': up, 'active': enabled, 'updated_at': updated_at}


def _internal_hosts(req, ctx):
    hosts = {}
    found = services.cell_services(ctx, down=[])
    found += services.scheduler_services(req, ctx)
    for service in found:
        if service.binary == services.COMPUTE:
            continue
        seen = services.iso_time(service.last_seen_up or service.updated_at)
        hosts.setdefault(service.host, {})[service.binary] = _service_state(
            enabled=not service.disabled, up=service.is_up, updated_at=seen)
    return hosts


def detail(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-availability-zone:detail',
                     target={})
    info = []
    internal = _internal_hosts(req, ctx)
    if internal:
        info.append({'zoneName': INTERNAL_ZONE,
                     'zoneState': {'available': True}, 'hosts': internal})
    for zone, hosts in sorted(compute_zones(req, ctx).items()):
        info.append({
            'zoneName': zone, 'zoneState': _zone_state(hosts),
            # The scheduler's entry says ``available`` for enabled and
            # ``active`` for up.
            'hosts': {host: {services.COMPUTE: _service_state(
                enabled=entry['available'], up=entry['active'],
                updated_at=entry['updated_at'])}
                for host, entry in sorted(hosts.items())}})
    return {'availabilityZoneInfo': info}
