"""What one instance asks of the providers: resources and traits, in
request groups, as a flavor's extra specs and an image's properties say.

Read as Nova's scheduler reads them before it asks Placement:

* the flavor's ``vcpus``, ``memory_mb`` and disk make the unnumbered
  group's ``VCPU``, ``MEMORY_MB`` and ``DISK_GB``;
* ``hw:cpu_policy=dedicated`` (or the image's ``hw_cpu_policy``) asks
  ``PCPU`` instead of ``VCPU``; ``mixed`` asks ``PCPU`` for the CPUs of
  ``hw:cpu_dedicated_mask`` and ``VCPU`` for the others;
* ``resources:<CLASS>=<amount>`` sets the unnumbered group's amount of a
  class, replacing what the flavor gave (``resources:VCPU=0`` drops it);
  ``resources<N>:<CLASS>`` asks it in numbered group N, whose resources
  all come from one provider;
* ``trait:<TRAIT>=required|forbidden`` (``trait<N>:`` in group N), and
  the image's ``trait:<TRAIT>=required``;
* ``group_policy=isolate`` puts numbered groups on different providers;
  ``none`` lets them share one.

Pure: no database, no service; the scheduler matches the result against
its providers (:mod:`scheduler_split.scheduler.host_state`).
"""

import re

STANDARD_BASE = ('VCPU', 'MEMORY_MB', 'DISK_GB')
REQUIRED = 'required'
FORBIDDEN = 'forbidden'
_GROUP_KEY = re.compile(r'^(resources|trait)([1-9][0-9]*|_[A-Za-z0-9_-]+)?$')


class InvalidRequest(ValueError):
    """Extra specs or image properties that ask for something no
    provider could ever give (a mask naming no CPU, say)."""


class RequestGroup:
    """Resources that come from one provider, and the traits it has."""

    __slots__ = ('suffix', 'resources', 'required', 'forbidden')

    def __init__(self, suffix=''):
        self.suffix = suffix
        self.resources = {}
        self.required = set()
        self.forbidden = set()

    def __repr__(self):
        return '<RequestGroup %r %s>' % (self.suffix, self.describe())

    def describe(self):
        parts = ['%s=%d' % item for item in sorted(self.resources.items())
                 if item[1]]
        parts += sorted(self.required)
        parts += ['!' + name for name in sorted(self.forbidden)]
        return ', '.join(parts) or 'nothing'


class ResourceRequest:
    """The request groups of one instance: ``groups['']`` is the
    unnumbered one; ``group_policy`` is ``'none'``, ``'isolate'`` or None
    (unsaid)."""

    def __init__(self):
        self.groups = {'': RequestGroup()}
        self.group_policy = None
        # Whether the unnumbered group takes from the tree's root
        # whatever its amounts say: a part of a request whose VCPU,
        # MEMORY_MB or DISK_GB were left to the filters (see
        # ``scheduler.constraints.model_part``) still takes them from the
        # compute node, whose traits then count for the group.
        self.root_used = False

    @property
    def unnumbered(self):
        return self.groups['']

    def group(self, suffix):
        group = self.groups.get(suffix)
        if group is None:
            group = self.groups[suffix] = RequestGroup(suffix)
        return group

    def numbered(self):
        return [g for suffix, g in sorted(self.groups.items()) if suffix]

    def totals(self):
        """``{class: amount}`` of every group together, zeros dropped."""
        totals = {}
        for group in self.groups.values():
            for rc, amount in group.resources.items():
                if amount:
                    totals[rc] = totals.get(rc, 0) + amount
        return totals

    def required_traits(self):
        return frozenset().union(*(g.required for g in self.groups.values()))

    def forbidden_traits(self):
        return frozenset().union(*(g.forbidden
                                   for g in self.groups.values()))

    def isolated_groups(self):
        """How many numbered groups asking resources must each have a
        provider of their own (``group_policy=isolate``)."""
        if self.group_policy != 'isolate':
            return 0
        return sum(1 for g in self.numbered()
                   if any(g.resources.values()))

    def describe(self):
        """The request as an operator reads it in a fault or a log."""
        parts = []
        for suffix, group in sorted(self.groups.items()):
            label = 'group %s: ' % suffix.lstrip('_') if suffix else ''
            parts.append(label + group.describe())
        if self.group_policy:
            parts.append('group_policy=%s' % self.group_policy)
        return '; '.join(parts)

    def placed_by_groups(self):
        """Whether where each amount comes from depends on more than one
        provider's room: numbered groups or traits (a claim then carries
        the groups, see :meth:`to_primitive`)."""
        return len(self.groups) > 1 or bool(
            self.unnumbered.required or self.unnumbered.forbidden)

    def to_primitive(self):
        """The groups and the policy, as JSON carries them."""
        return {'groups': [
            {'suffix': g.suffix, 'resources': dict(g.resources),
             'required': sorted(g.required),
             'forbidden': sorted(g.forbidden)}
            for _, g in sorted(self.groups.items())],
            'group_policy': self.group_policy}

    @classmethod
    def from_primitive(cls, primitive):
        request = cls()
        for item in primitive.get('groups') or ():
            group = request.group(item.get('suffix') or '')
            group.resources.update(item.get('resources') or {})
            group.required.update(item.get('required') or ())
            group.forbidden.update(item.get('forbidden') or ())
        request.group_policy = primitive.get('group_policy')
        return request

    @classmethod
    def of_resources(cls, resources):
        """A request of one unnumbered group asking ``resources``."""
        request = cls()
        request.unnumbered.resources.update(resources)
        return request

    @classmethod
    def of(cls, flavor, image_properties=None):
        """The request of an instance of ``flavor`` booted from an image
        with ``image_properties``."""
        request = cls()
        specs = dict(flavor.get('extra_specs') or {})
        image = dict(image_properties or {})
        base = request.unnumbered.resources
        base.update(_cpus(flavor.vcpus, specs, image))
        base['MEMORY_MB'] = flavor.memory_mb
        base['DISK_GB'] = flavor.disk_gb
        for key, value in sorted(specs.items()):
            if key == 'group_policy':
                request.group_policy = str(value).strip().lower()
                continue
            prefix, sep, name = key.partition(':')
            match = _GROUP_KEY.match(prefix) if sep else None
            if not match or not name:
                continue
            kind, suffix = match.group(1), match.group(2) or ''
            group = request.group(suffix)
            if kind == 'resources':
                group.resources[name] = _amount(key, value)
            else:
                _add_trait(group, key, name, value)
        for key, value in sorted(image.items()):
            prefix, sep, name = key.partition(':')
            if prefix == 'trait' and sep and name and \
                    str(value).strip().lower() == REQUIRED:
                request.unnumbered.required.add(name)
        return request


def _amount(key, value):
    try:
        amount = int(str(value).strip())
    except ValueError:
        raise InvalidRequest('%s=%s: the amount is not an integer'
                             % (key, value))
    if amount < 0:
        raise InvalidRequest('%s=%s: the amount is negative' % (key, value))
    return amount


def _add_trait(group, key, name, value):
    wanted = str(value).strip().lower()
    if wanted == REQUIRED:
        group.required.add(name)
        group.forbidden.discard(name)
    elif wanted == FORBIDDEN:
        group.forbidden.add(name)
        group.required.discard(name)
    else:
        raise InvalidRequest('%s=%s: a trait is required or forbidden'
                             % (key, value))


def _cpus(vcpus, specs, image):
    """``{'VCPU': n, 'PCPU': m}`` (zeros dropped) of ``vcpus`` CPUs under
    the CPU policy of the flavor, else of the image."""
    policy = specs.get('hw:cpu_policy') or image.get('hw_cpu_policy') or \
        'shared'
    policy = str(policy).strip().lower()
    if policy == 'dedicated':
        return {'PCPU': vcpus}
    if policy == 'mixed':
        mask = specs.get('hw:cpu_dedicated_mask') or \
            image.get('hw_cpu_dedicated_mask')
        if not mask:
            raise InvalidRequest('hw:cpu_policy=mixed needs '
                                 'hw:cpu_dedicated_mask')
        dedicated = len(cpu_mask(str(mask), vcpus))
        if not dedicated or dedicated == vcpus:
            raise InvalidRequest(
                'hw:cpu_dedicated_mask=%s must leave some of the %d CPUs '
                'shared and dedicate some' % (mask, vcpus))
        return {'VCPU': vcpus - dedicated, 'PCPU': dedicated}
    return {'VCPU': vcpus}


def cpu_mask(mask, vcpus):
    """The CPUs (0 to ``vcpus`` - 1) a mask names: ``0-3,^2`` or, as
    ``^0-1``, every CPU but those."""
    mask = mask.replace(' ', '')
    chosen = set()
    if mask.startswith('^'):
        chosen = set(range(vcpus))
    for part in mask.split(','):
        if not part:
            continue
        exclude = part.startswith('^')
        part = part.lstrip('^')
        first, dash, last = part.partition('-')
        try:
            cpus = set(range(int(first), int(last if dash else first) + 1))
        except ValueError:
            raise InvalidRequest('CPU mask %r is not a CPU list' % mask)
        if any(cpu >= vcpus for cpu in cpus):
            raise InvalidRequest('CPU mask %r names a CPU the flavor does '
                                 'not have (%d CPUs)' % (mask, vcpus))
        chosen = chosen - cpus if exclude else chosen | cpus
    return chosen
