"""How every Placement handler is served: the microversion, the policy
check, the answer and its errors in Placement's shape.

A handler is ``handler(req, ctx, version, **url_args)`` (``version``
being the Placement microversion, a tuple) returning a body dict (200);
:func:`serve` wraps it for the API's route table. Whatever it raises is
answered in Placement's error shape, never in Nova's: a refused policy
is a 403, a scheduler that cannot answer (a timeout, or one too old to
serve the reads) a 503 with ``Retry-After``, an unexpected error a 500
that names the request id.
"""

import datetime
import functools
import json
import logging
import uuid

import jsonschema
import oslo_messaging as messaging
import webob
import webob.request

from scheduler_split.api import bodies
from scheduler_split.api.placement import errors
from scheduler_split.api.placement import microversion
from scheduler_split import conf
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import policy

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The methods a path refuses unless its row serves them.
REFUSED = ('POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS')

# Why the scheduler did not answer, as the detail of a 503.
SCHEDULER_TOO_OLD = ('The Placement API needs schedulers that serve '
                     'scheduler RPC 1.9; the schedulers running are '
                     'capped at %s. Please try again once they are '
                     'upgraded.')
SCHEDULER_UNREACHABLE = ('The scheduler, which holds the resource '
                         'providers and allocations, could not be reached '
                         '(%s). Please try again later.')


def scheduler(req):
    """The scheduler's client library, the API's one way to its data."""
    return req.compute_api.scheduler


# What a body's ``"format": "uuid"`` accepts: a uuid with or without
# its dashes, as Placement takes them.
FORMATS = jsonschema.FormatChecker(())


@FORMATS.checks('uuid', raises=ValueError)
def _is_uuid(value):
    if not isinstance(value, str):
        return True
    uuid.UUID(value)
    return True


def _no_constant(name):
    # NaN and the infinities are no JSON numbers, though Python reads
    # them: no amount or ratio of Placement is one.
    raise ValueError('%s is not a JSON number' % name)


def body(req, schema):
    """The request's JSON body, checked against ``schema``: a 415 for a
    body that does not say it is JSON, a 400 in Placement's words for
    one that does not parse or does not fit."""
    try:
        raw = req.body
    except webob.request.DisconnectionError:
        raise errors.bad_request('The request body is shorter than its '
                                 'Content-Length.')
    if not req.content_type and raw:
        raise errors.bad_request('content-type header required')
    if req.content_type != 'application/json':
        raise errors.PlacementError(
            415, 'The media type %s is not supported, use '
            'application/json' % (req.content_type or None))
    try:
        value = json.loads(raw or b'null', parse_constant=_no_constant)
    except RecursionError:
        raise errors.bad_request(bodies.TOO_DEEP)
    except ValueError as exc:
        raise errors.bad_request('Malformed JSON: %s' % exc)
    try:
        bodies.check(value)
    except bodies.BadBody as exc:
        raise errors.bad_request(str(exc))
    try:
        jsonschema.validate(value, schema, format_checker=FORMATS)
    except jsonschema.ValidationError as exc:
        raise errors.bad_request('JSON does not validate: %s' % exc)
    return value


def not_allowed(req, version, allow):
    """The 405 of a method a path serves from a later microversion."""
    response = errors.fault(
        405, 'The method %s is not allowed for this resource.' % req.method,
        req.environ.get('openstack.request_id'), version)
    response.headers['Allow'] = ', '.join(allow)
    return response


def no_content(status=204):
    """An answer without a body, and so without a content type."""
    response = webob.Response(status=status)
    del response.content_type
    return response


def _accepts_json(req):
    # As Placement: no Accept header, or one that takes JSON.
    return not req.accept or bool(
        req.accept.acceptable_offers(['application/json']))


def _json(body):
    response = webob.Response(status=200, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    return response


def _unavailable(detail, request_id, version):
    response = errors.fault(503, detail, request_id, version)
    response.headers['Retry-After'] = str(CONF.api.retry_after)
    return response


def _answer(fn, req, ctx, args, public, request_id, rule, target=None):
    """``(response, version)`` of one request."""
    version = None
    try:
        version = microversion.parse(req)
        if req.method == 'GET' and not _accepts_json(req):
            raise errors.PlacementError(
                406, 'Only application/json is provided')
        if not public:
            policy.authorize(ctx, rule,
                             target=target(req) if target else {})
        result = fn(req, ctx, version, **args)
        if not isinstance(result, webob.Response):
            result = _json(result)
        if (version >= (1, 15) and req.method in ('GET', 'PUT') and
                result.status_code in (200, 204) and
                'Cache-Control' not in result.headers):
            result.cache_control = 'no-cache'
            result.last_modified = datetime.datetime.now(
                datetime.timezone.utc)
        return result, version
    except errors.PlacementError as exc:
        return errors.fault(exc.status, exc.detail, request_id, version,
                            **exc.extra), version
    except messaging.RPCVersionCapError as exc:
        return _unavailable(SCHEDULER_TOO_OLD % exc.version_cap, request_id,
                            version), version
    except messaging.MessagingException as exc:
        LOG.warning('Request %s: the scheduler did not answer: %s',
                    request_id, exc)
        return _unavailable(SCHEDULER_UNREACHABLE % type(exc).__name__,
                            request_id, version), version
    except outage.DATABASE_UNAVAILABLE as exc:
        # One WARNING an outage, not one a request.
        outage.report(LOG, exc, 'Request %s: a database is unavailable: '
                      '%s', request_id, outage.describe(exc))
        return _unavailable('The service is temporarily unavailable: a '
                            'database cannot be reached. Please try again '
                            'later.', request_id, version), version
    except exception.SchedulerSplitException as exc:
        if exc.code == 503:
            return _unavailable(exc.format_message(), request_id,
                                version), version
        if exc.code < 500:
            extra = {}
            code = getattr(exc, 'placement_code', None)
            if code and version is not None and version >= errors.CODE_SINCE:
                extra['code'] = code
            return errors.fault(exc.code, exc.format_message(), request_id,
                                version, **extra), version
        LOG.exception('Request %s failed', request_id)
    except UnicodeDecodeError:
        return errors.fault(400, 'The request URL or query is not valid '
                                 'UTF-8.', request_id, version), version
    except Exception:
        LOG.exception('Request %s failed', request_id)
    return errors.fault(500, 'Unexpected error. Please report this with '
                             'request id %s.' % request_id, request_id,
                        version), version


def serve(public=False, rule=None, target=None):
    """Make ``fn`` a row of the route table, guarded by the policy
    ``rule`` (Placement's name of the operation, see
    ``scheduler_split/policies/placement.py``; checked against
    ``target(req)``, a dict, if given). ``public`` handlers answer
    without a policy check (and, for the paths of ``PUBLIC``, without a
    token)."""
    if not public and not rule:
        raise ValueError('a handler that is not public names its rule')

    def decorate(fn):
        @functools.wraps(fn)
        def served(req, ctx, compute_version, **args):
            request_id = req.environ.get('openstack.request_id')
            response, version = _answer(fn, req, ctx, args, public,
                                        request_id, rule, target)
            # The compute API's router sees this header and leaves the
            # compute API's version headers out.
            response.headers['OpenStack-API-Version'] = (
                'placement ' + microversion.to_str(version or
                                                   microversion.MIN))
            response.headers['Vary'] = 'openstack-api-version'
            return response
        return served
    return decorate


def refusal(allow=('GET',)):
    """The handler of every method a path refuses: a 405 that says
    which methods the path allows."""
    @serve(public=True)
    def refuse(req, ctx, version, **args):
        detail = ('The method %s is not allowed for this resource.'
                  % req.method)
        response = errors.fault(405, detail,
                                req.environ.get('openstack.request_id'),
                                version)
        response.headers['Allow'] = ', '.join(allow)
        return response
    return refuse
