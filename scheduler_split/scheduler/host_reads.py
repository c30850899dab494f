"""Reading host states from the scheduler database: a provider's row,
its inventories, its usage summed by resource class and its consumers,
for a set of providers given as a condition on their table. The host
manager's first load, reloads and reads of single hosts all go through
:func:`read_states`; the admin API's read of every host does too.
"""

import sqlalchemy as sa
from sqlalchemy.sql import util as sql_util

from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import host_state
from scheduler_split.scheduler import traits as traits_mod

_RP = scheduler_models.ResourceProvider.__table__
_INV = scheduler_models.Inventory.__table__
_ALLOC = scheduler_models.Allocation.__table__

_PROVIDER = sa.select(
    _RP.c.id, _RP.c.uuid, _RP.c.host, _RP.c.name, _RP.c.cell_uuid,
    _RP.c.availability_zone, _RP.c.disabled, _RP.c.service_disabled,
    _RP.c.disabled_reason, _RP.c.forced_down, _RP.c.last_report_at,
    _RP.c.host_ip, _RP.c.hypervisor_type, _RP.c.hypervisor_version,
    _RP.c.cpu_arch, _RP.c.cpu_info, _RP.c.failed_builds, _RP.c.num_io_ops)
_INVENTORY = sa.select(
    _INV.c.resource_provider_id, _INV.c.resource_class, _INV.c.total,
    _INV.c.reserved, _INV.c.allocation_ratio)
_USAGE = sa.select(
    _ALLOC.c.resource_provider_id, _ALLOC.c.resource_class,
    sa.func.sum(_ALLOC.c.used)).group_by(_ALLOC.c.resource_provider_id,
                                         _ALLOC.c.resource_class)
# The providers that are hosts: the compute nodes, roots with a host.
# Those made through the Placement API and children are not placed on.
HOSTS = sa.and_(_RP.c.host.is_not(None), _RP.c.parent_provider_id.is_(None))
_CONSUMERS = sa.select(_ALLOC.c.resource_provider_id,
                       _ALLOC.c.consumer_id).distinct()
_CHILDREN = sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name,
                      _RP.c.parent_provider_id,
                      _RP.c.root_provider_id).order_by(_RP.c.id)


def with_roots(providers):
    """``providers`` (a condition on the providers' table), and the
    roots of the children it selects: a change of a child (its usage,
    its inventory, its traits) is read as a change of its compute node's
    tree."""
    child = _RP.alias('changed_child')
    of_child = sql_util.ClauseAdapter(child).traverse(providers)
    return sa.or_(providers, _RP.c.id.in_(
        sa.select(child.c.root_provider_id).where(
            of_child, child.c.root_provider_id.is_not(None))))


def _apply_provider(state, row):
    """Give ``state`` what the provider ``row`` holds."""
    state.set_reported(row.cell_uuid, row.availability_zone,
                       row.hypervisor_type, row.hypervisor_version,
                       row.cpu_arch, row.cpu_info)
    state.reported_disabled = bool(row.disabled)
    state.set_status(row.service_disabled, row.disabled_reason,
                     row.forced_down)
    state.last_report_at = row.last_report_at
    state.host_ip = row.host_ip
    state.failed_builds = row.failed_builds
    state.num_io_ops = row.num_io_ops


def read_states(conn, providers, related, page=None):
    """``({uuid: HostState}, the highest provider id read)``: the
    providers ``providers`` selects (a condition on the providers'
    table) with their inventories, usage and consumers, read on
    ``conn``; ``related`` is the same set as a condition on a
    ``resource_provider_id`` column. With ``page``, only the first
    ``page`` of them in id order: ``related`` is then a function of the
    last id read that gives that condition."""
    query = _PROVIDER.where(providers, HOSTS)
    if page is not None:
        query = query.order_by(_RP.c.id).limit(page)
    by_id = {}
    for row in conn.execute(query):
        state = host_state.HostState(row.uuid, row.host, row.name, None)
        _apply_provider(state, row)
        by_id[row.id] = state
    newest = max(by_id, default=0)
    if not by_id:
        return {}, newest
    if page is not None:
        related = related(newest)
    inventory = {}
    for rp_id, rc, total, reserved, ratio in conn.execute(
            _INVENTORY.where(related(_INV.c.resource_provider_id))):
        inventory.setdefault(rp_id, {})[rc] = (total, reserved, ratio)
    for rp_id, values in inventory.items():
        state = by_id.get(rp_id)
        if state is not None:
            state.inventory = values
    usage = {}
    for rp_id, rc, used in conn.execute(
            _USAGE.where(related(_ALLOC.c.resource_provider_id))):
        usage.setdefault(rp_id, {})[rc] = int(used)
    for rp_id, used in usage.items():
        state = by_id.get(rp_id)
        if state is not None:
            state.set_usage(used)
    for rp_id, traits in traits_mod.of_providers(conn, related).items():
        state = by_id.get(rp_id)
        if state is not None:
            state.set_traits(traits, [name for name, reported
                                      in traits.items() if reported])
    for rp_id, consumer in conn.execute(
            _CONSUMERS.where(related(_ALLOC.c.resource_provider_id))):
        state = by_id.get(rp_id)
        if state is not None:
            state.add_instance(consumer)
    _read_children(conn, by_id, related)
    return {state.uuid: state for state in by_id.values()}, newest


def _read_children(conn, by_id, related):
    """Give the hosts of ``by_id`` the providers below them, each with
    its inventory, usage and traits."""
    children, uuids = {}, {}
    for row in conn.execute(_CHILDREN.where(
            related(_RP.c.root_provider_id))):
        host = by_id.get(row.root_provider_id)
        if host is None:
            continue
        child = host_state.ChildState(row.uuid, row.name, None)
        children[row.id] = (host, child, row.parent_provider_id)
        uuids[row.id] = row.uuid
    if not children:
        return
    for rp_id, host in by_id.items():
        uuids[rp_id] = host.uuid
    ids = sa.select(_RP.c.id).where(related(_RP.c.root_provider_id))

    def of_children(column):
        return column.in_(ids)

    inventory = {}
    for rp_id, rc, total, reserved, ratio in conn.execute(
            _INVENTORY.where(of_children(_INV.c.resource_provider_id))):
        inventory.setdefault(rp_id, {})[rc] = (total, reserved, ratio)
    usage = {}
    for rp_id, rc, used in conn.execute(
            _USAGE.where(of_children(_ALLOC.c.resource_provider_id))):
        usage.setdefault(rp_id, {})[rc] = int(used)
    traits = traits_mod.of_providers(conn, of_children)
    trees = {}
    for rp_id, (host, child, parent_id) in children.items():
        child.parent_uuid = uuids.get(parent_id)
        child.inventory = inventory.get(rp_id, {})
        child.set_usage(usage.get(rp_id))
        child.set_traits(traits.get(rp_id, ()))
        trees.setdefault(host.uuid, (host, []))[1].append(child)
    for host, tree in trees.values():
        host.children = tuple(tree)
    for rp_id, consumer in conn.execute(
            _CONSUMERS.where(of_children(_ALLOC.c.resource_provider_id))):
        host = children[rp_id][0]
        host.add_instance(consumer)


def those(providers):
    """``related`` for :func:`read_states`: the providers a condition
    selects, as a condition on a ``resource_provider_id`` column."""
    ids = sa.select(_RP.c.id).where(providers)
    return lambda column: column.in_(ids)


def page_after(after):
    """``related`` for a page of :func:`read_states` after the id
    ``after``."""
    return lambda last: (lambda column: sa.and_(column > after,
                                                column <= last))
