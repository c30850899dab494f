"""Filters: each answers "can this host take one instance of this request".

A filter is a small class with ``host_passes(host_state, spec_obj)``;
``[filter_scheduler] enabled_filters`` names the ones that run, cheapest
first. Adding a filter is adding a class here and its name to that option.

The scheduler hands a filter hosts a batch at a time (``filter_all``).
Filters on the hot path override it to read the request once per batch
instead of once per host, and answer exactly as ``host_passes`` would.
"""

import logging
import operator
import re

from oslo_utils import versionutils

from scheduler_split import conf
from scheduler_split import scheduler
from scheduler_split import servicegroup
from scheduler_split.scheduler import aggregates

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class BaseHostFilter:
    """Base class of every filter."""

    def host_passes(self, host_state, spec_obj):
        raise NotImplementedError()

    def filter_all(self, host_states, spec_obj):
        return [h for h in host_states if self.host_passes(h, spec_obj)]


class ComputeFilter(BaseHostFilter):
    """The host's compute service is up (scheduler_split.servicegroup)
    and not disabled."""

    def host_passes(self, host_state, spec_obj):
        return host_state.takes_builds()

    def filter_all(self, host_states, spec_obj):
        since = servicegroup.up_since()
        return [h for h in host_states if h.takes_builds(since)]


class AvailabilityZoneFilter(BaseHostFilter):
    """The host is in the availability zone the request asked for (its
    aggregates' zone, else the one its compute reports)."""

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


def _aggregate_metadata(host_state):
    """``{key: {value, ...}}`` over every aggregate of the host."""
    metadata = {}
    for aggregate in getattr(host_state, 'aggregates', None) or ():
        for key, value in aggregate.metadata.items():
            metadata.setdefault(key, set()).add(value)
    return metadata


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(compare, numeric):
    def test(value, wanted):
        if numeric:
            value, wanted = _number(value), _number(wanted)
            if value is None or wanted is None:
                return False
        return compare(value, wanted)
    return test


# The operators of a requirement in a flavor's extra specs, as Nova spells
# them: "<op> <operand>". Without one the value must be equal.
_OPERATORS = {
    '=': _compare(operator.ge, True),  # at least
    '==': _compare(operator.eq, True),
    '!=': _compare(operator.ne, True),
    '>=': _compare(operator.ge, True),
    '<=': _compare(operator.le, True),
    's==': _compare(operator.eq, False),
    's!=': _compare(operator.ne, False),
    's<': _compare(operator.lt, False),
    's<=': _compare(operator.le, False),
    's>': _compare(operator.gt, False),
    's>=': _compare(operator.ge, False),
    '<in>': lambda value, wanted: wanted in value,
    '<all-in>': lambda value, wanted: all(
        w in value.split() for w in wanted),
    '<or>': lambda value, wanted: value in wanted,
}


def extra_spec_matches(value, requirement):
    """Whether ``value`` (an aggregate's) satisfies ``requirement`` (a
    flavor's extra spec), e.g. ``">= 4"``, ``"<or> a <or> b"``,
    ``"s== ssd"`` or a plain value."""
    if value is None:
        return False
    words = str(requirement).split()
    if not words:
        return value == requirement
    op = words[0]
    if op not in _OPERATORS:
        return value == requirement
    if op == '<or>':
        return value in words[1::2]
    if op == '<all-in>':
        return _OPERATORS[op](value, words[1:])
    if len(words) != 2:
        return False
    return _OPERATORS[op](value, words[1])


class AggregateInstanceExtraSpecsFilter(BaseHostFilter):
    """A flavor's ``aggregate_instance_extra_specs:KEY`` extra specs (and
    its unscoped ones) must be matched by the metadata of one of the
    host's aggregates, with Nova's operators."""

    SCOPE = 'aggregate_instance_extra_specs'

    def host_passes(self, host_state, spec_obj):
        specs = spec_obj.flavor.get('extra_specs') or {}
        if not specs:
            return True
        metadata = None
        for key, requirement in specs.items():
            scope, sep, name = key.partition(':')
            if sep:
                if scope != self.SCOPE:
                    continue
                key = name
            if metadata is None:
                metadata = _aggregate_metadata(host_state)
            values = metadata.get(key)
            if not values or not any(extra_spec_matches(v, requirement)
                                     for v in values):
                return False
        return True


class AggregateMultiTenancyIsolation(BaseHostFilter):
    """A host in an aggregate with ``filter_tenant_id`` metadata (or keys
    starting so, values comma-separated) takes only those projects'
    instances; other hosts take anyone's."""

    KEY = 'filter_tenant_id'

    def host_passes(self, host_state, spec_obj):
        allowed = set()
        for key, values in _aggregate_metadata(host_state).items():
            if key.startswith(self.KEY):
                for value in values:
                    allowed.update(p.strip() for p in value.split(','))
        return not allowed or spec_obj.project_id in allowed


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

    def filter_all(self, host_states, spec_obj):
        group = _group(spec_obj, 'anti-affinity')
        if group is None:
            return list(host_states)
        members = group.hosts
        limit = group.max_server_per_host
        return [h for h in host_states if members.count(h.host) < limit]


class ServerGroupAffinityFilter(BaseHostFilter):
    """A member of an affinity group goes where the other members are
    (anywhere for the first one)."""

    def host_passes(self, host_state, spec_obj):
        group = _group(spec_obj, 'affinity')
        return group is None or not group.hosts or \
            host_state.host in group.hosts

    def filter_all(self, host_states, spec_obj):
        group = _group(spec_obj, 'affinity')
        if group is None or not group.hosts:
            return list(host_states)
        members = set(group.hosts)
        return [h for h in host_states if h.host in members]


class _ResourceFilter(BaseHostFilter):
    resource_class = None

    def host_passes(self, host_state, spec_obj):
        wanted = spec_obj.resources.get(self.resource_class, 0)
        return host_state.free(self.resource_class) >= wanted

    def filter_all(self, host_states, spec_obj):
        wanted = spec_obj.resources.get(self.resource_class, 0)
        rc = self.resource_class
        return [h for h in host_states if h.free(rc) >= wanted]


class RamFilter(_ResourceFilter):
    """Enough memory left, allocation ratio and reserved memory counted."""
    resource_class = 'MEMORY_MB'


class CoreFilter(_ResourceFilter):
    """Enough vCPUs left, allocation ratio counted."""
    resource_class = 'VCPU'


class DiskFilter(_ResourceFilter):
    """Enough local disk left for root, ephemeral and swap."""
    resource_class = 'DISK_GB'


def _hint(spec_obj, name):
    hints = spec_obj.get('scheduler_hints') or {}
    value = hints.get(name) or []
    return [value] if isinstance(value, str) else list(value)


def hinted_instances(spec_obj):
    """The instances the request's same_host/different_host hints name."""
    return set(_hint(spec_obj, 'same_host') +
               _hint(spec_obj, 'different_host'))


class SameHostFilter(BaseHostFilter):
    """With the ``same_host`` hint, only a host holding one of the named
    instances."""

    def host_passes(self, host_state, spec_obj):
        wanted = _hint(spec_obj, 'same_host')
        return not wanted or any(u in host_state.instances for u in wanted)

    def filter_all(self, host_states, spec_obj):
        if not _hint(spec_obj, 'same_host'):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)


class DifferentHostFilter(BaseHostFilter):
    """With the ``different_host`` hint, only a host holding none of the
    named instances."""

    def host_passes(self, host_state, spec_obj):
        avoided = _hint(spec_obj, 'different_host')
        return not any(u in host_state.instances for u in avoided)

    def filter_all(self, host_states, spec_obj):
        if not _hint(spec_obj, 'different_host'):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)


class NumInstancesFilter(BaseHostFilter):
    """The host holds fewer than ``[filter_scheduler]
    max_instances_per_host`` instances."""

    def _limit(self, host_state):
        return CONF.filter_scheduler.max_instances_per_host

    def host_passes(self, host_state, spec_obj):
        return host_state.num_instances < self._limit(host_state)


class AggregateNumInstancesFilter(NumInstancesFilter):
    """As NumInstancesFilter, with the limit its aggregates'
    ``max_instances_per_host`` metadata sets (the smallest)."""

    def _limit(self, host_state):
        return aggregates.smallest(
            host_state, 'max_instances_per_host',
            CONF.filter_scheduler.max_instances_per_host, int)


class IoOpsFilter(BaseHostFilter):
    """The host runs fewer than ``[filter_scheduler]
    max_io_ops_per_host`` builds now."""

    def _limit(self, host_state):
        return CONF.filter_scheduler.max_io_ops_per_host

    def host_passes(self, host_state, spec_obj):
        return host_state.num_io_ops < self._limit(host_state)


class AggregateIoOpsFilter(IoOpsFilter):
    """As IoOpsFilter, with the limit its aggregates'
    ``max_io_ops_per_host`` metadata sets (the smallest)."""

    def _limit(self, host_state):
        return aggregates.smallest(
            host_state, 'max_io_ops_per_host',
            CONF.filter_scheduler.max_io_ops_per_host, int)


class ImagePropertiesFilter(BaseHostFilter):
    """The host can run the image: its architecture, hypervisor type and
    hypervisor version match the image's ``architecture`` /
    ``hw_architecture``, ``img_hv_type`` / ``hypervisor_type`` and
    ``img_hv_requested_version`` (e.g. ``>=6000``) properties. Reads the
    request's ``image_properties`` (RequestSpec 1.2, from the image
    service at boot) and the host's reported ``cpu_arch``,
    ``hypervisor_type`` and ``hypervisor_version``. A request without
    those properties, or a host that reports nothing about them,
    passes."""

    _OPS = {'>=': operator.ge, '<=': operator.le, '==': operator.eq,
            '!=': operator.ne, '>': operator.gt, '<': operator.lt,
            '=': operator.eq}

    @staticmethod
    def _version(value):
        value = str(value).strip()
        if value.isdigit():
            return int(value)
        return versionutils.convert_version_to_int(value)

    def _version_ok(self, wanted, have):
        match = re.match(r'\s*(>=|<=|==|!=|>|<|=)?\s*(\S+)\s*$',
                         str(wanted))
        if not match:
            return False
        op = self._OPS[match.group(1) or '==']
        try:
            return op(self._version(have), self._version(match.group(2)))
        except (ValueError, TypeError):
            return False

    @staticmethod
    def _wanted(spec_obj):
        # A RequestSpec from before 1.2 reads as an image without
        # properties.
        props = spec_obj.image_properties or {}
        return (props.get('hw_architecture') or props.get('architecture'),
                props.get('img_hv_type') or props.get('hypervisor_type'),
                props.get('img_hv_requested_version'))

    def filter_all(self, host_states, spec_obj):
        if not any(self._wanted(spec_obj)):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)

    def host_passes(self, host_state, spec_obj):
        arch, hv_type, hv_version = self._wanted(spec_obj)
        host_arch = getattr(host_state, 'cpu_arch', None)
        host_type = getattr(host_state, 'hypervisor_type', None)
        host_version = getattr(host_state, 'hypervisor_version', None)
        if arch and host_arch and arch.lower() != str(host_arch).lower():
            return False
        if hv_type and host_type and \
                hv_type.lower() != str(host_type).lower():
            return False
        if hv_version and host_version is not None and \
                not self._version_ok(hv_version, host_version):
            return False
        return True


class AggregateImagePropertiesIsolation(BaseHostFilter):
    """A host whose aggregates name an image property in their metadata
    (e.g. ``os_distro=windows,linux``) takes only images whose property
    is one of the listed values; an image without that property goes
    anywhere. With ``[filter_scheduler]
    aggregate_image_properties_isolation_namespace`` set, only the keys
    in that namespace isolate (``ns.os_distro`` with the default
    separator), each against the image property of the same name, as in
    Nova; other metadata keys are left to other filters."""

    def host_passes(self, host_state, spec_obj):
        props = spec_obj.image_properties or {}
        namespace = (CONF.filter_scheduler.
                     aggregate_image_properties_isolation_namespace)
        prefix = ''
        if namespace:
            prefix = namespace + (
                CONF.filter_scheduler.
                aggregate_image_properties_isolation_separator)
        for key, values in _aggregate_metadata(host_state).items():
            if not key.startswith(prefix):
                continue
            wanted = props.get(key)
            if wanted is None or wanted == '':
                continue
            allowed = {p.strip() for value in values
                       for p in value.split(',')}
            if str(wanted) not in allowed:
                return False
        return True


ALL_FILTERS = {cls.__name__: cls for cls in (
    ComputeFilter, AvailabilityZoneFilter, RamFilter, CoreFilter,
    DiskFilter, ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter,
    AggregateInstanceExtraSpecsFilter, AggregateMultiTenancyIsolation,
    SameHostFilter, DifferentHostFilter, NumInstancesFilter,
    AggregateNumInstancesFilter, IoOpsFilter, AggregateIoOpsFilter,
    ImagePropertiesFilter, AggregateImagePropertiesIsolation)}

# The policies claims enforce, whatever filters are enabled: the scheduler
# runs these again over its candidates when a claim refuses a host for
# its group.
GROUP_FILTERS = (ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter)


def load(names):
    return scheduler.load_named('filters', ALL_FILTERS, names)
