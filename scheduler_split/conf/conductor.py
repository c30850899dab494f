from oslo_config import cfg

conductor_group = cfg.OptGroup(
    'conductor', help='Options of the conductor service.')

conductor_opts = [
    cfg.StrOpt('role',
               default='cell',
               choices=[('super', 'listen on the API bus: schedule and '
                                  'place boots and moves, re-drive lost '
                                  'boots, release claims nothing needs'),
                        ('cell', 'listen on the cell bus: reschedule '
                                 'builds and moves within the cell, read '
                                 'and write the cell database for its '
                                 'computes, confirm old resizes')],
               help='Which conductor this process is.'),
    cfg.IntOpt('heal_allocations_interval',
               default=300, min=1, deprecated_group='scheduler',
               help='Seconds between two reconciliations of claims by the '
                    'super-conductor: it pages through the consumers '
                    'holding allocations in the scheduler and releases, '
                    'with a log line each, those no build request, live '
                    'instance or move under way needs (deleted, in ERROR, '
                    'or never created).'),
    cfg.IntOpt('heal_allocations_grace',
               default=300, min=0, deprecated_group='scheduler',
               help='Allocations younger than this many seconds are left '
                    'alone by the reconciliation, whatever their consumer '
                    'shows.'),
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
                    'an instance handed to no compute. A move no service '
                    'advanced for as long is rolled back to its source by '
                    'its cell conductor, and a rebuild ends in ERROR. Keep '
                    'it well above rpc_response_timeout.'),
    cfg.IntOpt('lost_build_check_interval',
               default=60, min=1,
               help='Seconds between two looks for lost builds, for boots '
                    'to re-drive (see build_redrive_interval) and for '
                    'placements a crash interrupted (a build request left '
                    'behind, a row in a cell other than the one the '
                    'instance mapping names), which the super-conductor '
                    'finishes.'),
    cfg.IntOpt('build_redrive_interval',
               default=60, min=1,
               help='Seconds a boot may wait on the bus, taken by no '
                    'super-conductor, before the super-conductor casts '
                    'schedule_and_build_instances for it again: a broker '
                    'that restarted without keeping the queue lost the '
                    'first cast. Whichever delivery takes the build request '
                    'first schedules it; the others find it taken. Also '
                    'the wait before a boot whose call to the scheduler '
                    'the bus lost (a timeout) is tried again. Durable '
                    'queues ([oslo_messaging_rabbit] amqp_durable_queues = '
                    'true in every service) keep queued boots across a '
                    'clean restart; the re-drive covers transient queues '
                    'and what durable ones lose. In a cell, a build that '
                    'waited this long for a compute to take it (the cast, '
                    'or a compute\'s give-back, was lost) is cast again by '
                    'the cell conductor to the host holding its claim, or '
                    'goes on to its next alternate (see "Builds go on '
                    'from their plan" in the admin guide\'s "Faults and '
                    'recovery").'),
    cfg.IntOpt('build_redrive_limit',
               default=3, min=0,
               help='How many times one boot is re-driven, and how '
                    'many times a cell conductor casts one build again to '
                    'the host holding its claim before it goes on to its '
                    'next alternate (see build_redrive_interval); 0 never. '
                    'A build with no alternate left is cast again to its '
                    'host, while that host is up, as many times as fit in '
                    'lost_build_timeout. A boot still taken by nobody '
                    'lost_build_timeout after its last re-drive (or, '
                    'with 0, after it was made) ends in ERROR in cell0: '
                    'a broker outage that holds the re-drives up does not '
                    'fail it.'),
    cfg.FloatOpt('schedule_batch_window',
                 default=0.005, min=0.0, max=1.0,
                 help='Seconds a boot may wait at the super-conductor for '
                      'others to share its call to the schedulers; 0 sends '
                      'every boot alone. A boot waits only while '
                      'schedule_calls_in_flight calls are already out: '
                      'the boots that queue meanwhile go out together, in '
                      'one select_destinations_batch, as soon as a call '
                      'returns or after this long. The scheduler places '
                      'each on its own, so each keeps its own claims and '
                      'alternates and a boot without room fails alone.'),
    cfg.IntOpt('schedule_calls_in_flight',
               default=2, min=1,
               help='Calls to the schedulers the super-conductor keeps in '
                    'flight before boots queue for a shared call (see '
                    'schedule_batch_window): the number of scheduler '
                    'processes is a good value, so that each has one call '
                    'to work on.'),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    return {conductor_group: conductor_opts}
