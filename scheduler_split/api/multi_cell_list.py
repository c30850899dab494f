"""Lists of servers across cells, as Nova's instance lists are made.

No cell's servers are loaded whole: each cell's database filters and
sorts its servers and answers those after the page's marker, at most a
page of them (see ``scheduler_split.objects.instance_list``), and the
cells' answers, each in the list's order, are merged here as they come (a
heap merge) until the page is full. The marker is found in whichever cell
holds it; its sort key values are the keyset every cell starts after.
What a cell's database cannot decide (the filters Python evaluates, and
whether the cell's row is the server at all) thins a cell's answer, and
the cell is then asked for more after the last row it answered.
"""

import heapq
import logging

from scheduler_split import context as ss_context
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import instance_list

LOG = logging.getLogger(__name__)


class _Position:
    """An instance's place in a list's order: None first ascending and
    last descending, as each cell's database orders it."""

    __slots__ = ('values', 'descending')

    def __init__(self, values, descending):
        self.values = values
        self.descending = descending

    def __lt__(self, other):
        for mine, theirs, desc in zip(self.values, other.values,
                                      self.descending):
            if mine == theirs:
                continue
            if mine is None:
                return not desc
            if theirs is None:
                return desc
            return mine > theirs if desc else mine < theirs
        return False


class SortOrder:
    """Sort keys (names of ``instance_list.SORT_KEYS``) and their
    directions (``asc``/``desc``), then ``tie_breakers`` for the keys not
    named already, which make the order total."""

    def __init__(self, keys, dirs, tie_breakers=()):
        keys, dirs = list(keys), list(dirs)
        for key, direction in tie_breakers:
            if key not in keys:
                keys.append(key)
                dirs.append(direction)
        self.keys = keys
        self.dirs = dirs
        self.descending = [d == 'desc' for d in dirs]

    def values(self, instance):
        return [instance.get(key) for key in self.keys]

    def position(self, instance):
        return _Position(self.values(instance), self.descending)


def _cell_share(fetch, keep, order, batch, after):
    """One cell's instances in ``order`` after the sort key values
    ``after``: ``fetch(size, after)`` reads the next ``size`` from its
    database, ``keep(found)`` says which of them are listed."""
    while True:
        found = fetch(batch, after)
        yield from keep(found)
        if len(found) < batch:
            return
        after = order.values(found[-1])


def merge(shares, order, limit):
    """The first ``limit`` instances of ``shares`` (each in ``order``) in
    ``order``, each once, and whether more follow."""
    merged = heapq.merge(*shares, key=order.position)
    seen = set()
    page = []
    for instance in merged:
        if instance.uuid in seen:
            continue
        seen.add(instance.uuid)
        page.append(instance)
        if len(page) > limit:
            break
    return page[:limit], len(page) > limit


def _servers_of_cell(ctx, cell, query, order, batch, after, down):
    cctx = ss_context.target_cell(ctx, cell)

    def fetch(size, after):
        try:
            return instance_list.get_sorted(cctx, query.filters, order.keys,
                                            order.dirs, size, after)
        except outage.DATABASE_UNAVAILABLE as exc:
            if down is None:
                raise
            # The list goes on with the other cells: one WARNING an
            # outage, not one a request.
            outage.report(LOG, exc, 'Cell %s cannot be reached (%s); its '
                          'servers are listed without their details or '
                          'not at all', cell.name, outage.describe(exc))
            down.append(cell)
            return []

    def keep(found):
        # A server is listed from where its instance mapping says it is:
        # a row an interrupted placement left in another cell is not it.
        mapped = objects.InstanceMapping.get_cell_ids(
            ctx, [i.uuid for i in found])
        return [i for i in found
                if mapped.get(i.uuid) == cell.id and query.matches(i)]

    return _cell_share(fetch, keep, order, batch, after)


def _build_requests(ctx, query, order, marker):
    """The servers no cell holds yet (few: they are being scheduled),
    filtered and sorted here, after ``marker``."""
    found = sorted((br.instance for br in objects.BuildRequest.get_all(
        ctx, project_id=query.filters.project_id)
        if query.matches(br.instance)), key=order.position)
    if marker is None:
        return found
    start = order.position(marker)
    return [i for i in found if start < order.position(i)]


def get_servers(ctx, query, order, limit, marker=None, down=None):
    """A page of the servers ``query`` admits (its ``filters`` for each
    cell's database, its ``matches`` for each server) in ``order``, after
    the server ``marker`` (an Instance the query admits), at most
    ``limit`` of them: ``(servers, whether more follow)``.

    Each cell is read at most ``limit + 1`` at a time: a page costs every
    cell one query of at most that many rows unless the filters only
    Python evaluates leave out some of them.

    A cell whose database cannot be reached fails the list, unless
    ``down`` is a list: then the page is made of the other cells and the
    cell is appended to ``down``.
    """
    after = order.values(marker) if marker is not None else None
    shares = [_servers_of_cell(ctx, cell, query, order, limit + 1, after,
                               down)
              for cell in objects.CellMapping.get_all(ctx)]
    shares.append(_build_requests(ctx, query, order, marker))
    return merge(shares, order, limit)


def find(ctx, uuid, read_deleted=False):
    """The instance ``uuid`` from whichever cell's database holds a row of
    it, or None."""
    for cell in objects.CellMapping.get_all(ctx):
        try:
            return objects.Instance.get_by_uuid(
                ss_context.target_cell(ctx, cell), uuid,
                read_deleted=read_deleted)
        except exception.InstanceNotFound:
            continue
    return None


def get_instances(ctx, filters, order, limit, marker=None):
    """A page of the instances of every cell that ``filters`` admit, in
    ``order``, after ``marker`` (an Instance): ``(instances, whether more
    follow)``. No instance mapping is consulted: every cell's rows are
    listed, as a usage report counts them."""
    after = order.values(marker) if marker is not None else None
    shares = []
    for cell in objects.CellMapping.get_all(ctx):
        cctx = ss_context.target_cell(ctx, cell)
        shares.append(_cell_share(
            lambda size, after, cctx=cctx: instance_list.get_sorted(
                cctx, filters, order.keys, order.dirs, size, after),
            list, order, limit + 1, after))
    return merge(shares, order, limit)
