from scheduler_split.scheduler import filters
from scheduler_split import servicegroup


class ComputeFilter(filters.BaseHostFilter):
    """Rejects a host whose compute service may take no build: disabled
    (by its own report or by the operator), forced down, or not up
    (:mod:`scheduler_split.servicegroup`).

    Reads the host's ``disabled``, ``forced_down`` and
    ``last_report_at``; nothing of the request.
    """

    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        return host_state.takes_builds()

    def filter_all(self, host_states, spec_obj):
        since = servicegroup.up_since()
        return [h for h in host_states if h.takes_builds(since)]
