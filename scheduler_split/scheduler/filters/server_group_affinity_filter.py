from scheduler_split.scheduler import filters


class ServerGroupAffinityFilter(filters.BaseHostFilter):
    """Rejects, for a member of an affinity group, a host other than
    those where its members are (any host for the first member).

    Reads the request's ``instance_group`` (its policy and the hosts of
    its members) and the host's name.
    """

    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        group = filters.server_group(spec_obj, 'affinity')
        return group is None or not group.hosts or \
            host_state.host in group.hosts

    def filter_all(self, host_states, spec_obj):
        group = filters.server_group(spec_obj, 'affinity')
        if group is None or not group.hosts:
            return list(host_states)
        members = set(group.hosts)
        return [h for h in host_states if h.host in members]
