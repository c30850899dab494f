from oslo_config import cfg

filter_scheduler_group = cfg.OptGroup(
    'filter_scheduler',
    help='Which filters and weighers the scheduler runs, and how.')

filter_scheduler_opts = [
    cfg.ListOpt('enabled_filters',
                default=['ComputeFilter', 'AvailabilityZoneFilter',
                         'RamFilter', 'CoreFilter', 'DiskFilter',
                         'ServerGroupAntiAffinityFilter',
                         'ServerGroupAffinityFilter', 'SameHostFilter',
                         'DifferentHostFilter', 'ImagePropertiesFilter'],
                help='Filters applied to every host, in this order. Each '
                     'name is a class in scheduler_split.scheduler.filters. '
                     'The affinity and anti-affinity policies of server '
                     'groups are enforced by the claim even without their '
                     'filters; the filters spare claims that would be '
                     'refused.'),
    cfg.ListOpt('weighers',
                default=['RAMWeigher', 'CPUWeigher',
                         'ServerGroupSoftAffinityWeigher',
                         'ServerGroupSoftAntiAffinityWeigher',
                         'BuildFailureWeigher', 'NumInstancesWeigher',
                         'IoOpsWeigher'],
                help='Weighers whose weighted sum ranks the hosts that '
                     'passed the filters.'),
    cfg.FloatOpt('soft_affinity_weight_multiplier',
                 default=1.0, min=0,
                 help='How strongly members of a soft-affinity server group '
                      'prefer hosts holding more of its members.'),
    cfg.FloatOpt('soft_anti_affinity_weight_multiplier',
                 default=1.0, min=0,
                 help='How strongly members of a soft-anti-affinity server '
                      'group prefer hosts holding fewer of its members.'),
    cfg.FloatOpt('ram_weight_multiplier',
                 default=1.0,
                 help='Positive spreads instances over hosts by free RAM, '
                      'negative packs them.'),
    cfg.FloatOpt('cpu_weight_multiplier',
                 default=1.0,
                 help='Positive spreads instances over hosts by free vCPUs, '
                      'negative packs them.'),
    cfg.FloatOpt('build_failure_weight_multiplier',
                 default=1000000.0,
                 help='How strongly a host whose builds keep failing is '
                      'avoided. Each compute counts its failed builds in a '
                      'row (a successful build resets the count) and tells '
                      'the scheduler at once. The default outweighs every '
                      'other weigher, so such a host is chosen only when '
                      'no other fits; 0 turns it off.'),
    cfg.FloatOpt('num_instances_weight_multiplier',
                 default=0.0,
                 help='Positive packs instances onto hosts holding more '
                      'instances, negative spreads them; 0 (the default) '
                      'ignores the count.'),
    cfg.FloatOpt('io_ops_weight_multiplier',
                 default=-1.0,
                 help='Negative (the default) prefers hosts with fewer '
                      'builds in flight, positive prefers busier ones.'),
    cfg.IntOpt('max_instances_per_host',
               default=50, min=1,
               help='With NumInstancesFilter enabled, a host holding this '
                    'many instances takes no more. AggregateNumInstances'
                    'Filter lets an aggregate\'s max_instances_per_host '
                    'metadata set it for its hosts.'),
    cfg.IntOpt('max_io_ops_per_host',
               default=8, min=1,
               help='With IoOpsFilter enabled, a host running this many '
                    'builds takes no more until one ends. AggregateIoOps'
                    'Filter lets an aggregate\'s max_io_ops_per_host '
                    'metadata set it for its hosts.'),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace',
               help='With AggregateImagePropertiesIsolation enabled, only '
                    'aggregate metadata keys in this namespace (the '
                    'namespace, the separator, then the image property) '
                    'isolate hosts; unset, every key does.'),
    cfg.StrOpt('aggregate_image_properties_isolation_separator',
               default='.',
               help='What joins the namespace to the image property in '
                    'the aggregate metadata keys AggregateImageProperties'
                    'Isolation reads.'),
    cfg.IntOpt('hosts_to_score',
               default=100, min=0,
               help='How many hosts that pass the filters a request looks '
                    'for before it stops filtering and weighs only those. '
                    'With more hosts than this, the filter phase starts at '
                    'a random host, so that requests spread over the whole '
                    'cloud, and the cost of a request no longer grows with '
                    'the number of hosts; the host chosen is then the best '
                    'of that sample, not always the best of all. Filters '
                    'stay exact: a host that fails one is never chosen, '
                    'and if every host of the sample refuses the claim, '
                    'every host is considered before No valid host. With '
                    'this many hosts or fewer, and with 0, every host is '
                    'filtered and weighed.'),
    cfg.IntOpt('hosts_to_score_percentage',
               default=0, min=0, max=100,
               help='The share of all hosts, in percent, that a request '
                    'looks for when that is more than hosts_to_score (as '
                    'Kubernetes\' percentageOfNodesToScore): a larger '
                    'share gets closer to the best host of all, at a cost '
                    'that grows with the cloud again. 0 (the default) '
                    'leaves it to hosts_to_score.'),
    cfg.IntOpt('host_state_refresh_interval',
               default=60, min=1,
               help='Seconds between two reloads of the host states from '
                    'the scheduler database, which a periodic task of the '
                    'scheduler service does beside the selects: each reads '
                    'the hosts another scheduler changed since the last '
                    'one (its reports, claims and releases), the time of '
                    'the reports other schedulers took, and the hosts '
                    'deleted. Between reloads the scheduler keeps host '
                    'state current from reports and its own claims; '
                    'another scheduler worker\'s claims show up as a claim '
                    'conflict, which reloads that one host.'),
]


scheduler_group = cfg.OptGroup(
    'scheduler', help='Options of the scheduler service.')

scheduler_opts = [
    cfg.IntOpt('cell_discovery_interval',
               default=60, min=1,
               help='Seconds between two looks at the cell mappings for '
                    'cells whose bus the scheduler does not listen on yet. '
                    'SIGHUP looks at once.'),
    cfg.IntOpt('cell_check_interval',
               default=10, min=0,
               help='Seconds between two looks of the scheduler service '
                    'at the database and the bus of every cell (one '
                    'query that does not wait for an outage, and a new '
                    'connection to its bus, each bounded to 5 seconds). '
                    'The hosts of a cell whose last two looks failed '
                    'get no new instances until a look succeeds again: '
                    'boots go to the cells that are up. While every cell '
                    'is down none is left out. 0 turns the looks off.'),
]


def register_opts(conf):
    conf.register_group(filter_scheduler_group)
    conf.register_opts(filter_scheduler_opts, group=filter_scheduler_group)
    conf.register_group(scheduler_group)
    conf.register_opts(scheduler_opts, group=scheduler_group)


def list_opts():
    return {filter_scheduler_group: filter_scheduler_opts,
            scheduler_group: scheduler_opts}
