"""MariaDB Galera as a cluster of nodes, one per controller host
(Debian's ``mariadb-server`` and ``galera-4``), and HAProxy (Debian's
``haproxy``) on every controller in front of it as Kolla deploys it:
one node takes every connection, the others are its backups.

Each node listens on its host's address, port 3306, and replicates on
Galera's ports (4567; 4568 for incremental state transfers; 4444
for full ones, by rsync). The first node bootstraps the cluster; the
others join it and take its data by a full transfer. A node that is
killed and started again rejoins (by an incremental transfer, or a
full one if it missed too much).

The services reach the database as ``db``, which each controller's
hosts file resolves to the controller itself, where its HAProxy listens
on port 3307. In ``haproxy`` mode every HAProxy sends its connections
to the same node, the first; in ``multi-writer`` mode each sends them
to its own controller's node (the others are its backups, for when
that node is away): each controller writes to its own node, and Galera
certifies at commit what nodes wrote at once.
"""

from concurrent import futures
import os
import shutil
import subprocess
import time

from tests.integration import backends

USER = 'scheduler-split'
PASSWORD = 'db-secret'
PORT = 3306
HAPROXY_PORT = 3307
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
MODES = ('haproxy', 'multi-writer')


class Node(backends.MariaDB):

    def __init__(self, base_dir, host, address, prefix, peers):
        super().__init__(base_dir, port=PORT)
        self.host = host
        self.address = address
        self.prefix = tuple(prefix)
        self.peers = peers
        self.bootstrap = False

    def _options(self):
        options = [o for o in super()._options()
                   if not o.startswith(('--bind-address', '--skip-log-bin'))]
        options += [
            '--bind-address=%s' % self.address,
            '--wsrep-on=ON', '--wsrep-provider=%s' % PROVIDER,
            '--wsrep-cluster-name=scheduler-split',
            '--wsrep-cluster-address=gcomm://%s' % ','.join(self.peers),
            '--wsrep-node-address=%s' % self.address,
            '--wsrep-node-name=%s' % self.host,
            '--wsrep-sst-method=rsync',
            # Galera's own port too on this address alone, not on all.
            '--wsrep-provider-options=gcache.size=64M; '
            'gmcast.listen_addr=tcp://%s:4567; ist.recv_addr=%s'
            % (self.address, self.address),
            '--binlog-format=ROW', '--default-storage-engine=InnoDB',
            '--innodb-autoinc-lock-mode=2',
        ]
        if self.bootstrap:
            options.append('--wsrep-new-cluster')
        return options

    def _popen(self, log):
        return subprocess.Popen(
            [*self.prefix, self._server(), *self._options()], stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)

    def synced(self):
        """Whether the node is a synced member of the primary
        component."""
        try:
            out = self.sql("SHOW STATUS LIKE 'wsrep_local_state_comment'")
        except subprocess.CalledProcessError:
            return False
        return 'Synced' in out.stdout

    def url(self, name, host=None, port=PORT):
        return 'mysql+pymysql://%s:%s@%s:%d/%s?charset=utf8mb4' % (
            USER, PASSWORD, host or self.address, port, name)


class Cluster:
    """Nodes on ``hosts`` (``{host: (address, exec prefix)}``)."""

    name = 'galera'

    def __init__(self, base_dir, hosts, mode='haproxy'):
        if mode not in MODES:
            raise ValueError('mode %r: one of %s' % (mode, MODES))
        self.mode = mode
        self.base = base_dir
        peers = [address for address, _ in hosts.values()]
        self.nodes = [Node(base_dir, host, address, prefix, peers)
                      for host, (address, prefix) in hosts.items()]
        self.haproxies = {}

    @property
    def port(self):
        return HAPROXY_PORT

    def start(self):
        first = self.nodes[0]
        first.bootstrap = True
        first.start()
        first.bootstrap = False
        first.sql("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'; "
                  "GRANT ALL ON *.* TO '%s'@'%%' WITH GRANT OPTION; "
                  "CREATE USER 'haproxy'@'%%'"
                  % (USER, PASSWORD, USER))
        # The joiners take the first one's data by SST, one at a time
        # (a donor serves one SST at once).
        for node in self.nodes[1:]:
            node.start()
            backends._wait(node.synced, 120, 'Galera node %s' % node.host)
        self._start_haproxies()
        return self

    def _start_haproxies(self):
        for node in self.nodes:
            # The node this controller writes to first.
            first = node if self.mode == 'multi-writer' else self.nodes[0]
            self.haproxies[node.host] = HAProxy(
                self.base, node, [first] + [n for n in self.nodes
                                            if n is not first])
        with futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda proxy: proxy.start(),
                          self.haproxies.values()))

    def set_mode(self, mode):
        """Have every HAProxy send its connections as ``mode`` says, from
        now on (each is started again: the connections it held close,
        and their holders connect again)."""
        if mode not in MODES:
            raise ValueError('mode %r: one of %s' % (mode, MODES))
        if mode == self.mode:
            return
        for proxy in self.haproxies.values():
            proxy.stop()
        self.mode = mode
        self._start_haproxies()
        for proxy in self.haproxies.values():
            backends._wait(proxy.serves, 30, 'HAProxy of %s'
                           % proxy.local.host)

    def create_database(self, name):
        self.nodes[0].sql('CREATE DATABASE `%s` CHARACTER SET utf8mb4'
                          % name)
        return self.nodes[0].url(name, host='db', port=self.port)

    def node_of(self, host):
        return next(n for n in self.nodes if n.host == host)

    def stop(self):
        for proxy in self.haproxies.values():
            proxy.stop()
        for node in reversed(self.nodes):
            node.stop()


class HAProxy:
    """HAProxy on the controller of ``local``, on its address and
    HAPROXY_PORT: every connection to the first of ``nodes``, the others
    its backups (Kolla's Galera frontend), each checked by a MySQL
    login."""

    def __init__(self, base_dir, local, nodes):
        self.base = os.path.join(base_dir, 'haproxy-%s' % local.host)
        self.local = local
        self.nodes = nodes
        self.proc = None

    def _config(self):
        servers = '\n'.join(
            '    server %s %s:%d check inter 2000 rise 2 fall 3%s'
            % (node.host, node.address, PORT,
               '' if index == 0 else ' backup')
            for index, node in enumerate(self.nodes))
        return """\
global
    maxconn 4000
defaults
    mode tcp
    timeout connect 5s
    timeout client 3600s
    timeout server 3600s
listen galera
    bind %s:%d
    option mysql-check user haproxy
%s
""" % (self.local.address, HAPROXY_PORT, servers)

    def start(self):
        os.makedirs(self.base, exist_ok=True)
        path = os.path.join(self.base, 'haproxy.cfg')
        with open(path, 'w') as f:
            f.write(self._config())
        self.log = open(os.path.join(self.base, 'haproxy.out'), 'a')
        self.proc = subprocess.Popen(
            [*self.local.prefix, 'haproxy', '-db', '-f', path],
            stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError('HAProxy did not start; see %s'
                               % self.log.name)
        return self

    def serves(self):
        """Whether a login through it reaches a node."""
        client = shutil.which('mariadb') or shutil.which('mysql')
        try:
            subprocess.run(
                [*self.local.prefix, client, '--no-defaults',
                 '--host=%s' % self.local.address,
                 '--port=%d' % HAPROXY_PORT, '--user=%s' % USER,
                 '--password=%s' % PASSWORD, '--connect-timeout=5', '-e',
                 'SELECT 1'], check=True, capture_output=True, timeout=30)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            return False
        return True

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None
            self.log.close()
