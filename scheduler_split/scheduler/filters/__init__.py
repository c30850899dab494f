"""Filters: each answers "can this host take one instance of this request".

A filter is a small class with ``host_passes(host_state, spec_obj)``;
``[filter_scheduler] enabled_filters`` names the ones that run, cheapest
first. Adding a filter is adding a class here and its name to that option.
"""

from scheduler_split import scheduler


class BaseHostFilter:
    """Base class of every filter."""

    def host_passes(self, host_state, spec_obj):
        raise NotImplementedError()

    def filter_all(self, host_states, spec_obj):
        return [h for h in host_states if self.host_passes(h, spec_obj)]


class ComputeFilter(BaseHostFilter):
    """The host's compute service reports in time and is not disabled."""

    def host_passes(self, host_state, spec_obj):
        return not host_state.disabled and host_state.is_up()


class AvailabilityZoneFilter(BaseHostFilter):
    """The host is in the availability zone the request asked for."""

    def host_passes(self, host_state, spec_obj):
        wanted = spec_obj.get('availability_zone')
        return not wanted or host_state.availability_zone == wanted


def _group(spec_obj, policy):
    group = spec_obj.get('instance_group')
    return group if group is not None and group.policy == policy else None


class ServerGroupAntiAffinityFilter(BaseHostFilter):
    """A member of an anti-affinity group goes where fewer than the
    group's ``max_server_per_host`` (1 unless its rules say more) members
    are already."""

    def host_passes(self, host_state, spec_obj):
        group = _group(spec_obj, 'anti-affinity')
        return group is None or (
            group.hosts.count(host_state.host) < group.max_server_per_host)


class ServerGroupAffinityFilter(BaseHostFilter):
    """A member of an affinity group goes where the other members are
    (anywhere for the first one)."""

    def host_passes(self, host_state, spec_obj):
        group = _group(spec_obj, 'affinity')
        return group is None or not group.hosts or \
            host_state.host in group.hosts


class _ResourceFilter(BaseHostFilter):
    resource_class = None

    def host_passes(self, host_state, spec_obj):
        wanted = spec_obj.resources.get(self.resource_class, 0)
        return host_state.free(self.resource_class) >= wanted


class RamFilter(_ResourceFilter):
    """Enough memory left, allocation ratio and reserved memory counted."""
    resource_class = 'MEMORY_MB'


class CoreFilter(_ResourceFilter):
    """Enough vCPUs left, allocation ratio counted."""
    resource_class = 'VCPU'


class DiskFilter(_ResourceFilter):
    """Enough local disk left for root, ephemeral and swap."""
    resource_class = 'DISK_GB'


ALL_FILTERS = {cls.__name__: cls for cls in (
    ComputeFilter, AvailabilityZoneFilter, RamFilter, CoreFilter,
    DiskFilter, ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter)}

# The policies claims enforce, whatever filters are enabled: the scheduler
# runs these again over its candidates when a claim refuses a host for
# its group.
GROUP_FILTERS = (ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter)


def load(names):
    return scheduler.load_named('filters', ALL_FILTERS, names)
