"""A libvirtd of its own for compute hosts of the cloud, as each host of
a real cloud has: what a live migration needs, since one libvirtd
cannot migrate a guest to itself.

Every such host gets a mount namespace inside its network namespace,
held by a process that sleeps there (so the namespace outlives the
compute's restarts, and :meth:`.cloud.Cloud.kill_host` kills it with
the host's other processes, guests included). In it, libvirt's
directories are the host's own copies: ``/run/libvirt`` (its sockets
and pid files), ``/etc/libvirt`` (no default network, libvirtd
listening on TCP without authentication, a host uuid of its own),
``/var/lib/libvirt``, ``/var/log/libvirt``, ``/var/cache/libvirt``, and
:data:`INSTANCES_PATH`, the same path on every host as the live
migration of a server's files wants. virtlogd and libvirtd run there,
and so does the host's compute (:meth:`Hypervisor.prefix`).

``ip netns exec`` gave the namespace the host's hosts file, which names
every compute host: a libvirtd reaches its peer by the peer's compute
host name.
"""

import os
import shutil
import signal
import subprocess
import time
import uuid as uuid_lib

INSTANCES_PATH = '/var/lib/scheduler-split/instances'
# The directories of libvirt each host has its own copy of (copied from
# the machine's, so that their owners and modes are the packages').
COPIED = ('/etc/libvirt', '/var/lib/libvirt', '/var/cache/libvirt')
EMPTY = ('/var/log/libvirt', INSTANCES_PATH)
LIBVIRTD_CONF = """
listen_tls = 0
listen_tcp = 1
auth_tcp = "none"
host_uuid = "%s"
"""


def _mount_namespace(pid):
    return os.readlink('/proc/%d/ns/mnt' % pid)


class Hypervisor:
    """libvirtd and virtlogd of compute ``host``, in the network
    namespace ``namespace`` (entered with ``exec_prefix``), their files
    under ``base``."""

    def __init__(self, host, namespace, exec_prefix, base):
        self.host = host
        self.namespace = namespace
        self.exec_prefix = list(exec_prefix)
        self.base = os.path.join(base, host)
        self.holder = None

    @property
    def prefix(self):
        """What a command runs behind on this host, with its libvirtd."""
        return ['nsenter', '--mount=/proc/%d/ns/mnt' % self.holder.pid,
                '--net=/run/netns/%s' % self.namespace]

    def run(self, *command, check=True, timeout=60):
        done = subprocess.run([*self.prefix, *command], capture_output=True,
                              text=True, timeout=timeout)
        if check and done.returncode:
            raise AssertionError('%s on %s: rc %d\n%s%s' % (
                ' '.join(command), self.host, done.returncode, done.stdout,
                done.stderr))
        return done.stdout

    def virsh(self, *args, check=True):
        return self.run('virsh', '-c', 'qemu:///system', *args,
                        check=check).strip()

    def start(self):
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        os.chmod(self.base, 0o755)
        binds = {}
        for path in COPIED + EMPTY:
            copy = os.path.join(self.base, path.strip('/').replace('/', '-'))
            if path in COPIED:
                subprocess.run(['cp', '-a', path, copy], check=True)
            else:
                os.makedirs(copy)
                os.chmod(copy, 0o755)
            binds[path] = copy
        etc = binds['/etc/libvirt']
        # No default network: there is no dnsmasq and no NAT here.
        shutil.rmtree(os.path.join(etc, 'qemu', 'networks'),
                      ignore_errors=True)
        with open(os.path.join(etc, 'libvirtd.conf'), 'a') as f:
            f.write(LIBVIRTD_CONF % uuid_lib.uuid5(uuid_lib.NAMESPACE_DNS,
                                                   self.host))
        self.holder = subprocess.Popen(
            [*self.exec_prefix, 'unshare', '--mount', '--propagation',
             'private', 'sleep', 'infinity'], start_new_session=True)
        own = _mount_namespace(os.getpid())
        deadline = time.monotonic() + 30
        while _mount_namespace(self.holder.pid) == own or open(
                '/proc/%d/comm' % self.holder.pid).read().strip() != 'sleep':
            assert self.holder.poll() is None, 'the holder of %s exited' % (
                self.host)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        script = ['set -e', 'mkdir -p /run/libvirt',
                  'mount -t tmpfs -o mode=0755 tmpfs /run/libvirt']
        for path, copy in binds.items():
            script.append('mkdir -p %s && mount --bind %s %s' % (
                path, copy, path))
        script += ['/usr/sbin/virtlogd -d -p /run/libvirt/virtlogd.pid',
                   '/usr/sbin/libvirtd -d -l -p /run/libvirt/libvirtd.pid']
        self.run('sh', '-c', '\n'.join(script))
        deadline = time.monotonic() + 60
        while self.run('virsh', '-c', 'qemu:///system', 'version',
                       check=False, timeout=30) == '':
            assert time.monotonic() < deadline, (
                'the libvirtd of %s does not answer' % self.host)
            time.sleep(0.5)
        return self

    def pids(self):
        """The processes in this host's mount namespace: the holder,
        virtlogd, libvirtd, the guests' QEMUs and the compute."""
        if self.holder is None or self.holder.poll() is not None:
            return []
        mine = _mount_namespace(self.holder.pid)
        found = []
        for entry in os.listdir('/proc'):
            if entry.isdigit():
                try:
                    if _mount_namespace(int(entry)) == mine:
                        found.append(int(entry))
                except OSError:
                    pass
        return found

    def stop(self):
        """Everything of this host's libvirt gone: its processes killed
        (guests included) and its files removed."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.holder is not None:
            self.holder.wait()
        self.holder = None
        shutil.rmtree(self.base, ignore_errors=True)
