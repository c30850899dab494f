"""The images users make in the built-in image catalog, in the API
database (``[glance] source = builtin``; the all-in-one serves them under
``/image``).

Not a versioned object: an image never crosses the bus. An image is a
dict of Glance's fields (``id``, ``name``, ``status``, ``visibility``,
..., ``created_at``), its custom properties as ``properties`` and its
tags as ``tags``; ``api/images.py`` renders it in the Image API's shape.

The built-in images (``api/images.py``) are never rows: a listing is
handed them and takes them in as literal rows of its query (UNION ALL),
so that one query of the database filters, sorts and pages them with
the users' images, and no write can reach them.

Properties and tags are JSON in their row. A filter on them matches the
JSON text: properties are serialized with sorted keys and JSON's default
separators, so ``"key": "value"`` appears in the text exactly when the
image has that property with that value (inside a JSON string every
quote is escaped, so the pattern can only match a real key and value).
"""

import json

import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base

CONF = conf.CONF

QUEUED = 'queued'
ACTIVE = 'active'
DELETED = 'deleted'

_TABLE = api_models.Image.__table__
COLUMNS = tuple(c.name for c in _TABLE.columns)
# The fields a listing sorts by, as Glance's; a nullable one sorts as an
# empty value, so that a page's marker always compares.
SORT_KEYS = ('name', 'status', 'container_format', 'disk_format', 'size',
             'id', 'created_at', 'updated_at')
# Comparisons a condition of a listing may make.
_OPS = {
    'eq': lambda col, v: col == v,
    'neq': lambda col, v: col != v,
    'gt': lambda col, v: col > v,
    'gte': lambda col, v: col >= v,
    'lt': lambda col, v: col < v,
    'lte': lambda col, v: col <= v,
    'in': lambda col, v: col.in_(list(v)),
}


def _api_db():
    return CONF.api_database.connection


def _now():
    return base.naive_utc(base.utcnow())


def encode_properties(properties):
    """The JSON text of custom properties, as rows hold it."""
    return json.dumps(dict(properties), sort_keys=True)


def encode_tags(tags):
    return json.dumps(sorted(set(tags)))


def _property_pattern(key, value):
    return '%s: %s' % (json.dumps(key), json.dumps(value))


def _image(row):
    """A row (of the table or of a listing) as an image dict."""
    image = {name: getattr(row, name) for name in COLUMNS}
    image['properties'] = json.loads(image['properties'] or '{}')
    image['tags'] = json.loads(image['tags'] or '[]')
    for name in ('protected', 'os_hidden', 'deleted'):
        image[name] = bool(image[name])
    return image


def _values(image):
    """The column values of an image dict."""
    values = {name: image[name] for name in COLUMNS if name in image}
    if 'properties' in image:
        values['properties'] = encode_properties(image['properties'])
    if 'tags' in image:
        values['tags'] = encode_tags(image['tags'])
    return values


def may_see(ctx, image):
    """Whether ``ctx`` may see ``image``: an admin every image, anyone a
    public or community one, a project its own (shared images have no
    members here, so only their owner sees them)."""
    return (ctx.is_admin or image['visibility'] in ('public', 'community')
            or (ctx.project_id is not None
                and image['owner'] == ctx.project_id))


def create(ctx, image):
    """Record ``image`` (a dict of Glance's fields, ``id`` included);
    returns it as stored. ``ImageExists`` if the id was ever taken."""
    now = _now()
    values = dict(_values(image), created_at=now, updated_at=now,
                  deleted=False, deleted_at=None)
    values.setdefault('properties', encode_properties({}))
    values.setdefault('tags', encode_tags(()))
    try:
        with engines.writer(_api_db()) as session:
            session.execute(_TABLE.insert().values(**values))
            row = session.execute(sa.select(_TABLE).where(
                _TABLE.c.id == values['id'])).one()
    except sa.exc.IntegrityError:
        # The id is the primary key: a deleted image keeps it too.
        raise exception.ImageExists(image_id=values['id'])
    return _image(row)


def get(ctx, image_id):
    """The image ``image_id`` if ``ctx`` may see it and it is not
    deleted; ``ImageNotFound`` otherwise."""
    with engines.reader(_api_db()) as session:
        row = session.execute(sa.select(_TABLE).where(
            _TABLE.c.id == image_id, _TABLE.c.deleted.is_(False))).first()
    if row is None or not may_see(ctx, _image(row)):
        raise exception.ImageNotFound(image_id=image_id)
    return _image(row)


def update(ctx, image_id, change):
    """Apply ``change`` (the image dict -> the fields to write, or an
    exception) in one transaction holding the image's row, so that two
    concurrent changes are made one after the other; returns the image
    as it is then. ``ImageNotFound`` for an image ``ctx`` may not see."""
    with engines.writer(_api_db()) as session:
        row = session.execute(sa.select(_TABLE).where(
            _TABLE.c.id == image_id, _TABLE.c.deleted.is_(False))
            .with_for_update()).first()
        if row is None or not may_see(ctx, _image(row)):
            raise exception.ImageNotFound(image_id=image_id)
        values = _values(change(_image(row)))
        if values:
            values['updated_at'] = _now()
            session.execute(_TABLE.update().where(
                _TABLE.c.id == image_id).values(**values))
        row = session.execute(sa.select(_TABLE).where(
            _TABLE.c.id == image_id)).one()
    return _image(row)


def upload(ctx, image_id, size, checksum, hash_algo, hash_value):
    """The upload of a queued image's data finished: it is ``active``
    with that size and checksums. Guarded by the status, so that of two
    uploads only one lands; ``ImageStatusConflict`` for the other (and
    for an image that is not queued)."""
    image = get(ctx, image_id)
    with engines.writer(_api_db()) as session:
        result = session.execute(_TABLE.update().where(
            _TABLE.c.id == image_id, _TABLE.c.deleted.is_(False),
            _TABLE.c.status == QUEUED).values(
                status=ACTIVE, size=size, checksum=checksum,
                os_hash_algo=hash_algo, os_hash_value=hash_value,
                updated_at=_now()))
    if result.rowcount == 0:
        raise exception.ImageStatusConflict(status=image['status'],
                                            to='saving')
    return get(ctx, image_id)


def destroy(ctx, image_id, check=None):
    """Delete the image (its row stays, ``deleted``); ``check(image)``
    may refuse first. ``ImageNotFound`` for an image ``ctx`` may not see
    (or already deleted), ``ImageProtected`` for a protected one."""
    def delete(image):
        if check is not None:
            check(image)
        if image['protected']:
            raise exception.ImageProtected(image_id=image_id)
        return {'status': DELETED, 'deleted': True, 'deleted_at': _now()}
    update(ctx, image_id, delete)


def _literal_row(image, cast_times):
    """A built-in image as a row of literals, typed as the table's."""
    values = dict(_values(image), deleted=False, deleted_at=None)
    columns = []
    for column in _TABLE.columns:
        value = sa.literal(values.get(column.name), column.type)
        if cast_times and isinstance(column.type, sa.DateTime):
            value = sa.cast(value, column.type)
        columns.append(value.label(column.name))
    return sa.select(*columns)


def _catalog(builtin, dialect):
    """Every image not deleted: the table's and the built-in ones."""
    rows = sa.select(*_TABLE.columns).where(_TABLE.c.deleted.is_(False))
    if not builtin:
        return rows.subquery('catalog')
    # MySQL types a column of a UNION from all its rows, and a time given
    # as a parameter is a string there: the column would be one too. (A
    # CAST would make SQLite's a number.)
    cast_times = dialect in ('mysql', 'mariadb')
    return sa.union_all(rows, *[
        _literal_row(i, cast_times) for i in builtin]).subquery('catalog')


def _sort_column(catalog, key):
    column = catalog.c[key]
    if key == 'size':
        return sa.func.coalesce(column, -1)
    if key == 'updated_at':
        return sa.func.coalesce(column, catalog.c.created_at)
    if key in ('name', 'container_format', 'disk_format'):
        return sa.func.coalesce(column, '')
    return column


def _sort_value(image, key):
    value = image[key]
    if value is not None:
        return value
    return {'size': -1, 'updated_at': image['created_at']}.get(key, '')


def _after(catalog, sort, marker):
    """The rows after ``marker`` (an image dict) in the order ``sort``:
    greater on the first key that differs (smaller where descending)."""
    alternatives = []
    for index, (key, direction) in enumerate(sort):
        column = _sort_column(catalog, key)
        value = _sort_value(marker, key)
        step = column < value if direction == 'desc' else column > value
        alternatives.append(sa.and_(step, *[
            _sort_column(catalog, k) == _sort_value(marker, k)
            for k, _ in sort[:index]]))
    return sa.or_(*alternatives)


def get_all(ctx, builtin=(), conditions=(), properties=None, tags=(),
            visibility=None, marker=None, limit=None,
            sort=(('created_at', 'desc'),)):
    """A page of the images ``ctx`` may see, as Glance lists them.

    ``builtin``: the built-in images (dicts), listed as if they were
    rows. ``conditions``: ``(field, op, value)`` with ``op`` one of
    ``eq``, ``neq``, ``gt``, ``gte``, ``lt``, ``lte`` and ``in`` (value a
    list), ``value`` of the field's type. ``properties``: custom
    properties the images have, with those values; ``tags``: tags they
    all have. ``visibility``: only those of this visibility (``all``: any);
    without one, a community image is only listed to its owner.
    ``sort``: ``(field, 'asc'|'desc')`` pairs of ``SORT_KEYS``, then
    ``created_at`` and ``id`` so that the order is total. ``marker``: the
    id of the image the previous page ended with (``MarkerNotFound`` if
    ``ctx`` may not see such an image).
    """
    catalog = _catalog(builtin, engines.get_engine(
        _api_db(), writer=False).dialect.name)
    c = catalog.c
    query = sa.select(catalog)
    if not ctx.is_admin:
        seen = [c.visibility.in_(('public', 'community'))]
        if ctx.project_id is not None:
            seen.append(c.owner == ctx.project_id)
        query = query.where(sa.or_(*seen))
    if visibility is not None:
        if visibility != 'all':
            query = query.where(c.visibility == visibility)
    elif ctx.project_id is not None:
        query = query.where(sa.or_(c.visibility != 'community',
                                   c.owner == ctx.project_id))
    else:
        query = query.where(c.visibility != 'community')
    for field, op, value in conditions:
        query = query.where(_OPS[op](c[field], value))
    for key, value in (properties or {}).items():
        query = query.where(c.properties.contains(
            _property_pattern(key, value), autoescape=True))
    for tag in tags:
        query = query.where(c.tags.contains(json.dumps(tag),
                                            autoescape=True))
    sort = list(sort)
    default_direction = sort[0][1] if sort else 'desc'
    for key in ('created_at', 'id'):
        if key not in [k for k, _ in sort]:
            sort.append((key, default_direction))
    with engines.reader(_api_db()) as session:
        if marker is not None:
            found = session.execute(sa.select(catalog).where(
                c.id == marker)).first()
            if found is None or not may_see(ctx, _image(found)):
                raise exception.MarkerNotFound(marker=marker)
            query = query.where(_after(catalog, sort, _image(found)))
        query = query.order_by(*[
            _sort_column(catalog, key).desc() if direction == 'desc'
            else _sort_column(catalog, key).asc()
            for key, direction in sort])
        if limit is not None:
            query = query.limit(limit)
        return [_image(row) for row in session.execute(query)]
