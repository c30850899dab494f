"""``/limits``, ``/os-quota-sets`` and ``/os-quota-class-sets``, in
Nova's shapes; the counting and the limits are ``scheduler_split.quota``.
"""

from scheduler_split.api import schemas
from scheduler_split.objects import quotas as quotas_obj
from scheduler_split import policy
from scheduler_split import quota

_LIMIT = {'type': ['integer', 'string'], 'pattern': '^-?[0-9]+$',
          'minimum': -1, 'maximum': schemas.MAX_INT}
_FORCE = {'type': ['boolean', 'string'],
          'enum': [True, False, 'true', 'false', 'True', 'False']}


def _shown(version):
    """The resources a quota set shows at ``version``."""
    shown = [r for r in quota.RESOURCES
             if version < (2, 57) or r not in quota.INJECTED]
    if version < (2, 36):
        shown += sorted(quota.NETWORK_DEFAULTS)
    return shown


def _set_schema(version, with_force):
    properties = {r: _LIMIT for r in _shown(version)}
    if with_force:
        properties['force'] = _FORCE
    return {'type': 'object',
            'properties': {'quota_set' if with_force else 'quota_class_set': {
                'type': 'object', 'properties': properties,
                'additionalProperties': False}},
            'required': ['quota_set' if with_force else 'quota_class_set'],
            'additionalProperties': False}


def _values(limits, version):
    return {r: limits.get(r, quota.NETWORK_DEFAULTS.get(r))
            for r in _shown(version)}


def _target(ctx, project_id):
    return {'project_id': project_id}


# --- /limits ----------------------------------------------------------------

def limits(req, ctx, version):
    project_id = ctx.project_id
    if req.GET.get('tenant_id') and req.GET['tenant_id'] != project_id:
        policy.authorize(ctx, 'os_compute_api:limits:other_project',
                         {'project_id': req.GET['tenant_id']})
        project_id = req.GET['tenant_id']
    policy.authorize(ctx, 'os_compute_api:limits', {'project_id': project_id})
    allowed = quota.limits(project_id)
    used = quota.usage(project_id)
    absolute = {
        'maxTotalInstances': allowed['instances'],
        'maxTotalCores': allowed['cores'],
        'maxTotalRAMSize': allowed['ram'],
        'maxServerMeta': allowed['metadata_items'],
        'maxTotalKeypairs': allowed['key_pairs'],
        'maxServerGroups': allowed['server_groups'],
        'maxServerGroupMembers': allowed['server_group_members'],
        'totalInstancesUsed': used['instances'],
        'totalCoresUsed': used['cores'],
        'totalRAMUsed': used['ram'],
        'totalServerGroupsUsed': used['server_groups'],
    }
    if version < (2, 39):
        absolute['maxImageMeta'] = allowed['metadata_items']
    if version < (2, 57):
        absolute['maxPersonality'] = allowed['injected_files']
        absolute['maxPersonalitySize'] = allowed[
            'injected_file_content_bytes']
    if version < (2, 36):
        absolute.update({
            'maxSecurityGroups': allowed['security_groups'],
            'maxSecurityGroupRules': allowed['security_group_rules'],
            'maxTotalFloatingIps': allowed['floating_ips'],
            'totalSecurityGroupsUsed': 0, 'totalFloatingIpsUsed': 0})
    return {'limits': {'rate': [], 'absolute': absolute}}


# --- /os-quota-sets ---------------------------------------------------------

def show(req, ctx, version, project_id):
    policy.authorize(ctx, 'os_compute_api:os-quota-sets:show',
                     _target(ctx, project_id))
    body = _values(quota.limits(project_id), version)
    body['id'] = project_id
    return {'quota_set': body}


def detail(req, ctx, version, project_id):
    policy.authorize(ctx, 'os_compute_api:os-quota-sets:detail',
                     _target(ctx, project_id))
    allowed = _values(quota.limits(project_id), version)
    used = quota.usage(project_id, user_id=ctx.user_id)
    body = {r: {'limit': limit, 'in_use': used.get(r, 0), 'reserved': 0}
            for r, limit in allowed.items()}
    body['id'] = project_id
    return {'quota_set': body}


def defaults(req, ctx, version, project_id):
    policy.authorize(ctx, 'os_compute_api:os-quota-sets:defaults',
                     _target(ctx, project_id))
    body = _values(quota.defaults(), version)
    body['id'] = project_id
    return {'quota_set': body}


def _as_bool(value):
    return value in (True, 'true', 'True')


def update(req, ctx, version, project_id):
    policy.authorize(ctx, 'os_compute_api:os-quota-sets:update',
                     _target(ctx, project_id))
    body = req.json_body_or_error()
    schemas.validate(body, _set_schema(version, True))
    values = dict(body['quota_set'])
    force = _as_bool(values.pop('force', False))
    current = quotas_obj.update_project_limits(
        ctx, project_id, {r: int(raw) for r, raw in values.items()},
        force=force)
    return {'quota_set': _values(current, version)}


def delete(req, ctx, version, project_id):
    policy.authorize(ctx, 'os_compute_api:os-quota-sets:delete',
                     _target(ctx, project_id))
    quotas_obj.destroy_project_limits(ctx, project_id)
    return 202, None


# --- /os-quota-class-sets ---------------------------------------------------

def show_class(req, ctx, version, class_name):
    policy.authorize(ctx, 'os_compute_api:os-quota-class-sets:show',
                     {'quota_class': class_name})
    body = _values(quota.class_limits(class_name), version)
    body['id'] = class_name
    return {'quota_class_set': body}


def update_class(req, ctx, version, class_name):
    policy.authorize(ctx, 'os_compute_api:os-quota-class-sets:update',
                     {'quota_class': class_name})
    body = req.json_body_or_error()
    schemas.validate(body, _set_schema(version, False))
    quotas_obj.update_class_limits(
        ctx, class_name,
        {r: int(raw) for r, raw in body['quota_class_set'].items()})
    return {'quota_class_set': _values(quota.class_limits(class_name),
                                       version)}
