"""Weighers: each scores the hosts that passed the filters.

A weigher is a small class deriving from :class:`BaseHostWeigher`, with
``raw_weight(host_state, spec_obj)``, in a module of its own in this
package; its docstring says what it scores and what it reads.
``[filter_scheduler] weighers`` names the ones that run. As with the
filters, every module here is imported and each weigher registers itself
by name (:mod:`scheduler_split.scheduler.plugins`).

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
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import plugins

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class BaseHostWeigher(plugins.Plugin, abstract=True):
    """Base class of every weigher."""

    registry = plugins.Registry('weigher', '[filter_scheduler] weighers')

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


class FreeResourceWeigher(BaseHostWeigher, abstract=True):
    """Scores a host by how much of ``resource_class`` it has free. Reads
    the host's inventory and usage of it."""

    resource_class = None

    def raw_weight(self, host_state, spec_obj):
        return host_state.free(self.resource_class)


class SoftGroupWeigher(BaseHostWeigher, abstract=True):
    """Scores a host by how many members of the request's server group
    it holds, for a group of ``policy``, times ``sign``. Reads the
    request's ``instance_group`` and the host's name."""

    policy = None
    sign = 1

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


def load(names):
    """The weighers ``names`` (class names), in that order;
    ``ValueError`` naming any unknown one."""
    return BaseHostWeigher.registry.load(names)


# weights.<name> is the class the option names.
__getattr__ = plugins.attribute_lookup(BaseHostWeigher.registry, __name__)


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


plugins.import_all(__name__, __path__)
