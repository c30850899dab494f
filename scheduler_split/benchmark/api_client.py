"""The compute API, over HTTP, as a user's client speaks it."""

import dataclasses
import datetime
import email.utils
import http.client
import json
import urllib.parse

from scheduler_split.benchmark import base

# What a boot asks for: 2.37 is where ``"networks": "none"`` is spelled so.
MICROVERSION = '2.37'


@dataclasses.dataclass
class Response:
    status: int
    body: object
    headers: http.client.HTTPMessage

    def error_message(self):
        """The message of an error in Nova's shape (``{"badRequest":
        {"code": 400, "message": ...}}``), or the start of the body."""
        if isinstance(self.body, dict) and len(self.body) == 1:
            fault = next(iter(self.body.values()))
            if isinstance(fault, dict) and fault.get('message'):
                return str(fault['message'])
        return str(self.body)[:200]

    def server_time(self):
        """When the server answered (its Date header), else this clock's
        now: what changes-since compares with the servers' update times.
        """
        date = self.headers.get('Date')
        if date:
            try:
                return email.utils.parsedate_to_datetime(date)
            except (TypeError, ValueError):
                pass
        return datetime.datetime.now(datetime.timezone.utc)


def parse_endpoint(endpoint):
    """The parts of a compute endpoint URL; BenchError if it is none."""
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme not in ('http', 'https') or not url.hostname:
        raise base.BenchError('--endpoint must be an http:// or https:// '
                              'URL, not %r' % endpoint)
    return url


def next_page(body, key='servers'):
    """Where the next page of a listing is (path and query, as the API
    wrote them in its ``<key>_links``), or None on its last page."""
    for link in body.get('%s_links' % key, []):
        if link.get('rel') == 'next':
            url = urllib.parse.urlsplit(link['href'])
            return url.path + '?' + url.query
    return None


class ComputeClient:
    """One user's HTTP connection to the compute API, kept alive between
    requests (and opened again when the server closed it). One per
    thread: an ``http.client`` connection carries one request at a time.
    """

    # Methods that may be sent again after the connection broke.
    IDEMPOTENT = ('GET', 'PUT', 'DELETE')

    def __init__(self, endpoint, token, project_id=None, timeout=60):
        url = parse_endpoint(endpoint)
        connection = (http.client.HTTPSConnection if url.scheme == 'https'
                      else http.client.HTTPConnection)
        self._conn = connection(url.hostname, url.port, timeout=timeout)
        self.base_path = url.path.rstrip('/')
        self._headers = {'Accept': 'application/json',
                         'X-Auth-Token': token}
        if project_id:
            self._headers['X-Auth-Project-Id'] = project_id

    def request(self, method, path, body=None, microversion=MICROVERSION,
                absolute=False):
        """``method`` on ``path`` (under the endpoint's path, unless
        ``absolute``); the answer, its body parsed when JSON."""
        headers = dict(self._headers)
        headers['OpenStack-API-Version'] = 'compute %s' % microversion
        data = None
        if body is not None:
            data = json.dumps(body).encode('utf-8')
            headers['Content-Type'] = 'application/json'
        target = path if absolute else self.base_path + path
        for attempt in (1, 2):
            try:
                self._conn.request(method, target, body=data,
                                   headers=headers)
                answer = self._conn.getresponse()
                raw = answer.read()
                break
            except (OSError, http.client.HTTPException):
                self._conn.close()
                # A POST that broke may have been taken: never send it
                # twice.
                if attempt == 2 or method not in self.IDEMPOTENT:
                    raise
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode('utf-8', 'replace')
        return Response(answer.status, parsed, answer.headers)

    def close(self):
        self._conn.close()
