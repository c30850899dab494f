from scheduler_split import conf
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler.filters import io_ops_filter

CONF = conf.CONF


class AggregateIoOpsFilter(io_ops_filter.IoOpsFilter):
    """Rejects a host as IoOpsFilter does, with the limit the
    ``max_io_ops_per_host`` metadata of its aggregates sets (the
    smallest), else ``[filter_scheduler] max_io_ops_per_host``.

    Reads the host's ``num_io_ops`` and the metadata of its aggregates.
    """

    def _limit(self, host_state):
        return aggregates.smallest(
            host_state, 'max_io_ops_per_host',
            CONF.filter_scheduler.max_io_ops_per_host, int)
