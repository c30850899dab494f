import platform

from oslo_config import cfg

from scheduler_split import provider_model

# platform.machine() spellings of the architectures Nova names otherwise.
_ARCH_ALIASES = {'amd64': 'x86_64', 'x64': 'x86_64', 'arm64': 'aarch64',
                 'i386': 'i686', 'i486': 'i686', 'i586': 'i686',
                 'x86': 'i686'}


def _machine_arch():
    machine = platform.machine().lower()
    return _ARCH_ALIASES.get(machine, machine) or 'x86_64'


class _HostLines(cfg.types.String):
    """A ``HOSTS=VALUE`` line whose VALUE ``parse`` reads: a wrong one is
    an error as the option is read (at start-up), not at every report."""

    def __init__(self, parse):
        super().__init__(type_name='HOSTS=VALUE')
        self._parse = parse

    def __call__(self, value):
        if isinstance(value, list):
            return [self(line) for line in value]
        value = super().__call__(value)
        pattern, sep, rest = value.partition('=')
        if not sep or not pattern.strip():
            raise ValueError('%r: expected HOSTS=VALUE' % value)
        try:
            self._parse(rest)
        except provider_model.BadName as exc:
            raise ValueError(str(exc))
        return value


fake_driver_group = cfg.OptGroup(
    'fake_driver',
    help='The fake virt driver: a hypervisor of configurable size that '
         'spawns nothing, for the all-in-one, demos and tests.')

fake_driver_opts = [
    cfg.IntOpt('vcpus', default=8, min=1,
               help='Physical CPUs each fake host reports.'),
    cfg.IntOpt('memory_mb', default=16384, min=1,
               help='Memory each fake host reports, in MiB.'),
    cfg.IntOpt('local_gb', default=200, min=1,
               help='Local disk each fake host reports, in GiB.'),
    cfg.FloatOpt('spawn_delay', default=0.2, min=0.0,
                 help='Seconds a fake spawn takes.'),
    cfg.ListOpt('fail_hosts', default=[],
                help='Hosts on which every spawn fails.'),
    cfg.FloatOpt('failure_rate', default=0.0, min=0.0, max=1.0,
                 help='Probability that a spawn on any host fails.'),
    cfg.BoolOpt('failures_reschedulable', default=True,
                help='Whether injected failures may be rescheduled to an '
                     'alternate host (True) or put the instance in ERROR '
                     'at once (False).'),
    cfg.StrOpt('cpu_arch', default=_machine_arch(),
               sample_default='<this machine\'s architecture, e.g. x86_64>',
               help='CPU architecture each fake host reports (the '
                    'scheduler\'s ImagePropertiesFilter matches images\' '
                    'hw_architecture against it).'),
    cfg.MultiOpt('traits', default=[],
                 item_type=_HostLines(provider_model.parse_traits),
                 help='Traits fake hosts report, one line per group of '
                      'hosts: HOSTS=TRAIT[,TRAIT...], HOSTS a host name '
                      'or a shell pattern (* for every host). A trait '
                      'is a standard one of the os-traits library '
                      '(HW_CPU_X86_AVX512F, COMPUTE_TRUSTED_CERTS) or '
                      '``CUSTOM_`` and upper-case letters, digits and _. '
                      'Flavors ask for them with trait:NAME=required '
                      'or forbidden, images with trait:NAME=required. '
                      'A trait an operator sets on a host stays; only '
                      'those reported here come and go with the '
                      'reports. Example: cell1-compute2=HW_CPU_X86_'
                      'AVX512F,CUSTOM_GOLD'),
    cfg.MultiOpt('resources', default=[],
                 item_type=_HostLines(provider_model.parse_inventory),
                 help='Inventory fake hosts report beyond their vcpus, '
                      'memory_mb and local_gb, one line per group of '
                      'hosts: HOSTS=CLASS:TOTAL[,CLASS:TOTAL...], HOSTS '
                      'as for traits. A class is a standard one of the '
                      'os-resource-classes library (PCPU for dedicated '
                      'CPUs, VGPU, PCI_DEVICE, SRIOV_NET_VF, ...) or '
                      '``CUSTOM_`` and upper-case letters, digits and _. '
                      'Flavors ask for them with resources:CLASS=AMOUNT '
                      '(hw:cpu_policy=dedicated asks PCPU). Example: '
                      'cell2-compute1=VGPU:4,PCPU:4'),
    cfg.MultiOpt('providers', default=[],
                 item_type=_HostLines(provider_model.parse_children),
                 help='Providers below fake compute nodes, as a real '
                      'driver reports a GPU\'s VGPUs, a PCI device or a '
                      'NIC\'s bandwidth: one line per group of hosts, '
                      '``HOSTS=NAME[@PARENT]|CLASS:TOTAL[,CLASS:TOTAL...]'
                      '[|TRAIT[,TRAIT...]]``, several providers separated '
                      'by ``;``. Each is named <node>_NAME and hangs below '
                      'the compute node, or below the provider PARENT '
                      'named before it on the line. Classes and traits '
                      'are as for resources and traits. A flavor\'s '
                      'resources:VGPU=1 takes a VGPU from whichever '
                      'provider of the host has one; resources1:VGPU=1 '
                      'with trait1:CUSTOM_GPU_A=required takes it from a '
                      'provider that has the trait. A provider a report '
                      'no longer names is deleted once nothing is '
                      'allocated of it. Example: ``cell1-compute2=pgpu0|'
                      'VGPU:4|CUSTOM_GPU_A;pgpu1|VGPU:4|CUSTOM_GPU_B``'),
    cfg.IntOpt('hypervisor_version', default=1000, min=0,
               help='Hypervisor version each fake host reports, as an '
                    'integer (os-hypervisors hypervisor_version).'),
    cfg.ListOpt('fail_actions', default=[],
                item_type=cfg.types.String(choices=[
                    'stop', 'start', 'reboot', 'pause', 'unpause',
                    'suspend', 'resume', 'rebuild', 'soft_delete',
                    'restore', 'shelve']),
                help='Server actions that fail on every host (stop, start, '
                     'reboot, pause, unpause, suspend, resume): the server '
                     'keeps the state it had, with a fault and an '
                     'instance-action event in Error. A rebuild on the '
                     'server\'s own host (rebuild) that fails leaves it in '
                     'ERROR with the fault. A soft delete (soft_delete) or '
                     'a restore (restore) that fails leaves the server as '
                     'it was, with a fault, and so does a shelve (shelve). '
                     'An unshelve spawns as a build does, and fails as '
                     'fail_hosts and failure_rate say.'),
    cfg.StrOpt('record_dir',
               help='A directory where each fake host keeps, in '
                    '<host>.json, the servers it runs now and their power '
                    'states, rewritten at every change: what runs where, '
                    'for tests that count servers running on two hosts. '
                    'Unset: no record is written.'),
    cfg.FloatOpt('action_delay', default=0.0, min=0.0,
                 help='Seconds a fake power, pause or suspend action '
                      'takes.'),
    cfg.FloatOpt('move_delay', default=0.0, min=0.0,
                 help='Seconds a fake move sends its server for: the '
                      'source\'s step of a resize, a cold or a live '
                      'migration.'),
    cfg.ListOpt('fail_move_steps', default=[],
                help='Steps of moves that fail: a step alone fails on every '
                     'host, STEP@HOST only on that host. Steps: '
                     'prep_resize (the destination refuses a resize or '
                     'cold migration: the next alternate is tried), '
                     'resize (the source cannot send the server off), '
                     'finish_resize (the destination cannot start it), '
                     'live_migration (the source cannot send it live), '
                     'pre_live_migration (the destination cannot take it '
                     'live: the next alternate is tried), rebuild (an '
                     'evacuation\'s destination cannot rebuild it). A failed '
                     'move leaves the server where it was, with a fault '
                     'and an instance-action event in Error.'),
]

MOVE_STEPS = ('prep_resize', 'resize', 'finish_resize', 'live_migration',
              'pre_live_migration', 'rebuild')


def register_opts(conf):
    conf.register_group(fake_driver_group)
    conf.register_opts(fake_driver_opts, group=fake_driver_group)


def list_opts():
    return {fake_driver_group: fake_driver_opts}
