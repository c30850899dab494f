"""A daemon's metrics port: opened with the service, closed with it, one
per process; and API workers under gunicorn adding up."""

import logging
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import requests

from scheduler_split import conf
from scheduler_split import metrics
from scheduler_split import service
from tests.integration import backends

CONF = conf.CONF


@pytest.fixture
def metrics_port():
    port = backends.free_port()
    for option in ('scheduler_port', 'super_conductor_port',
                   'cell_conductor_port', 'compute_port'):
        CONF.set_override(option, port, group='metrics')
    yield port
    CONF.clear_override('enabled_services', group='metrics')
    for option in ('scheduler_port', 'super_conductor_port',
                   'cell_conductor_port', 'compute_port'):
        CONF.clear_override(option, group='metrics')


def _scrape(port):
    return requests.get('http://127.0.0.1:%d/metrics' % port, timeout=5)


def _closed(port):
    with socket.socket() as sock:
        return sock.connect_ex(('127.0.0.1', port)) != 0


def test_a_daemon_serves_its_metrics_until_it_stops(metrics_port):
    svc = service.Service('super-conductor')
    svc.start(serve_metrics=True)
    try:
        resp = _scrape(metrics_port)
        assert resp.status_code == 200
        assert 'scheduler_split_conductor_builds_started_total' in resp.text
        # Every reason shows (at zero before it first happens), so that
        # an alert on its rate has a series to read.
        for reason in ('never_scheduled', 'no_host', 'host_down'):
            assert ('scheduler_split_conductor_lost_builds_failed_total{'
                    'reason="%s"} ' % reason) in resp.text
        assert _scrape_path(metrics_port, '/other').status_code == 404
    finally:
        svc.stop()
    assert _closed(metrics_port)


def _scrape_path(port, path):
    return requests.get('http://127.0.0.1:%d%s' % (port, path), timeout=5)


def test_computes_serve_nothing_unless_listed(metrics_port):
    svc = service.Service('compute-host1', kind='compute')
    svc.start(serve_metrics=True)
    try:
        assert metrics.Exporter.address() is None
        assert _closed(metrics_port)
    finally:
        svc.stop()

    CONF.set_override('enabled_services', ['compute'], group='metrics')
    svc.start(serve_metrics=True)
    try:
        assert _scrape(metrics_port).status_code == 200
    finally:
        svc.stop()
    assert _closed(metrics_port)


def test_services_of_one_process_share_its_port(metrics_port):
    first = service.Service('cell-conductor-cell1', kind='cell-conductor')
    second = service.Service('cell-conductor-cell2', kind='cell-conductor')
    first.start(serve_metrics=True)
    second.start(serve_metrics=True)
    try:
        first.stop()
        assert _scrape(metrics_port).status_code == 200
    finally:
        second.stop()
    assert _closed(metrics_port)


def test_a_taken_port_is_logged_and_the_service_runs_on(
        metrics_port, caplog):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', metrics_port))
        taken.listen()
        svc = service.Service('scheduler')
        with caplog.at_level(logging.ERROR):
            svc.start(serve_metrics=True)
        try:
            assert svc._started
            assert metrics.Exporter.address() is None
            assert ('set [metrics] scheduler_port to a free port'
                    in caplog.text)
        finally:
            svc.stop()


def test_api_workers_add_up_in_prometheus_multiproc_dir(tmp_path):
    """Two processes count requests, as two gunicorn workers would; a
    scrape of either shows the sum."""
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    count = textwrap.dedent("""
        from scheduler_split import metrics
        metrics.API_REQUESTS.labels('/v2.1/servers', 'POST', '202').inc()
        metrics.API_REQUEST_SECONDS.labels('/v2.1/servers', 'POST').observe(
            0.01)
    """)
    for _ in range(2):
        subprocess.run([sys.executable, '-c', count], env=env, check=True,
                       timeout=60)
    show = textwrap.dedent("""
        from scheduler_split import metrics
        print(metrics.exposition()[0].decode())
    """)
    out = subprocess.run([sys.executable, '-c', show], env=env, check=True,
                         timeout=60, capture_output=True, text=True).stdout
    assert ('scheduler_split_api_requests_total{method="POST",'
            'route="/v2.1/servers",status="202"} 2.0') in out
    assert ('scheduler_split_api_request_duration_seconds_count{'
            'method="POST",route="/v2.1/servers"} 2.0') in out
