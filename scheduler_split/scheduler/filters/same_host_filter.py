from scheduler_split.scheduler import filters


class SameHostFilter(filters.BaseHostFilter):
    """Rejects, with the ``same_host`` scheduler hint, a host holding
    none of the instances it names.

    Reads the request's ``scheduler_hints`` and the consumers holding
    allocations on the host (``instances``).
    """

    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        wanted = filters.hint(spec_obj, 'same_host')
        return not wanted or any(u in host_state.instances for u in wanted)

    def filter_all(self, host_states, spec_obj):
        if not filters.hint(spec_obj, 'same_host'):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)
