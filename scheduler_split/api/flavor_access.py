"""``/flavors/{flavor_id}/os-flavor-access`` and the ``addTenantAccess``
/ ``removeTenantAccess`` actions: which projects may see and boot a
private flavor."""

from scheduler_split.api import errors
from scheduler_split.api import flavors
from scheduler_split.api import schemas
from scheduler_split import policy

_TENANT = {'type': 'object',
           'properties': {'tenant': {'type': 'string', 'minLength': 1,
                                     'maxLength': 255,
                                     'pattern': r'^\S+$'}},
           'required': ['tenant'], 'additionalProperties': False}
ACTIONS = {'addTenantAccess': _TENANT, 'removeTenantAccess': _TENANT}
ACTION_RULES = {
    'addTenantAccess': 'os_compute_api:os-flavor-access:add_tenant_access',
    'removeTenantAccess':
        'os_compute_api:os-flavor-access:remove_tenant_access',
}


def _access_list(ctx, flavor):
    return {'flavor_access': [
        {'flavor_id': flavor.flavorid, 'tenant_id': project_id}
        for project_id in flavor.projects(ctx)]}


def index(req, ctx, version, flavor_id):
    policy.authorize(ctx, 'os_compute_api:os-flavor-access', target={})
    flavor = flavors.get(ctx, flavor_id)
    if flavor.is_public:
        raise errors.not_found('Access list not available for public '
                               'flavors.')
    return _access_list(ctx, flavor)


def action(req, ctx, version, flavor_id):
    body = req.json_body_or_error()
    if not isinstance(body, dict) or len(body) != 1 or \
            next(iter(body)) not in ACTIONS:
        raise errors.bad_request(
            'Invalid action: the body must hold exactly one of %s'
            % ', '.join(sorted(ACTIONS)))
    name, args = next(iter(body.items()))
    policy.authorize(ctx, ACTION_RULES[name], target={})
    schemas.validate(args, ACTIONS[name])
    flavor = flavors.get(ctx, flavor_id)
    if name == 'addTenantAccess':
        if flavor.is_public:
            raise errors.HTTPError(409, 'Can not add access to a public '
                                        'flavor.')
        flavor.add_access(ctx, args['tenant'])
    else:
        flavor.remove_access(ctx, args['tenant'])
    return _access_list(ctx, flavor)
