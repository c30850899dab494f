from oslo_config import cfg

upgrade_group = cfg.OptGroup(
    'upgrade_levels',
    help='Caps on the RPC versions this process sends, for rolling '
         'upgrades: while services of an older release still run, the '
         'newer ones send only what the older ones understand, and '
         'serialize every object at the versions that RPC version '
         'carried. Unset, a process sends its newest versions.')


def _level_opt(name, who, records):
    return cfg.StrOpt(
        name,
        regex=r'^(auto|\d+\.\d+)$',
        help='The highest version of the %s RPC API this process sends '
             '(e.g. "1.0"), or "auto": the newest version every running '
             '%s understands, from the service versions %s record. '
             'Unset: no cap. Set it to the version of the oldest %s still '
             'running while some are older than this process, and unset '
             'it (or leave "auto") once all of them are upgraded.'
             % (who, who, records, who))


upgrade_opts = [
    _level_opt('compute', 'compute',
               'computes heartbeat into their cell database'),
    _level_opt('conductor', 'conductor',
               'cell conductors heartbeat into their cell database (the '
               'super-conductor into cell0; a compute, which has no '
               'database, asks its cell conductor for them)'),
    _level_opt('scheduler', 'scheduler',
               'schedulers heartbeat into the scheduler database (asked '
               'through the scheduler client library; schedulers of the '
               'release before service versions record nothing, so pin '
               'a version while any of them runs)'),
    cfg.IntOpt('auto_cache_time',
               default=300, min=0,
               help='Seconds an "auto" cap, once resolved, is used before '
                    'the service records are read again. A cap is also '
                    'resolved again when the process restarts.'),
]


def register_opts(conf):
    conf.register_group(upgrade_group)
    conf.register_opts(upgrade_opts, group=upgrade_group)


def list_opts():
    return {upgrade_group: upgrade_opts}
