"""Who a gabbit's request speaks as.

Placement's gabbi files authenticate the way Placement's ``noauth2``
middleware reads them: ``X-Auth-Token: user[:project]`` names the user
(and the project, the user's name when none), ``X-Roles`` the roles
(without it, ``admin`` for the user ``admin`` and none for anyone else),
``X-Project-Id`` overrides the project and ``OpenStack-System-Scope:
all`` makes a system-scoped token with no project. A request without a
token is refused, but for the version document.

:class:`GabbitIdentity` turns that into what keystonemiddleware hands on
for a validated token (``X-Identity-Status: Confirmed``, ``X-User-Id``,
``X-Project-Id``, ``X-Roles``, ``OpenStack-System-Scope``), in front of
the API's own :class:`scheduler_split.api.auth.KeystoneContext`, which
makes the request context from them, so that the API's policy decides on
the roles each gabbit names. :func:`app` is the API's router behind it.
"""

from oslo_utils import uuidutils

from scheduler_split.api import auth
from scheduler_split.api import wsgi
from scheduler_split.compute import api as compute_api

# Identity headers only the authentication middleware may set: whatever
# a client sent under these names is dropped before they are set.
_SET_HERE = ('HTTP_X_IDENTITY_STATUS', 'HTTP_X_USER_ID', 'HTTP_X_USER',
             'HTTP_X_TENANT_ID', 'HTTP_X_TENANT', 'HTTP_X_SERVICE_ROLES',
             'HTTP_X_SERVICE_CATALOG')


def identity(token, roles=None, project=None, system_scope=None):
    """``(user, project, roles)`` a gabbit's headers make: ``project``
    None for a system-scoped token."""
    user_id, _, token_project = token.partition(':')
    if roles is not None:
        role_list = [r.strip() for r in roles.split(',') if r.strip()]
    else:
        role_list = ['admin'] if user_id == 'admin' else []
    if project is None and not system_scope:
        project = token_project or user_id
    return user_id, project, role_list


class GabbitIdentity:
    """Public paths go to ``public`` as they are; every other request to
    ``authed`` with the identity its gabbi headers name, or with none
    (an invalid identity, which ``authed`` refuses with a 401) when it
    has no token."""

    def __init__(self, public, authed, public_paths):
        self.public = public
        self.authed = authed
        self.public_paths = public_paths

    def __call__(self, environ, start_response):
        # As the API's own pipeline: the request id exists before the
        # context, so that both carry the same one.
        environ.setdefault('openstack.request_id',
                           'req-' + uuidutils.generate_uuid())
        if environ.get('PATH_INFO', '') in self.public_paths:
            return self.public(environ, start_response)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        roles = environ.pop('HTTP_X_ROLES', None)
        project = environ.pop('HTTP_X_PROJECT_ID', None)
        for key in _SET_HERE:
            environ.pop(key, None)
        environ['HTTP_X_IDENTITY_STATUS'] = 'Invalid'
        if token:
            user_id, project, role_list = identity(
                token, roles, project,
                environ.get('HTTP_OPENSTACK_SYSTEM_SCOPE'))
            environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
            environ['HTTP_X_USER_ID'] = user_id
            environ['HTTP_X_ROLES'] = ','.join(role_list)
            if project is not None:
                environ['HTTP_X_PROJECT_ID'] = project
        return self.authed(environ, start_response)


def app():
    """The API (compute and Placement) of this process's all-in-one,
    with the gabbits' identities."""
    router = wsgi.Router(compute_api.ComputeAPI())
    return GabbitIdentity(router, auth.KeystoneContext(router), wsgi.PUBLIC)
