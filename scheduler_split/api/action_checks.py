"""What the handlers of ``POST /v2.1/servers/{server_id}/action``
share (``server_actions``, ``server_images``, ``server_moves``): the
policy target of a server, the check of an action whose body must be
null, the check of a host an admin names, and the schema of such a host.
"""

from scheduler_split.api import errors
from scheduler_split import exception
from scheduler_split import objects

HOST = {'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255,
        'pattern': '^[a-zA-Z0-9-._]*$'}


def target(instance):
    """The policy target of ``instance``: its project and user."""
    return {'project_id': instance.project_id, 'user_id': instance.user_id}


def null_body(name, body):
    """400, in Nova's words, unless the action's value is null or an
    object (whose content these actions ignore, as Nova does: Tempest
    sends ``{}``)."""
    if body[name] is not None and not isinstance(body[name], dict):
        raise errors.bad_request(
            "Invalid input for field/attribute %s. Value: %s. %r is not of "
            "type 'null'" % (name, body[name], body[name]))


def known_host(ctx, host):
    """400 unless ``host`` is a compute host of some cell."""
    try:
        objects.HostMapping.get_by_host(ctx, host)
    except exception.NotFound:
        raise errors.bad_request('Compute host %s could not be found.'
                                 % host)
