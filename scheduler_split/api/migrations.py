"""``GET /v2.1/os-migrations``: the moves of servers, from every cell;
``/v2.1/servers/{server_id}/migrations``: a server's live migrations in
progress (from 2.23).

Nova's shapes: ``migration_type`` and ``links`` (for a live migration in
progress) from 2.23, ``uuid`` and paging (``limit``, ``marker``,
``changes-since``) from 2.59, ``changes-before`` from 2.66, ``user_id``
and ``project_id`` (fields and filters) from 2.80. Newest first from
2.59 (``created_at``, then ``id``, descending); by id before.
"""

from scheduler_split.api import errors
from scheduler_split.api import paging
from scheduler_split.api import schemas
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import migration as migration_obj
from scheduler_split import policy

_FILTERS = ('hidden', 'host', 'instance_uuid', 'migration_type',
            'source_compute', 'status')


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%S.%f') if value else None


def _with_newer_fields(view, version, migration):
    """``view`` with what later microversions add to both views of a
    migration: its uuid (2.59), its user and project (2.80)."""
    if version >= (2, 59):
        view['uuid'] = migration.uuid
    if version >= (2, 80):
        view['user_id'] = migration.user_id
        view['project_id'] = migration.project_id
    return view


def _view(req, version, migration):
    view = {
        'id': migration.id,
        'status': migration.status,
        'instance_uuid': migration.instance_uuid,
        'source_node': migration.source_node,
        'source_compute': migration.source_compute,
        'dest_node': migration.dest_node,
        'dest_compute': migration.dest_compute,
        'dest_host': migration.dest_host,
        'old_instance_type_id': migration.old_instance_type_id,
        'new_instance_type_id': migration.new_instance_type_id,
        'created_at': _time(migration.created_at),
        'updated_at': _time(migration.updated_at),
    }
    if version >= (2, 23):
        view['migration_type'] = migration.migration_type
        if migration.is_live and \
                migration.status in migration_obj.LIVE_IN_PROGRESS:
            path = 'servers/%s/migrations/%s' % (migration.instance_uuid,
                                                 migration.id)
            view['links'] = [
                {'rel': 'self',
                 'href': '%s/v2.1/%s' % (req.application_url, path)},
                {'rel': 'bookmark',
                 'href': '%s/%s' % (req.application_url, path)}]
    return _with_newer_fields(view, version, migration)


def _allowed(version):
    allowed = set(_FILTERS)
    if version >= (2, 59):
        allowed |= {'limit', 'marker', 'changes-since'}
    if version >= (2, 66):
        allowed.add('changes-before')
    if version >= (2, 80):
        allowed |= {'user_id', 'project_id'}
    return allowed


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-migrations:index', target={})
    if version >= (2, 59):
        schemas.refuse_unknown_query(req, _allowed(version))
    query = {name: req.GET[name] for name in _allowed(version)
             if name in req.GET}
    limit = schemas.non_negative_query(req, 'limit') \
        if 'limit' in query else None
    since = schemas.time_query(req, 'changes-since') \
        if 'changes-since' in query else None
    before = schemas.time_query(req, 'changes-before') \
        if 'changes-before' in query else None
    if since is not None and before is not None and before < since:
        raise errors.bad_request('The value of changes-since must be less '
                                 'than or equal to changes-before.')
    found = []
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            continue
        cctx = ss_context.target_cell(ctx, cell)
        found.extend(objects.Migration.get_all(
            cctx, instance_uuid=query.get('instance_uuid'),
            statuses=[query['status']] if 'status' in query else None,
            migration_types=([query['migration_type']]
                             if 'migration_type' in query else None),
            host=query.get('host'),
            source_compute=query.get('source_compute')))
    for name in ('user_id', 'project_id'):
        if name in query:
            found = [m for m in found if getattr(m, name) == query[name]]

    def changed(migration):
        return migration.updated_at or migration.created_at
    if since is not None:
        found = [m for m in found if changed(m) >= since]
    if before is not None:
        found = [m for m in found if changed(m) <= before]
    if version < (2, 59):
        found.sort(key=lambda m: (m.created_at, m.id))
        return {'migrations': [_view(req, version, m) for m in found]}
    found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    marker = query.get('marker')
    if marker is not None:
        position = [m.uuid for m in found]
        if marker not in position:
            raise errors.bad_request('Marker %s could not be found.'
                                     % marker)
        found = found[position.index(marker) + 1:]
    body = {}
    if limit is not None:
        more = len(found) > limit
        found = found[:limit]
        if more and found:
            body['migrations_links'] = paging.next_links(req,
                                                         found[-1].uuid)
    body['migrations'] = [_view(req, version, m) for m in found]
    return body


def _server_view(version, migration):
    """A live migration in progress, as servers/{id}/migrations shows it
    (the fake driver counts no memory or disk transferred)."""
    view = {
        'id': migration.id,
        'server_uuid': migration.instance_uuid,
        'status': migration.status,
        'source_compute': migration.source_compute,
        'source_node': migration.source_node,
        'dest_compute': migration.dest_compute,
        'dest_node': migration.dest_node,
        'dest_host': migration.dest_host,
        'created_at': _time(migration.created_at),
        'updated_at': _time(migration.updated_at),
        'memory_total_bytes': None,
        'memory_processed_bytes': None,
        'memory_remaining_bytes': None,
        'disk_total_bytes': None,
        'disk_processed_bytes': None,
        'disk_remaining_bytes': None,
    }
    return _with_newer_fields(view, version, migration)


def _live_in_progress(req, ctx, version, server_id):
    if version < (2, 23):
        raise errors.not_found('The resource could not be found.')
    try:
        instance, cell = req.compute_api.locate(ctx, server_id)
    except exception.InstanceNotFound as exc:
        raise errors.not_found(exc.format_message())
    if cell is None or cell.is_cell0:
        return []
    return objects.Migration.get_all(
        ss_context.target_cell(ctx, cell), instance_uuid=instance.uuid,
        migration_types=[migration_obj.LIVE_MIGRATION],
        statuses=migration_obj.LIVE_IN_PROGRESS)


def server_index(req, ctx, version, server_id):
    policy.authorize(ctx, 'os_compute_api:servers:migrations:index',
                     target={})
    return {'migrations': [
        _server_view(version, m)
        for m in _live_in_progress(req, ctx, version, server_id)]}


def server_show(req, ctx, version, server_id, migration_id):
    policy.authorize(ctx, 'os_compute_api:servers:migrations:show',
                     target={})
    for migration in _live_in_progress(req, ctx, version, server_id):
        if str(migration.id) == migration_id:
            return {'migration': _server_view(version, migration)}
    raise errors.not_found(
        'In-progress live migration %s is not found for server %s.'
        % (migration_id, server_id))
