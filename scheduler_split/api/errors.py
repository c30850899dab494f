"""Errors in Nova's body shape: ``{"badRequest": {"code": 400, ...}}``."""

import json

import webob

_NAMES = {
    400: 'badRequest',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'itemNotFound',
    405: 'badMethod',
    406: 'notAcceptable',
    409: 'conflictingRequest',
    413: 'overLimit',
    415: 'badMediaType',
    429: 'overLimit',
    501: 'notImplemented',
    503: 'serviceUnavailable',
}


def name_of(status):
    """The key Nova's error body has for ``status``."""
    return _NAMES.get(status, 'computeFault')


def fault(status, message):
    """A response carrying ``message`` with ``status`` in Nova's shape."""
    body = {name_of(status): {'code': status, 'message': message}}
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    return response


class HTTPError(Exception):
    """Raised by a handler to answer with an error."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def bad_request(message):
    return HTTPError(400, message)


def not_found(message):
    return HTTPError(404, message)
