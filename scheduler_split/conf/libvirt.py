from oslo_config import cfg

libvirt_group = cfg.OptGroup(
    'libvirt',
    help='The libvirt driver ([DEFAULT] compute_driver = '
         'libvirt.LibvirtDriver): QEMU/KVM guests through libvirtd.')

libvirt_opts = [
    cfg.StrOpt('virt_type', default='kvm', choices=['kvm', 'qemu'],
               help='kvm runs guests on the CPU\'s virtualization; qemu '
                    'emulates the CPU (TCG): slower, but it boots where '
                    'KVM is missing or refuses the guest, as inside a '
                    'virtual machine without nested virtualization.'),
    cfg.StrOpt('connection_uri', default='',
               help='The libvirtd to connect to; empty: qemu:///system.'),
    cfg.StrOpt('cpu_mode', default=None,
               choices=['host-model', 'host-passthrough', 'custom',
                        'none'],
               help='The guest CPU: host-model or host-passthrough give '
                    'the guest the host\'s CPU features (KVM only), custom '
                    'the first of cpu_models, none the hypervisor\'s '
                    'default. Unset: host-model under kvm, none under '
                    'qemu.'),
    cfg.ListOpt('cpu_models', default=[],
                help='CPU models for cpu_mode = custom, e.g. '
                     'Nehalem,qemu64.'),
    cfg.FloatOpt('host_share', default=1.0, min=0.01, max=1.0,
                 help='The part of this machine\'s CPUs, memory and disk '
                      'this compute host reports, when several compute '
                      'hosts share one machine and its libvirtd (each '
                      'with its own [DEFAULT] instances_path), so that '
                      'no capacity is counted twice.'),
    cfg.IntOpt('shutdown_timeout', default=60, min=0,
               help='Seconds a stop or a soft reboot waits for the guest '
                    'to shut down when asked (the ACPI power button) '
                    'before its domain is destroyed.'),
    cfg.IntOpt('boot_timeout', default=300, min=1,
               help='Seconds a spawn waits for its domain to run.'),
    cfg.StrOpt('kernel_cmdline', default='console=ttyS0 panic=-1',
               help='The kernel command line of a server booted from an '
                    'image with kernel_id (direct kernel boot), unless '
                    'the image sets os_command_line.'),
    cfg.StrOpt('live_migration_scheme', default='tcp',
               choices=['tcp', 'tls', 'ssh'],
               help='How this host\'s libvirtd reaches the destination\'s '
                    'in a live migration: qemu+<scheme>://<destination '
                    'compute host>/system, the memory and disks then going '
                    'straight to the destination\'s QEMU at tcp://'
                    '<destination compute host>. The destination\'s '
                    'libvirtd must listen for it (tcp: listen_tcp = 1 in '
                    'libvirtd.conf and libvirtd --listen, or its '
                    'libvirtd-tcp.socket) and every compute host\'s name '
                    '(its [DEFAULT] host) must resolve to its address on '
                    'its peers.'),
    cfg.IntOpt('live_migration_completion_timeout', default=800, min=0,
               help='Seconds per GiB of the guest\'s memory and disk a '
                    'live migration may take before it is aborted (the '
                    'server keeps running on its source); 0: no limit.'),
    cfg.IntOpt('live_migration_bandwidth', default=0, min=0,
               help='The most MiB/s a live migration sends; 0: as fast as '
                    'the link allows.'),
    cfg.IntOpt('live_migration_progress_interval', default=10, min=1,
               help='Seconds between two log lines of a live migration\'s '
                    'progress (data sent and left).'),
]


def register_opts(conf):
    conf.register_group(libvirt_group)
    conf.register_opts(libvirt_opts, group=libvirt_group)


def list_opts():
    return {libvirt_group: libvirt_opts}
