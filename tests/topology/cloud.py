"""A cloud of hosts apart, on one machine: three controllers and
computes, each host a network namespace (:mod:`.network`).

Every controller runs an API, a super-conductor, a conductor per cell
and a scheduler, and a node of the RabbitMQ cluster (:mod:`.rabbit`) and
of the Galera cluster (:mod:`.galera`, with its HAProxy); each compute
host runs one compute. Every service binds to its host's address and
reaches the others at theirs: the buses name every RabbitMQ node, the
databases are ``db`` (see :mod:`.galera`). The services' queues are
quorum queues.

:class:`Cloud` is a :class:`tests.integration.deployment.Deployment`:
the tests that look at one (its processes, logs, databases, claims) look
at this one the same way, through the machine's own address on the
bridge.
"""

import os
import re
import shutil
import signal
import subprocess
import time

import requests
import sqlalchemy as sa

from scheduler_split.db import engines
from tests.integration import backends
from tests.integration import deployment
from tests.topology import galera
from tests.topology import hypervisors
from tests.topology import network
from tests.topology import rabbit

CONTROLLERS = ('ctl1', 'ctl2', 'ctl3')
API_PORT = 8774
# The kinds of process of a controller, by the names their logs get
# (``ctl1-scheduler``, ``ctl1-conductor-cell1``, ...).
CONTROLLER_SERVICES = ('api', 'super-conductor', 'scheduler')

# Quorum queues for every queue of the bus, the replies' and fanouts'
# included (replicated, so that a node's loss loses none), named by the
# queue manager after host and process rather than at random, so that a
# service that restarts takes its queues back instead of leaving them
# to expire.
QUORUM_CONF = """\
[DEFAULT]
# Some 25 processes and six cluster nodes share the machine: a call
# waits longer than on one host before it is taken for lost (Nova's
# default is 60 s).
rpc_response_timeout = 30
[oslo_messaging_rabbit]
rabbit_quorum_queue = true
rabbit_transient_quorum_queue = true
use_queue_manager = true
heartbeat_timeout_threshold = 10
"""


class Cloud(deployment.Deployment):
    """Two cells of ``hosts_per_cell`` computes each, on the database
    ``mode`` (``haproxy`` or ``multi-writer``, see :mod:`.galera`);
    its hosts are the namespaces ``<prefix>-<host>`` on ``subnet``."""

    COMMON_CONF = QUORUM_CONF
    # As the shipped gunicorn.conf.py: clients that poll every 2 s (the
    # fault rounds' pollers, openstacksdk's waits) reuse a connection just
    # as gunicorn's default 2 s keep-alive closes it.
    API_KEEPALIVE = 10

    def __init__(self, base_dir, mode='haproxy', hosts_per_cell=2,
                 prefix='ss', subnet='10.231.0.0/24', **kwargs):
        super().__init__(base_dir, hosts_per_cell=hosts_per_cell, **kwargs)
        self.controllers = CONTROLLERS
        # ``db`` is each controller's own HAProxy (see galera).
        self.network = network.Network(
            self.controllers + tuple(self.hosts), prefix, subnet)
        self.network.names = {host: {'db': self.network.hosts[host]}
                              for host in self.controllers}
        # Compute hosts know each other by name (a libvirtd reaches its
        # peer's so in a live migration).
        for host in self.hosts:
            self.network.names[host] = {
                peer: self.network.hosts[peer] for peer in self.hosts
                if peer != host}
        placed = {host: (self.network.hosts[host],
                         self.network.exec_prefix(host))
                  for host in self.controllers}
        self.rabbit = rabbit.Cluster(self.base, placed)
        self.database = galera.Cluster(self.base, placed, mode)
        # {process name: the host it runs on}
        self.host_of = {host: host for host in self.hosts}
        for host in self.controllers:
            for name in self.processes_of(host):
                self.host_of[name] = host
        self.base_url = self.api_urls[0]
        # What configure() gave every service.
        self.configured = {}
        # {compute host: its Hypervisor, the venv its compute runs from}
        # of the hosts that run real guests (run_guests).
        self.guest_hosts = {}

    def processes_of(self, host):
        """The processes of ``host``, by name."""
        if host not in self.controllers:
            return [host]
        return ['%s-%s' % (host, kind) for kind in CONTROLLER_SERVICES] + [
            '%s-conductor-%s' % (host, cell) for cell in self.CELLS]

    @property
    def api_urls(self):
        return ['http://%s:%d' % (self.network.hosts[host], API_PORT)
                for host in self.controllers]

    @staticmethod
    def is_api(name):
        return name.endswith('-api')

    def on_host(self, name):
        if name in self.guest_hosts:
            return self.guest_hosts[name][0].prefix
        return self.network.exec_prefix(
            self.host_of[name] if name else self.controllers[0])

    def compute_command(self, host):
        command = super().compute_command(host)
        if host in self.guest_hosts:
            venv = self.guest_hosts[host][1]
            command[0] = venv.executable(os.path.basename(command[0]))
        return command

    # --- set up -------------------------------------------------------------

    def setup(self):
        # What is missing of iproute2, RabbitMQ, MariaDB, Galera, rsync
        # (its SST) and HAProxy, before anything starts.
        backends.install_packages('topology')
        self.network.up()
        return super().setup()

    def write_process_files(self):
        cell_files = [self.cell_file(cell, number)
                      for number, cell in enumerate(self.CELLS)]
        super_file = self._write('super-conductor.conf',
                                 '[conductor]\nrole = super\n')
        for host in self.controllers:
            address = self.network.hosts[host]
            shared = self._write('%s.conf' % host, """\
                [DEFAULT]
                host = %s
                my_ip = %s
                [metrics]
                bind_host = %s
                [glance]
                # One image store for the three APIs (on one machine).
                builtin_store_dir = %s
                """ % (host, address, address,
                       os.path.join(self.base, 'images')))
            for name in self.processes_of(host):
                files = [shared]
                if name.endswith('-super-conductor'):
                    files.append(super_file)
                for cell, path in zip(self.CELLS, cell_files):
                    if name.endswith('-conductor-%s' % cell):
                        files.append(path)
                files.append(self._own(host, name))
                # Ahead of those a test added (add_config): theirs win.
                self.extra_conf[name] = files + self.extra_conf.get(name, [])
        for host in self.hosts:
            address = self.network.hosts[host]
            self.host_file(host, """\
                [DEFAULT]
                my_ip = %s
                [metrics]
                bind_host = %s
                """ % (address, address))
            self.extra_conf[host] = [self._own(host, host)] + \
                self.extra_conf.get(host, [])

    def _own(self, host, name):
        """The file of process ``name`` alone: its log, what its queues
        are named after, and where the queue manager keeps its lock."""
        return self._write('%s-process.conf' % name, """\
            [DEFAULT]
            log_file = %s
            [oslo_messaging_rabbit]
            hostname = %s
            processname = %s
            [oslo_concurrency]
            lock_path = %s
            """ % (os.path.join(self.log_dir, '%s.log' % name), host, name,
                   os.path.join(self.base, 'lock', host)))

    def _commands(self):
        conf = ['--config-file', self.main_conf]
        commands = {host: self.compute_command(host) for host in self.hosts}
        for host in self.controllers:
            for name in self.processes_of(host):
                if self.is_api(name):
                    commands[name] = self.api_command(
                        self.network.hosts[host], API_PORT)
                elif name.endswith('-scheduler'):
                    commands[name] = [
                        self.executable('scheduler-split-scheduler'), *conf]
                else:
                    commands[name] = [
                        self.executable('scheduler-split-conductor'), *conf]
        return commands

    # --- changing it --------------------------------------------------------

    def set_mode(self, mode):
        """Reach Galera as ``mode`` says from now on (see :mod:`.galera`).

        The services' pooled connections went with the HAProxies they
        went through: once they have rested as long as a connection
        does before it is pinged as it is taken out, the next use of
        each finds it gone and opens another, instead of failing the
        work it was taken for."""
        if mode == self.mode:
            return
        self.database.set_mode(mode)
        time.sleep(engines.PING_AFTER_REST + 1)

    @property
    def mode(self):
        """How the controllers reach Galera (see :mod:`.galera`)."""
        return self.database.mode

    def configure(self, files):
        """Give every service the extra config ``files`` (``{file name:
        text}``) in place of those an earlier call gave, and start them
        all again if that changed what they read. The clusters stay
        up."""
        if files == self.configured:
            return
        for filename in self.configured:
            path = os.path.join(self.conf_dir, filename)
            for held in self.extra_conf.values():
                if path in held:
                    held.remove(path)
        for filename, text in files.items():
            self.add_config(self.host_of, filename, text)
        self.configured = dict(files)
        self.stop_in_order()
        self.start()
        self.wait_for_api()
        self.wait_for_hosts(self.hosts, timeout=120)

    def run_guests(self, hosts, venv, text):
        """Run compute ``hosts`` with the libvirt driver from ``venv``
        (an install with the libvirt extra), each with a libvirtd of its
        own (:mod:`.hypervisors`) and the extra config ``text`` (the
        driver's options); back to the fake driver with
        :meth:`stop_guests`."""
        self.stop(*hosts)
        for host in hosts:
            hypervisor = hypervisors.Hypervisor(
                host, self.network.namespace(host),
                self.network.exec_prefix(host), self.guests_dir)
            self.guest_hosts[host] = (hypervisor.start(), venv)
        self.add_config(hosts, 'guests.conf', text)
        self.start(*hosts)
        self.wait_for_services_up(hosts)

    @property
    def guests_dir(self):
        # Below directories QEMU's own user may enter (a pytest tmp_path,
        # mode 0700, is not).
        return os.path.join('/var/tmp', 'scheduler-split-%s' %
                            self.network.prefix)

    def stop_guests(self):
        """The hosts of :meth:`run_guests` back on the fake driver,
        their libvirtds and guests gone."""
        hosts = list(self.guest_hosts)
        if not hosts:
            return
        self.stop(*hosts)
        path = os.path.join(self.conf_dir, 'guests.conf')
        for host in hosts:
            hypervisor, _venv = self.guest_hosts.pop(host)
            hypervisor.stop()
            if path in self.extra_conf.get(host, []):
                self.extra_conf[host].remove(path)
        shutil.rmtree(self.guests_dir, ignore_errors=True)
        self.start(*hosts)
        self.wait_for_services_up(hosts)

    def wait_for_services_up(self, hosts, timeout=120):
        """Until the compute ``hosts`` have reported, the API shows
        their services up and the schedulers have read them so: a
        compute started again is down to the scheduler until its
        heartbeat reaches its cell and the scheduler's next look at its
        hosts."""
        self.wait_for_hosts(hosts, timeout=timeout)
        deadline = time.monotonic() + timeout
        while True:
            resp = requests.get(
                self.base_url + '/v2.1/os-services',
                params={'binary': 'nova-compute'}, timeout=30,
                headers={'X-Auth-Token': 'admin:admin'})
            up = {service['host'] for service in resp.json()['services']
                  if service['state'] == 'up'} if resp.ok else set()
            if set(hosts) <= up:
                time.sleep(deployment.HOST_STATE_REFRESH_INTERVAL + 1)
                return
            assert time.monotonic() < deadline, (
                'services of %s not up' % sorted(set(hosts) - up))
            time.sleep(0.5)

    # --- looking ------------------------------------------------------------

    def run_on(self, host, *command):
        """Run ``command`` on ``host``; its completed process."""
        return subprocess.run([*self.network.exec_prefix(host), *command],
                              check=True, capture_output=True, text=True,
                              timeout=60)

    def query(self, url, sql, **params):
        """As a deployment's, on the first Galera node that answers:
        ``db`` is a name of the controllers only, and a node a fault
        round restarted refuses queries until it has caught up with
        the cluster (``WSREP has not yet prepared node``)."""
        failures = []
        for host in self.controllers:
            node_url = re.sub(r'@db:\d+/', '@%s:%d/' % (
                self.network.hosts[host], galera.PORT), url)
            try:
                return super().query(node_url, sql, **params)
            except sa.exc.OperationalError as exc:
                failures.append('%s: %s' % (host, exc.orig))
                if node_url == url:
                    raise
        raise AssertionError('no Galera node answers: %s' % failures)

    # --- faults -------------------------------------------------------------

    def kill_host(self, host):
        """SIGKILL every process of ``host``: the services, and a
        controller's RabbitMQ and Galera nodes and HAProxy, as a host
        that loses its power."""
        for name in self.processes_of(host):
            self.kill(name)
        for pid in self.network.pids(host):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if host in self.controllers:
            for server in (self.rabbit.node_of(host),
                           self.database.node_of(host),
                           self.database.haproxies[host]):
                server.proc.wait()
                server.log.close()

    def start_host(self, host):
        """Start what :meth:`kill_host` killed again: a controller's
        RabbitMQ and Galera nodes (each rejoins its cluster) and HAProxy,
        then its services."""
        if host in self.controllers:
            self.rabbit.node_of(host)._launch('a')
            self.database.node_of(host)._launch()
            self.database.haproxies[host].start()
        self.start(*self.processes_of(host))

    def rabbit_leader(self):
        """The RabbitMQ node that leads the most of the services' topic
        queues (the schedulers', the conductors'), over every vhost."""
        counts = {}
        node = self.rabbit.nodes[0]
        for vhost in ('api',) + tuple(self.CELLS):
            out = node.ctl('list_queues', '-p', vhost, '--no-table-headers',
                           '--quiet', 'name', 'leader').stdout
            for line in out.splitlines():
                name, _, leader = line.partition('\t')
                if name in ('scheduler', 'conductor', 'super_conductor'):
                    counts[leader.strip()] = counts.get(
                        leader.strip(), 0) + 1
        leader = max(counts, key=counts.get)
        return next(n for n in self.rabbit.nodes if n.name == leader)

    def teardown(self):
        try:
            super().teardown()
        finally:
            for hypervisor, _venv in self.guest_hosts.values():
                hypervisor.stop()
            shutil.rmtree(self.guests_dir, ignore_errors=True)
            self.network.down()
