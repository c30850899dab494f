"""``GET /placement/allocations/{consumer_uuid}``: what one consumer (a
server, or a move holding its source host) holds, by provider.

From 1.12 on, a consumer that holds anything says its project and user
(:mod:`consumers`); from 1.28 its generation, which is null: the
scheduler keeps none, as allocations change only through its claims;
from 1.38 its type.
"""

from scheduler_split.api.placement import consumers
from scheduler_split.api.placement import handler


@handler.serve()
def show(req, ctx, version, consumer_uuid):
    held = handler.scheduler(req).consumer_allocations(ctx, consumer_uuid)
    body = {'allocations': held}
    if held and version >= (1, 12):
        kind, project_id, user_id = consumers.owner(ctx, consumer_uuid)
        body['project_id'] = project_id
        body['user_id'] = user_id
        if version >= (1, 28):
            body['consumer_generation'] = None
        if version >= (1, 38):
            body['consumer_type'] = kind
    return body
