"""The resource classes (from 1.2): ``GET /placement/resource_classes``
lists the standard ones (the os-resource-classes library) and the custom
ones; ``POST`` (1.2) and ``PUT /resource_classes/CUSTOM_<NAME>`` (1.7)
make one (before 1.7 ``PUT`` renames one), ``DELETE`` removes one no
inventory or allocation uses. Written through the scheduler (scheduler
RPC 1.10 and 1.11)."""


from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import resource_providers
from scheduler_split import exception
from scheduler_split import provider_model

INVALID_CUSTOM = (
    'JSON does not validate: the resource class name must start with the '
    'prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and '
    '"_", at most 255 of them')
_CREATE = {
    'type': 'object',
    'properties': {'name': {'type': 'string', 'maxLength': 255}},
    'required': ['name'],
    'additionalProperties': False,
}


_RENAME = {
    'type': 'object',
    'properties': {'name': {'type': 'string', 'maxLength': 255,
                            'pattern': '^CUSTOM_[A-Z0-9_]+$'}},
    'required': ['name'],
    'additionalProperties': False,
}


def _href(req, name):
    return '%s%s/resource_classes/%s' % (req.script_name,
                                         resource_providers.PREFIX, name)


def _view(req, name):
    return {'name': name, 'links': [{'rel': 'self',
                                     'href': _href(req, name)}]}


def _since_12(version):
    if version < (1, 2):
        raise errors.not_found()


def _custom(name):
    if len(name) > 255 or not provider_model.is_custom(name):
        raise errors.bad_request(INVALID_CUSTOM)


@handler.serve(rule='placement:resource_classes:list')
def index(req, ctx, version):
    _since_12(version)
    return {'resource_classes': [
        _view(req, name)
        for name in handler.scheduler(req).resource_classes(ctx)]}


@handler.serve(rule='placement:resource_classes:show')
def show(req, ctx, version, name):
    _since_12(version)
    if name not in handler.scheduler(req).resource_classes(ctx):
        raise errors.not_found('No such resource class %s.' % name)
    return _view(req, name)


@handler.serve(rule='placement:resource_classes:create')
def create(req, ctx, version):
    _since_12(version)
    name = handler.body(req, _CREATE)['name']
    _custom(name)
    try:
        handler.scheduler(req).create_resource_class(ctx, name,
                                                     exists_ok=False)
    except exception.ResourceClassExists:
        raise errors.coded(409, 'Conflicting resource class already '
                           'exists: %s' % name, 'placement.duplicate_name',
                           version)
    response = handler.no_content(201)
    response.location = _href(req, name)
    return response


@handler.serve(rule='placement:resource_classes:update')
def update(req, ctx, version, name):
    _since_12(version)
    if version < (1, 7):
        # Before 1.7 a PUT renamed a custom class (a flavor that asks
        # for it by its old name then finds no host).
        new_name = handler.body(req, _RENAME)['name']
        try:
            handler.scheduler(req).rename_resource_class(ctx, name,
                                                         new_name)
        except exception.ResourceClassExists:
            raise errors.PlacementError(
                409, 'Resource class already exists: %s' % new_name)
        return _view(req, new_name)
    _custom(name)
    created = handler.scheduler(req).create_resource_class(ctx, name)
    response = handler.no_content(201 if created else 204)
    response.location = _href(req, name)
    return response


@handler.serve(rule='placement:resource_classes:delete')
def delete(req, ctx, version, name):
    _since_12(version)
    handler.scheduler(req).delete_resource_class(ctx, name)
    return handler.no_content()
