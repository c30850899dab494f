"""Filters: each answers "can this host take one instance of this request".

A filter is a small class with ``host_passes(host_state, spec_obj)``;
``[filter_scheduler] enabled_filters`` names the ones that run, cheapest
first. Adding a filter is adding a class here and its name to that option.
"""


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
    DiskFilter)}


def load(names):
    unknown = [n for n in names if n not in ALL_FILTERS]
    if unknown:
        raise ValueError('Unknown scheduler filters: %s (known: %s)'
                         % (', '.join(unknown),
                            ', '.join(sorted(ALL_FILTERS))))
    return [ALL_FILTERS[n]() for n in names]
