"""The libvirtd a compute host talks to, and what its machine has.

One connection per compute host (libvirt's are safe to share between
threads, and its Python binding lets go of the GIL while it waits), made
again when libvirtd restarted. Domains are looked up by the server's
uuid and taken for this host's only if their metadata names it: hosts
sharing a libvirtd never touch each other's guests.
"""

import json
import logging
import os
import queue
import re
import threading
import time
from xml.etree import ElementTree as ET

import os_traits

from scheduler_split.compute.virt import driver
from scheduler_split.compute.virt.libvirt import config
from scheduler_split import conf
from scheduler_split import monkey_patch

CONF = conf.CONF
LOG = logging.getLogger(__name__)

libvirt = None

# libvirt's domain states -> the compute's power states.
_POWER_STATES = {0: driver.NOSTATE, 1: driver.RUNNING, 2: driver.RUNNING,
                 3: driver.PAUSED, 4: driver.SHUTDOWN, 5: driver.SHUTDOWN,
                 6: driver.CRASHED, 7: driver.SUSPENDED}

# Capabilities every guest of this driver has, as os-traits name them.
_CAPABILITY_TRAITS = (
    'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW',
    'COMPUTE_IMAGE_TYPE_AKI', 'COMPUTE_IMAGE_TYPE_ARI',
    'COMPUTE_IMAGE_TYPE_AMI', 'COMPUTE_STORAGE_BUS_VIRTIO',
    'COMPUTE_GRAPHICS_MODEL_NONE')

# CPU features whose trait is not their name in capitals.
_FEATURE_TRAITS = {'sse4.1': 'SSE41', 'sse4.2': 'SSE42', 'pni': 'SSE3',
                   'lahf_lm': 'LAHF_LM'}

_QEMU_CONF = '/etc/libvirt/qemu.conf'

# Seconds between two presses of a guest's power button (Nova's).
SHUTDOWN_RETRY_INTERVAL = 10


def libvirt_binding():
    """libvirt's Python binding, or why this host cannot run guests."""
    global libvirt
    if libvirt is None:
        try:
            import libvirt as found
        except ImportError:
            raise driver.DriverNotAvailable(
                driver='libvirt.LibvirtDriver',
                reason="libvirt's Python binding is missing: install the "
                       "libvirt extra (pip install 'scheduler-split"
                       "[libvirt]'; it builds against Debian's libvirt-dev "
                       "and pkg-config)")
        libvirt = found
    return libvirt


_event_loop = {'started': False}
_event_loop_lock = threading.Lock()


def _start_event_loop(binding):
    """libvirt's default event loop in a daemon thread of its own, once
    per process and before the first connection: it delivers the
    domains' lifecycle events and the connections' keep-alive probes. None in
    eventlet mode, where a native loop would block the hub: the
    periodic power-state sync is all there is then."""
    if monkey_patch.is_patched():
        return False
    with _event_loop_lock:
        if not _event_loop['started']:
            binding.virEventRegisterDefaultImpl()

            def run():
                while True:
                    binding.virEventRunDefaultImpl()
            threading.Thread(target=run, name='libvirt-events',
                             daemon=True).start()
            _event_loop['started'] = True
    return True


def _unavailable(reason):
    return driver.DriverNotAvailable(driver='libvirt.LibvirtDriver',
                                     reason=reason)


def cpu_traits(features):
    """The os-traits of the CPU features ``features`` (libvirt's
    names), those os-traits knows."""
    traits = set()
    for feature in features:
        name = _FEATURE_TRAITS.get(feature) or re.sub(
            r'[^A-Z0-9]', '_', feature.upper())
        trait = 'HW_CPU_X86_' + name
        if trait in os_traits.get_traits('HW_CPU_X86_'):
            traits.add(trait)
    return traits


def _qemu_runs_as_root():
    try:
        with open(_QEMU_CONF) as f:
            text = f.read()
    except OSError:
        return False
    return re.search(r'^\s*user\s*=\s*"(root|\+0)"', text, re.M) is not None


def check_reachable(path):
    """Whether QEMU, which libvirtd runs as its own user, can reach
    ``path``: every directory above it must let others through."""
    if _qemu_runs_as_root():
        return
    current = os.path.abspath(path)
    while True:
        mode = os.stat(current).st_mode
        if not mode & 0o001:
            raise _unavailable(
                'QEMU runs as its own user (%s) and cannot reach %s: %s '
                'lets nobody else through. Set [DEFAULT] instances_path '
                'below directories others may enter (as '
                '/var/lib/scheduler-split/instances), or chmod o+x %s'
                % (_QEMU_CONF, path, current, current))
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def kvm_usable():
    """(whether this machine can run KVM guests, why not). /dev/kvm
    alone does not tell: inside a virtual machine without nested
    virtualization it may open, and a guest's kernel then hangs; the
    CPU must show vmx or svm too."""
    try:
        fd = os.open('/dev/kvm', os.O_RDWR)
    except OSError as exc:
        return False, '/dev/kvm cannot be opened (%s)' % exc.strerror
    os.close(fd)
    try:
        with open('/proc/cpuinfo') as f:
            flags = set()
            for line in f:
                if line.startswith('flags'):
                    flags = set(line.split(':', 1)[1].split())
                    break
    except OSError:
        flags = set()
    if not flags & {'vmx', 'svm'}:
        return False, ('the CPU shows no vmx or svm flag (a virtual machine '
                       'without nested virtualization), so KVM guests '
                       'would not boot')
    return True, None


def disk_cache_mode(path):
    """``none`` (O_DIRECT, Nova's default) where the filesystem of
    ``path`` has it, else ``writeback``."""
    probe = os.path.join(path, '.o_direct_probe')
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError:
        return 'writeback'
    os.close(fd)
    os.unlink(probe)
    return 'none'


class Host:

    def __init__(self, host):
        self.host = host
        self.uri = CONF.libvirt.connection_uri or 'qemu:///system'
        self.arch = 'x86_64'
        self._conn = None
        self._guard = threading.Lock()
        self._cpu = {}
        # Called with the uuid of a domain of this host whose state
        # changed (set by the driver), from a thread of its own.
        self.on_event = None
        self._events = queue.Queue()
        self._events_thread = None

    # --- the connection ---------------------------------------------------

    def connect(self):
        binding = libvirt_binding()
        events = _start_event_loop(binding)
        try:
            conn = binding.open(self.uri)
        except binding.libvirtError as exc:
            raise _unavailable('cannot connect to libvirtd at %s (is it '
                               'running?): %s' % (self.uri, exc))
        if events:
            # A libvirtd that stopped answering is noticed within 15 s.
            conn.setKeepAlive(5, 3)
            conn.domainEventRegisterAny(
                None, binding.VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                self._lifecycle_event, None)
            self._start_event_worker()
        capabilities = ET.fromstring(conn.getCapabilities())
        self.arch = capabilities.findtext('host/cpu/arch') or self.arch
        virt_type = CONF.libvirt.virt_type
        try:
            conn.getDomainCapabilities(None, self.arch, None, virt_type)
        except binding.libvirtError as exc:
            hint = (' (no usable /dev/kvm: set [libvirt] virt_type = qemu '
                    'to emulate the CPU)' if virt_type == 'kvm' else '')
            raise _unavailable('libvirtd at %s cannot run %s guests%s: %s'
                               % (self.uri, virt_type, hint, exc))
        self._cpu = self._read_cpu(conn, capabilities)
        with self._guard:
            self._conn = conn

    def _lifecycle_event(self, conn, domain, event, detail, opaque):
        # In libvirt's event loop: hand it on, never block it.
        self._events.put(domain.UUIDString())

    def _start_event_worker(self):
        if self._events_thread is not None:
            return

        def work():
            while True:
                uuid = self._events.get()
                if self.on_event is None:
                    continue
                try:
                    self.on_event(uuid)
                except Exception:
                    LOG.exception('Could not handle an event of the guest '
                                  'of %s on %s', uuid, self.host)
        self._events_thread = threading.Thread(
            target=work, name='libvirt-events-%s' % self.host, daemon=True)
        self._events_thread.start()

    def close(self):
        with self._guard:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    @property
    def conn(self):
        with self._guard:
            conn = self._conn
        if conn is not None:
            try:
                if conn.isAlive():
                    return conn
            except Exception:
                pass
            LOG.warning('The connection of %s to libvirtd at %s was lost; '
                        'connecting again', self.host, self.uri)
        self.connect()
        with self._guard:
            return self._conn

    # --- domains ----------------------------------------------------------

    def _owned(self, domain):
        return config.owner_of(domain.XMLDesc(0)) == self.host

    def lookup(self, uuid):
        """This host's domain of server ``uuid``, or None."""
        binding = libvirt_binding()
        try:
            domain = self.conn.lookupByUUIDString(uuid)
            owned = self._owned(domain)
        except binding.libvirtError as exc:
            # Gone, perhaps between the two (migrated away, undefined).
            if exc.get_error_code() == binding.VIR_ERR_NO_DOMAIN:
                return None
            raise
        return domain if owned else None

    def own_domains(self):
        """uuid -> domain, of every domain of this host."""
        return {domain.UUIDString(): domain
                for domain in self.conn.listAllDomains(0)
                if self._owned(domain)}

    def define(self, xml):
        return self.conn.defineXML(xml)

    def start(self, domain, timeout):
        """Start ``domain`` (from its managed save, if it has one) and
        wait until it runs (or is paused, as a managed save of a paused
        guest comes back)."""
        domain.create()
        deadline = time.monotonic() + timeout
        while domain.state()[0] not in (1, 3):
            if time.monotonic() > deadline:
                raise _unavailable('domain %s did not run within %d s'
                                   % (domain.name(), timeout))
            time.sleep(0.2)

    def shut_down(self, domain, timeout, force=True):
        """Ask the guest to shut down (the ACPI power button); True if it
        did within ``timeout`` seconds. Then, with ``force``, destroy it
        if it did not. The button is pressed again every
        SHUTDOWN_RETRY_INTERVAL seconds: a guest still booting misses
        it."""
        deadline = time.monotonic() + timeout
        pressed = 0.0
        while domain.isActive():
            now = time.monotonic()
            if now > deadline:
                if force:
                    domain.destroy()
                return False
            if now - pressed >= SHUTDOWN_RETRY_INTERVAL:
                pressed = now
                try:
                    domain.shutdown()
                except libvirt_binding().libvirtError:
                    if domain.isActive():
                        raise
            time.sleep(0.5)
        return True

    def undefine(self, uuid):
        """Stop and forget this host's domain of server ``uuid``, its
        managed save and snapshots included; none is no error."""
        domain = self.lookup(uuid)
        if domain is None:
            return
        binding = libvirt_binding()
        if domain.isActive():
            domain.destroy()
        flags = (binding.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
                 binding.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
        try:
            domain.undefineFlags(flags)
        except binding.libvirtError as exc:
            if exc.get_error_code() != binding.VIR_ERR_NO_DOMAIN:
                raise

    def power_state(self, uuid):
        domain = self.lookup(uuid)
        if domain is None:
            return driver.NOSTATE
        state = domain.state()[0]
        if state == 5 and domain.hasManagedSaveImage(0):
            return driver.SUSPENDED
        return _POWER_STATES.get(state, driver.NOSTATE)

    @staticmethod
    def started_at(domain):
        """When the QEMU of a running domain started, or None."""
        if not domain.isActive():
            return None
        try:
            return os.stat('/run/libvirt/qemu/%s.pid'
                           % domain.name()).st_mtime
        except OSError:
            return None

    # --- CPUs -------------------------------------------------------------

    def dedicated_cpus(self):
        return config.parse_cpu_set(CONF.compute.cpu_dedicated_set)

    def shared_cpus(self):
        """The host CPUs other guests float over; None: any."""
        if CONF.compute.cpu_shared_set:
            return config.parse_cpu_set(CONF.compute.cpu_shared_set)
        dedicated = set(self.dedicated_cpus())
        if not dedicated:
            return None
        return [cpu for cpu in range(self._cpu.get('cpus', 1))
                if cpu not in dedicated]

    def pin(self, uuid, count):
        """``count`` dedicated host CPUs no other guest of this host is
        pinned to, read from the domains themselves (they survive a
        restart of the compute)."""
        taken = set()
        for other, domain in self.own_domains().items():
            if other == uuid:
                continue
            root = ET.fromstring(domain.XMLDesc(0))
            taken.update(int(pin.get('cpuset')) for pin in
                         root.findall('cputune/vcpupin'))
        free = [cpu for cpu in self.dedicated_cpus() if cpu not in taken]
        if len(free) < count:
            raise _unavailable('%d dedicated CPUs wanted, %d free of '
                               '[compute] cpu_dedicated_set'
                               % (count, len(free)))
        return free[:count]

    def unpin(self, uuid):
        """Pins live in the domain: forgetting it frees them."""

    # --- what the machine has -----------------------------------------------

    def _read_cpu(self, conn, capabilities):
        cpu = capabilities.find('host/cpu')
        features = {f.get('name') for f in cpu.findall('feature')}
        try:
            expanded = ET.fromstring(conn.baselineCPU(
                [ET.tostring(cpu, encoding='unicode')],
                libvirt_binding().VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES))
            features |= {f.get('name') for f in expanded.findall('feature')
                         if f.get('policy') in (None, 'require')}
        except libvirt_binding().libvirtError as exc:
            LOG.info('libvirtd could not list the CPU features of %s: %s',
                     self.host, exc)
        topology = cpu.find('topology')
        info = conn.getInfo()
        return {
            'cpus': info[2], 'memory_mb': info[1],
            'model': cpu.findtext('model'), 'vendor': cpu.findtext('vendor'),
            'features': sorted(features),
            'topology': {k: int(topology.get(k, 1)) for k in
                         ('sockets', 'cores', 'threads')}
            if topology is not None else {}}

    def available_resource(self, instances_path):
        """The driver's report: this host's share of the machine."""
        conn = self.conn
        share = CONF.libvirt.host_share
        cpus = self._cpu
        dedicated = self.dedicated_cpus()
        shared = self.shared_cpus()
        vcpus = len(shared) if shared is not None else cpus['cpus']
        disk = os.statvfs(instances_path)
        local_gb = disk.f_frsize * disk.f_blocks // 1024 ** 3
        resources = {'PCPU': len(dedicated)} if dedicated else {}
        known = set(os_traits.get_traits('COMPUTE_'))
        traits = cpu_traits(cpus['features']) | {
            t for t in _CAPABILITY_TRAITS if t in known}
        return {
            'vcpus': max(1, int(vcpus * share)),
            'memory_mb': max(1, int(cpus['memory_mb'] * share)),
            'local_gb': max(1, int(local_gb * share)),
            'resources': resources, 'traits': sorted(traits),
            'providers': [], 'hypervisor_type': 'QEMU',
            'hypervisor_version': conn.getVersion(),
            'cpu_arch': self.arch,
            'cpu_info': json.dumps({
                'arch': self.arch, 'model': cpus['model'],
                'vendor': cpus['vendor'],
                'topology': dict(cpus['topology'], cells=1),
                'features': cpus['features']})}
