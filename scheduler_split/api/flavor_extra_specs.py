"""``/flavors/{flavor_id}/os-extra_specs``: what a flavor asks of hosts.

The scheduler reads a flavor's extra specs from the request spec of each
boot (``aggregate_instance_extra_specs:*`` steers servers to aggregates);
servers already built keep the specs they were built with.
"""

from scheduler_split.api import errors
from scheduler_split.api import extra_specs
from scheduler_split.api import flavors
from scheduler_split.api import schemas
from scheduler_split import policy

_SPECS = {'type': 'object',
          'patternProperties': {extra_specs.KEY_PATTERN: extra_specs.VALUE},
          'additionalProperties': False}
CREATE = {'type': 'object', 'properties': {'extra_specs': _SPECS},
          'required': ['extra_specs'], 'additionalProperties': False}
UPDATE = dict(_SPECS, minProperties=1)


def index(req, ctx, version, flavor_id):
    policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:index')
    return {'extra_specs': dict(flavors.get(ctx, flavor_id).extra_specs)}


def create(req, ctx, version, flavor_id):
    policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:create', target={})
    body = req.json_body_or_error()
    schemas.validate(body, CREATE)
    specs = extra_specs.validate(body['extra_specs'], version)
    flavors.get(ctx, flavor_id).update_extra_specs(ctx, specs)
    return {'extra_specs': specs}


def show(req, ctx, version, flavor_id, key):
    policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:show')
    specs = flavors.get(ctx, flavor_id).extra_specs
    if key not in specs:
        raise errors.not_found('Flavor %s has no extra specs with key %s.'
                               % (flavor_id, key))
    return {key: specs[key]}


def update(req, ctx, version, flavor_id, key):
    policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:update', target={})
    body = req.json_body_or_error()
    schemas.validate(body, UPDATE)
    if key not in body:
        raise errors.bad_request('Request body and URI mismatch')
    if len(body) > 1:
        raise errors.bad_request('Request body contains too many items')
    specs = extra_specs.validate(body, version)
    flavors.get(ctx, flavor_id).update_extra_specs(ctx, specs)
    return specs


def delete(req, ctx, version, flavor_id, key):
    policy.authorize(
        ctx, 'os_compute_api:os-flavor-extra-specs:delete', target={})
    flavors.get(ctx, flavor_id).delete_extra_spec(ctx, key)
    return 200, None
