"""``GET /placement/resource_classes`` (from 1.2): the resource classes
the scheduler accounts (``VCPU``, ``MEMORY_MB``, ``DISK_GB``); there are
no custom ones."""

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import resource_providers
from scheduler_split.scheduler import client as scheduler_client


def _view(req, name):
    return {'name': name, 'links': [{
        'rel': 'self', 'href': '%s%s/resource_classes/%s' % (
            req.script_name, resource_providers.PREFIX, name)}]}


@handler.serve()
def index(req, ctx, version):
    if version < (1, 2):
        raise errors.not_found()
    return {'resource_classes': [
        _view(req, name) for name in scheduler_client.RESOURCE_CLASSES]}


@handler.serve()
def show(req, ctx, version, name):
    if version < (1, 2):
        raise errors.not_found()
    if name not in scheduler_client.RESOURCE_CLASSES:
        raise errors.not_found('No such resource class %s.' % name)
    return _view(req, name)
