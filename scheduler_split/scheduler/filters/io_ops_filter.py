from scheduler_split import conf
from scheduler_split.scheduler import filters

CONF = conf.CONF


class IoOpsFilter(filters.BaseHostFilter):
    """Rejects a host running ``[filter_scheduler] max_io_ops_per_host``
    builds or more.

    Reads the host's ``num_io_ops`` (the builds its compute reports in
    flight, plus those claimed here since); nothing of the request.
    """

    run_on_rebuild = False

    def _limit(self, host_state):
        return CONF.filter_scheduler.max_io_ops_per_host

    def host_passes(self, host_state, spec_obj):
        return host_state.num_io_ops < self._limit(host_state)
