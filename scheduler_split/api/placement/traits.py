"""``GET /placement/traits`` (from 1.6): the trait catalog, which is
empty: no provider here has a trait (a provider's traits are always an
empty list, see :mod:`resource_providers`)."""

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params


@handler.serve()
def index(req, ctx, version):
    if version < (1, 6):
        raise errors.not_found()
    params.check_names(req, {'name', 'associated'})
    return {'traits': []}


@handler.serve()
def show(req, ctx, version, name):
    if version < (1, 6):
        raise errors.not_found()
    raise errors.not_found('No such trait(s): %s.' % name)
