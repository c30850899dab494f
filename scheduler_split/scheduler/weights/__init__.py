"""Weighers: each scores the hosts that passed the filters.

A weigher returns a raw value per host; values are normalized to 0..1
over the candidate hosts and multiplied by the weigher's multiplier, and
the host with the highest sum wins. A positive multiplier spreads, a
negative one packs.
"""

from scheduler_split import conf
from scheduler_split import scheduler

CONF = conf.CONF


class BaseHostWeigher:

    def weight_multiplier(self):
        return 1.0

    def raw_weight(self, host_state, spec_obj):
        raise NotImplementedError()


class RAMWeigher(BaseHostWeigher):
    """More free memory weighs more."""

    def weight_multiplier(self):
        return CONF.filter_scheduler.ram_weight_multiplier

    def raw_weight(self, host_state, spec_obj):
        return host_state.free('MEMORY_MB')


class CPUWeigher(BaseHostWeigher):
    """More free vCPUs weigh more."""

    def weight_multiplier(self):
        return CONF.filter_scheduler.cpu_weight_multiplier

    def raw_weight(self, host_state, spec_obj):
        return host_state.free('VCPU')


class _SoftGroupWeigher(BaseHostWeigher):
    policy = None

    def raw_weight(self, host_state, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy != self.policy:
            return 0
        return self.sign * group.hosts.count(host_state.host)


class ServerGroupSoftAffinityWeigher(_SoftGroupWeigher):
    """Members of a soft-affinity group prefer hosts holding more members.
    """
    policy = 'soft-affinity'
    sign = 1

    def weight_multiplier(self):
        return CONF.filter_scheduler.soft_affinity_weight_multiplier


class ServerGroupSoftAntiAffinityWeigher(_SoftGroupWeigher):
    """Members of a soft-anti-affinity group prefer hosts holding fewer
    members."""
    policy = 'soft-anti-affinity'
    sign = -1

    def weight_multiplier(self):
        return CONF.filter_scheduler.soft_anti_affinity_weight_multiplier


ALL_WEIGHERS = {cls.__name__: cls for cls in (
    RAMWeigher, CPUWeigher, ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher)}


def load(names):
    return scheduler.load_named('weighers', ALL_WEIGHERS, names)


def weigh(weighers, host_states, spec_obj):
    """``[(weight, host_state)]`` best first."""
    totals = [0.0] * len(host_states)
    for weigher in weighers:
        multiplier = weigher.weight_multiplier()
        if not multiplier or not host_states:
            continue
        raw = [weigher.raw_weight(h, spec_obj) for h in host_states]
        low, high = min(raw), max(raw)
        span = high - low
        for i, value in enumerate(raw):
            normalized = (value - low) / span if span else 0.0
            totals[i] += multiplier * normalized
    ranked = sorted(zip(totals, range(len(host_states))),
                    key=lambda pair: (-pair[0], pair[1]))
    return [(weight, host_states[i]) for weight, i in ranked]
