"""Hosts apart on one machine: a Linux network namespace per host, each
with one address on a private bridge.

The bridge lives in a namespace of its own (``<prefix>-net``), so the
machine's own network is left alone but for one veth pair: the machine
itself (where the tests and the user's ``openstack`` client run) gets
the subnet's first address on it and reaches every host. Each host
namespace has its loopback (for what a server keeps to itself, as epmd
does) and ``eth0`` with its address; nothing else.

``ip netns exec`` also bind-mounts ``/etc/netns/<namespace>/hosts`` over
``/etc/hosts`` for what runs in the namespace: each host's names (``db``,
say) resolve as that host needs.
"""

import ipaddress
import os
import shutil
import subprocess

NETNS_ETC = '/etc/netns'


def ip(*args, check=True):
    return subprocess.run(['ip', *args], check=check, capture_output=True,
                          text=True, timeout=30)


def namespaces():
    """The names of the machine's network namespaces."""
    out = ip('netns', 'list').stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


class Network:
    """The bridge and ``hosts`` on it, each in its namespace
    ``<prefix>-<host>`` with the next address of ``subnet`` (the first
    is the machine's own). ``names`` (``{host: {name: address}}``) go
    into the hosts' hosts files."""

    def __init__(self, hosts, prefix='ss', subnet='10.231.0.0/24',
                 names=None):
        self.prefix = prefix
        self.subnet = ipaddress.ip_network(subnet)
        addresses = self.subnet.hosts()
        self.gateway = str(next(addresses))
        self.hosts = {host: str(next(addresses)) for host in hosts}
        self.names = names or {}
        self.bridge_ns = '%s-net' % prefix
        self._outside = '%s-out' % prefix

    def namespace(self, host):
        return '%s-%s' % (self.prefix, host)

    def exec_prefix(self, host):
        """The command line prefix that runs a command on ``host``."""
        return ['ip', 'netns', 'exec', self.namespace(host)]

    def up(self):
        """The bridge, the machine's own address on it, and the hosts."""
        self.down()
        ip('netns', 'add', self.bridge_ns)
        ip('-n', self.bridge_ns, 'link', 'add', 'br0', 'type', 'bridge')
        ip('-n', self.bridge_ns, 'link', 'set', 'br0', 'up')
        ip('link', 'add', self._outside, 'type', 'veth', 'peer', 'name',
           'port0', 'netns', self.bridge_ns)
        self._plug('port0')
        ip('addr', 'add', '%s/%d' % (self.gateway, self.subnet.prefixlen),
           'dev', self._outside)
        ip('link', 'set', self._outside, 'up')
        for number, host in enumerate(self.hosts, start=1):
            self._add_host(host, 'port%d' % number)
        return self

    def _plug(self, port):
        ip('-n', self.bridge_ns, 'link', 'set', port, 'master', 'br0')
        ip('-n', self.bridge_ns, 'link', 'set', port, 'up')

    def _add_host(self, host, port):
        ns = self.namespace(host)
        ip('netns', 'add', ns)
        ip('link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer',
           'name', port, 'netns', self.bridge_ns)
        self._plug(port)
        ip('-n', ns, 'addr', 'add', '%s/%d' % (self.hosts[host],
                                               self.subnet.prefixlen),
           'dev', 'eth0')
        ip('-n', ns, 'link', 'set', 'eth0', 'up')
        ip('-n', ns, 'link', 'set', 'lo', 'up')
        etc = os.path.join(NETNS_ETC, ns)
        os.makedirs(etc, exist_ok=True)
        lines = ['127.0.0.1 localhost', '%s %s' % (self.hosts[host], host)]
        lines += ['%s %s' % (address, name) for name, address in
                  sorted(self.names.get(host, {}).items())]
        with open(os.path.join(etc, 'hosts'), 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def link(self, host, up):
        """Set the link of ``host`` to the bridge up or down (a cable
        pulled)."""
        ip('-n', self.namespace(host), 'link', 'set', 'eth0',
           'up' if up else 'down')

    def drop(self, host, *rules):
        """Drop, on ``host``, the packets each of ``rules`` matches (an
        iptables rule of the OUTPUT or INPUT chain: ``('OUTPUT', '-p',
        'tcp', '--dport', '5672')``): a link cut for them only, the
        peers' packets lost rather than refused."""
        for chain, *match in rules:
            subprocess.run([*self.exec_prefix(host), 'iptables', '-A', chain,
                            *match, '-j', 'DROP'], check=True,
                           capture_output=True, text=True, timeout=30)

    def undrop(self, host):
        """Every rule :meth:`drop` set on ``host`` gone."""
        for chain in ('OUTPUT', 'INPUT'):
            subprocess.run([*self.exec_prefix(host), 'iptables', '-F',
                            chain], check=True, capture_output=True,
                           text=True, timeout=30)

    def pids(self, host):
        """The processes running on ``host``."""
        out = ip('netns', 'pids', self.namespace(host), check=False).stdout
        return [int(pid) for pid in out.split()]

    def down(self):
        """Every process in this network's namespaces killed, and the
        namespaces, the machine's veth and the hosts files gone (also
        those a run that died left behind)."""
        mine = [ns for ns in namespaces()
                if ns.startswith(self.prefix + '-')]
        for ns in mine:
            out = ip('netns', 'pids', ns, check=False).stdout
            for pid in out.split():
                try:
                    os.kill(int(pid), 9)
                except ProcessLookupError:
                    pass
        for ns in mine:
            ip('netns', 'del', ns, check=False)
            shutil.rmtree(os.path.join(NETNS_ETC, ns), ignore_errors=True)
        ip('link', 'del', self._outside, check=False)
