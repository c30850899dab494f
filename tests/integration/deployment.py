"""Every service as its own OS process over RabbitMQ and PostgreSQL (or
MariaDB)."""

import datetime
import os
import signal
import subprocess
import sys
import textwrap
import time

import requests
import sqlalchemy as sa

from tests.integration import backends

BIN = os.path.dirname(sys.executable)
# "binary" is a keyword of MySQL and PostgreSQL alike, quoted differently.
_SERVICES = sa.table('services', sa.column('host'), sa.column('binary'))
# How often every scheduler reloads host states from its database.
HOST_STATE_REFRESH_INTERVAL = 5


class Deployment:
    """Two cells, each with its vhost, database, conductor and computes."""

    CELLS = ('cell1', 'cell2')
    HOSTS_PER_CELL = 2
    # A host in its own availability zone, to tell when it can be chosen.
    EDGE_HOST = 'cell1-compute1'
    # gunicorn's --keep-alive for the API (None: gunicorn's 2 s). A
    # stopping worker holds a kept-alive connection up to 2 s more, which
    # the tests that bound a stop count against it.
    API_KEEPALIVE = None

    def __init__(self, base_dir, schedulers=1, host_memory_mb=16384,
                 extra_apis=0, hosts_per_cell=None, api_threads=16,
                 database='postgresql', bin_dir=BIN):
        self.schedulers = schedulers
        self.host_memory_mb = host_memory_mb
        self.hosts_per_cell = hosts_per_cell or self.HOSTS_PER_CELL
        self.api_threads = api_threads
        # Where the console scripts and gunicorn are: another venv's to
        # run what a user's install holds.
        self.bin_dir = bin_dir
        self.base = str(base_dir)
        self.conf_dir = os.path.join(self.base, 'etc')
        self.log_dir = os.path.join(self.base, 'log')
        os.makedirs(self.conf_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)
        self.rabbit = backends.RabbitMQ(self.base)
        # The database server: backends.DATABASES names them.
        self.database = backends.DATABASES[database](self.base)
        self.procs = {}
        # Per process: a source tree to run it from instead of the
        # installed code (an older release), and extra config files.
        self.sources = {}
        self.extra_conf = {}
        self.metrics_ports = {}
        self.api_port = backends.free_port()
        self.base_url = 'http://127.0.0.1:%d' % self.api_port
        # More API processes on the same databases and bus, each its own
        # gunicorn: ``api-2``, ``api-3``, ...
        self.extra_api_ports = [backends.free_port()
                                for _ in range(extra_apis)]

    # --- set up -------------------------------------------------------------

    def metrics_port(self, name):
        """The port the process ``name`` serves its metrics on: free, not
        the kind's default, which another deployment on this machine
        may hold."""
        return self.metrics_ports.setdefault(name, backends.free_port())

    def _write(self, name, *texts):
        """The file ``name`` of the config directory, made of ``texts``
        (each dedented)."""
        path = os.path.join(self.conf_dir, name)
        with open(path, 'w') as f:
            f.write(''.join(textwrap.dedent(text) for text in texts))
        return path

    # Appended to the main file and to every compute's: settings a
    # topology needs everywhere (the bus's queues, say).
    COMMON_CONF = ''

    def setup(self):
        self.rabbit.start()
        self.database.start()
        api_bus = self.rabbit.add_vhost('api')
        self.api_db = self.database.create_database('ss_api')
        self.scheduler_db = self.database.create_database('ss_scheduler')
        cell0_db = self.database.create_database('ss_cell0')
        self.main_conf = self._write('scheduler-split.conf', """\
            [DEFAULT]
            transport_url = %s
            report_interval = 1
            service_down_time = 6
            rpc_response_timeout = 10
            [api_database]
            connection = %s
            [scheduler_database]
            connection = %s
            [api]
            auth_strategy = noauth2
            [scheduler]
            cell_discovery_interval = 5
            [conductor]
            lost_build_timeout = 30
            lost_build_check_interval = 2
            [filter_scheduler]
            host_state_refresh_interval = %d
            [fake_driver]
            spawn_delay = 0.2
            memory_mb = %d
            [quota]
            # Bursts of boots of one project; quotas are set per project
            # where a test is about them.
            instances = -1
            cores = -1
            ram = -1
            """ % (api_bus, self.api_db, self.scheduler_db,
                   HOST_STATE_REFRESH_INTERVAL, self.host_memory_mb),
            self.COMMON_CONF)
        # What every compute reads besides its own file: no database, no
        # API bus. A hypervisor host holds no database credentials.
        self.compute_conf = self._write('compute-common.conf', """\
            [DEFAULT]
            report_interval = 1
            service_down_time = 6
            rpc_response_timeout = 10
            [fake_driver]
            spawn_delay = 0.2
            memory_mb = %d
            [glance]
            # The built-in catalog's data moves through the API.
            api_servers = %s/image
            """ % (self.host_memory_mb, self.base_url), self.COMMON_CONF)
        self.api_conf = self._write('api.conf', """\
            [DEFAULT]
            log_file = %s
            """ % os.path.join(self.log_dir, 'api.log'))
        self.cells = {}
        for cell in self.CELLS:
            self.cells[cell] = (self.rabbit.add_vhost(cell),
                                self.database.create_database('ss_%s' % cell))
        self.write_process_files()
        self.manage_all(
            [('db', 'sync'),
             ('cell_v2', 'map_cell0', '--database_connection', cell0_db)] +
            [('cell_v2', 'create_cell', '--name', cell, '--transport-url',
              bus, '--database-connection', db)
             for cell, (bus, db) in self.cells.items()] +
            [('flavor', 'create-defaults')])
        return self

    def cell_file(self, cell, index, name=None, extra=''):
        """The file of a conductor of ``cell`` (the ``index``-th cell),
        named ``name`` (by default the cell's)."""
        bus, db = self.cells[cell]
        return self._write('%s.conf' % (name or cell), """\
            [DEFAULT]
            transport_url = %s
            [database]
            connection = %s
            [conductor]
            role = cell
            [metrics]
            cell_conductor_port = %d
            """ % (bus, db, self.metrics_port(name or cell)), extra)

    def host_file(self, host, extra=''):
        """The file of the compute ``host``."""
        cell = next(c for c in self.CELLS if host in self.hosts_of(c))
        zone = 'edge' if host == self.EDGE_HOST else 'nova'
        return self._write('%s.conf' % host, """\
            [DEFAULT]
            host = %s
            transport_url = %s
            [compute]
            availability_zone = %s
            unfinished_build_check_interval = 2
            """ % (host, self.cells[cell][0], zone), extra)

    def write_process_files(self):
        """Each process's own file."""
        # Each process on this one host serves its metrics on a port of
        # its own.
        for index in range(1, self.schedulers + 1):
            name = 'scheduler' if index == 1 else 'scheduler-%d' % index
            self._write('%s.conf' % name, """\
                [DEFAULT]
                host = %s
                [metrics]
                scheduler_port = %d
                """ % (name, self.metrics_port(name)))
        self._write('super-conductor.conf', """\
            [conductor]
            role = super
            [metrics]
            super_conductor_port = %d
            """ % self.metrics_port('super-conductor'))
        for index, cell in enumerate(self.CELLS):
            self.cell_file(cell, index)
            for host in self.hosts_of(cell):
                self.host_file(host)

    def bring_up(self):
        """Set everything up, start every process, wait until the API
        answers and every compute has reported, and map the hosts."""
        self.setup()
        return self.start_and_map()

    def start_and_map(self):
        """Start every process (of a deployment set up already), wait
        until the API answers and every compute has reported and
        recorded itself, and map the hosts."""
        self.start()
        self.wait_for_api()
        self.wait_for_hosts(self.hosts)
        self.wait_for_service_records(self.hosts)
        self.manage('cell_v2', 'discover_hosts')
        return self

    def hosts_of(self, cell):
        return ['%s-compute%d' % (cell, i)
                for i in range(1, self.hosts_per_cell + 1)]

    @property
    def hosts(self):
        return [h for cell in self.CELLS for h in self.hosts_of(cell)]

    def executable(self, name):
        return os.path.join(self.bin_dir, name)

    def manage_all(self, commands):
        """Run ``scheduler-split-manage`` commands in order in one Python
        process of the deployment's install, as its console script runs
        each (its imports paid once, not once a command); stop at the
        first that fails."""
        script = (
            'import sys\n'
            'from scheduler_split.cmd import manage\n'
            'for argv in %r:\n'
            '    rc = manage.main(argv)\n'
            '    if rc:\n'
            '        sys.exit(rc)\n'
            '    manage.CONF.clear()\n' % [
                ['--config-file', self.main_conf, *command]
                for command in commands])
        result = subprocess.run(
            [*self.on_host(None), os.path.join(self.bin_dir, 'python'),
             '-c', script], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def manage(self, *args):
        result = subprocess.run(
            [*self.on_host(None), self.executable('scheduler-split-manage'),
             '--config-file', self.main_conf, *args], capture_output=True,
            text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    # --- processes ----------------------------------------------------------

    def on_host(self, name):
        """What a command of process ``name`` (None: an operator's
        command) runs behind: nothing, every process shares this host."""
        return []

    def _commands(self):
        conf = ['--config-file', self.main_conf]
        commands = {
            'super-conductor': [
                self.executable('scheduler-split-conductor'), *conf,
                '--config-file',
                os.path.join(self.conf_dir, 'super-conductor.conf')],
        }
        for index in range(1, self.schedulers + 1):
            name = 'scheduler' if index == 1 else 'scheduler-%d' % index
            # Workers of one topic share its queue, each with its own name.
            commands[name] = [self.executable('scheduler-split-scheduler'),
                              *conf, '--config-file',
                              os.path.join(self.conf_dir, '%s.conf' % name)]
        for cell in self.CELLS:
            commands['conductor-%s' % cell] = [
                self.executable('scheduler-split-conductor'), *conf,
                '--config-file', os.path.join(self.conf_dir,
                                              '%s.conf' % cell)]
            for host in self.hosts_of(cell):
                commands[host] = self.compute_command(host)
        commands['api'] = self.api_command('127.0.0.1', self.api_port)
        for number, port in enumerate(self.extra_api_ports, start=2):
            commands['api-%d' % number] = self.api_command('127.0.0.1', port)
        return commands

    def compute_command(self, host):
        # Not the main file: a compute reads no database credentials and
        # knows only its cell's bus.
        return [self.executable('scheduler-split-compute'),
                '--config-file', self.compute_conf,
                '--config-file', os.path.join(self.conf_dir,
                                              '%s.conf' % host)]

    def api_command(self, address, port):
        keepalive = []
        if self.API_KEEPALIVE is not None:
            keepalive = ['--keep-alive', str(self.API_KEEPALIVE)]
        return [self.executable('gunicorn'), '--bind',
                '%s:%d' % (address, port), '--worker-class', 'gthread',
                '--workers', '1', '--threads', str(self.api_threads),
                '--graceful-timeout', '30', *keepalive,
                'scheduler_split.api.wsgi_app:application']

    @staticmethod
    def is_api(name):
        """Whether process ``name`` is an API (gunicorn): its files come
        through the environment, and it writes its log where they say."""
        return name.startswith('api')

    @property
    def api_urls(self):
        """The base URL of every API process, ``api`` first."""
        return [self.base_url] + ['http://127.0.0.1:%d' % port
                                  for port in self.extra_api_ports]

    def add_config(self, names, filename, text):
        """Give the processes ``names`` the extra config file ``filename``
        (written now with ``text``, and again when called again)."""
        path = self._write(filename, text)
        for name in names:
            files = self.extra_conf.setdefault(name, [])
            if path not in files:
                files.append(path)
        return path

    def run_from(self, name, source_tree):
        """Run process ``name`` from the code in ``source_tree`` (None:
        the installed code again)."""
        if source_tree is None:
            self.sources.pop(name, None)
        else:
            self.sources[name] = source_tree

    def start(self, *names):
        commands = self._commands()
        for name in names or commands:
            command = list(commands[name])
            extra = self.extra_conf.get(name, [])
            env = dict(os.environ, SCHEDULER_SPLIT_CONFIG_FILES=','.join(
                [self.main_conf, self.api_conf] + extra))
            if not self.is_api(name):
                command += ['--log-file',
                            os.path.join(self.log_dir, '%s.log' % name)]
                for path in extra:
                    command += ['--config-file', path]
            cwd = None
            if name in self.sources:
                # scheduler-split-compute -> scheduler_split.cmd.compute,
                # imported from the source tree ahead of the installed
                # one (``-m`` puts the working directory first).
                script = os.path.basename(command[0])
                module = 'scheduler_split.cmd.' + script.rsplit('-', 1)[1]
                command = [sys.executable, '-m', module] + command[1:]
                cwd = env['PYTHONPATH'] = self.sources[name]
            out = open(os.path.join(self.log_dir, '%s.out' % name), 'a')
            self.procs[name] = subprocess.Popen(
                [*self.on_host(name), *command], stdout=out,
                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                start_new_session=True)
        return self

    def stop(self, *names, timeout=150):
        """SIGTERM, then wait for a graceful exit."""
        names = names or list(self.procs)
        for name in names:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = {}
        for name in names:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            try:
                codes[name] = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                codes[name] = proc.wait()
        return codes

    def stop_in_order(self, timeout=150):
        """Stop every process as an operator stops a whole deployment:
        the APIs first, then the computes, whose builds in flight still
        reach their conductors, then the conductors and schedulers.
        (``stop()`` sends every SIGTERM at once; computes with builds in
        flight then wait out RPC timeouts against stopped conductors.)"""
        apis = [name for name in self.procs if self.is_api(name)]
        computes = [name for name in self.procs if name in self.hosts]
        codes = {}
        for tier in (apis, computes, list(self.procs)):
            if tier:
                codes.update(self.stop(*tier, timeout=timeout))
        return codes

    def teardown(self):
        self.stop_in_order()
        self.rabbit.stop()
        self.database.stop()

    # --- waiting and looking ------------------------------------------------

    def wait_for_api(self, timeout=60):
        deadline = time.monotonic() + timeout
        for url in self.api_urls:
            while True:
                try:
                    if requests.get(url + '/', timeout=2).ok:
                        break
                except requests.RequestException:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError('the API at %s did not come up'
                                         % url)
                time.sleep(0.2)

    @property
    def postgres(self):
        """The database server, by the name of the one it always was."""
        return self.database

    def reported_hosts(self, within=3):
        """Hosts whose last report is at most ``within`` seconds old."""
        # The services record naive UTC times, on this machine's clock.
        since = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None) - datetime.timedelta(seconds=within)
        rows = self.query(self.scheduler_db,
                          'SELECT host FROM resource_providers WHERE '
                          'last_report_at > :since', since=since)
        return {row[0] for row in rows}

    def wait_for_hosts(self, hosts, timeout=60, within=3):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if set(hosts) <= self.reported_hosts(within):
                return
            time.sleep(0.2)
        raise AssertionError('hosts %s did not report' % sorted(
            set(hosts) - self.reported_hosts(within)))

    def wait_for_service_records(self, hosts, timeout=60):
        """Until every compute of ``hosts`` has a service record in its
        cell database (written by its cell conductor, which a compute's
        heartbeat reaches a moment after its first report to the
        scheduler): what ``discover_hosts`` maps."""
        deadline = time.monotonic() + timeout
        while True:
            recorded = set()
            for cell, (_, db) in self.cells.items():
                recorded |= {row[0] for row in self.query(
                    db, sa.select(_SERVICES.c.host).where(
                        _SERVICES.c.binary == 'scheduler-split-compute'))}
            if set(hosts) <= recorded:
                return
            assert time.monotonic() < deadline, (
                'no service record for %s' % sorted(set(hosts) - recorded))
            time.sleep(0.2)

    def query(self, url, sql, **params):
        """The rows of ``sql`` (text, or a statement, which quotes names
        as each database wants) in the database at ``url``."""
        engine = sa.create_engine(url)
        if isinstance(sql, str):
            sql = sa.text(sql)
        try:
            with engine.connect() as conn:
                return conn.execute(sql, params).all()
        finally:
            engine.dispose()

    def cell_of(self, server_id):
        rows = self.query(self.api_db,
                          'SELECT c.name FROM instance_mappings m JOIN '
                          'cell_mappings c ON c.id = m.cell_id WHERE '
                          'm.instance_uuid = :u', u=server_id)
        return rows[0][0] if rows else None

    def allocations(self):
        return self.query(self.scheduler_db,
                          'SELECT a.consumer_id, p.host FROM allocations a '
                          'JOIN resource_providers p ON '
                          'p.id = a.resource_provider_id')

    # --- faults -------------------------------------------------------------

    def kill(self, *names):
        """SIGKILL: no graceful stop; the messages the processes held and
        the requests they were answering are lost."""
        for name in names:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            try:
                # Its whole session: gunicorn's workers too.
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()

    def dead(self):
        """Processes not running: never started, killed, or exited."""
        return [name for name in self._commands()
                if name not in self.procs or
                self.procs[name].poll() is not None]

    def log_of(self, name):
        return os.path.join(self.log_dir, '%s.log' % name)

    def log_size(self, name):
        try:
            return os.path.getsize(self.log_of(name))
        except OSError:
            return 0

    def log_sizes(self):
        """``{file: size}`` of every process's log (``<name>.log``) and
        output (``<name>.out``) in the log directory: where what they
        write from now on starts (see ``written_since``)."""
        sizes = {}
        for name in self._commands():
            for suffix in ('.log', '.out'):
                try:
                    sizes[name + suffix] = os.path.getsize(
                        os.path.join(self.log_dir, name + suffix))
                except OSError:
                    sizes[name + suffix] = 0
        return sizes

    def written_since(self, sizes):
        """``{file: text}``: what every process wrote to its log and
        output since ``sizes`` (``log_sizes()``) were taken."""
        written = {}
        for name, size in sizes.items():
            try:
                with open(os.path.join(self.log_dir, name), 'rb') as f:
                    f.seek(size)
                    written[name] = f.read().decode('utf-8', 'replace')
            except OSError:
                written[name] = ''
        return written

    def wait_for_log(self, name, text, since=0, timeout=60):
        """Wait until the log of ``name`` says ``text`` after byte
        ``since`` (its size before a restart, say)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(self.log_of(name), 'rb') as f:
                    f.seek(since)
                    if text.encode() in f.read():
                        return
            except OSError:
                pass
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise AssertionError('%s exited with %s; see %s' % (
                    name, proc.returncode, self.log_of(name)))
            time.sleep(0.2)
        raise AssertionError('%s did not log %r within %ss' % (
            name, text, timeout))

    def usage(self):
        """``(provider, resource class, used, capacity)`` of every
        allocated resource class of every provider (a compute node by
        its host, a provider below one by its name), from the scheduler
        database."""
        return self.query(
            self.scheduler_db,
            "SELECT coalesce(p.host, p.name), a.resource_class, "
            "sum(a.used), (i.total - i.reserved) * i.allocation_ratio "
            "FROM allocations a "
            "JOIN resource_providers p ON p.id = a.resource_provider_id "
            "JOIN inventories i ON i.resource_provider_id = p.id "
            "AND i.resource_class = a.resource_class "
            "GROUP BY p.id, p.host, p.name, a.resource_class, i.total, "
            "i.reserved, i.allocation_ratio")


def running_with_cell_checks(dep):
    """Set ``dep`` up with its scheduler looking at the cells every
    second, start and map it, and yield it; it is torn down after."""
    try:
        dep.setup()
        dep.add_config(['scheduler'], 'cell-checks.conf', """\
            [scheduler]
            cell_check_interval = 1
            """)
        yield dep.start_and_map()
    finally:
        dep.teardown()
