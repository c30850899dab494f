"""What ``GET /v2.1/servers`` and ``/servers/detail`` list.

The query parameters become filters each cell's database applies and one
predicate on a server, which decides: a cell's database may admit more
than the predicate does (a case-insensitive collation, say), never less.
The name filter (a regular expression, run here under a time budget) and
the flavor (serialized in the instance row) are the predicate's alone.
Build requests, which no cell holds yet, only meet the predicate.
"""

import time

import regex

from scheduler_split.api import errors
from scheduler_split.api import microversion
from scheduler_split.api import multi_cell_list
from scheduler_split.api import paging
from scheduler_split.api import schemas
from scheduler_split.api import server_views
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import base as obj_base
from scheduler_split.objects import instance_list
from scheduler_split import policy

CONF = conf.CONF

# Longer than any server name: a pattern that long is no name filter.
_MAX_NAME_PATTERN = 255
_COUNTED_REPEAT = regex.compile(r'\{\s*([0-9]*)\s*,?\s*([0-9]*)\s*\}')
_MAX_REPEAT_PRODUCT = 10000

# Only admins sort by where servers run.
_ADMIN_SORT_KEYS = ('host', 'node')
# After the keys asked for, servers are listed newest first.
_TIE_BREAKERS = (('created_at', 'desc'), ('uuid', 'desc'))

_TAG_PARAMETERS = ('tags', 'tags-any', 'not-tags', 'not-tags-any')


def last_part(ref):
    """The id of an id or of a link to it."""
    return str(ref).rstrip('/').rsplit('/', 1)[-1]


def _name_filter(req):
    """The ``name`` query parameter as a predicate on server names.

    It is a regular expression, as in Nova, run here in the API process:
    the ``regex`` engine's timeout bounds the time all the names of one
    listing may take together, so that a pattern with catastrophic
    backtracking gets a 400 instead of stalling the API.
    """
    pattern = req.GET.get('name')
    if not pattern:
        return None
    if len(pattern) > _MAX_NAME_PATTERN:
        raise errors.bad_request('Invalid name filter: longer than %d '
                                 'characters' % _MAX_NAME_PATTERN)
    # The engine unrolls counted repetitions as it compiles, which no
    # timeout bounds: (?:(?:a{255}){255}){255} takes seconds to compile.
    # Their product is what it unrolls at most.
    product = 1
    for bounds in _COUNTED_REPEAT.findall(pattern):
        product *= max([int(b) for b in bounds if b] + [1])
    if product > _MAX_REPEAT_PRODUCT:
        raise errors.bad_request(
            'Invalid name filter: %s repeats too much; use a simpler '
            'regular expression' % pattern)
    budget = CONF.api.name_filter_timeout_ms / 1000.0
    try:
        compiled = regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError):
        raise errors.bad_request('Invalid name filter: %s is not a valid '
                                 'regular expression' % pattern)
    # What the matching itself took, summed over the names of this
    # listing; the rest of the request (reading the cells, say) does not
    # count against the budget.
    spent = [0.0]

    def matches(name):
        remaining = budget - spent[0]
        started = time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return compiled.search(name, timeout=remaining,
                                   concurrent=True) is not None
        except TimeoutError:
            raise errors.bad_request(
                'Invalid name filter: %s takes too long to match; use a '
                'simpler regular expression' % pattern)
        finally:
            spent[0] += time.monotonic() - started
    return matches


def _wanted_tags(req, version):
    """The tag parameters (2.26, comma-separated) as sets, by name."""
    if version < (2, 26):
        return {}
    wanted = {}
    for name in _TAG_PARAMETERS:
        raw = req.GET.get(name)
        if raw is not None:
            wanted[name] = {t.strip() for t in raw.split(',') if t.strip()}
    return wanted


def _tag_filter(wanted):
    """The tag parameters as a predicate on a server, or None."""
    if not wanted:
        return None

    def matches(instance):
        have = set(instance.get('tags') or [])
        if 'tags' in wanted and not wanted['tags'] <= have:
            return False
        if 'tags-any' in wanted and not wanted['tags-any'] & have:
            return False
        if ('not-tags' in wanted and wanted['not-tags'] and
                wanted['not-tags'] <= have):
            return False
        if 'not-tags-any' in wanted and wanted['not-tags-any'] & have:
            return False
        return True
    return matches


class ServerQuery:
    """A list's ``filters`` for each cell's database and the predicate
    (``matches``) every listed server meets."""

    def __init__(self, filters, predicates):
        self.filters = filters
        # A parameter given empty asks for nothing: its predicate is that
        # falsy value.
        self._predicates = [p for p in predicates if p]

    def matches(self, instance):
        return all(predicate(instance) for predicate in self._predicates)


def _query(req, ctx, version, all_tenants, admin, name_filter):
    """The list's ``ServerQuery``: the filters the query parameters ask
    for, as each cell's database applies them and as a predicate."""
    get = req.GET.get
    project_id = None if all_tenants else ctx.project_id
    # As in Nova, an admin narrows by host and node, and with all_tenants
    # by project; for anyone else these are ignored.
    narrowed = {}
    if admin:
        narrowed = {p: get(p) for p in ('host', 'node') if get(p)}
        if all_tenants:
            project_id = get('project_id') or get('tenant_id') or None
    status = get('status')
    # Like Nova, ``image`` and ``flavor`` take an id or a link to one.
    image = get('image')
    image_id = last_part(image) if image else None
    flavor = get('flavor')
    flavor_id = last_part(flavor) if flavor else None
    reservation_id = get('reservation_id')
    since = schemas.time_query(req, 'changes-since')
    tags = _wanted_tags(req, version)
    filters = instance_list.Filters(
        project_id=project_id, changed_since=since, image_ref=image_id,
        reservation_id=reservation_id or None,
        host=narrowed.get('host'), node=narrowed.get('node'),
        status=((status.upper(), server_views.STATUS_RULES) if status
                else None),
        tags=tags.get('tags'), tags_any=tags.get('tags-any'),
        not_tags=tags.get('not-tags'),
        not_tags_any=tags.get('not-tags-any'))
    return ServerQuery(filters, [
        project_id and (lambda i: i.project_id == project_id),
        status and (lambda i: server_views.status_of(i) == status.upper()),
        image and (lambda i: i.image_ref == image_id),
        flavor and (lambda i: i.flavor.flavorid == flavor_id),
        reservation_id and (
            lambda i: i.get('reservation_id') == reservation_id),
        *[lambda i, p=p, v=v: (i.get(p) or '') == v
          for p, v in narrowed.items()],
        name_filter and (
            lambda i: name_filter(i.display_name or '')),
        _tag_filter(tags),
        since and (lambda i: obj_base.naive_utc(
            i.updated_at or i.created_at) >= since)])


def _sort(req, admin):
    keys = req.GET.getall('sort_key')
    dirs = req.GET.getall('sort_dir')
    for key in keys:
        if key not in instance_list.SORT_KEYS:
            raise errors.bad_request('Invalid sort_key %s' % key)
        if key in _ADMIN_SORT_KEYS and not admin:
            raise errors.HTTPError(403, 'Only administrators can sort '
                                        'servers by %s' % key)
    for direction in dirs:
        if direction not in ('asc', 'desc'):
            raise errors.bad_request('Invalid sort_dir %s' % direction)
    if dirs and len(dirs) != len(keys):
        raise errors.bad_request('The number of sort_keys and sort_dirs '
                                 'must be the same')
    return multi_cell_list.SortOrder(keys, dirs or ['desc'] * len(keys),
                                     _TIE_BREAKERS)


def _marker(req, ctx, query):
    """The server the page starts after, which the list must hold."""
    uuid = req.GET.get('marker')
    if not uuid:
        return None
    try:
        instance = req.compute_api.locate(ctx, uuid)[0]
    except exception.InstanceNotFound:
        instance = None
    if instance is None or not query.matches(instance):
        raise exception.MarkerNotFound(marker=uuid)
    return instance


# The only parameters a list may have for it to show the servers of a
# cell that cannot be reached (2.69): whose they are is known without
# the cell, nothing else is.
_PLAIN_PARAMETERS = frozenset(('all_tenants', 'project_id', 'tenant_id',
                               'deleted'))


def _plain(req):
    """Whether the list asks only for what the API database knows of a
    server: no filter but its project, no sort, no limit, no marker."""
    return set(req.GET) <= _PLAIN_PARAMETERS and req.GET.get(
        'deleted', 'false').lower() in ('false', '0', 'no', 'f', 'off')


def listed(req, ctx, rule, all_tenants_rule):
    """The servers of this page of the list, whether more follow, and
    what the API database says of the servers of cells that cannot be
    reached.

    Those cells are left out of the list. From 2.69, a list with no
    filter but the project (``openstack server list``, with
    ``--all-projects`` too) also holds their servers, newest first after
    the others, each as its instance mapping has it (rows of
    instance_uuid, project_id, user_id and created_at), for the view to
    show as UNKNOWN.
    """
    policy.authorize(ctx, rule)
    all_tenants = req.GET.get('all_tenants', 'false').lower() not in (
        'false', '0', 'no', 'f', 'off')
    if 'all_tenants' in req.GET and req.GET['all_tenants'] == '':
        all_tenants = True
    if all_tenants:
        policy.authorize(ctx, all_tenants_rule)
    name_filter = _name_filter(req)
    admin = ctx.is_admin
    order = _sort(req, admin)
    version = microversion.parse(req)
    query = _query(req, ctx, version, all_tenants, admin, name_filter)
    marker = _marker(req, ctx, query)
    limit = schemas.non_negative_query(req, 'limit')
    limit = min(CONF.api.max_limit,
                CONF.api.max_limit if limit is None else limit)
    down = []
    servers, full = multi_cell_list.get_servers(ctx, query, order, limit,
                                                marker, down=down)
    unknown = []
    if down and version >= (2, 69) and _plain(req):
        unknown = objects.InstanceMapping.get_in_cells(
            ctx, [cell.id for cell in down], query.filters.project_id)
    return servers, full, unknown


def page_links(req, servers, full):
    """``servers_links`` with a next link when more servers follow."""
    if not full or not servers:
        return {}
    return {'servers_links': paging.next_links(
        req, servers[-1].uuid, default_limit=CONF.api.max_limit)}
