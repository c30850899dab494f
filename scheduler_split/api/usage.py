"""``/os-simple-tenant-usage``: what each project's servers used over a
window of time, in server hours and in vCPU, memory and disk hours.

A server counts from its ``launched_at`` to its ``terminated_at`` (or to
the end of the window, or now), clipped to the window; a server that never
launched costs nothing. Deleted servers count too: their rows stay in
their cell with ``terminated_at`` set, so a window that covers their life
bills it. The end of a window in the future is read as now.

Servers are read from every cell's database and ordered by project and
uuid across cells, so a page (``limit``/``marker`` from 2.40) continues
where the last one stopped whichever cell it was in. Below 2.40 a report
covers at most ``[api] max_limit`` servers, as Nova's does.
"""

import collections
import datetime

from oslo_utils import strutils

from scheduler_split.api import errors
from scheduler_split.api import multi_cell_list
from scheduler_split.api import paging
from scheduler_split.api import schemas
from scheduler_split import conf
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance_list
from scheduler_split import policy

CONF = conf.CONF

_FORMATS = ('%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%S.%f',
            '%Y-%m-%d %H:%M:%S.%f')
_SHOWN = '%Y-%m-%dT%H:%M:%S.%f'
_INDEX_QUERY = {'start', 'end', 'detailed', 'limit', 'marker'}
_SHOW_QUERY = {'start', 'end', 'limit', 'marker'}


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _moment(req, name, now):
    """A window bound as naive UTC; a missing one is now."""
    raw = req.GET.get(name)
    if not raw:
        return now
    for fmt in _FORMATS:
        try:
            return datetime.datetime.strptime(raw, fmt)
        except ValueError:
            continue
    raise errors.bad_request('Invalid datetime string: Datetime is in '
                             'invalid format')


def _shown(moment):
    return moment.strftime(_SHOWN) if moment is not None else None


def _window(req, version, allowed):
    if version >= (2, 75):
        schemas.refuse_unknown_query(req, allowed)
    now = _utcnow()
    start = _moment(req, 'start', now)
    stop = _moment(req, 'end', now)
    if not start < stop:
        raise errors.bad_request('Invalid start time. The start time cannot '
                                 'occur after the end time.')
    return start, min(stop, now), now


def _page_size(req, version):
    """``(limit, marker)``: from 2.40 as asked (capped at max_limit);
    before, max_limit and no marker."""
    if version < (2, 40):
        return CONF.api.max_limit, None
    limit = schemas.non_negative_query(req, 'limit')
    limit = CONF.api.max_limit if limit is None else limit
    return min(limit, CONF.api.max_limit), req.GET.get('marker') or None


# A report's servers, ordered across cells.
_ORDER = multi_cell_list.SortOrder(['project_id', 'uuid'], ['asc', 'asc'])


def _servers(ctx, start, stop, project_id, limit, marker):
    """The servers that ran in the window, from every cell, ordered by
    ``(project_id, uuid)``, after ``marker`` and at most ``limit``."""
    after = None
    if marker is not None:
        after = multi_cell_list.find(ctx, marker, read_deleted=True)
        if after is None:
            raise errors.bad_request('Marker %s could not be found.'
                                     % marker)
    filters = instance_list.Filters(project_id=project_id,
                                    ran_between=(start, stop),
                                    read_deleted=True)
    return multi_cell_list.get_instances(ctx, filters, _ORDER, limit,
                                         after)[0]


def _server_usage(instance, start, stop, now):
    flavor = instance.flavor
    launched = obj_base.naive_utc(instance.launched_at)
    ended = obj_base.naive_utc(instance.terminated_at)
    hours = (min(ended or stop, stop) - max(launched, start))
    uptime = (ended or now) - launched
    return {
        'instance_id': instance.uuid,
        'name': instance.display_name or '',
        'tenant_id': instance.project_id,
        'flavor': flavor.name,
        'hours': max(hours.total_seconds(), 0) / 3600.0,
        'vcpus': flavor.vcpus,
        'memory_mb': flavor.memory_mb,
        'local_gb': flavor.root_gb + flavor.ephemeral_gb,
        'started_at': _shown(launched),
        'ended_at': _shown(ended),
        'state': 'terminated' if ended else instance.vm_state,
        'uptime': max(int(uptime.total_seconds()), 0),
    }


def _usages(rows, start, stop, now, detailed):
    """Per project totals, in the order the servers came."""
    by_project = collections.OrderedDict()
    servers = []
    for row in rows:
        server = _server_usage(row, start, stop, now)
        servers.append(server)
        total = by_project.get(row.project_id)
        if total is None:
            total = by_project[row.project_id] = {
                'tenant_id': row.project_id,
                'total_local_gb_usage': 0, 'total_vcpus_usage': 0,
                'total_memory_mb_usage': 0, 'total_hours': 0,
                'start': _shown(start), 'stop': _shown(stop)}
            if detailed:
                total['server_usages'] = []
        hours = server['hours']
        total['total_local_gb_usage'] += server['local_gb'] * hours
        total['total_vcpus_usage'] += server['vcpus'] * hours
        total['total_memory_mb_usage'] += server['memory_mb'] * hours
        total['total_hours'] += hours
        if detailed:
            total['server_usages'].append(server)
    return list(by_project.values()), servers


def _links(req, servers, limit):
    """A next link when the page is full."""
    if not limit or len(servers) != limit:
        return None
    return paging.next_links(req, servers[-1]['instance_id'])


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-simple-tenant-usage:list',
                     target={})
    start, stop, now = _window(req, version, _INDEX_QUERY)
    # Nova lists the servers for ``1`` only; openstacksdk (so the
    # ``openstack usage list`` command) sends ``True``, so any true word
    # counts here.
    detailed = strutils.bool_from_string(req.GET.get('detailed', '0'))
    limit, marker = _page_size(req, version)
    rows = _servers(ctx, start, stop, None, limit, marker)
    usages, servers = _usages(rows, start, stop, now, detailed)
    body = {'tenant_usages': usages}
    links = _links(req, servers, limit) if version >= (2, 40) else None
    if links:
        body['tenant_usages_links'] = links
    return body


def show(req, ctx, version, tenant_id):
    policy.authorize(ctx, 'os_compute_api:os-simple-tenant-usage:show',
                     target={'project_id': tenant_id})
    start, stop, now = _window(req, version, _SHOW_QUERY)
    limit, marker = _page_size(req, version)
    rows = _servers(ctx, start, stop, tenant_id, limit, marker)
    usages, servers = _usages(rows, start, stop, now, True)
    body = {'tenant_usage': usages[0] if usages else {}}
    links = _links(req, servers, limit) if version >= (2, 40) else None
    if links:
        body['tenant_usage_links'] = links
    return body
