"""The HTTP server of the all-in-one and scheduler-split-api, as clients
and operators meet it: many clients at once, oversized requests, a stop
while requests are in hand, a port already taken."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from scheduler_split.api import http_server
from scheduler_split import conf
from tests.functional import fixtures

pytestmark = [pytest.mark.functional, pytest.mark.serial]

CONF = conf.CONF

CLIENTS = 256

# Room for every server of the crowd, and no quota in the way: what is
# tested is the server, not the capacity of four fake hosts.
CROWD_CONF = """\
[fake_driver]
spawn_delay = 0
vcpus = 64
memory_mb = 65536
local_gb = 1000
[quota]
instances = -1
cores = -1
ram = -1
"""


def _nova_error(status, body):
    """The error's message when ``body`` is Nova's error shape for
    ``status``, else an AssertionError."""
    document = json.loads(body)
    assert len(document) == 1, document
    (fault,) = document.values()
    assert fault['code'] == status, document
    assert fault['message'], document
    return fault['message']


def _client(port, number, start, answers, failures):
    """One client: a POST of a server, then a server list and the version
    document on the same keep-alive connection."""
    headers = {'X-Auth-Token': 'admin:admin',
               'Content-Type': 'application/json',
               'OpenStack-API-Version': 'compute 2.96'}
    body = json.dumps({'server': {
        'name': 'crowd-%d' % number, 'flavorRef': '1',
        'imageRef': 'cirros', 'networks': 'none'}})
    start.wait()
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
    try:
        for method, path, payload in (
                ('POST', '/v2.1/servers', body),
                ('GET', '/v2.1/servers/detail?limit=5', None),
                ('GET', '/v2.1', None)):
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            answers.append((method, resp.status, resp.read(),
                            resp.getheader('Connection')))
    except Exception as exc:
        failures.append('client %d: %r' % (number, exc))
    finally:
        conn.close()


def test_256_clients_at_once_all_get_an_answer_and_every_boot_settles(
        tmp_path):
    config = tmp_path / 'crowd.conf'
    config.write_text(CROWD_CONF)
    proc, url, _ = fixtures.start_all_in_one(tmp_path / 'state',
                                             config_files=[config])
    try:
        port = int(url.rsplit(':', 1)[1])
        start = threading.Barrier(CLIENTS)
        answers, failures = [], []
        threads = [threading.Thread(target=_client, args=(
            port, n, start, answers, failures)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)

        assert failures == []
        assert len(answers) == 3 * CLIENTS
        accepted = 0
        for method, status, body, _ in answers:
            if method == 'POST' and status == 202:
                accepted += 1
            elif method == 'GET':
                assert status == 200, body
            else:
                assert 400 <= status < 500, body
                _nova_error(status, body)
        assert accepted > 0
        # Every connection stayed open for the client's next request.
        assert all(connection != 'close'
                   for _, _, _, connection in answers)

        api = fixtures.Api(url)
        deadline = time.monotonic() + 300
        while True:
            servers = api.get('/v2.1/servers/detail').json()['servers']
            if all(s['status'] in fixtures.FINAL for s in servers) or \
                    time.monotonic() > deadline:
                break
            time.sleep(1)
        assert len(servers) == accepted
        assert [s['name'] for s in servers
                if s['status'] not in fixtures.FINAL] == []
        for server in servers:
            if server['status'] == 'ERROR':
                assert server['fault']['message'], server
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert proc.returncode == 0


def _slow_app(release):
    def app(environ, start_response):
        if environ['PATH_INFO'] == '/slow':
            release.wait(10)
        start_response('200 OK', [('Content-Type', 'text/plain')])
        return [b'done ' + environ['PATH_INFO'].encode()]
    return app


def _raw(port, data):
    """What the server answers to ``data`` sent on a new connection."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as sock:
        sock.sendall(data)
        out = b''
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                out += chunk
        except ConnectionResetError:
            pass
    head, _, body = out.partition(b'\r\n\r\n')
    return int(head.split()[1]), body


@pytest.fixture
def served():
    """A slow application on the API's HTTP server; ``release`` lets its
    /slow requests finish."""
    release = threading.Event()
    server = http_server.APIServer(
        _slow_app(release), http_server.listen_socket('127.0.0.1', 0))
    server.start()
    yield server, release
    release.set()
    server.stop(graceful=False)
    CONF.clear_override('shutdown_timeout', group='wsgi')


def test_a_stop_answers_the_requests_in_hand_and_takes_no_new_one(served):
    server, release = served
    answers = {}

    def slow():
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=20)
        conn.request('GET', '/slow')
        resp = conn.getresponse()
        answers['slow'] = (resp.status, resp.read())

    idle = http.client.HTTPConnection('127.0.0.1', server.port, timeout=20)
    idle.request('GET', '/fast')
    assert idle.getresponse().read() == b'done /fast'
    client = threading.Thread(target=slow)
    client.start()
    time.sleep(0.3)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    time.sleep(0.3)
    # Stopping: no new connection is taken, the idle one is closed ...
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(('127.0.0.1', server.port), timeout=5)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        idle.request('GET', '/fast')
        idle.getresponse()
    # ... and the request in hand is answered.
    assert stopper.is_alive()
    release.set()
    client.join(10)
    stopper.join(10)
    assert answers['slow'] == (200, b'done /slow')
    assert not stopper.is_alive()


def test_a_stop_gives_up_on_a_request_after_shutdown_timeout(served):
    server, release = served
    CONF.set_override('shutdown_timeout', 1, group='wsgi')
    failed = []

    def slow():
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=20)
        try:
            conn.request('GET', '/slow')
            conn.getresponse().read()
        except (http.client.HTTPException, ConnectionError) as exc:
            failed.append(exc)

    client = threading.Thread(target=slow)
    client.start()
    time.sleep(0.3)
    started = time.monotonic()
    server.stop()
    assert 0.9 < time.monotonic() - started < 5
    client.join(10)
    assert len(failed) == 1


@pytest.mark.parametrize('request_bytes, status', [
    (b'GET /' + b'a' * 9000 + b' HTTP/1.1\r\nHost: x\r\n\r\n', 414),
    (b'GET / HTTP/1.1\r\nHost: x\r\nX-Big: ' + b'a' * 70000 + b'\r\n\r\n',
     431),
    (b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n', 413),
    (b'GARBAGE\r\n\r\n', 400),
])
def test_requests_over_the_limits_get_nova_errors(served, request_bytes,
                                                  status):
    server, _ = served
    answered, body = _raw(server.port, request_bytes)
    assert answered == status
    assert _nova_error(status, body)


def test_a_request_line_limit_is_an_option(served):
    server, _ = served
    line = (b'GET /' + b'a' * 3000 +
            b' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert _raw(server.port, line)[0] == 200
    CONF.set_override('max_request_line', 2048, group='wsgi')
    try:
        assert _raw(server.port, line)[0] == 414
    finally:
        CONF.clear_override('max_request_line', group='wsgi')


def _script(name, *args, **kwargs):
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), name), *args],
        capture_output=True, text=True, timeout=120, **kwargs)


def test_a_taken_port_fails_the_all_in_one_at_once_saying_why(tmp_path):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _script('scheduler-split-all-in-one', '--state-dir',
                       str(tmp_path), '--port', str(port))
    assert done.returncode == 1
    assert 'Address already in use' in done.stderr
    assert '--port 0' in done.stderr
    assert 'Traceback' not in done.stderr
    # Nothing was built before the port was tried.
    assert os.listdir(tmp_path) == []


def test_a_taken_port_fails_the_api_saying_why(tmp_path):
    config = tmp_path / 'api.conf'
    config.write_text('[api_database]\nconnection = sqlite:///%s\n'
                      % (tmp_path / 'api.db'))
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _script('scheduler-split-api', '--config-file', str(config),
                       '--bind-port', str(port))
    assert done.returncode == 1
    assert 'Address already in use' in done.stderr
    assert 'Traceback' not in done.stderr


def test_the_api_serves_on_its_bind_port_and_stops_on_sigterm(tmp_path):
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    config = tmp_path / 'api.conf'
    config.write_text('[api]\nauth_strategy = noauth2\n'
                      '[api_database]\nconnection = sqlite:///%s\n'
                      % (tmp_path / 'api.db'))
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable),
                      'scheduler-split-api'),
         '--config-file', str(config), '--bind-port', str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection('127.0.0.1', port,
                                                  timeout=5)
                conn.request('GET', '/v2.1')
                resp = conn.getresponse()
                break
            except ConnectionRefusedError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert resp.status == 200
        assert json.loads(resp.read())['version']['id'] == 'v2.1'
        assert resp.getheader('Server') == 'scheduler-split'
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


@pytest.mark.parametrize('script', [
    'scheduler-split-api', 'scheduler-split-conductor',
    'scheduler-split-scheduler', 'scheduler-split-compute',
    'scheduler-split-all-in-one', 'scheduler-split-bench',
    'scheduler-split-manage'])
def test_every_service_says_what_it_is_and_its_version(script):
    helped = _script(script, '--help')
    assert helped.returncode == 0, helped.stderr
    usage, _, rest = helped.stdout.partition('\n\n')
    description = rest.strip().splitlines()[0]
    assert len(description) > 10 and description[0].isupper(), rest
    versioned = _script(script, '--version')
    assert versioned.returncode == 0, versioned.stderr
    assert fixtures.installed_version() in (versioned.stdout +
                                            versioned.stderr)


def test_the_api_help_shows_where_it_listens():
    helped = _script('scheduler-split-api', '--help')
    assert '--bind-host' in helped.stdout
    assert '--bind-port' in helped.stdout


def test_a_missing_config_file_is_one_line_on_stderr():
    done = _script('scheduler-split-scheduler', '--config-file',
                   '/nonexistent/scheduler-split.conf')
    assert done.returncode != 0
    assert 'Traceback' not in done.stderr
    assert '/nonexistent/scheduler-split.conf' in done.stderr


def test_a_service_that_cannot_start_says_why_on_stderr(tmp_path):
    # Databases with no schema: the scheduler finds no cell mappings.
    config = tmp_path / 'scheduler.conf'
    config.write_text('[DEFAULT]\nlog_file = %s\n'
                      'transport_url = memory:///api\n'
                      '[api_database]\nconnection = sqlite:///%s\n'
                      '[scheduler_database]\nconnection = sqlite:///%s\n'
                      % (tmp_path / 'log', tmp_path / 'api.db',
                         tmp_path / 'scheduler.db'))
    done = _script('scheduler-split-scheduler', '--config-file',
                   str(config))
    assert done.returncode == 1
    assert 'cannot start' in done.stderr
    assert str(tmp_path / 'log') in done.stderr
    assert 'Traceback' not in done.stderr
