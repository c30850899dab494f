from scheduler_split.scheduler import filters


class DifferentHostFilter(filters.BaseHostFilter):
    """Rejects, with the ``different_host`` scheduler hint, a host
    holding any of the instances it names.

    Reads the request's ``scheduler_hints`` and the consumers holding
    allocations on the host (``instances``).
    """

    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        avoided = filters.hint(spec_obj, 'different_host')
        return not any(u in host_state.instances for u in avoided)

    def filter_all(self, host_states, spec_obj):
        if not filters.hint(spec_obj, 'different_host'):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)
