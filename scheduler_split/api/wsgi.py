"""The API's WSGI application: one route table, one dispatcher.

Every URL and method the API answers is in ``ROUTES``; a known path with
another method answers 405 with an ``Allow`` header. Handlers are plain
functions ``handler(req, ctx, version, **url_args)`` returning a body
dict (200), a ``(status, body)`` pair, or a ``webob.Response``.
"""

import json
import logging

from oslo_utils import uuidutils
import routes
import webob
import webob.dec
import webob.request

from scheduler_split.api import aggregates
from scheduler_split.api import auth
from scheduler_split.api import availability_zones
from scheduler_split.api import bodies
from scheduler_split.api import errors
from scheduler_split.api import extension_info
from scheduler_split.api import flavor_access
from scheduler_split.api import flavor_extra_specs
from scheduler_split.api import flavors
from scheduler_split.api import hosts
from scheduler_split.api import hypervisors
from scheduler_split.api import image_proxy
from scheduler_split.api import instance_actions
from scheduler_split.api import instance_usage_audit_log
from scheduler_split.api import keypairs
from scheduler_split.api import metrics as metrics_api
from scheduler_split.api import microversion
from scheduler_split.api import migrations
from scheduler_split.api import placement
from scheduler_split.api import quotas
from scheduler_split.api import server_actions
from scheduler_split.api import server_diagnostics
from scheduler_split.api import server_external_events
from scheduler_split.api import server_groups
from scheduler_split.api import server_metadata
from scheduler_split.api import server_password
from scheduler_split.api import servers
from scheduler_split.api import services
from scheduler_split.api import usage
from scheduler_split.api import versions
from scheduler_split.compute import api as compute
from scheduler_split import conf
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split.identity import api as identity
from scheduler_split.image import api as image_api
from scheduler_split.image import catalog as images
from scheduler_split import policy

CONF = conf.CONF
LOG = logging.getLogger(__name__)

ROUTES = {
    '': {'GET': versions.root},
    '/': {'GET': versions.root},
    '/v2.1': {'GET': versions.v21},
    '/v2.1/': {'GET': versions.v21},
    '/v2': {'GET': versions.v20},
    '/v2/': {'GET': versions.v20},
    '/v2.1/flavors': {'GET': flavors.index, 'POST': flavors.create},
    '/v2.1/flavors/detail': {'GET': flavors.detail},
    '/v2.1/flavors/{flavor_id}': {'GET': flavors.show,
                                  'PUT': flavors.update,
                                  'DELETE': flavors.delete},
    '/v2.1/flavors/{flavor_id}/action': {'POST': flavor_access.action},
    '/v2.1/flavors/{flavor_id}/os-flavor-access': {
        'GET': flavor_access.index},
    '/v2.1/flavors/{flavor_id}/os-extra_specs': {
        'GET': flavor_extra_specs.index, 'POST': flavor_extra_specs.create},
    '/v2.1/flavors/{flavor_id}/os-extra_specs/{key}': {
        'GET': flavor_extra_specs.show, 'PUT': flavor_extra_specs.update,
        'DELETE': flavor_extra_specs.delete},
    '/v2.1/servers': {'GET': servers.index, 'POST': servers.create},
    '/v2.1/servers/detail': {'GET': servers.detail},
    '/v2.1/servers/{server_id}/ips': {'GET': servers.ips_index},
    '/v2.1/servers/{server_id}/ips/{network_label}': {
        'GET': servers.ips_show},
    '/v2.1/servers/{server_id}': {'GET': servers.show,
                                  'PUT': servers.update,
                                  'DELETE': servers.delete},
    '/v2.1/servers/{server_id}/action': {'POST': server_actions.action},
    '/v2.1/servers/{server_id}/diagnostics': {
        'GET': server_diagnostics.show},
    '/v2.1/servers/{server_id}/metadata': {
        'GET': server_metadata.metadata_index,
        'POST': server_metadata.metadata_create,
        'PUT': server_metadata.metadata_update_all},
    '/v2.1/servers/{server_id}/metadata/{key}': {
        'GET': server_metadata.metadata_show,
        'PUT': server_metadata.metadata_update,
        'DELETE': server_metadata.metadata_delete},
    '/v2.1/servers/{server_id}/tags': {
        'GET': server_metadata.tags_index,
        'PUT': server_metadata.tags_update_all,
        'DELETE': server_metadata.tags_delete_all},
    '/v2.1/servers/{server_id}/tags/{tag}': {
        'GET': server_metadata.tag_show,
        'PUT': server_metadata.tag_update,
        'DELETE': server_metadata.tag_delete},
    '/v2.1/servers/{server_id}/migrations': {
        'GET': migrations.server_index},
    '/v2.1/servers/{server_id}/migrations/{migration_id}': {
        'GET': migrations.server_show},
    '/v2.1/servers/{server_id}/os-instance-actions': {
        'GET': instance_actions.index},
    '/v2.1/servers/{server_id}/os-instance-actions/{request_id}': {
        'GET': instance_actions.show},
    '/v2.1/servers/{server_id}/os-server-password': {
        'GET': server_password.index, 'DELETE': server_password.clear},
    '/v2.1/os-server-external-events': {
        'POST': server_external_events.create},
    '/v2.1/os-server-groups': {'GET': server_groups.index,
                               'POST': server_groups.create},
    '/v2.1/os-server-groups/{group_id}': {'GET': server_groups.show,
                                          'DELETE': server_groups.delete},
    '/v2.1/os-services': {'GET': services.index},
    '/v2.1/os-services/{service_id}': {'PUT': services.update,
                                       'DELETE': services.delete},
    '/v2.1/os-hypervisors': {'GET': hypervisors.index},
    '/v2.1/os-hypervisors/detail': {'GET': hypervisors.detail},
    '/v2.1/os-hypervisors/statistics': {'GET': hypervisors.statistics},
    '/v2.1/os-hypervisors/{hypervisor_id}': {'GET': hypervisors.show},
    '/v2.1/os-hypervisors/{hypervisor_id}/uptime': {
        'GET': hypervisors.uptime},
    '/v2.1/os-hypervisors/{pattern}/search': {'GET': hypervisors.search},
    '/v2.1/os-hypervisors/{pattern}/servers': {'GET': hypervisors.servers},
    '/v2.1/os-hosts': {'GET': hosts.index},
    '/v2.1/os-migrations': {'GET': migrations.index},
    '/v2.1/os-simple-tenant-usage': {'GET': usage.index},
    '/v2.1/os-simple-tenant-usage/{tenant_id}': {'GET': usage.show},
    '/v2.1/os-hosts/{host_name}': {'GET': hosts.show, 'PUT': hosts.update},
    '/v2.1/os-hosts/{host_name}/reboot': {'GET': hosts.reboot},
    '/v2.1/os-hosts/{host_name}/shutdown': {'GET': hosts.shutdown},
    '/v2.1/os-hosts/{host_name}/startup': {'GET': hosts.startup},
    '/v2.1/os-aggregates': {'GET': aggregates.index,
                            'POST': aggregates.create},
    '/v2.1/os-aggregates/{aggregate_id}': {'GET': aggregates.show,
                                           'PUT': aggregates.update,
                                           'DELETE': aggregates.delete},
    '/v2.1/os-aggregates/{aggregate_id}/action': {
        'POST': aggregates.action},
    '/v2.1/os-aggregates/{aggregate_id}/images': {
        'POST': aggregates.cache_images},
    '/v2.1/os-availability-zone': {'GET': availability_zones.index},
    '/v2.1/os-availability-zone/detail': {
        'GET': availability_zones.detail},
    '/v2.1/limits': {'GET': quotas.limits},
    '/v2.1/os-quota-sets/{project_id}': {'GET': quotas.show,
                                         'PUT': quotas.update,
                                         'DELETE': quotas.delete},
    '/v2.1/os-quota-sets/{project_id}/detail': {'GET': quotas.detail},
    '/v2.1/os-quota-sets/{project_id}/defaults': {'GET': quotas.defaults},
    '/v2.1/os-quota-class-sets/{class_name}': {
        'GET': quotas.show_class, 'PUT': quotas.update_class},
    '/v2.1/os-keypairs': {'GET': keypairs.index, 'POST': keypairs.create},
    '/v2.1/os-keypairs/{name}': {'GET': keypairs.show,
                                 'DELETE': keypairs.delete},
    # The image service's proxy, up to 2.35 (metadata 2.38).
    '/v2.1/images': {'GET': image_proxy.index},
    '/v2.1/images/detail': {'GET': image_proxy.detail},
    '/v2.1/images/{image_id}': {'GET': image_proxy.show,
                                'DELETE': image_proxy.delete},
    '/v2.1/images/{image_id}/metadata': {
        'GET': image_proxy.metadata_index,
        'POST': image_proxy.metadata_create,
        'PUT': image_proxy.metadata_update_all},
    '/v2.1/images/{image_id}/metadata/{key}': {
        'GET': image_proxy.metadata_show,
        'PUT': image_proxy.metadata_update,
        'DELETE': image_proxy.metadata_delete},
    '/v2.1/extensions': {'GET': extension_info.index},
    '/v2.1/extensions/{alias}': {'GET': extension_info.show},
    '/v2.1/os-instance_usage_audit_log': {
        'GET': instance_usage_audit_log.index},
    '/v2.1/os-instance_usage_audit_log/{before_timestamp}': {
        'GET': instance_usage_audit_log.show},
    '/metrics': {'GET': metrics_api.show},
    # The Placement API, in Placement's shapes (api/placement).
    **placement.ROUTES,
}

# Paths that answer without authentication (version discovery).
PUBLIC = {'', '/', '/v2.1', '/v2.1/', '/v2', '/v2/'} | placement.PUBLIC


class Request(webob.Request):

    @property
    def ctx(self):
        return self.environ['scheduler_split.context']

    @property
    def compute_api(self):
        return self.environ['scheduler_split.compute_api']

    def json_body_or_error(self):
        try:
            raw = self.body
        except webob.request.DisconnectionError:
            raise errors.bad_request('The request body is shorter than its '
                                     'Content-Length.')
        try:
            body = json.loads(raw or b'null')
        except RecursionError:
            raise errors.bad_request(bodies.TOO_DEEP)
        except ValueError:
            raise errors.bad_request('Malformed request body')
        if not isinstance(body, dict):
            raise errors.bad_request('Malformed request body: expected a '
                                     'JSON object')
        _check_strings(body)
        return body


def _check_strings(body):
    """400 for a body nested too deep or holding a string no database can
    store (:func:`bodies.check`)."""
    try:
        bodies.check(body)
    except bodies.BadBody as exc:
        raise errors.bad_request(str(exc))


# What the compute API reads a body as (as Nova, its own vendor type too).
# No Content-Type, an empty one and text/plain (what some HTTP clients
# send for a body they were given no type for) are read as JSON as well.
JSON_MEDIA_TYPES = frozenset(['application/json',
                              'application/vnd.openstack.compute+json'])


def _check_media_type(req):
    """415 for a request of the compute API whose Content-Type names
    anything but JSON, whatever its method, as Nova answers."""
    if 'Content-Type' not in req.headers:
        return
    media_type = req.content_type
    if media_type and media_type != 'text/plain' and \
            media_type not in JSON_MEDIA_TYPES:
        raise errors.HTTPError(415, 'Unsupported Content-Type')


def _unavailable(message):
    response = errors.fault(503, message)
    response.headers['Retry-After'] = str(CONF.api.retry_after)
    return response


def _mapper(table):
    mapper = routes.Mapper()
    for path in table:
        mapper.connect(path or '/', route=path)
    return mapper


class Router:
    """Dispatches to the handler of ``ROUTES`` (and of ``extra_routes``,
    rows of the same shape); never leaks a traceback."""

    def __init__(self, compute_api, extra_routes=None):
        self.routes = dict(ROUTES, **(extra_routes or {}))
        self.mapper = _mapper(self.routes)
        self.compute_api = compute_api

    @webob.dec.wsgify(RequestClass=Request)
    def __call__(self, req):
        req.environ['scheduler_split.compute_api'] = self.compute_api
        request_id = req.environ.setdefault(
            'openstack.request_id', 'req-' + uuidutils.generate_uuid())
        version = microversion.MIN_VERSION
        try:
            match = self.mapper.match(environ=req.environ)
            if match is None:
                req.environ['scheduler_split.route'] = metrics_api.UNMATCHED
                if req.path_info.startswith('/placement/'):
                    return self._finish(placement.unmatched(req),
                                        request_id, version)
                raise errors.not_found('The resource could not be found.')
            req.environ['scheduler_split.route'] = match['route'] or '/'
            handlers = self.routes[match['route']]
            handler = handlers.get(req.method)
            if handler is None:
                response = errors.fault(405, 'The method %s is not allowed '
                                             'for this resource.'
                                        % req.method)
                response.headers['Allow'] = ', '.join(
                    sorted(handlers))
                return self._finish(response, request_id, version)
            if req.path_info.startswith('/v2.1/'):
                version = microversion.parse(req)
            if req.path_info.startswith('/v2'):
                _check_media_type(req)
            args = {k: v for k, v in match.items() if k != 'route'}
            ctx = req.environ.get('scheduler_split.context')
            if ctx is not None:
                # Who is an admin is the policy's to say, whatever the
                # authentication middleware assumed; asked once a request,
                # handlers read ctx.is_admin.
                ctx.is_admin = policy.check_is_admin(ctx)
            # A request does not wait for a database that is away: it
            # is answered 503 with Retry-After at once. It is run again
            # when the database aborted it for a race before it wrote
            # anything (Galera's certification, a deadlock).
            with outage.not_waiting():
                result = outage.retry_races(handler, req, ctx, version,
                                            **args)
            response = self._to_response(result)
        except errors.HTTPError as exc:
            response = errors.fault(exc.status, exc.message)
        except UnicodeDecodeError:
            response = errors.fault(400, 'The request URL or query is not '
                                         'valid UTF-8.')
        except outage.DATABASE_UNAVAILABLE as exc:
            # Each write is one transaction, so what failed was not
            # recorded and the client may simply try again later.
            # One WARNING an outage, not one a request.
            outage.report(LOG, exc, 'Request %s: a database is '
                          'unavailable: %s', request_id,
                          outage.describe(exc))
            response = _unavailable(
                'The service is temporarily unavailable: a database cannot '
                'be reached. Please try again later.')
        except outage.BUS_UNAVAILABLE as exc:
            # A bus that cannot be reached (a cell's, say), or a service
            # that did not answer over it: not the request's fault.
            LOG.warning('Request %s: %s', request_id, outage.describe(exc))
            response = _unavailable(
                'The service is temporarily unavailable: a message bus '
                'cannot be reached or a service did not answer over it. '
                'Please try again later.')
        except exception.SchedulerSplitException as exc:
            if exc.code == 503:
                response = _unavailable(exc.format_message())
            elif exc.code >= 500:
                LOG.exception('Request %s failed', request_id)
                response = errors.fault(500, 'Unexpected API Error. '
                                             'Request %s.' % request_id)
            else:
                response = errors.fault(exc.code, exc.format_message())
        except Exception:
            LOG.exception('Request %s failed', request_id)
            response = errors.fault(500, 'Unexpected API Error. Please '
                                         'report this with request id %s.'
                                    % request_id)
        return self._finish(response, request_id, version)

    @staticmethod
    def _to_response(result):
        if isinstance(result, webob.Response):
            return result
        status, body = (result if isinstance(result, tuple)
                        else (200, result))
        response = webob.Response(status=status)
        if body is not None:
            response.content_type = 'application/json'
            response.charset = 'UTF-8'
            response.text = json.dumps(body)
        else:
            response.content_type = None
        return response

    @staticmethod
    def _finish(response, request_id, version):
        response.headers['x-openstack-request-id'] = request_id
        if response.headers.get('OpenStack-API-Version', '').startswith(
                'placement '):
            # The Placement API says its own version (api/placement).
            return response
        response.headers['x-compute-request-id'] = request_id
        value = microversion.to_str(version)
        response.headers['OpenStack-API-Version'] = 'compute %s' % value
        response.headers['X-OpenStack-Nova-API-Version'] = value
        response.headers['Vary'] = ('OpenStack-API-Version, '
                                    'X-OpenStack-Nova-API-Version')
        return response


class _PublicOrAuth:
    """Version documents answer without credentials; the rest are checked.
    """

    def __init__(self, router, authed, public):
        self.router = router
        self.authed = authed
        self.public = public

    def __call__(self, environ, start_response):
        # The request id exists before authentication, so that the context
        # the auth middleware makes and the response carry the same one.
        environ.setdefault('openstack.request_id',
                           'req-' + uuidutils.generate_uuid())
        path = environ.get('PATH_INFO', '')
        if path in self.public:
            return self.router(environ, start_response)
        return self.authed(environ, start_response)


def stand_ins(auth_strategy):
    """``(routes, public paths)`` of the stand-ins this API serves for the
    services a cloud without Keystone or Glance lacks, so that clients
    find them in the API itself: the identity under ``noauth2`` (never
    behind Keystone, whose tokens are the only ones), the built-in image
    catalog whenever boots read it (``[glance] source = builtin``). The
    all-in-one, scheduler-split-api and the WSGI entry point serve the
    same, whatever runs them."""
    table, public = {}, set()
    if identity.served(auth_strategy):
        table.update(identity.ROUTES)
        public |= identity.PUBLIC
    if images.served():
        table.update(image_api.ROUTES)
        public |= image_api.PUBLIC
    return table, public


def make_app(compute_api=None, auth_strategy=None, extra_routes=None,
             extra_public=()):
    """The whole API as one WSGI application, with the stand-ins
    ``stand_ins`` says it serves; ``extra_routes`` (of which
    ``extra_public`` answer without authentication) are served beside
    it."""
    strategy = auth_strategy or CONF.api.auth_strategy
    table, public = stand_ins(strategy)
    table.update(extra_routes or {})
    router = Router(compute_api or compute.ComputeAPI(), table)
    authed = auth.pipeline(router, strategy, CONF)
    return metrics_api.RequestMetrics(
        _PublicOrAuth(router, authed, PUBLIC | public | set(extra_public)),
        router.mapper)
