"""The trait catalog (from 1.6): ``GET /placement/traits`` lists the
standard traits (the os-traits library) and the custom ones made;
``PUT /placement/traits/CUSTOM_<NAME>`` makes one (201, or 204 when it
exists), ``DELETE`` removes one no provider has. Written through the
scheduler (scheduler RPC 1.10)."""


from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params
from scheduler_split import provider_model

INVALID_CUSTOM = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')


def _since_16(version):
    if version < (1, 6):
        raise errors.not_found()


@handler.serve(rule='placement:traits:list')
def index(req, ctx, version):
    _since_16(version)
    params.check_names(req, {'name', 'associated'})
    names = prefix = associated = None
    name = req.GET.get('name')
    if name is not None:
        if name.startswith('in:'):
            names = [n.strip() for n in name[3:].split(',') if n.strip()]
        elif name.startswith('startswith:'):
            prefix = name[len('startswith:'):]
        else:
            raise errors.bad_request(
                "Badly formatted name parameter. Expected name query "
                "string parameter in form: ?name=[in|startswith]:[name1,"
                "name2|prefix]. Got: \"%s\"" % name)
    value = req.GET.get('associated')
    if value is not None:
        if value.lower() not in ('true', 'false'):
            raise errors.bad_request(
                'The query parameter "associated" only accepts "true" or '
                '"false"')
        associated = value.lower() == 'true'
    return {'traits': handler.scheduler(req).traits(
        ctx, names=names, prefix=prefix, associated=associated)}


@handler.serve(rule='placement:traits:show')
def show(req, ctx, version, name):
    _since_16(version)
    if not handler.scheduler(req).traits(ctx, names=[name]):
        raise errors.not_found('No such trait(s): %s.' % name)
    return handler.no_content()


@handler.serve(rule='placement:traits:update')
def update(req, ctx, version, name):
    _since_16(version)
    if len(name) > 255 or not provider_model.is_custom(name):
        raise errors.bad_request(INVALID_CUSTOM)
    created = handler.scheduler(req).create_trait(ctx, name)
    response = handler.no_content(201 if created else 204)
    response.location = '%s/placement/traits/%s' % (req.script_name, name)
    return response


@handler.serve(rule='placement:traits:delete')
def delete(req, ctx, version, name):
    _since_16(version)
    handler.scheduler(req).delete_trait(ctx, name)
    return handler.no_content()
