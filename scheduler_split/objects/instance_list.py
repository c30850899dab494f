"""One cell's share of a list of servers, filtered, sorted and cut by
that cell's database.

A list across cells asks every cell for the instances after the last one
it has seen (a keyset condition on the sort key values of that instance,
whichever cell holds it), in the list's order, at most a page of them,
and merges the cells' answers (see ``scheduler_split.api.multi_cell_list``).
The order is the one Python gives the same values: None first ascending
and last descending, strings by code point (a binary collation, whatever
the column's), so that the merge and the keyset agree with every cell's
``ORDER BY``.
"""

import dataclasses
import datetime

import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.objects import base
from scheduler_split.objects import instance as instance_obj

# The columns a list may be sorted by.
SORT_KEYS = frozenset((
    'created_at', 'updated_at', 'launched_at', 'terminated_at',
    'display_name', 'display_description', 'uuid', 'vm_state',
    'task_state', 'power_state', 'availability_zone', 'project_id',
    'user_id', 'key_name', 'locked', 'hostname', 'host', 'node'))

# A collation that orders as Python compares strings (by code point),
# by database; SQLite's default (BINARY) already does.
_BINARY_COLLATION = {'postgresql': 'C', 'mysql': 'utf8mb4_bin',
                     'mariadb': 'utf8mb4_bin'}


@dataclasses.dataclass
class Filters:
    """What a list asks of each cell's rows; None leaves a filter out.

    ``status`` is ``(status, rules)``: the rows whose vm and task states
    show as ``status``, ``rules`` being ``(vm_state, task_state, status)``
    in the order they apply, a None state matching any. ``tags``,
    ``tags_any``, ``not_tags`` and ``not_tags_any`` are sets of tags, as
    the API's query parameters of those names mean them. ``ran_between``
    is ``(start, stop)``: servers launched before ``stop`` and not
    terminated by ``start``. Deleted servers are listed only with
    ``read_deleted``.
    """

    project_id: str = None
    changed_since: datetime.datetime = None
    image_ref: str = None
    reservation_id: str = None
    host: str = None
    node: str = None
    status: tuple = None
    tags: set = None
    tags_any: set = None
    not_tags: set = None
    not_tags_any: set = None
    ran_between: tuple = None
    read_deleted: bool = False


def _binary(column, dialect):
    """``column`` compared and ordered by code point, on ``dialect``."""
    collation = _BINARY_COLLATION.get(dialect)
    if collation and isinstance(column.type, sa.String):
        return column.collate(collation)
    return column


def _has_tags(tags, dialect):
    # Exact tags (not MySQL's case-insensitive match), since a server
    # with one of them may be left out (not-tags).
    tag = cell_models.InstanceTag
    return sa.exists().where(tag.resource_id == cell_models.Instance.uuid,
                             _binary(tag.tag, dialect).in_(sorted(tags)))


def _has_every_tag(tags, dialect):
    return sa.and_(*[_has_tags([t], dialect) for t in sorted(tags)])


def _shows_as(status, rules):
    instance = cell_models.Instance
    whens = []
    default = None
    for vm_state, task_state, shown in rules:
        if vm_state is None and task_state is None:
            default = shown
            break
        conditions = [instance.vm_state == vm_state] if vm_state else []
        if task_state is not None:
            conditions.append(instance.task_state == task_state)
        whens.append((sa.and_(*conditions), shown))
    return sa.case(*whens, else_=default) == status


def _conditions(filters, dialect):
    """The WHERE clauses of ``filters``. An equality may admit more rows
    than the API's predicate (a case-insensitive collation), which keeps
    the indexes of its columns usable; none admits fewer."""
    instance = cell_models.Instance
    where = []
    if not filters.read_deleted:
        where.append(instance.deleted.is_(False))
    for name in ('project_id', 'image_ref', 'reservation_id', 'host',
                 'node'):
        value = getattr(filters, name)
        if value is not None:
            where.append(getattr(instance, name) == value)
    if filters.changed_since is not None:
        where.append(sa.func.coalesce(instance.updated_at,
                                      instance.created_at) >=
                     base.naive_utc(filters.changed_since))
    if filters.status is not None:
        where.append(_shows_as(*filters.status))
    if filters.tags:
        where.append(_has_every_tag(filters.tags, dialect))
    if filters.tags_any is not None:
        where.append(_has_tags(filters.tags_any, dialect)
                     if filters.tags_any else sa.false())
    if filters.not_tags:
        where.append(sa.not_(_has_every_tag(filters.not_tags, dialect)))
    if filters.not_tags_any:
        where.append(sa.not_(_has_tags(filters.not_tags_any, dialect)))
    if filters.ran_between is not None:
        start, stop = filters.ran_between
        where += [instance.launched_at.is_not(None),
                  instance.launched_at < stop,
                  sa.or_(instance.terminated_at.is_(None),
                         instance.terminated_at > start)]
    return where


def _order_by(columns, descending):
    order = []
    for column, desc in zip(columns, descending):
        # NULL first ascending, last descending, on every database.
        is_set = sa.case((column.is_(None), 0), else_=1)
        order += [is_set.desc(), column.desc()] if desc else [is_set,
                                                              column]
    return order


def _equal(column, value):
    if value is None:
        return column.is_(None)
    return column == sa.literal(value, column.type)


def _beyond(column, desc, value):
    """The rows that come after ``value`` in this column's order."""
    if value is None:
        return sa.false() if desc else column.is_not(None)
    # A bound value of the column's type: SQLAlchemy compares a boolean
    # column with a literal True or False only for equality.
    value = sa.literal(value, column.type)
    if desc:
        return sa.or_(column < value, column.is_(None))
    return column > value


def _after(columns, descending, values):
    """The keyset condition: the rows that come after the sort key
    ``values`` (one per column)."""
    values = [base.naive_utc(v) if isinstance(v, datetime.datetime) else v
              for v in values]
    return sa.or_(*[
        sa.and_(*[_equal(c, v) for c, v in zip(columns[:i], values[:i])],
                _beyond(columns[i], descending[i], values[i]))
        for i in range(len(columns))])


def get_sorted(ctx, filters, sort_keys, sort_dirs, limit, after=None):
    """The instances of the targeted cell that ``filters`` admit, in the
    order of ``sort_keys`` (names of ``SORT_KEYS``) and ``sort_dirs``
    (``asc``/``desc``), after the sort key values ``after`` (a sequence,
    one per key) if given, at most ``limit``: one query, and one each
    for the faults and tags of what it found."""
    descending = [d == 'desc' for d in sort_dirs]
    with engines.reader(instance_obj.cell_db(ctx)) as session:
        dialect = session.get_bind().dialect.name
        columns = [_binary(getattr(cell_models.Instance, key), dialect)
                   for key in sort_keys]
        query = sa.select(cell_models.Instance).where(
            *_conditions(filters, dialect))
        if after is not None:
            query = query.where(_after(columns, descending, after))
        query = query.order_by(*_order_by(columns, descending)).limit(limit)
        return instance_obj.Instance.from_rows(
            session, list(session.scalars(query)))
