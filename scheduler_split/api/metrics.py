"""``/metrics``: the Prometheus metrics of the API's process, for admins.

In the all-in-one every service runs in the API's process, so this shows
the scheduler's and the conductors' metrics too. Every request the API
answers is counted by :class:`RequestMetrics`, under the route template
of ``ROUTES`` that matched it, never its raw path.
"""

import time

import webob

from scheduler_split.api import errors
from scheduler_split import metrics
from scheduler_split import policy

RULE = 'scheduler_split:metrics'

# The route label of a request no route of the table matches.
UNMATCHED = 'unmatched'
# Methods counted by name; any other a client sends counts as "other".
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))


def show(req, ctx, version):
    if not metrics.enabled('api'):
        raise errors.not_found('The resource could not be found.')
    policy.authorize(ctx, RULE)
    body, content_type = metrics.exposition()
    response = webob.Response(body=body)
    # Prometheus' text format names its version in the content type.
    response.headers['Content-Type'] = content_type
    return response


class RequestMetrics:
    """Counts every answer by route, method and status, and times it.

    The router puts the route it matched in the environ; a request that
    did not reach it (refused by authentication) is matched here.
    """

    def __init__(self, app, mapper):
        self.app = app
        self.mapper = mapper
        metrics.register('api')

    def __call__(self, environ, start_response):
        started = time.monotonic()
        status = []

        def measured_start_response(value, headers, exc_info=None):
            status.append(value)
            return start_response(value, headers, exc_info)

        try:
            return self.app(environ, measured_start_response)
        finally:
            route = environ.get('scheduler_split.route')
            if route is None:
                route = self._route(environ)
            method = environ.get('REQUEST_METHOD')
            if method not in METHODS:
                method = 'other'
            metrics.API_REQUESTS.labels(
                route, method,
                status[-1][:3] if status else '500').inc()
            metrics.API_REQUEST_SECONDS.labels(route, method).observe(
                time.monotonic() - started)

    def _route(self, environ):
        try:
            match = self.mapper.match(environ.get('PATH_INFO') or '/')
        except Exception:
            match = None
        if match is None:
            return UNMATCHED
        return match['route'] or '/'
