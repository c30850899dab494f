"""The devstack plugin, driven through devstack's real libraries.

``run_plugin.sh`` sources devstack and runs the plugin's phases as
stack.sh, unstack.sh and clean.sh would. Devstack's own functions create
the RabbitMQ vhosts and the databases (MariaDB, devstack's default
``mysql``, for one test; PostgreSQL for the other) on private instances
that listen on the ports devstack assumes (5672, 3306, 5432), write the
``devstack@`` units and start them with systemctl3. Then a server boots
through the REST API, and after unstack and clean nothing is left running.
"""

import configparser
import os
import pathlib
import shutil
import socket
import stat
import subprocess
import sys
import time

import pytest
import requests

from scheduler_split.image import catalog as images
from tests.devstack import locate
from tests.integration import backends
from tests import keystone as keystone_mod

DEVSTACK_DIR = locate.devstack_dir()
BIN = pathlib.Path(sys.executable).parent
DRIVER = pathlib.Path(__file__).with_name('run_plugin.sh')
RABBIT_PORT = 5672
# devstack's database service -> the server, the port devstack assumes
# for it, and the URL scheme the plugin writes.
DATABASES = {
    'mysql': (backends.MariaDB, 3306, 'mysql+pymysql://'),
    'postgresql': (backends.PostgreSQL, 5432, 'postgresql+psycopg2://'),
}
DATABASE_PASSWORD = 'devstack-db'      # run_plugin.sh's

pytestmark = [
    pytest.mark.devstack,
    pytest.mark.skipif(DEVSTACK_DIR is None, reason=locate.SKIP_REASON),
    pytest.mark.skipif(os.geteuid() != 0, reason='runs devstack as root '
                       '(STACK_USER=root, PostgreSQL via runuser)'),
]


class Topology:
    """The cells and hosts the plugin is asked for, and the units that
    follow."""

    def __init__(self, cells, computes_per_cell):
        self.cells = ['cell%d' % i for i in range(1, cells + 1)]
        self.hosts = ['%s-compute%d' % (cell, i) for cell in self.cells
                      for i in range(1, computes_per_cell + 1)]
        self.settings = {'SCHEDULER_SPLIT_NUM_CELLS': str(cells),
                         'SCHEDULER_SPLIT_COMPUTES_PER_CELL':
                             str(computes_per_cell)}
        names = ['ss-api', 'ss-sched', 'ss-super-cond']
        names += ['ss-cond-%s' % cell for cell in self.cells]
        names += ['ss-cpu-%s' % host for host in self.hosts]
        self.units = {'devstack@%s.service' % name for name in names}


def _port_taken(port):
    with socket.socket() as sock:
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _tools():
    """What the driver needs besides devstack: gawk (mawk breaks
    devstack's merge_config_file) and systemctl3 (the test extra
    docker-systemctl-replacement)."""
    if shutil.which('gawk') is None:
        backends.install_packages('devstack')
    if not (BIN / 'systemctl3').exists():
        pytest.fail('systemctl3 is missing: install the test extra '
                    "(pip install -e '.[test]')")


def _rabbitmqctl_on_path(bin_dir, rabbit):
    """A ``rabbitmqctl`` that reaches the private RabbitMQ, for devstack's
    ``sudo rabbitmqctl`` calls."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / 'rabbitmqctl'
    exports = ''.join('export %s=%s\n' % (key, _quote(rabbit.env[key]))
                      for key in sorted(rabbit.env)
                      if key == 'HOME' or key.startswith(('RABBITMQ_',
                                                          'ERL_')))
    path.write_text('#!/bin/sh\n%sexec %s/rabbitmqctl "$@"\n'
                    % (exports, backends.RabbitMQ.BIN))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _quote(value):
    return "'%s'" % value.replace("'", "'\\''")


class Devstack:
    """One run of the plugin under a scratch root."""

    def __init__(self, base, api_port, topology, keystone=None,
                 database='postgresql'):
        self.root = base / 'root'
        self.log_dir = base / 'logs'
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.api_url = 'http://127.0.0.1:%d' % api_port
        self.conf_dir = self.root / 'etc' / 'scheduler-split'
        self.env = dict(
            os.environ,
            DEVSTACK_DIR=str(DEVSTACK_DIR), SS_REPO=str(locate.ROOT),
            SS_ROOT=str(self.root), SS_VENV=sys.prefix,
            SS_API_PORT=str(api_port), SS_DATABASE=database,
            PATH='%s:%s:%s' % (base / 'bin', BIN, os.environ['PATH']),
            **topology.settings)
        self.keystone = keystone
        if keystone is not None:
            self.env.update(SS_KEYSTONE_URL=keystone.url,
                            SS_ADMIN_PASSWORD=keystone.admin_password)

    def run(self, mode, timeout=240):
        log = self.log_dir / ('%s.log' % mode)
        with open(log, 'w') as out:
            result = subprocess.run(
                ['bash', str(DRIVER), mode], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, timeout=timeout,
                start_new_session=True)
        assert result.returncode == 0, (
            '%s failed (%s); the last lines of %s:\n%s' % (
                mode, result.returncode, log,
                '\n'.join(log.read_text().splitlines()[-40:])))
        return log.read_text()

    def systemctl(self, *args):
        return subprocess.run(
            [str(BIN / 'systemctl3'), '--root=%s' % self.root, *args],
            capture_output=True, text=True, timeout=120)

    def units(self):
        """{unit: (active, sub)} of every devstack@ unit written."""
        out = self.systemctl('list-units', '--all', '--no-legend').stdout
        units = {}
        for line in out.splitlines():
            fields = line.split()
            if fields and fields[0].startswith('devstack@'):
                units[fields[0]] = (fields[2], fields[3])
        return units

    def processes(self):
        """Pids of processes started for this run: their command line or
        environment names its scratch root."""
        marker = str(self.root).encode()
        pids = []
        for entry in pathlib.Path('/proc').iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / 'cmdline').read_bytes() or \
                        marker in (entry / 'environ').read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids

    def kill_everything(self):
        """Whatever a failed run left behind."""
        for unit in self.units():
            self.systemctl('stop', unit)
        for pid in self.processes():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def _boot(api_url, headers):
    # The API checks imageRef against its built-in catalog, which only the
    # all-in-one serves.
    image = images.find('cirros')[0]
    headers = dict(headers, **{'OpenStack-API-Version': 'compute 2.96'})
    created = requests.post(api_url + '/v2.1/servers', headers=headers,
                            timeout=30, json={'server': {
                                'name': 'devstack-vm1', 'flavorRef': '1',
                                'imageRef': image, 'networks': 'none'}})
    assert created.status_code == 202, created.text
    server_id = created.json()['server']['id']
    deadline = time.monotonic() + 60
    while True:
        server = requests.get(api_url + '/v2.1/servers/' + server_id,
                              headers=headers, timeout=30).json()['server']
        if server['status'] != 'BUILD' or time.monotonic() > deadline:
            return server
        time.sleep(0.5)


def _ini(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return {s: dict(parser.items(s, raw=True)) for s in parser.sections()} \
        | {'DEFAULT': dict(parser.defaults())}


@pytest.fixture
def backing_services(request, tmp_path):
    """RabbitMQ and the database server (devstack's service name, the
    test's parameter) on the ports devstack's libraries assume; the
    service name."""
    database = request.param
    server_class, db_port, _ = DATABASES[database]
    for port in (RABBIT_PORT, db_port):
        if _port_taken(port):
            pytest.skip('port %d of 127.0.0.1 is in use: devstack assumes '
                        'it for its own RabbitMQ or database' % port)
    _tools()
    rabbit = backends.RabbitMQ(str(tmp_path), port=RABBIT_PORT)
    server = server_class(port=db_port)
    try:
        rabbit.start()
        server.start()
        if database == 'mysql':
            # devstack's lib/databases/mysql connects as root with its
            # password, over TCP.
            server.sql("ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '%s'"
                       % DATABASE_PASSWORD)
        _rabbitmqctl_on_path(tmp_path / 'bin', rabbit)
        yield database
    finally:
        rabbit.stop()
        server.stop()


def _stack_boot_unstack(tmp_path, topology, database, keystone=None):
    stack = Devstack(tmp_path, backends.free_port(), topology, keystone,
                     database)
    try:
        stack.run('stack')

        # Every service is its own devstack@ unit, and each one runs.
        units = stack.units()
        assert set(units) == topology.units
        assert all(state == ('active', 'running')
                   for state in units.values()), units

        # Cell services are given their own cell's bus only, and the cell
        # conductor its cell's database; a compute holds no database
        # credentials at all.
        main = _ini(stack.conf_dir / 'scheduler-split.conf')
        api_bus = main['DEFAULT']['transport_url']
        api_db = main['api_database']['connection']
        assert api_db.startswith(DATABASES[database][2]), api_db
        if database == 'mysql':
            assert api_db.endswith('?charset=utf8mb4'), api_db
        for cell in topology.cells:
            cell_conf = stack.conf_dir / 'cells' / ('%s.conf' % cell)
            computes = [stack.conf_dir / 'computes' / ('%s.conf' % host)
                        for host in topology.hosts
                        if host.startswith(cell + '-')]
            for path in [cell_conf] + computes:
                conf = _ini(path)
                assert conf['DEFAULT']['transport_url'].endswith(
                    '/scheduler_split_%s' % cell)
                if path == cell_conf:
                    assert conf['database']['connection'].startswith(
                        api_db.rsplit('/', 1)[0] + '/scheduler_split_%s?'
                        % cell)
                else:
                    assert 'database' not in conf, path
                assert 'api_database' not in conf
                assert 'scheduler_database' not in conf
                assert api_bus not in path.read_text()
        for cell in topology.cells:
            unit = (stack.root / 'etc' / 'systemd' / 'system' /
                    ('devstack@ss-cond-%s.service' % cell)).read_text()
            assert 'scheduler-split.conf' not in unit

        api_conf = _ini(stack.conf_dir / 'api.conf')
        if keystone is None:
            assert api_conf['api']['auth_strategy'] == 'noauth2'
            headers = {}
        else:
            # The compute service is in the catalog, and the API checks
            # tokens with its own service user.
            admin = {'X-Auth-Token': keystone.token()}
            services = requests.get(
                keystone.auth_url + '/services', headers=admin,
                params={'type': 'compute'}, timeout=30).json()['services']
            assert [s['name'] for s in services] == ['scheduler-split']
            endpoints = requests.get(
                keystone.auth_url + '/endpoints', headers=admin,
                params={'service_id': services[0]['id'],
                        'interface': 'public'}, timeout=30).json()
            assert [e['url'] for e in endpoints['endpoints']] == [
                stack.api_url + '/v2.1']
            assert api_conf['api']['auth_strategy'] == 'keystone'
            assert api_conf['keystone_authtoken']['username'] == \
                'scheduler-split'
            for path in stack.conf_dir.rglob('*.conf'):
                if path.name != 'api.conf':
                    assert 'keystone_authtoken' not in path.read_text()
            denied = requests.get(stack.api_url + '/v2.1/servers',
                                  timeout=30)
            assert denied.status_code == 401, denied.text
            headers = admin
        server = _boot(stack.api_url, headers)
        assert server['status'] == 'ACTIVE', server
        assert server['OS-EXT-SRV-ATTR:host'] in topology.hosts

        # Tempest is told what this compute API offers.
        tempest = _ini(stack.root / 'tempest' / 'etc' / 'tempest.conf')
        assert tempest['compute']['flavor_ref'] == '1'
        assert tempest['compute']['max_microversion'] == '2.96'
        assert tempest['compute-feature-enabled']['resize'] == 'True'
        assert tempest['compute-feature-enabled']['live_migration'] == \
            'True'
        assert tempest['compute-feature-enabled'][
            'block_migration_for_live_migration'] == 'False'
        for feature in ('console_output', 'shelve', 'snapshot'):
            assert tempest['compute-feature-enabled'][feature] == 'True'

        stack.run('unstack')
        units = stack.units()
        assert set(units) == topology.units
        assert all(state[0] != 'active' for state in units.values()), units
        assert stack.processes() == []
        with pytest.raises(requests.ConnectionError):
            requests.get(stack.api_url + '/', timeout=5)

        stack.run('clean')
        assert stack.units() == {}
        assert not stack.conf_dir.exists()
    finally:
        stack.kill_everything()
    assert stack.processes() == []


@pytest.mark.parametrize('backing_services', ['mysql'], indirect=True)
def test_plugin_on_mysql_with_fewer_cells_and_hosts_and_noauth2(
        tmp_path, backing_services):
    # devstack's default database; without keystone the API trusts
    # noauth2; the counts are settings.
    _stack_boot_unstack(tmp_path, Topology(cells=1, computes_per_cell=1),
                        backing_services)


@pytest.fixture
def keystone(tmp_path):
    """A real Keystone (PyPI's, installed on first use)."""
    ks = keystone_mod.Keystone(str(tmp_path))
    ks.start()
    try:
        yield ks
    finally:
        ks.stop()


@pytest.mark.keystone
@pytest.mark.parametrize('backing_services', ['postgresql'], indirect=True)
def test_plugin_stacks_boots_a_server_with_keystone_tokens_and_unstacks(
        tmp_path, backing_services, keystone):
    # The defaults: two cells of two computes, on PostgreSQL.
    _stack_boot_unstack(tmp_path, Topology(cells=2, computes_per_cell=2),
                        backing_services, keystone)
