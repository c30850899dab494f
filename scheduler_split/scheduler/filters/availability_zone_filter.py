from scheduler_split.scheduler import filters


class AvailabilityZoneFilter(filters.BaseHostFilter):
    """Rejects a host outside the availability zone the request asked
    for; a request without one goes anywhere.

    Reads the request's ``availability_zone`` and the host's effective
    ``availability_zone`` (its aggregates' zone, else the one its compute
    reports; comma-separated when its aggregates name several).
    """

    def host_passes(self, host_state, spec_obj):
        wanted = spec_obj.get('availability_zone')
        if not wanted:
            return True
        return wanted in (host_state.availability_zone or '').split(',')

    def filter_all(self, host_states, spec_obj):
        wanted = spec_obj.get('availability_zone')
        if not wanted:
            return list(host_states)
        return [h for h in host_states
                if wanted in (h.availability_zone or '').split(',')]
