from oslo_config import cfg

conductor_group = cfg.OptGroup(
    'conductor', help='Options of the conductor service.')

conductor_opts = [
    cfg.StrOpt('role',
               default='cell',
               choices=[('super', 'listen on the API bus and run '
                                  'schedule_and_build_instances'),
                        ('cell', 'listen on the cell bus and run '
                                 'build_instances (reschedules)')],
               help='Which conductor this process is.'),
    cfg.IntOpt('build_max_attempts',
               default=3, min=1,
               help='How many hosts a build may be tried on: the chosen '
                    'host plus (build_max_attempts - 1) same-cell '
                    'alternates, which the conductor asks the scheduler '
                    'for.'),
    cfg.IntOpt('lost_build_timeout',
               default=600, min=10,
               help='Seconds after which a build that no service is working '
                    'on any more (a message lost with a crashed process) '
                    'ends in ERROR with a fault: for the super-conductor a '
                    'build request never scheduled, for a cell conductor '
                    'an instance handed to no compute. Keep it well above '
                    'rpc_response_timeout.'),
    cfg.IntOpt('lost_build_check_interval',
               default=60, min=1,
               help='Seconds between two looks for lost builds.'),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    return {conductor_group: conductor_opts}
