from scheduler_split import conf
from scheduler_split.scheduler import filters

CONF = conf.CONF


class NumInstancesFilter(filters.BaseHostFilter):
    """Rejects a host holding ``[filter_scheduler]
    max_instances_per_host`` instances or more.

    Reads the number of consumers holding allocations on the host;
    nothing of the request.
    """

    run_on_rebuild = False

    def _limit(self, host_state):
        return CONF.filter_scheduler.max_instances_per_host

    def host_passes(self, host_state, spec_obj):
        return host_state.num_instances < self._limit(host_state)
