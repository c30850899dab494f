import os

from oslo_config import cfg

# Options of [DEFAULT] that only a compute host reads.
driver_opts = [
    cfg.StrOpt('compute_driver', default='fake.FakeDriver',
               choices=[('fake.FakeDriver',
                         'a hypervisor of configured size that runs '
                         'nothing ([fake_driver]): for scale tests, '
                         'benchmarks and machines without one'),
                        ('libvirt.LibvirtDriver',
                         'QEMU/KVM guests through libvirtd ([libvirt]); '
                         'needs the libvirt extra')],
               help='The hypervisor driver of this compute host, by '
                    'Nova\'s name.'),
    cfg.StrOpt('instances_path',
               default=os.path.join('/var', 'lib', 'scheduler-split',
                                    'instances'),
               help='Where a compute host keeps its servers\' files: a '
                    'directory per server (disks, console log) and '
                    '_base, the cache of the images they boot from. '
                    'Compute hosts that share a machine each need their '
                    'own.'),
    cfg.StrOpt('instance_name_template', default='instance-%08x',
               help='How a server\'s domain is named on its hypervisor, '
                    'from its id in its cell (%08x) or, as '
                    '%(uuid)s, its uuid. Ids repeat across cells: '
                    'computes of several cells sharing one libvirtd need '
                    'instance-%(uuid)s.'),
    cfg.StrOpt('running_deleted_instance_action', default='log',
               choices=[('noop', 'do nothing'),
                        ('log', 'log it at every look'),
                        ('shutdown', 'power it off'),
                        ('reap', 'destroy it with its disks')],
               help='What a compute host does with a guest of its own '
                    'that no server of its cell owns any more (deleted '
                    'while the host was away, or left by a crash).'),
    cfg.IntOpt('running_deleted_instance_poll_interval', default=1800,
               min=0,
               help='Seconds between two looks for such guests; 0 never '
                    'looks.'),
    cfg.IntOpt('sync_power_state_interval', default=600, min=-1,
               help='Seconds between two comparisons of the power state '
                    'of every server of this host with its hypervisor\'s: '
                    'a guest that stopped on its own (its QEMU died, it '
                    'was shut down from inside) makes its server SHUTOFF, '
                    'with an instance action. -1 never compares; the '
                    'hypervisor\'s own events still count where the '
                    'driver has them.'),
]

compute_group = cfg.OptGroup(
    'compute', help='Options of the compute service.')

compute_opts = [
    cfg.FloatOpt('cpu_allocation_ratio', default=None, min=0.0,
                 help='Virtual CPUs that may be allocated per physical '
                      'CPU. Unset, the ratio of the compute node\'s VCPU '
                      'inventory stays as it is, as an operator set it '
                      'through the Placement API (openstack resource '
                      'provider inventory set), and a new compute node '
                      'starts with initial_cpu_allocation_ratio; set, it '
                      'replaces it at every report.'),
    cfg.FloatOpt('ram_allocation_ratio', default=None, min=0.0,
                 help='Memory that may be allocated per MiB of physical '
                      'memory; unset, as for cpu_allocation_ratio.'),
    cfg.FloatOpt('disk_allocation_ratio', default=None, min=0.0,
                 help='Disk that may be allocated per GiB of local disk; '
                      'unset, as for cpu_allocation_ratio.'),
    cfg.FloatOpt('initial_cpu_allocation_ratio', default=4.0, min=0.0,
                 help='The VCPU allocation ratio of a new compute node '
                      'when cpu_allocation_ratio is unset.'),
    cfg.FloatOpt('initial_ram_allocation_ratio', default=1.0, min=0.0,
                 help='The MEMORY_MB allocation ratio of a new compute '
                      'node when ram_allocation_ratio is unset.'),
    cfg.FloatOpt('initial_disk_allocation_ratio', default=1.0, min=0.0,
                 help='The DISK_GB allocation ratio of a new compute node '
                      'when disk_allocation_ratio is unset.'),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               help='Memory kept for the host itself, never allocated.'),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0,
               help='Physical CPUs kept for the host itself.'),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0,
               help='Disk kept for the host itself, in MiB.'),
    cfg.StrOpt('cpu_dedicated_set',
               help='Host CPUs (e.g. 4-7,^6) the libvirt driver gives to '
                    'servers whose flavor has hw:cpu_policy=dedicated, '
                    'each pinned to its own; reported as PCPU.'),
    cfg.StrOpt('cpu_shared_set',
               help='Host CPUs the guests of other servers float over, '
                    'reported as VCPU; unset, every CPU of the share of '
                    'the machine outside cpu_dedicated_set.'),
    cfg.StrOpt('availability_zone', default='nova',
               help='Availability zone this compute host belongs to.'),
    cfg.IntOpt('unfinished_build_check_interval', default=60, min=1,
               help='Seconds between two looks, through the cell '
                    'conductor, at the instances building on this host: '
                    'one this compute is not building (the service '
                    'stopped mid-build, or the database was away when '
                    'its ERROR was to be saved) ends in ERROR with a '
                    'fault and gives its claim back. The first look is '
                    'right after the start.'),
]


def register_opts(conf):
    conf.register_opts(driver_opts)
    conf.register_group(compute_group)
    conf.register_opts(compute_opts, group=compute_group)


def list_opts():
    return {'DEFAULT': driver_opts, compute_group: compute_opts}
