"""Errors in Placement's shape::

    {"errors": [{"status": 404, "title": "Not Found",
                 "detail": "No resource provider with uuid ... found",
                 "code": "placement.undefined_code",
                 "request_id": "req-..."}]}

``code`` from microversion 1.23 on, as Placement says it; a 406 for a
version this API does not serve also says ``min_version`` and
``max_version`` (what osc-placement falls back to). The detail is one
line: clients show its last line.
"""

import json

import webob
import webob.exc

DEFAULT_CODE = 'placement.undefined_code'
# The first microversion whose errors carry a code.
CODE_SINCE = (1, 23)


class PlacementError(Exception):
    """Raised by a handler to answer with an error; ``extra`` keys go
    into the error as they are."""

    def __init__(self, status, detail, **extra):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.extra = extra


def bad_request(detail):
    return PlacementError(400, detail)


def not_found(detail='The resource could not be found.'):
    return PlacementError(404, detail)


def coded(status, detail, code, version):
    """An error that says Placement's ``code`` from the microversion
    whose errors carry one."""
    if version is not None and version >= CODE_SINCE:
        return PlacementError(status, detail, code=code)
    return PlacementError(status, detail)


def title_of(status):
    known = webob.exc.status_map.get(status)
    return known.title if known is not None else 'Error'


def fault(status, detail, request_id=None, version=None, **extra):
    """A response carrying ``detail`` with ``status`` in Placement's
    shape, for a request of microversion ``version`` (None when it is
    not known)."""
    error = {'status': status, 'title': title_of(status),
             'detail': ' '.join(str(detail).split())}
    if version is not None and version >= CODE_SINCE:
        error['code'] = DEFAULT_CODE
    if request_id is not None:
        error['request_id'] = request_id
    error.update(extra)
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps({'errors': [error]})
    return response
