"""One fixture that starts the whole system in this process."""

import contextlib
import importlib.metadata
import os
import re
import socket
import subprocess
import sys
import time

import requests
import sqlalchemy as sa

from scheduler_split.api import http_server
from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split import deployment
from scheduler_split import memory_bus
from scheduler_split import policy
from scheduler_split import rpc

CONF = conf.CONF

# The states a build may rest in; BUILD is not one of them.
FINAL = ('ACTIVE', 'ERROR')


def installed_version():
    return importlib.metadata.version('scheduler-split')


class Api:
    """A small REST client that speaks as one user of one project."""

    def __init__(self, base_url, token='admin:admin', microversion='2.96',
                 headers=None):
        self.base_url = base_url
        self.token = token
        self.headers = dict(headers or {})
        self.session = requests.Session()
        self.session.headers['X-Auth-Token'] = token
        self.session.headers['OpenStack-API-Version'] = (
            'compute %s' % microversion)
        self.session.headers.update(self.headers)

    def as_user(self, token):
        return Api(self.base_url, token)

    def at(self, microversion):
        """The same user speaking another microversion."""
        return Api(self.base_url, self.token, microversion, self.headers)

    def request(self, method, path, **kwargs):
        return self.session.request(method, self.base_url + path,
                                    timeout=30, **kwargs)

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request('POST', path, json=body, **kwargs)

    def put(self, path, body=None, **kwargs):
        return self.request('PUT', path, json=body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)

    def boot(self, name='vm', flavor='1', image='cirros', count=None,
             hints=None, **extra):
        from scheduler_split.image import catalog as images
        server = {'name': name, 'flavorRef': flavor,
                  'imageRef': images.find(image)[0], 'networks': 'none'}
        if count:
            server['min_count'] = server['max_count'] = count
        server.update(extra)
        body = {'server': server}
        if hints:
            body['os:scheduler_hints'] = hints
        resp = self.post('/v2.1/servers', body)
        assert resp.status_code == 202, resp.text
        return resp.json()['server']['id']

    def server(self, server_id):
        resp = self.get('/v2.1/servers/%s' % server_id)
        assert resp.status_code == 200, resp.text
        return resp.json()['server']

    def servers(self, **params):
        resp = self.get('/v2.1/servers/detail', params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()['servers']

    def events(self, server_id):
        """The events of the server's create action, oldest first."""
        resp = self.get('/v2.1/servers/%s/os-instance-actions' % server_id)
        assert resp.status_code == 200, resp.text
        actions = resp.json()['instanceActions']
        assert [a['action'] for a in actions] == ['create']
        resp = self.get('/v2.1/servers/%s/os-instance-actions/%s'
                        % (server_id, actions[0]['request_id']))
        assert resp.status_code == 200, resp.text
        return resp.json()['instanceAction']['events']

    def wait_for(self, server_id, statuses=FINAL, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            server = self.server(server_id)
            if server['status'] in statuses:
                return server
            if time.monotonic() > deadline:
                raise AssertionError('server %s still %s after %ss'
                                     % (server_id, server['status'],
                                        timeout))
            time.sleep(0.05)

    def wait_gone(self, server_id, timeout=30):
        deadline = time.monotonic() + timeout
        while self.get('/v2.1/servers/%s' % server_id).status_code != 404:
            if time.monotonic() > deadline:
                raise AssertionError('server %s not gone' % server_id)
            time.sleep(0.05)


def _serve(app):
    """Serve ``app`` on a free port of 127.0.0.1, as the all-in-one
    serves its API."""
    return http_server.APIServer(
        app, http_server.listen_socket('127.0.0.1', 0)).start()


def start_all_in_one(state_dir, eventlet=False, config_files=()):
    """Run ``scheduler-split-all-in-one`` as a child process; returns the
    process, the API's base URL and the lines it printed."""
    env = dict(os.environ)
    env.pop('SCHEDULER_SPLIT_EVENTLET', None)
    if eventlet:
        env['SCHEDULER_SPLIT_EVENTLET'] = '1'
    proc = subprocess.Popen(
        [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
         '--state-dir', str(state_dir), '--port', '0', '--cells', '2',
         '--hosts-per-cell', '2',
         *[a for f in config_files for a in ('--config-file', str(f))]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith('export OS_CLIENT_CONFIG_FILE='):
            url = re.search(r'compute API (http://\S+)/v2.1',
                            ''.join(lines)).group(1)
            return proc, url, lines
    proc.kill()
    raise AssertionError('all-in-one did not start:\n%s\n%s'
                         % (''.join(lines), proc.stderr.read()))


class System:
    """The all-in-one, in this process, with the API on a free port."""

    def __init__(self, state_dir, cells=2, hosts_per_cell=2):
        self.state_dir = str(state_dir)
        self.cells = cells
        self.hosts_per_cell = hosts_per_cell
        self.aio = None
        self.server = None
        self.keystone_server = None

    def start(self):
        # As the all-in-one command does: oslo.policy finds policy_file
        # through the parsed configuration. No config file is read; a
        # test sets [oslo_policy] policy_file to a file of its own.
        CONF([], default_config_files=[])
        policy.reset()
        self.aio = deployment.AllInOne(self.state_dir, self.cells,
                                       self.hosts_per_cell)
        self.aio.setup(echo=lambda line: None)
        self.aio.start()
        self.server = _serve(self.aio.wsgi_app())
        self.base_url = self.server.url
        self.aio.served_at(self.base_url)
        self.api = Api(self.base_url)
        return self

    def as_keystone_user(self, user_id, project_id, roles):
        """An Api whose requests carry the identity keystonemiddleware
        hands on for a validated token with these roles, to the API's
        keystone context middleware (served on a second port)."""
        if self.keystone_server is None:
            from scheduler_split.api import auth
            from scheduler_split.api import wsgi
            from scheduler_split.compute import api as compute_api
            app = auth.KeystoneContext(wsgi.Router(compute_api.ComputeAPI()))
            self.keystone_server = _serve(app)
        return Api(self.keystone_server.url,
                   token='validated-elsewhere', headers={
                       'X-Identity-Status': 'Confirmed',
                       'X-User-Id': user_id, 'X-Project-Id': project_id,
                       'X-Roles': ','.join(roles)})

    def stop(self):
        for server in (self.server, self.keystone_server):
            if server is not None:
                server.stop(graceful=False)
        self.server = self.keystone_server = None
        if self.aio is not None:
            self.aio.stop()
            self.aio = None
        rpc.cleanup()
        engines.dispose_all()
        memory_bus.reset()
        policy.reset()

    # --- what an operator sees in the databases ----------------------------

    def scheduler_db(self):
        return CONF.scheduler_database.connection

    def allocations(self):
        """``{instance uuid: {host: {resource class: used}}}``."""
        url = self.scheduler_db()
        with engines.reader(url) as session:
            rows = session.execute(sa.text(
                'SELECT a.consumer_id, p.host, a.resource_class, a.used '
                'FROM allocations a JOIN resource_providers p '
                'ON p.id = a.resource_provider_id')).all()
        result = {}
        for consumer, host, rc, used in rows:
            result.setdefault(consumer, {}).setdefault(host, {})[rc] = used
        return result

    def allocations_after_settling(self, expected, timeout=10):
        """``allocations()`` once it equals ``expected``, or at the
        timeout: for paths that release a claim just after the state a
        user sees."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.allocations()
            if found == expected or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def cell_of(self, server_id):
        """The name of the cell whose instance mapping holds the server."""
        with engines.reader(CONF.api_database.connection) as session:
            row = session.execute(sa.text(
                'SELECT c.name FROM instance_mappings m JOIN cell_mappings c '
                'ON c.id = m.cell_id WHERE m.instance_uuid = :u'),
                {'u': server_id}).first()
        return row[0] if row else None


def nova_error(resp, status, name):
    """The message of an error answer in Nova's shape (one key naming the
    fault, with its code and a message, and no traceback)."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert list(body) == [name]
    assert body[name]['code'] == status
    assert body[name]['message']
    assert 'Traceback' not in resp.text
    return body[name]['message']


def processes_naming(text):
    """Pids of the running processes whose command line holds ``text``
    (a scratch directory, say): what a run left behind."""
    found = []
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def nobody_listens():
    """A PostgreSQL URL on a port of this machine where nothing listens."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    return 'postgresql+psycopg2://nova:secret@127.0.0.1:%d/nova' % port


@contextlib.contextmanager
def cell_database_down(system, cell_name=None):
    """The engines of the cell ``cell_name`` (by default the last) of
    ``system`` replaced by ones whose server is gone: what the API meets
    when that database is stopped."""
    cells = [cell for cell in system.aio.cells
             if cell_name in (None, cell.name)]
    url = cells[-1].database_connection
    gone = sa.create_engine(nobody_listens())
    saved = {key: engines._engines.get(key)
             for key in ((url, True), (url, False), (url, engines.LOOK))}
    for key in saved:
        engines._engines[key] = gone
    try:
        yield
    finally:
        for key, engine in saved.items():
            if engine is None:
                engines._engines.pop(key, None)
            else:
                engines._engines[key] = engine
        gone.dispose()
