"""How fast the server list pages (``scheduler-split-bench
--list-servers``): the first page of ``GET /servers/detail``, a page of
it reached by marker, and the first page of ``GET /servers``, each asked
in turn, one request at a time, over one keep-alive connection.

The servers are there before: the run reads them all once, page by page
through the ``next`` links, to learn their order (the marker is taken
from it) and the cells they run in.
"""

import http.client
import time

from scheduler_split.benchmark import api_client
from scheduler_split.benchmark import base
from scheduler_split.benchmark import stats

# The figures of each kind of request: the percentiles every report
# gives, and the slowest.
FIGURES = tuple('p%d' % p for p in stats.POINTS) + ('max',)


def cell_of(host):
    """The cell of an all-in-one host: ``cell2`` for ``cell2-compute3``
    (see ``deployment.AllInOne.hosts_of``)."""
    return host.rpartition('-compute')[0] or host


def marker_position(count, limit):
    """How many servers come before the page reached by marker (the
    last of them is the marker): as many as the first half of the whole
    pages hold, so that the page is the middle one, or one when a single
    page holds them all."""
    return min(count, max(1, count // limit // 2 * limit))


class ServerListBenchmark:
    """Time the kinds of listing ``repeats`` times each, ``limit``
    servers a page, against the servers a project already has."""

    def __init__(self, endpoint, token, project_id, limit, repeats,
                 progress=None):
        self.endpoint = endpoint.rstrip('/')
        self.limit = limit
        self.repeats = repeats
        self.progress = progress or base.Progress()
        self.client = api_client.ComputeClient(self.endpoint, token,
                                               project_id)

    def _get(self, path, absolute=False):
        """The answer to GET ``path``, and how long it took (seconds, to
        its body parsed); BenchError unless it answered 200."""
        started = time.perf_counter()
        try:
            resp = self.client.request('GET', path, absolute=absolute)
        except (OSError, http.client.HTTPException) as exc:
            raise base.BenchError('GET %s%s found no API: %s' % (
                self.endpoint, path, exc or type(exc).__name__))
        took = time.perf_counter() - started
        if resp.status != 200:
            raise base.BenchError('GET %s%s answered %d: %s' % (
                self.endpoint, path, resp.status, resp.error_message()))
        return resp, took

    def _every_server(self):
        """``[(id, host)]`` of every server, in the order the list gives
        them, following its next links."""
        resp, _ = self._get('/servers/detail?limit=%d' % self.limit)
        servers = []
        while True:
            servers += [(s['id'], s.get('OS-EXT-SRV-ATTR:host'))
                        for s in resp.body['servers']]
            self.progress.show('reading the server list: %d' % len(servers))
            following = api_client.next_page(resp.body)
            if following is None:
                return servers
            resp, _ = self._get(following, absolute=True)

    def kinds(self, ids):
        """``{kind: (label, path, expected length)}`` of the requests
        timed, given the servers' ids in list order."""
        count = len(ids)
        first = min(self.limit, count)
        page = '?limit=%d' % self.limit
        kinds = {'detail_first': ('detail, first page',
                                  '/servers/detail' + page, first)}
        if count:
            before = marker_position(count, self.limit)
            kinds['detail_marker'] = (
                'detail, by marker after %d' % before,
                '/servers/detail%s&marker=%s' % (page, ids[before - 1]),
                min(self.limit, count - before))
        kinds['summary_first'] = ('summary, first page', '/servers' + page,
                                  first)
        return kinds

    def run(self):
        """Read the list once, then time each kind of request in turn,
        ``repeats`` rounds; the figures as a JSON-able dict."""
        try:
            return self._run()
        finally:
            self.client.close()

    def _run(self):
        servers = self._every_server()
        per_cell = {}
        for _, host in servers:
            cell = cell_of(host) if host else 'no host'
            per_cell[cell] = per_cell.get(cell, 0) + 1
        self.progress.done('reading the server list: %d servers (%s)' % (
            len(servers), ', '.join('%s %d' % i
                                    for i in sorted(per_cell.items()))))
        kinds = self.kinds([server_id for server_id, _ in servers])
        times = {kind: [] for kind in kinds}
        lengths = {kind: set() for kind in kinds}
        for round_ in range(1, self.repeats + 1):
            for kind, (_, path, _) in kinds.items():
                resp, took = self._get(path)
                times[kind].append(took * 1000)
                lengths[kind].add(len(resp.body['servers']))
            self.progress.show('timing the server list: round %d/%d'
                               % (round_, self.repeats))
        requests = {}
        for kind, (label, path, expected) in kinds.items():
            figures = stats.percentiles(times[kind])
            figures['max'] = max(times[kind], default=None)
            requests[kind] = {'label': label, 'path': path,
                              'expected_length': expected,
                              'lengths': sorted(lengths[kind]),
                              'ms': stats.rounded(figures, 2)}
        self.progress.done('timed the server list: %d rounds of %d '
                           'requests' % (self.repeats, len(kinds)))
        return {'listed': len(servers),
                'servers_per_cell': dict(sorted(per_cell.items())),
                'requests': requests}
