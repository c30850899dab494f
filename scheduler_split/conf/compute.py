from oslo_config import cfg

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
    conf.register_group(compute_group)
    conf.register_opts(compute_opts, group=compute_group)


def list_opts():
    return {compute_group: compute_opts}
