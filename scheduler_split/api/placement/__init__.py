"""The Placement API, served under ``/placement`` by the API
process: what the scheduler's database holds, in Placement's shapes and
microversions (1.0 to 1.39, :mod:`microversion`), so that an operator
debugs placement with the unmodified ``osc-placement`` plugin
(``openstack resource provider list``, ``allocation candidate list``,
...). Every compute node is a resource provider; a host aggregate is a
provider aggregate of the same uuid.

Everything is read through the scheduler's client library (scheduler RPC
1.9), the API's only way to the scheduler's data; a consumer's project
and user through the API's own records (:mod:`consumers`). The version
document answers without a token; every other operation is guarded by
the rule Placement names it by (``placement:resource_providers:list``,
...; see ``scheduler_split/policies/placement.py``), for admins and
services by default. The trait catalog, a provider's traits and the
custom resource classes are written through the scheduler too
(scheduler RPC 1.10), and so are resource providers, their inventories
and aggregates, the allocations of consumers that are not the
scheduler's servers, and the reshaper's moves (scheduler RPC 1.11).
Errors are in Placement's shape (:mod:`errors`).

``ROUTES`` are rows of the API's one route table (``api/wsgi.py``).
"""

from scheduler_split.api.placement import allocation_candidates
from scheduler_split.api.placement import allocations
from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import inventories
from scheduler_split.api.placement import microversion
from scheduler_split.api.placement import reshaper
from scheduler_split.api.placement import resource_classes
from scheduler_split.api.placement import resource_providers
from scheduler_split.api.placement import root
from scheduler_split.api.placement import traits
from scheduler_split.api.placement import usages


def _read_only(get=None):
    """A path's row: ``get`` answers GET; every other method (and GET on
    a path without ``get``, whose only methods write) is refused in
    Placement's shape."""
    refuse = handler.refusal(allow=('GET',) if get else ())
    row = {method: refuse for method in handler.REFUSED}
    row['GET'] = get or refuse
    return row


def _row(get=None, **writes):
    """A path's row: ``get`` answers GET, ``writes`` (method: handler)
    the writes the API serves; any other method is refused in
    Placement's shape, naming those the path allows."""
    allow = (('GET',) if get else ()) + tuple(sorted(writes))
    refuse = handler.refusal(allow=allow)
    row = {method: refuse for method in handler.REFUSED}
    row['GET'] = get or refuse
    row.update(writes)
    return row


_PROVIDER = '/placement/resource_providers/{uuid}'

ROUTES = {
    '/placement': _read_only(root.home),
    '/placement/': _read_only(root.home),
    '/placement/resource_providers': _row(
        resource_providers.index, POST=resource_providers.create),
    _PROVIDER: _row(resource_providers.show, PUT=resource_providers.update,
                    DELETE=resource_providers.delete),
    _PROVIDER + '/inventories': _row(
        resource_providers.inventories, PUT=inventories.replace,
        POST=inventories.create, DELETE=inventories.delete_all),
    _PROVIDER + '/inventories/{resource_class}': _row(
        resource_providers.inventory, PUT=inventories.update,
        DELETE=inventories.delete),
    _PROVIDER + '/usages': _read_only(resource_providers.usages),
    _PROVIDER + '/aggregates': _row(
        resource_providers.aggregates,
        PUT=resource_providers.update_aggregates),
    _PROVIDER + '/traits': _row(resource_providers.traits,
                                PUT=resource_providers.update_traits,
                                DELETE=resource_providers.delete_traits),
    _PROVIDER + '/allocations': _read_only(resource_providers.allocations),
    '/placement/allocations': _row(POST=allocations.create),
    '/placement/allocations/{consumer_uuid}': _row(
        allocations.show, PUT=allocations.update,
        DELETE=allocations.delete),
    '/placement/usages': _read_only(usages.index),
    '/placement/resource_classes': _row(
        resource_classes.index, POST=resource_classes.create),
    '/placement/resource_classes/{name}': _row(
        resource_classes.show, PUT=resource_classes.update,
        DELETE=resource_classes.delete),
    '/placement/traits': _read_only(traits.index),
    '/placement/traits/{name}': _row(traits.show, PUT=traits.update,
                                     DELETE=traits.delete),
    '/placement/allocation_candidates': _read_only(
        allocation_candidates.index),
    '/placement/reshaper': _row(POST=reshaper.reshape),
}


def unmatched(req):
    """What a path under ``/placement`` that names nothing answers,
    whatever the request accepts: a 404 in Placement's shape."""
    try:
        version = microversion.parse(req)
    except errors.PlacementError:
        version = microversion.MIN
    response = errors.fault(404, 'The resource could not be found.',
                            req.environ.get('openstack.request_id'),
                            version)
    response.headers['OpenStack-API-Version'] = (
        'placement ' + microversion.to_str(version))
    return response


# Version discovery answers without a token.
PUBLIC = {'/placement', '/placement/'}
