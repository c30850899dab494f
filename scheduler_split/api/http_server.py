"""The HTTP server of scheduler-split-api and the all-in-one: waitress.

waitress reads every request in full, and writes every answer, from one
I/O thread, and hands only complete requests to a bounded pool of worker
threads: a slow or idle client holds a socket, never a worker, so a pool
of a few threads serves hundreds of clients. It speaks HTTP/1.1 with
keep-alive, is pure Python with no dependency of its own, and is
maintained by the Pylons project. What it does not do itself, done here:

- errors it answers before the application runs (a bad request line,
  headers or a body too large) carry Nova's error body, not plain text;
- a request line longer than ``[wsgi] max_request_line`` is a 414
  (waitress only limits the request line and headers together, 431);
- ``stop()`` is graceful: the listening socket closes at once, the
  requests being handled are answered, then idle connections close.
"""

import copy
import json
import logging
import re
import socket
import threading
import time

from waitress import channel as waitress_channel
from waitress import parser as waitress_parser
from waitress import server as waitress_server
from waitress import task as waitress_task
from waitress import utilities as waitress_utilities

from scheduler_split.api import errors
from scheduler_split import conf

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class PortInUse(Exception):
    """The address the server is to listen on cannot be bound."""


def listen_socket(host, port):
    """A socket bound to ``host``:``port`` (0: any free port), before
    anything else is built, so that a port in use fails the start at
    once and says so."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortInUse('Cannot listen on %s:%s: %s' % (host, port, exc))
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise PortInUse('Cannot listen on %s:%s: %s' % (
            host, port, exc.strerror or exc))
    return sock


class _RequestLineTooLong(waitress_utilities.BadRequest):
    code = 414
    reason = 'Request-URI Too Long'


# The data of an image of the built-in catalog: a body of its own size.
_IMAGE_DATA = re.compile(r'^/image/v2/images/[^/]+/file$')


class _Parser(waitress_parser.HTTPRequestParser):
    """waitress's parser, with a limit of its own on the request line,
    and image data (a snapshot's disk) bounded by ``[wsgi]
    max_image_size`` rather than ``max_request_body_size``."""

    def parse_header(self, header_plus):
        super().parse_header(header_plus)
        if self.command == 'PUT' and _IMAGE_DATA.match(self.path or ''):
            self.adj = copy.copy(self.adj)
            self.adj.max_request_body_size = CONF.wsgi.max_image_size

    def received(self, data):
        if not self.completed and self.body_rcv is None:
            head = (self.header_plus + data).lstrip()
            end = head.find(b'\n')
            length = len(head) if end < 0 else end
            limit = CONF.wsgi.max_request_line
            if length > limit:
                self.parse_header(b'GET / HTTP/1.0\r\n')
                self.error = _RequestLineTooLong(
                    'The request line exceeds %d bytes.' % limit)
                self.completed = True
                return len(data)
        return super().received(data)


class _ErrorTask(waitress_task.ErrorTask):
    """An error found before the application ran, in Nova's body shape."""

    def execute(self):
        error = self.request.error
        message = '%s: %s' % (error.reason, error.body) if error.body \
            else error.reason
        body = json.dumps({errors.name_of(error.code): {
            'code': error.code, 'message': message}}).encode()
        self.status = '%d %s' % (error.code, error.reason)
        self.response_headers.append(
            ('Content-Type', 'application/json; charset=UTF-8'))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Channel(waitress_channel.HTTPChannel):
    parser_class = _Parser
    error_task_class = _ErrorTask

    def idle(self):
        """Nothing received, being handled or left to send."""
        return not (self.requests or self.request is not None or
                    self.total_outbufs_len)


class _Server(waitress_server.TcpWSGIServer):
    channel_class = _Channel


def _access_log(app):
    """``app``, logging one line per request as the access log of a web
    server does, with the time the application took."""

    def logged(environ, start_response):
        started = time.monotonic()
        answer = []

        def _start(status, headers, exc_info=None):
            answer.append(status.split(' ', 1)[0])
            return start_response(status, headers, exc_info)

        try:
            return app(environ, _start)
        finally:
            LOG.info('%s "%s %s %s" %s %.3f',
                     environ.get('REMOTE_ADDR', '-'),
                     environ.get('REQUEST_METHOD'),
                     environ.get('REQUEST_URI') or environ.get('PATH_INFO'),
                     environ.get('SERVER_PROTOCOL'),
                     answer[0] if answer else '-',
                     time.monotonic() - started)

    return logged


class APIServer:
    """``app`` served on ``sock`` (from :func:`listen_socket`) with the
    ``[wsgi]`` options, from a thread of its own once started. It has a
    service's face (start, stop, reload), so that the scripts run it as
    they run every other service."""

    def __init__(self, app, sock):
        opts = CONF.wsgi
        adjustments = waitress_server.Adjustments(
            threads=opts.threads, backlog=opts.backlog,
            connection_limit=opts.connection_limit,
            max_request_header_size=opts.max_header_size,
            max_request_body_size=opts.max_request_body_size,
            channel_timeout=opts.keepalive_timeout,
            ident='scheduler-split', expose_tracebacks=False,
            clear_untrusted_proxy_headers=False)
        self._server = _Server(_access_log(app), map={}, _sock=sock,
                               adj=adjustments, bind_socket=False,
                               sockinfo=(sock.family, sock.type,
                                         sock.proto, sock.getsockname()))
        self.host, self.port = sock.getsockname()[:2]
        self._thread = None
        self._stopping = False

    @property
    def url(self):
        host = '[%s]' % self.host if ':' in self.host else self.host
        return 'http://%s:%d' % (host, self.port)

    def start(self, serve_metrics=False):
        """Serve from a thread. The API's metrics are a route of its own
        (/metrics), so ``serve_metrics`` opens no port here."""
        self._thread = threading.Thread(target=self.serve_forever,
                                        name='wsgi', daemon=True)
        self._thread.start()
        LOG.info('Serving the compute API on %s/v2.1', self.url)
        return self

    def reload(self):
        """Nothing of the server itself changes on SIGHUP."""

    def serve_forever(self):
        """Serve until :meth:`stop`."""
        self._server.run()

    def _in_loop(self, callback):
        """Run ``callback`` in the I/O thread, which owns every socket."""
        try:
            self._server.trigger.pull_trigger(callback)
        except OSError:
            # The I/O thread ran the callback, and the last one
            # (_close_all) closed the trigger, before this thread woke
            # it: nothing is left to do.
            pass

    def _stop_accepting(self):
        self._server.accepting = False
        # The listening socket only; the channels and the trigger stay.
        waitress_server.wasyncore.dispatcher.close(self._server)

    def _close_idle(self):
        for channel in list(self._server.active_channels.values()):
            if channel.idle():
                channel.will_close = True

    def _close_all(self):
        waitress_server.wasyncore.close_all(self._server._map)

    @property
    def extra_stop_seconds(self):
        """What a stop of the process gives the requests in hand, beyond
        what it gives any service."""
        return CONF.wsgi.shutdown_timeout

    def stop(self, graceful=True):
        """Stop accepting; when ``graceful``, answer the requests in hand
        for up to ``[wsgi] shutdown_timeout`` seconds; then close every
        connection and stop the workers."""
        if self._stopping:
            return
        self._stopping = True
        timeout = CONF.wsgi.shutdown_timeout if graceful else 0
        if self._thread is None:
            # Never served: nothing is in hand.
            self._server.close()
            self._server.task_dispatcher.shutdown(timeout=0)
            return
        self._in_loop(self._stop_accepting)
        deadline = time.monotonic() + timeout
        while self._server.active_channels and \
                time.monotonic() < deadline:
            self._in_loop(self._close_idle)
            time.sleep(0.02)
        busy = len(self._server.active_channels)
        # A forced stop closes every connection without waiting: only a
        # graceful one has requests it gave up on.
        if busy and graceful:
            LOG.warning('Closing %d connection(s) whose requests were not '
                        'answered within %ss', busy, timeout)
        self._in_loop(self._close_all)
        self._thread.join(5)
        self._server.task_dispatcher.shutdown(timeout=1)
