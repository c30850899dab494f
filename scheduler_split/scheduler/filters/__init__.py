"""Filters: each answers "can this host take one instance of this request".

A filter is a small class deriving from :class:`BaseHostFilter`, with
``host_passes(host_state, spec_obj)``, in a module of its own in this
package; its docstring says what it rejects and what it reads.
``[filter_scheduler] enabled_filters`` names the ones that run, cheapest
first. Adding a filter is adding its module here and its name to that
option: every module of this package is imported, and each filter class
registers itself by name (:mod:`scheduler_split.scheduler.plugins`), so
``filters.<name>`` is the class the option names.

A filter that judges what the request asks of a host (its image, its
zone, its aggregates) also judges a rebuild with a new image on the
server's own host; one that judges the host's room, load or neighbours
sets ``run_on_rebuild = False``: a rebuild changes none of those.

The scheduler hands a filter hosts a batch at a time (``filter_all``).
Filters on the hot path override it to read the request once per batch
instead of once per host, and answer exactly as ``host_passes`` would.

A :class:`FilterPass` runs the filters over the batches of one request
and counts the hosts each filter removed, as Nova's filter handler
does; the metrics and the log of a request that found no host read
those counts.
"""

import logging

from scheduler_split.scheduler import plugins

LOG = logging.getLogger(__name__)


class BaseHostFilter(plugins.Plugin, abstract=True):
    """Base class of every filter."""

    registry = plugins.Registry('filter',
                                '[filter_scheduler] enabled_filters')

    # Whether a rebuild's check of the server's own host runs this filter.
    run_on_rebuild = True

    def host_passes(self, host_state, spec_obj):
        raise NotImplementedError()

    def filter_all(self, host_states, spec_obj):
        return [h for h in host_states if self.host_passes(h, spec_obj)]


class ResourceFilter(BaseHostFilter, abstract=True):
    """Rejects a host with less of ``resource_class`` free than the
    request asks for. Reads the request's resources and the host's
    inventory and usage."""

    resource_class = None
    run_on_rebuild = False

    def host_passes(self, host_state, spec_obj):
        wanted = spec_obj.resources.get(self.resource_class, 0)
        return host_state.free(self.resource_class) >= wanted

    def filter_all(self, host_states, spec_obj):
        wanted = spec_obj.resources.get(self.resource_class, 0)
        rc = self.resource_class
        return [h for h in host_states if h.free(rc) >= wanted]


class FilterPass:
    """One pass of ``host_filters`` over the hosts of a request, batch
    by batch, counting what each filter removed.

    ``stages`` (``[(label, test of a host)]``) run on each batch before
    the filters: what the request asks of the hosts' provider trees,
    checked only on the hosts a pass looks at, not on every host."""

    def __init__(self, host_filters, stages=()):
        self.filters = host_filters
        self.stages = list(stages)
        self.stage_removed = [0] * len(self.stages)
        # Hosts each filter removed, in the order of the filters.
        self.removed = [0] * len(host_filters)
        # Hosts the filters were shown, and those that passed them all.
        self.looked = 0
        self.passed = []
        # What the request itself narrowed the hosts to before the
        # filters: the hosts known, then [(what, hosts left)].
        self.known = 0
        self.constraints = []

    def run(self, host_states, spec_obj):
        """The hosts of a batch that pass every filter."""
        self.looked += len(host_states)
        for index, (_, wanted) in enumerate(self.stages):
            before = len(host_states)
            host_states = [h for h in host_states if wanted(h)]
            self.stage_removed[index] += before - len(host_states)
            if not host_states:
                return []
        removed = self.removed
        for index, host_filter in enumerate(self.filters):
            before = len(host_states)
            host_states = host_filter.filter_all(host_states, spec_obj)
            removed[index] += before - len(host_states)
            if not host_states:
                LOG.debug('Filter %s returned no hosts',
                          type(host_filter).__name__)
                return []
        self.passed.extend(host_states)
        return host_states

    def stage_counts(self):
        """``[(label, hosts left after it)]`` of the stages, as the hosts
        looked at went through them."""
        left = self.looked
        counts = []
        for (label, _), removed in zip(self.stages, self.stage_removed):
            left -= removed
            counts.append((label, left))
        return counts

    def counts(self):
        """``[(filter name, hosts it removed)]``, in the order they ran.
        """
        return [(type(host_filter).__name__, removed)
                for host_filter, removed in zip(self.filters, self.removed)]


def load(names):
    """The filters ``names`` (class names), in that order; ``ValueError``
    naming any unknown one."""
    return BaseHostFilter.registry.load(names)


# filters.<name> is the class the option names.
__getattr__ = plugins.attribute_lookup(BaseHostFilter.registry, __name__)


# --- what filters read of a request -----------------------------------------

def server_group(spec_obj, policy):
    """The request's server group if its policy is ``policy``."""
    group = spec_obj.get('instance_group')
    return group if group is not None and group.policy == policy else None


def hint(spec_obj, name):
    """The instances a scheduler hint names, as a list."""
    hints = spec_obj.get('scheduler_hints') or {}
    value = hints.get(name) or []
    return [value] if isinstance(value, str) else list(value)


def hinted_instances(spec_obj):
    """The instances the request's same_host/different_host hints name."""
    return set(hint(spec_obj, 'same_host') +
               hint(spec_obj, 'different_host'))


plugins.import_all(__name__, __path__)
