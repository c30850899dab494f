"""``GET /placement/usages?project_id=...[&user_id=...]`` (from 1.9):
what a project (and user) holds, summed by resource class over every
provider: its servers' allocations and those of its moves under way
(:mod:`consumers`), and the consumers written through the Placement API
for it. From 1.38 grouped by consumer type, each group with
its ``consumer_count``, and filtered with ``consumer_type`` (a type,
``all`` or ``unknown``).
"""

import re

from scheduler_split.api.placement import consumers
from scheduler_split.api.placement import errors
from scheduler_split.api.placement import handler
from scheduler_split.api.placement import params

_CONSUMER_TYPE = '([A-Z0-9_]+|all|unknown)'


def _required_text(req, name, required=False):
    value = req.GET.get(name)
    if value is None and required:
        raise errors.bad_request("Invalid query string parameters: '%s' is "
                                 "a required property" % name)
    if value is not None and not 0 < len(value) <= 255:
        # In the words of the JSON schema check Placement makes.
        raise errors.bad_request(
            "Invalid query string parameters: %r is too %s Failed "
            "validating '%s' in schema['properties']['%s']"
            % (value, 'short' if not value else 'long',
               'minLength' if not value else 'maxLength', name))
    return value


def usages_target(req):
    """What the rule of ``GET /usages`` checks: the project asked of."""
    return {'project_id': req.GET.get('project_id')}


@handler.serve(rule='placement:usages', target=usages_target)
def index(req, ctx, version):
    if version < (1, 9):
        raise errors.not_found()
    allowed = {'project_id', 'user_id'}
    if version >= (1, 38):
        allowed.add('consumer_type')
    params.check_names(req, allowed)
    project_id = _required_text(req, 'project_id', required=True)
    user_id = _required_text(req, 'user_id')
    consumer_type = req.GET.get('consumer_type')
    if consumer_type is not None and not re.fullmatch(_CONSUMER_TYPE,
                                                      consumer_type):
        raise errors.bad_request(
            "Invalid query string parameters: '%s' does not match '^%s$'"
            % (consumer_type, _CONSUMER_TYPE))
    held = consumers.of_project(ctx, project_id, user_id)
    scheduler = handler.scheduler(req)
    for kind, uuids in scheduler.project_consumers(ctx, project_id,
                                                   user_id).items():
        held.setdefault(kind, []).extend(uuids)
    every = [uuid for uuids in held.values() for uuid in uuids]
    if version < (1, 38):
        return {'usages': scheduler.usages(ctx, every)['usages']
                if every else {}}
    if consumer_type is None:
        groups = held
    elif consumer_type == 'all':
        groups = {'all': every}
    else:
        groups = {consumer_type: held.get(consumer_type, [])}
    body = {}
    for name, uuids in groups.items():
        if not uuids:
            continue
        found = scheduler.usages(ctx, uuids)
        if found['consumer_count']:
            body[name] = dict(found['usages'],
                              consumer_count=found['consumer_count'])
    return {'usages': body}
