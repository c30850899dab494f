"""RabbitMQ, PostgreSQL and MariaDB for the integration tests, private and
local.

Each is installed from Debian's packages if missing, then run from a
temporary directory bound to 127.0.0.1 on free ports, and stopped (its
directory removed) at the end. Nothing touches a system-wide instance.
"""

import glob
import os
import pathlib
import pwd
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time


# Ports this process handed out: not handed out twice.
_HANDED_OUT = set()
# Where the search for a free port starts.
_LOWEST_PORT = 10000


def _ephemeral_range():
    """The kernel's range for the local ports of outgoing connections."""
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
            low, high = f.read().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _worker_range():
    """Where this test process picks ports: below the ephemeral range,
    and with pytest-xdist a slice of it of this worker's own, so that
    two workers never hand out one port to two servers."""
    low, high = _LOWEST_PORT, _ephemeral_range()[0]
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    count = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT') or 1)
    if worker.startswith('gw') and count > 1:
        width = (high - low) // count
        low += int(worker[2:]) * width
        high = low + width
    return low, high


def free_port():
    """A TCP port of 127.0.0.1 free now, for a server started later.

    Below the kernel's ephemeral range when it can be: a port bind(0)
    gives comes from that range, where any outgoing connection (to
    RabbitMQ, to PostgreSQL) may take it as its local port before the
    server meant to listen on it starts ("Address already in use").
    """
    low, high = _worker_range()
    for _ in range(1000 if high > low else 0):
        port = random.randrange(low, high)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(('127.0.0.1', port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


INSTALL = pathlib.Path(__file__).parents[2] / 'tools' / 'install-test-packages'


def install_packages(*profiles):
    """Install the missing Debian packages of ``profiles`` of bindep.txt
    with tools/install-test-packages (needs root and apt-get)."""
    done = subprocess.run(['bash', str(INSTALL), *profiles],
                          stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise RuntimeError('installing the packages of %s failed: %s'
                           % (', '.join(profiles), done.stderr.strip()))


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise RuntimeError('%s did not come up within %ss' % (what, timeout))


class RabbitMQ:
    BIN = '/usr/lib/rabbitmq/bin'
    # What the node's commands run behind: ``ip netns exec <namespace>``
    # for a node on a host of its own.
    prefix = ()

    def __init__(self, base_dir, port=None):
        self.base = os.path.join(base_dir, 'rabbitmq')
        self.port = port or free_port()
        self.proc = None

    def _make_env(self):
        os.makedirs(self.base, exist_ok=True)
        return dict(
            os.environ,
            HOME=self.base,
            RABBITMQ_NODENAME='scheduler-split-test-%d@localhost' % self.port,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(free_port()),
            ERL_EPMD_ADDRESS='127.0.0.1',
            ERL_EPMD_PORT=str(free_port()),
            RABBITMQ_MNESIA_BASE=os.path.join(self.base, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.base, 'log'),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.base,
                                                       'enabled_plugins'),
            RABBITMQ_CONFIG_FILE=os.path.join(self.base, 'rabbitmq'),
            RABBITMQ_ADVANCED_CONFIG_FILE=os.path.join(self.base,
                                                       'advanced.config'),
            RABBITMQ_CONF_ENV_FILE=os.path.join(self.base, 'env.conf'),
        )

    def ctl(self, *args):
        return subprocess.run(
            [*self.prefix, os.path.join(self.BIN, 'rabbitmqctl'), *args],
            env=self.env, check=True, capture_output=True, text=True,
            timeout=120)

    def start(self):
        if not os.path.exists(os.path.join(self.BIN, 'rabbitmq-server')):
            install_packages('rabbitmq')
        self.env = self._make_env()
        with open(os.path.join(self.base, 'enabled_plugins'), 'w') as f:
            f.write('[].\n')
        with open(os.path.join(self.base, 'rabbitmq.conf'), 'w') as f:
            f.write(self._config())
        with open(os.path.join(self.base, 'advanced.config'), 'w') as f:
            f.write(self._advanced_config())
        open(os.path.join(self.base, 'env.conf'), 'w').close()
        return self._launch('w')

    def _config(self):
        return ('loopback_users = none\n'
                'listeners.tcp.default = 127.0.0.1:%d\n' % self.port)

    def _advanced_config(self):
        return '[].\n'

    def _launch(self, log_mode):
        """Start the node and wait until it serves."""
        self.log = open(os.path.join(self.base, 'server.out'), log_mode)
        self.proc = subprocess.Popen(
            [*self.prefix, os.path.join(self.BIN, 'rabbitmq-server')],
            env=self.env,
            stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 180
        while True:
            # await_startup gives up at once while the node has not
            # registered with epmd yet.
            try:
                self.ctl('await_startup', '--timeout', '60')
                return self
            except subprocess.CalledProcessError:
                if self.proc.poll() is not None or \
                        time.monotonic() > deadline:
                    raise RuntimeError(
                        'RabbitMQ did not start; see %s'
                        % os.path.join(self.base, 'server.out'))
                time.sleep(1)

    def add_vhost(self, name):
        self.ctl('add_vhost', name)
        self.ctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*')
        return 'rabbit://guest:guest@127.0.0.1:%d/%s' % (self.port, name)

    def stop(self):
        if self.proc is None:
            return
        try:
            self.ctl('stop')
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        # epmd is started by the node and outlives it.
        subprocess.run([*self.prefix, 'epmd', '-kill'], env=self.env,
                       check=False,
                       capture_output=True)
        self.proc = None
        self.log.close()

    def restart(self):
        """Stop the broker and start it again on the same port and data
        directory, as a service restart does: durable queues keep their
        persistent messages, transient queues are gone."""
        self.stop()
        return self.start()

    def kill_and_restart(self, down=0):
        """SIGKILL the node (no clean shutdown: queues that are not
        durable, and their messages, are gone), wait ``down`` seconds,
        then start it again on the same port, node name and data
        directory."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        # The node's own children (erl_child_setup, ...) are in its group.
        deadline = time.monotonic() + 30
        while True:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                raise RuntimeError('RabbitMQ survived SIGKILL')
            time.sleep(0.1)
        self.log.close()
        time.sleep(down)
        return self._launch('a')


class PostgreSQL:

    name = 'postgresql'

    def __init__(self, base_dir=None, port=None):
        # Its own directory: the server runs as postgres, which must be
        # able to reach it (a test's tmp_path sits below a 0700 root).
        self.base = tempfile.mkdtemp(prefix='scheduler-split-pg-')
        os.chmod(self.base, 0o755)
        self.data = os.path.join(self.base, 'data')
        self.port = port or free_port()
        self.started = False

    @staticmethod
    def _bindir():
        found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'))
        return os.path.dirname(found[-1]) if found else None

    def _run(self, *cmd, **kwargs):
        """Run as the postgres user when we are root (initdb refuses
        root)."""
        if os.geteuid() == 0:
            cmd = ('runuser', '-u', 'postgres', '--', *cmd)
        return subprocess.run(cmd, check=True, capture_output=True,
                              text=True, timeout=120, **kwargs)

    def start(self):
        if self._bindir() is None:
            install_packages('postgresql')
        bindir = self._bindir()
        if os.geteuid() == 0:
            pw = pwd.getpwnam('postgres')
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
        self._run(os.path.join(bindir, 'initdb'), '-D', self.data, '-A',
                  'trust', '-U', 'postgres', '--no-sync')
        self.bindir = bindir
        self._pg_ctl_start()
        self.started = True
        if self._counts_statements():
            self._run(os.path.join(bindir, 'psql'), '-h', '127.0.0.1', '-p',
                      str(self.port), '-U', 'postgres', '-d', 'postgres',
                      '-q', '-c', 'CREATE EXTENSION pg_stat_statements')
        return self

    def _counts_statements(self):
        """Whether this server loads pg_stat_statements (Debian's
        server package ships it), which ``scheduler-split-bench
        --db-stats`` reads."""
        return os.path.exists(os.path.join(
            os.path.dirname(self.bindir), 'lib', 'pg_stat_statements.so'))

    def _pg_ctl_start(self):
        options = ('-h 127.0.0.1 -p %d -k %s -c fsync=off '
                   '-c max_connections=300' % (self.port, self.base))
        if self._counts_statements():
            options += ' -c shared_preload_libraries=pg_stat_statements'
        self._run(os.path.join(self.bindir, 'pg_ctl'), '-D', self.data, '-w',
                  '-l', os.path.join(self.base, 'server.log'), '-o', options,
                  'start')

    def stats_url(self):
        """A URL for ``scheduler-split-bench --db-stats``."""
        return 'postgresql+psycopg2://postgres@127.0.0.1:%d/postgres' % (
            self.port)

    def create_database(self, name):
        self._run(os.path.join(self.bindir, 'createdb'), '-h', '127.0.0.1',
                  '-p', str(self.port), '-U', 'postgres', name)
        return ('postgresql+psycopg2://postgres@127.0.0.1:%d/%s'
                % (self.port, name))

    def stop(self):
        if not self.started:
            return
        self._run(os.path.join(self.bindir, 'pg_ctl'), '-D', self.data,
                  '-m', 'fast', '-w', 'stop')
        self.started = False
        shutil.rmtree(self.base, ignore_errors=True)

    def _server_pids(self):
        """The postmaster and its children (backends, checkpointer, ...).
        """
        with open(os.path.join(self.data, 'postmaster.pid')) as f:
            postmaster = int(f.readline())
        pids = [postmaster]
        for entry in os.listdir('/proc'):
            if entry.isdigit() and _parent_of(entry) == postmaster:
                pids.append(int(entry))
        return pids

    def kill_and_restart(self, down=0):
        """SIGKILL the postmaster and every server process (a crash: no
        checkpoint, every connection cut), wait ``down`` seconds, then
        start it again on the same port and data directory (crash
        recovery)."""
        pids = self._server_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids):
            if time.monotonic() > deadline:
                raise RuntimeError('PostgreSQL survived SIGKILL')
            time.sleep(0.1)
        time.sleep(down)
        self._pg_ctl_start()
        return self


class MariaDB:
    """A MariaDB server of its own: Debian's ``mariadb-server``, a data
    directory made by ``mariadb-install-db`` in a temporary directory,
    listening on 127.0.0.1 and a socket of its own."""

    name = 'mariadb'

    def __init__(self, base_dir=None, port=None):
        # Its own directory, which the mysql user must be able to reach.
        self.base = tempfile.mkdtemp(prefix='scheduler-split-mariadb-')
        os.chmod(self.base, 0o755)
        self.data = os.path.join(self.base, 'data')
        self.socket = os.path.join(self.base, 'mariadb.sock')
        self.pid_file = os.path.join(self.base, 'mariadb.pid')
        self.port = port or free_port()
        self.proc = None

    @staticmethod
    def _server():
        for path in ('/usr/sbin/mariadbd', '/usr/sbin/mysqld'):
            if os.path.exists(path):
                return path
        return None

    def _options(self):
        options = [
            # Nothing of /etc/mysql: no system-wide setting applies.
            '--no-defaults',
            '--datadir=%s' % self.data,
            '--bind-address=127.0.0.1', '--port=%d' % self.port,
            '--socket=%s' % self.socket, '--pid-file=%s' % self.pid_file,
            '--log-error=%s' % os.path.join(self.base, 'server.log'),
            '--skip-name-resolve', '--skip-log-bin',
            '--max-connections=500',
            '--character-set-server=utf8mb4',
            '--collation-server=utf8mb4_general_ci',
            # Each commit reaches the OS but is not synced: a SIGKILLed
            # server loses nothing it committed, as PostgreSQL's fsync=off.
            '--innodb-flush-log-at-trx-commit=2', '--innodb-doublewrite=0',
            '--innodb-buffer-pool-size=128M',
        ]
        if os.geteuid() == 0:
            options.append('--user=mysql')
        return options

    def start(self):
        if self._server() is None:
            install_packages('mariadb')
        if os.geteuid() == 0:
            pw = pwd.getpwnam('mysql')
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
        install = [shutil.which('mariadb-install-db') or
                   shutil.which('mysql_install_db'), '--no-defaults',
                   '--datadir=%s' % self.data, '--skip-test-db',
                   '--auth-root-authentication-method=normal']
        if os.geteuid() == 0:
            install.append('--user=mysql')
        subprocess.run(install, check=True, capture_output=True, text=True,
                       timeout=300)
        self._launch()
        # The tests connect over TCP as root, without a password.
        self.sql("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                 "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
        return self

    def _popen(self, log):
        return subprocess.Popen(
            [self._server(), *self._options()], stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)

    def _launch(self):
        self.log = open(os.path.join(self.base, 'server.out'), 'a')
        self.proc = self._popen(self.log)

        def serving():
            if self.proc.poll() is not None:
                raise RuntimeError('MariaDB did not start; see %s' %
                                   os.path.join(self.base, 'server.log'))
            try:
                self.sql('SELECT 1')
                return True
            except subprocess.CalledProcessError:
                return False
        _wait(serving, 120, 'MariaDB')

    def sql(self, statements):
        """Run ``statements`` as root through the server's socket."""
        client = shutil.which('mariadb') or shutil.which('mysql')
        return subprocess.run(
            [client, '--no-defaults', '--protocol=socket',
             '--socket=%s' % self.socket, '-uroot', '-e', statements],
            check=True, capture_output=True, text=True, timeout=120)

    def stats_url(self):
        """A URL for ``scheduler-split-bench --db-stats``."""
        return ('mysql+pymysql://root@127.0.0.1:%d/mysql?charset=utf8mb4'
                % self.port)

    def create_database(self, name):
        self.sql('CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name)
        return ('mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4'
                % (self.port, name))

    def _stop_server(self):
        try:
            self.sql('SHUTDOWN')
        except subprocess.CalledProcessError:
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc is None:
            return
        self._stop_server()
        self.proc = None
        self.log.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def kill_and_restart(self, down=0):
        """SIGKILL every server process (a crash: every connection cut,
        InnoDB recovers from its log), wait ``down`` seconds, then start
        it again on the same port, socket and data directory."""
        pids = [self.proc.pid] + [
            int(entry) for entry in os.listdir('/proc')
            if entry.isdigit() and _parent_of(entry) == self.proc.pid]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids):
            if time.monotonic() > deadline:
                raise RuntimeError('MariaDB survived SIGKILL')
            time.sleep(0.1)
        self.log.close()
        time.sleep(down)
        self._launch()
        return self


# The database servers a deployment can run on, by name.
DATABASES = {backend.name: backend for backend in (PostgreSQL, MariaDB)}


def _stat(pid):
    """``/proc/<pid>/stat`` after the command name (which may hold
    spaces): state, ppid, ...; None once the process is gone."""
    try:
        with open('/proc/%s/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def _parent_of(pid):
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _alive(pid):
    """Running, not just a zombie waiting for its parent (a killed
    postmaster's children go to init)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != 'Z'
