"""Weighers: each scores the hosts that passed the filters.

A weigher returns a raw value per host; values are normalized to 0..1
over the candidate hosts and multiplied by the weigher's multiplier, and
the host with the highest sum wins. A positive multiplier spreads, a
negative one packs.

A weigher's multiplier is its ``[filter_scheduler]`` option, unless the
host is in an aggregate whose metadata sets the option's name (e.g.
``ram_weight_multiplier=-1.0``): then that value, the smallest one if its
aggregates disagree. Operators pack some hosts and spread others so.
"""

import logging

from scheduler_split import conf
from scheduler_split import scheduler
from scheduler_split.scheduler import aggregates

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class BaseHostWeigher:
    # The [filter_scheduler] option (and aggregate metadata key) of the
    # multiplier; None for a fixed multiplier of 1.0.
    option = None

    def weight_multiplier(self, host_state=None):
        if self.option is None:
            return 1.0
        default = getattr(CONF.filter_scheduler, self.option)
        if host_state is None:
            return default
        return aggregates.smallest(host_state, self.option, default)

    def raw_weight(self, host_state, spec_obj):
        raise NotImplementedError()

    def multipliers(self, host_states):
        """The multiplier of each host: the option's value, read once,
        except for hosts in an aggregate that sets it."""
        default = self.weight_multiplier()
        if self.option is None:
            return [default] * len(host_states)
        return [aggregates.smallest(h, self.option, default)
                if h.aggregates else default for h in host_states]

    def raw_weights(self, host_states, spec_obj):
        return [self.raw_weight(h, spec_obj) for h in host_states]


class RAMWeigher(BaseHostWeigher):
    """More free memory weighs more."""

    option = 'ram_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.free('MEMORY_MB')


class CPUWeigher(BaseHostWeigher):
    """More free vCPUs weigh more."""

    option = 'cpu_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.free('VCPU')


class _SoftGroupWeigher(BaseHostWeigher):
    policy = None

    def raw_weight(self, host_state, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy != self.policy:
            return 0
        return self.sign * group.hosts.count(host_state.host)

    def raw_weights(self, host_states, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy != self.policy:
            # Every host weighs the same: nothing to rank by.
            return [0] * len(host_states)
        return super().raw_weights(host_states, spec_obj)


class ServerGroupSoftAffinityWeigher(_SoftGroupWeigher):
    """Members of a soft-affinity group prefer hosts holding more members.
    """
    policy = 'soft-affinity'
    sign = 1

    option = 'soft_affinity_weight_multiplier'


class ServerGroupSoftAntiAffinityWeigher(_SoftGroupWeigher):
    """Members of a soft-anti-affinity group prefer hosts holding fewer
    members."""
    policy = 'soft-anti-affinity'
    sign = -1

    option = 'soft_anti_affinity_weight_multiplier'


class BuildFailureWeigher(BaseHostWeigher):
    """A host whose builds keep failing weighs less: the compute counts
    its failed builds in a row, and a success resets the count."""

    option = 'build_failure_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return -host_state.failed_builds


class NumInstancesWeigher(BaseHostWeigher):
    """More instances weigh more: a positive multiplier packs, a
    negative one spreads."""

    option = 'num_instances_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.num_instances


class IoOpsWeigher(BaseHostWeigher):
    """More builds in flight weigh more: the default negative
    multiplier prefers quiet hosts."""

    option = 'io_ops_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.num_io_ops


ALL_WEIGHERS = {cls.__name__: cls for cls in (
    RAMWeigher, CPUWeigher, ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher, BuildFailureWeigher,
    NumInstancesWeigher, IoOpsWeigher)}


def load(names):
    return scheduler.load_named('weighers', ALL_WEIGHERS, names)


def weigh(weighers, host_states, spec_obj):
    """``[(weight, host_state)]`` best first."""
    totals = [0.0] * len(host_states)
    for weigher in weighers:
        if not host_states:
            break
        multipliers = weigher.multipliers(host_states)
        if not any(multipliers):
            continue
        raw = weigher.raw_weights(host_states, spec_obj)
        low, high = min(raw), max(raw)
        span = high - low
        for i, value in enumerate(raw):
            normalized = (value - low) / span if span else 0.0
            totals[i] += multipliers[i] * normalized
    ranked = sorted(zip(totals, range(len(host_states))),
                    key=lambda pair: (-pair[0], pair[1]))
    return [(weight, host_states[i]) for weight, i in ranked]
