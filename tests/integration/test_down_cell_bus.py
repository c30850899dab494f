"""One cell's bus cut, in a deployment of separate processes on
RabbitMQ and PostgreSQL: every client of that cell's bus (the API, the
super-conductor and the scheduler, the cell's conductor and compute)
reaches it through a forwarder that the test cuts, so their connections
are reset and new ones refused, while the broker and the other cell go
on.

While it is cut: the scheduler says once that the cell cannot be
confirmed and boots land in the other cell; the servers of both cells
are listed; an action on a server of the cut cell answers 503 within
``[DEFAULT] cell_rpc_timeout`` and changes nothing; a delete is
accepted and finished by its compute once the bus is back; a scheduler
restarted meanwhile starts and schedules. Once the bus is back, the
cell takes builds and actions again, and its return is logged once."""

import time

import pytest

from tests.functional import fixtures
from tests.integration import deployment as deployment_mod
from tests.integration import tcp_proxy

# Bounds of seconds an operator reads: measured with the machine alone.
pytestmark = [pytest.mark.integration, pytest.mark.serial]

DOWN = 'cell2'
# [DEFAULT] cell_rpc_timeout, as shipped.
CELL_RPC_TIMEOUT = 15


class _CutCellBus(deployment_mod.Deployment):
    """The deployment, with the bus of cell DOWN behind a forwarder."""

    def setup(self):
        self.proxy = tcp_proxy.Proxy(('127.0.0.1', self.rabbit.port)).start()
        add_vhost = self.rabbit.add_vhost

        def add_vhost_behind_proxy(name):
            url = add_vhost(name)
            if name != DOWN:
                return url
            return url.replace(':%d/' % self.rabbit.port,
                               ':%d/' % self.proxy.port)

        self.rabbit.add_vhost = add_vhost_behind_proxy
        return super().setup()

    def teardown(self):
        try:
            self.proxy.mend()
        except OSError:
            pass
        super().teardown()


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    dep = _CutCellBus(tmp_path_factory.mktemp('down-cell-bus'),
                      hosts_per_cell=1)
    yield from deployment_mod.running_with_cell_checks(dep)


def _zone_host(dep, cell):
    host = '%s-compute1' % cell
    return '%s:%s' % ('edge' if host == dep.EDGE_HOST else 'nova', host)


@pytest.fixture(scope='module')
def servers(deployment):
    api = fixtures.Api(deployment.base_url)
    found = {cell: api.boot(name='on-' + cell,
                            availability_zone=_zone_host(deployment, cell))
             for cell in deployment.CELLS}
    found['doomed'] = api.boot(name='doomed',
                               availability_zone=_zone_host(deployment, DOWN))
    for server_id in found.values():
        assert api.wait_for(server_id, timeout=60)['status'] == 'ACTIVE'
    return found


def _timed(call, *args, **kwargs):
    started = time.monotonic()
    result = call(*args, **kwargs)
    return result, time.monotonic() - started


def test_a_cut_cell_bus_fails_nothing_else(deployment, servers):
    dep = deployment
    api = fixtures.Api(dep.base_url)
    cut = servers[DOWN]
    sizes = dep.log_sizes()
    since = dep.log_size('scheduler')
    dep.proxy.cut()
    try:
        dep.wait_for_log('scheduler', 'Cell %s (' % DOWN, since, timeout=15)
        dep.wait_for_log('scheduler', 'its bus cannot be reached', since,
                         timeout=1)

        resp, took = _timed(api.get, '/v2.1/servers/detail')
        assert resp.status_code == 200 and took < 5, (resp.text, took)
        listed = {s['id']: s['status'] for s in resp.json()['servers']}
        assert listed == {server_id: 'ACTIVE'
                          for server_id in servers.values()}

        booted = api.boot(name='while-%s-bus-is-cut' % DOWN)
        server = api.wait_for(booted, timeout=60)
        assert server['status'] == 'ACTIVE', server
        assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'

        # An action that cannot reach the server's compute changes
        # nothing and says so, on time.
        resp, took = _timed(api.post, '/v2.1/servers/%s/action' % cut,
                            {'os-stop': None})
        assert resp.status_code == 503, resp.text
        assert took < CELL_RPC_TIMEOUT, took
        assert 'could not be reached; nothing was done' in \
            resp.json()['serviceUnavailable']['message']
        server = api.server(cut)
        assert (server['status'], server['OS-EXT-STS:task_state']) == (
            'ACTIVE', None)
        resp, took = _timed(api.post, '/v2.1/servers/%s/action' % cut,
                            {'os-getConsoleOutput': {}})
        assert resp.status_code == 503, resp.text
        assert took < CELL_RPC_TIMEOUT, took

        # A delete is under way: its compute finishes it.
        resp, took = _timed(api.delete, '/v2.1/servers/%s'
                            % servers['doomed'])
        assert resp.status_code == 204, resp.text
        assert took < CELL_RPC_TIMEOUT, took

        # A scheduler started while the bus is cut starts and schedules.
        dep.stop('scheduler')
        restarted = dep.log_size('scheduler')
        dep.start('scheduler')
        dep.wait_for_log('scheduler', 'scheduler started', restarted,
                         timeout=30)
        dep.wait_for_log('scheduler', 'Cell %s (' % DOWN, restarted,
                         timeout=15)
        booted = api.boot(name='after-a-scheduler-restart')
        server = api.wait_for(booted, timeout=60)
        assert server['status'] == 'ACTIVE', server
        assert server['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
    finally:
        dep.proxy.mend()

    dep.wait_for_log('scheduler', 'answers again', restarted, timeout=15)
    api.wait_gone(servers['doomed'], timeout=90)
    dep.wait_for_hosts(dep.hosts, timeout=60)
    booted = api.boot(name='on-%s-again' % DOWN,
                      availability_zone=_zone_host(dep, DOWN))
    server = api.wait_for(booted, timeout=60)
    assert server['status'] == 'ACTIVE', server
    assert server['OS-EXT-SRV-ATTR:host'] == '%s-compute1' % DOWN
    assert api.post('/v2.1/servers/%s/action' % cut,
                    {'os-stop': None}).status_code == 202
    assert api.wait_for(cut, statuses=('SHUTOFF',),
                        timeout=30)['status'] == 'SHUTOFF'

    written = dep.written_since(sizes)
    scheduler_log = written['scheduler.log']
    # Once each: the first scheduler saw the cell go, the restarted one
    # saw it down from its start and back.
    assert scheduler_log.count('cannot be confirmed') == 2, scheduler_log
    assert scheduler_log.count('answers again;') == 1, scheduler_log
    for name in ('scheduler.log', 'api.log', 'super-conductor.log'):
        assert 'Traceback' not in written[name], (name, written[name])
