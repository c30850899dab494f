from scheduler_split.scheduler import filters


class ServerGroupAntiAffinityFilter(filters.BaseHostFilter):
    """Rejects, for a member of an anti-affinity group, a host already
    holding the group's ``max_server_per_host`` members (1 unless its
    rules say more).

    Reads the request's ``instance_group`` (its policy, rules and the
    hosts of its members) and the host's name.
    """

    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        group = filters.server_group(spec_obj, 'anti-affinity')
        return group is None or (
            group.hosts.count(host_state.host) < group.max_server_per_host)

    def filter_all(self, host_states, spec_obj):
        group = filters.server_group(spec_obj, 'anti-affinity')
        if group is None:
            return list(host_states)
        members = group.hosts
        limit = group.max_server_per_host
        return [h for h in host_states if members.count(h.host) < limit]
