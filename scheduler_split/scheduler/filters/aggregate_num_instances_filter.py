from scheduler_split import conf
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler.filters import num_instances_filter

CONF = conf.CONF


class AggregateNumInstancesFilter(num_instances_filter.NumInstancesFilter):
    """Rejects a host as NumInstancesFilter does, with the limit the
    ``max_instances_per_host`` metadata of its aggregates sets (the
    smallest), else ``[filter_scheduler] max_instances_per_host``.

    Reads the number of consumers holding allocations on the host and
    the metadata of its aggregates.
    """

    def _limit(self, host_state):
        return aggregates.smallest(
            host_state, 'max_instances_per_host',
            CONF.filter_scheduler.max_instances_per_host, int)
