"""RabbitMQ as a cluster of nodes, one per controller host: Debian's
``rabbitmq-server``, each node on its host's address and the default
ports, named by that address (long names), clustered as it starts.

``cluster_partition_handling = pause_minority``: a node that finds
itself in the minority of a partition (cut from the other two for
:data:`NET_TICKTIME` seconds) pauses (closes its listeners) until it
sees a majority again, so that clients fail over to the majority
instead of writing to a side that will be thrown away at the heal.
Quorum queues (what the services declare with ``rabbit_quorum_queue``)
elect their leaders by Raft among the majority whatever this says; the
setting decides for the rest (exchanges, bindings, users, classic
queues).
"""

from concurrent import futures
import json
import os

from tests.integration import backends

USER = 'scheduler-split'
PASSWORD = 'rabbit-secret'
COOKIE = 'SCHEDULERSPLITTOPOLOGYCOOKIE'
PORT = 5672
# Clustering: the nodes' distribution port, and epmd's.
DIST_PORT = 25672
EPMD_PORT = 4369
# Seconds without a word from a peer node before a node takes it for
# down (Erlang's kernel net_ticktime; a peer is down after 1 to 1.25
# times it): how long a node cut from the other two goes on taking
# connections before it pauses, and the majority waits for it. Erlang's
# 60 s would hold the cluster's state up for a minute of a cut.
NET_TICKTIME = 15


class Node(backends.RabbitMQ):
    """One node, on ``address`` in the host run by ``prefix``."""

    def __init__(self, base_dir, host, address, prefix):
        super().__init__(base_dir, port=PORT)
        self.base = os.path.join(base_dir, 'rabbitmq-%s' % host)
        self.host = host
        self.address = address
        self.prefix = prefix
        self.name = 'rabbit@%s' % address
        self.prefix = tuple(prefix)

    def _make_env(self):
        os.makedirs(self.base, exist_ok=True)
        cookie = os.path.join(self.base, '.erlang.cookie')
        if not os.path.exists(cookie):
            with open(cookie, 'w') as f:
                f.write(COOKIE)
            os.chmod(cookie, 0o400)
        env = super()._make_env()
        env.update(
            RABBITMQ_NODENAME=self.name,
            RABBITMQ_USE_LONGNAME='true',
            RABBITMQ_NODE_IP_ADDRESS=self.address,
            RABBITMQ_DIST_PORT=str(DIST_PORT),
            ERL_EPMD_ADDRESS=self.address,
            ERL_EPMD_PORT=str(EPMD_PORT),
            # The distribution port (clustering) on this address alone.
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
                '-kernel inet_dist_use_interface {%s}'
                % self.address.replace('.', ',')),
            # The CLI tools tick as the nodes do.
            RABBITMQ_CTL_ERL_ARGS='-kernel net_ticktime %d' % NET_TICKTIME)
        return env

    def _advanced_config(self):
        return '[{kernel, [{net_ticktime, %d}]}].\n' % NET_TICKTIME

    def _config(self):
        return ('loopback_users = none\n'
                'listeners.tcp.default = %s:%d\n'
                'cluster_partition_handling = pause_minority\n'
                % (self.address, PORT))


class Cluster:
    """Nodes on ``hosts`` (``{host: (address, exec prefix)}``), the
    first one started alone and the others joined to it."""

    def __init__(self, base_dir, hosts):
        self.nodes = [Node(base_dir, host, address, prefix)
                      for host, (address, prefix) in hosts.items()]

    def start(self):
        # Each node starts alone, all at once; then the others join the
        # first one by one.
        with futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.start(), self.nodes))
        first = self.nodes[0]
        for node in self.nodes[1:]:
            node.ctl('stop_app')
            node.ctl('reset')
            node.ctl('join_cluster', first.name)
            node.ctl('start_app')
        first.ctl('add_user', USER, PASSWORD)
        first.ctl('set_user_tags', USER, 'administrator')
        return self

    def running_nodes(self, via=None):
        out = (via or self.nodes[0]).ctl(
            'cluster_status', '--formatter', 'json').stdout
        return json.loads(out)['running_nodes']

    def add_vhost(self, name):
        first = self.nodes[0]
        first.ctl('add_vhost', name)
        first.ctl('set_permissions', '-p', name, USER, '.*', '.*', '.*')
        return self.url(name)

    def url(self, vhost):
        """Every node, as oslo.messaging takes them: it connects to the
        first and fails over to the next."""
        return 'rabbit://%s/%s' % (','.join(
            '%s:%s@%s:%d' % (USER, PASSWORD, node.address, PORT)
            for node in self.nodes), vhost)

    def stop(self):
        for node in reversed(self.nodes):
            node.stop()

    def node_of(self, host):
        return next(n for n in self.nodes if n.host == host)
