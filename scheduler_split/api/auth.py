"""Authentication: noauth2 for development, keystone for deployments."""

import logging

from oslo_serialization import jsonutils
import webob.dec

from scheduler_split.api import errors
from scheduler_split import context as ss_context

LOG = logging.getLogger(__name__)

# What keystoneauth's "none" auth plugin sends as its token.
NO_TOKEN = 'notused'


class NoAuth2:
    """Trusts ``X-Auth-Token: user:project``; ``admin`` users are admin.

    A request without a token acts as ``admin:admin``, and so does
    keystoneauth's placeholder token ``notused``, which clients with auth
    type none (the all-in-one's ``clouds.yaml``) send.
    """

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req):
        token = req.headers.get('X-Auth-Token') or 'admin:admin'
        if token == NO_TOKEN:
            token = 'admin:admin'
        user_id, _, project_id = token.partition(':')
        project_id = project_id or user_id
        if not user_id:
            return errors.fault(401, 'The request you have made requires '
                                     'authentication.')
        req.environ['scheduler_split.context'] = ss_context.RequestContext(
            user_id=user_id, project_id=project_id,
            roles=['member', 'reader'] + (['admin'] if user_id == 'admin'
                                          else []),
            request_id=req.environ.get('openstack.request_id'))
        return self.application


def _service_catalog(req):
    """The catalog keystonemiddleware passed on (``X-Service-Catalog``),
    a list of services with their endpoints; empty if none or unreadable.
    """
    text = req.headers.get('X-Service-Catalog')
    if not text:
        return []
    try:
        catalog = jsonutils.loads(text)
    except ValueError:
        LOG.warning('X-Service-Catalog is not JSON; ignored')
        return []
    return catalog if isinstance(catalog, list) else []


class KeystoneContext:
    """Builds the context from the identity headers keystonemiddleware set.

    keystonemiddleware has already refused a missing or invalid user token
    (401); what arrives here is confirmed, with the user's roles and, when
    the caller also sent a valid ``X-Service-Token``, the service's.
    """

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, req):
        if req.headers.get('X-Identity-Status', 'Invalid') != 'Confirmed':
            return errors.fault(401, 'The request you have made requires '
                                     'authentication.')
        ctx = ss_context.RequestContext.from_environ(
            req.environ,
            request_id=req.environ.get('openstack.request_id'))
        ctx.service_catalog = _service_catalog(req)
        # Whether the token makes an admin is the policy's to say
        # (context_is_admin), which the router asks.
        req.environ['scheduler_split.context'] = ctx
        return self.application


def pipeline(application, strategy, conf):
    """``application`` behind the authentication ``strategy`` names."""
    if strategy == 'noauth2':
        return NoAuth2(application)
    try:
        from keystonemiddleware import auth_token
    except ImportError as exc:
        raise RuntimeError(
            '[api] auth_strategy = keystone needs keystonemiddleware '
            "(pip install 'scheduler-split[keystone]'): %s" % exc)
    # The [keystone_authtoken] options are read from this process's own
    # configuration files, like every other option.
    return auth_token.AuthProtocol(KeystoneContext(application),
                                   {'oslo_config_config': conf})
