from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics',
    help='Prometheus metrics. The API serves them at /metrics (guarded '
         'by the policy rule scheduler_split:metrics, admins only by '
         'default); the scheduler, the conductors and the computes each '
         'on a port of their own. Every service reads the options of '
         'this group, so one file (scheduler-split.conf, say) can hold '
         'the ports of all of them.')

SERVICES = ('api', 'scheduler', 'super-conductor', 'cell-conductor',
            'compute')

metrics_opts = [
    cfg.ListOpt('enabled_services',
                default=['api', 'scheduler', 'super-conductor',
                         'cell-conductor'],
                item_type=cfg.types.String(choices=SERVICES),
                help='Services that serve their metrics: api, scheduler, '
                     'super-conductor, cell-conductor, compute. A service '
                     'not listed keeps counting but serves nothing (the '
                     'API answers /metrics with 404). The computes are '
                     'left out by default: a hypervisor host is the least '
                     'trusted machine and has little to tell.'),
    cfg.HostAddressOpt('bind_host', default='127.0.0.1',
                       help='Address the scheduler, the conductors and '
                            'the computes serve their metrics on (the API '
                            'serves them on its own address and port).'),
    cfg.PortOpt('scheduler_port', default=9771,
                help='Port of the scheduler\'s metrics.'),
    cfg.PortOpt('super_conductor_port', default=9772,
                help='Port of the super-conductor\'s metrics.'),
    cfg.PortOpt('cell_conductor_port', default=9773,
                help='Port of a cell conductor\'s metrics: give each cell '
                     'conductor of one machine its own, in its cell\'s '
                     'file.'),
    cfg.PortOpt('compute_port', default=9774,
                help='Port of a compute\'s metrics: give each compute of '
                     'one machine its own, in its host\'s file.'),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
