"""``/v2.1/os-server-groups``.

A group's policy says where its members may run. ``affinity`` and
``anti-affinity`` are enforced by the scheduler's claims, so concurrent
boots cannot break them; ``soft-affinity`` and ``soft-anti-affinity``
(2.15) only weigh hosts. From 2.64 a group has one ``policy`` string and
``rules`` (``max_server_per_host`` for anti-affinity) instead of a
``policies`` list.
"""


from scheduler_split.api import errors
from scheduler_split.api import schemas
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import policy
from scheduler_split import quota


def render(group, version):
    body = {'id': group.uuid, 'name': group.name,
            'members': list(group.members)}
    if version >= (2, 64):
        body['policy'] = group.policy
        body['rules'] = dict(group.rules)
    else:
        body['policies'] = [group.policy]
        body['metadata'] = {}
    if version >= (2, 13):
        body['project_id'] = group.project_id
        body['user_id'] = group.user_id
    return body


def index(req, ctx, version):
    policy.authorize(ctx, 'os_compute_api:os-server-groups:index')
    # As in Nova, all_projects from a caller the policy does not allow it
    # lists the caller's own groups rather than failing.
    all_projects = 'all_projects' in req.GET and policy.authorize(
        ctx, 'os_compute_api:os-server-groups:index:all_projects',
        fatal=False)
    groups = objects.InstanceGroup.get_all(
        ctx, project_id=None if all_projects else ctx.project_id)
    offset = schemas.non_negative_query(req, 'offset') or 0
    limit = schemas.non_negative_query(req, 'limit')
    groups = groups[offset:]
    if limit is not None:
        groups = groups[:limit]
    return {'server_groups': [render(g, version) for g in groups]}


def get_visible(ctx, group_id):
    """The group if the caller may see it (its project's, or admin): any
    other is not found, as another project's server is. What the caller
    may do with it is the policy's to say."""
    try:
        group = objects.InstanceGroup.get_by_uuid(ctx, group_id)
    except exception.InstanceGroupNotFound:
        group = None
    if group is None or not (ctx.is_admin or
                             group.project_id == ctx.project_id):
        raise exception.InstanceGroupNotFound(group_uuid=group_id)
    return group


def show(req, ctx, version, group_id):
    try:
        group = get_visible(ctx, group_id)
    except exception.InstanceGroupNotFound as exc:
        raise errors.not_found(exc.format_message())
    policy.authorize(ctx, 'os_compute_api:os-server-groups:show',
                     {'project_id': group.project_id})
    return {'server_group': render(group, version)}


def create(req, ctx, version):
    body = req.json_body_or_error()
    if version >= (2, 64):
        schemas.validate(body, schemas.create_server_group_v264)
    elif version >= (2, 15):
        schemas.validate(body, schemas.create_server_group_v215)
    else:
        schemas.validate(body, schemas.create_server_group)
    policy.authorize(ctx, 'os_compute_api:os-server-groups:create')
    values = body['server_group']
    if version >= (2, 64):
        group_policy = values['policy']
        rules = {k: int(v) for k, v in (values.get('rules') or {}).items()}
        for name, value in rules.items():
            if value > schemas.MAX_INT:
                raise errors.bad_request(
                    'Invalid input for field/attribute rules/%s. Value: %s. '
                    '%s is greater than the maximum of %d'
                    % (name, value, value, schemas.MAX_INT))
        if rules and group_policy != 'anti-affinity':
            raise errors.bad_request(
                'Only anti-affinity policy supports rules.')
    else:
        group_policy, rules = values['policies'][0], {}
    group = objects.InstanceGroup(
        name=values['name'], project_id=ctx.project_id,
        user_id=ctx.user_id, policy=group_policy, rules=rules)
    quota.create_server_group(ctx, group)
    return {'server_group': render(group, version)}


def delete(req, ctx, version, group_id):
    """Members keep running. The group takes no new members; builds of
    members already under way still honour its policy."""
    try:
        group = get_visible(ctx, group_id)
        policy.authorize(ctx, 'os_compute_api:os-server-groups:delete',
                         {'project_id': group.project_id})
        group.destroy(ctx)
    except exception.InstanceGroupNotFound as exc:
        raise errors.not_found(exc.format_message())
    return 204, None
