"""``GET /servers/{id}/diagnostics`` (admins): what the server's compute
reports of it, from its driver.

From 2.48 the answer has Nova's common shape (state, driver, uptime,
CPUs, memory, NICs and disks). Before, Nova answered whatever its driver
said; here that is the libvirt driver's flat shape (``cpu0_time``,
``memory``, ``vda_read``, ...), from the same figures.
"""

from scheduler_split.api import errors
from scheduler_split import exception
from scheduler_split import policy


def _legacy(diagnostics):
    body = {}
    for cpu in diagnostics['cpu_details']:
        body['cpu%d_time' % cpu['id']] = cpu['time'] or 0
    memory = diagnostics['memory_details']
    body['memory'] = (memory['maximum'] or 0) * 1024
    body['memory-actual'] = (memory['maximum'] or 0) * 1024
    body['memory-rss'] = (memory['used'] or 0) * 1024
    for index, disk in enumerate(diagnostics['disk_details']):
        name = 'vd%s' % chr(ord('a') + index)
        body[name + '_read'] = disk['read_bytes'] or 0
        body[name + '_read_req'] = disk['read_requests'] or 0
        body[name + '_write'] = disk['write_bytes'] or 0
        body[name + '_write_req'] = disk['write_requests'] or 0
        body[name + '_errors'] = disk['errors_count'] or 0
    return body


def show(req, ctx, version, server_id):
    try:
        instance = req.compute_api.get(ctx, server_id)
        policy.authorize(ctx, 'os_compute_api:os-server-diagnostics',
                         {'project_id': instance.project_id})
        diagnostics = req.compute_api.inspect(
            ctx, server_id, 'get_diagnostics', 'get_diagnostics')
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    if version >= (2, 48):
        return diagnostics
    return _legacy(diagnostics)
