"""One compute node as the filters and weighers see it.

The host-state cache (:mod:`host_manager`) holds one per compute node, and
compute reports (:mod:`reports`) and claims keep them current.

A scheduler holds one per compute node, a hundred thousand of them at the
largest sizes, so a state keeps apart only what differs from host to host.
What hosts have in common is held once and shared, each kind in a table
of its own: what the compute reports of where it is and what it runs
(its cell, zone and hypervisor), its inventory with the capacities worked
out from it, and the operator's status. Each table is bounded: past its
limit it starts again, which only costs copies.
"""

import sys
import types

from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import tree_fit
from scheduler_split import servicegroup


_NO_INSTANCES = frozenset()
# The usage of a host nothing is allocated on: shared, and read-only so
# that nothing adds to it in place (``consume`` makes a host its own).
_NO_USAGE = types.MappingProxyType({})
_SHARED_LIMIT = 4096


class _Shared:
    """One copy of each value hosts share (a bounded table)."""

    def __init__(self, make=None):
        self._values = {}
        self._make = make

    def get(self, key):
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= _SHARED_LIMIT:
                self._values.clear()
            value = self._values[key] = (self._make(key) if self._make
                                         else key)
        return value


def _resources(key):
    inventory = dict(key)
    return inventory, {rc: claims.capacity(*inv)
                       for rc, inv in inventory.items()}


# {inventory as a sorted tuple: (inventory, capacities)}
_INVENTORIES = _Shared(_resources)
# (cell, reported zone, hypervisor type, version, cpu arch, cpu info)
_PROFILES = _Shared()
# (operator disabled, reason, forced down)
_STATUSES = _Shared()
# Sets of traits (frozensets).
_TRAITS = _Shared()
_NO_TRAITS = _TRAITS.get(frozenset())

# The fields of a profile, in order.
_PROFILE = ('cell_uuid', 'reported_availability_zone', 'hypervisor_type',
            'hypervisor_version', 'cpu_arch', 'cpu_info')
_NO_PROFILE = (None,) * len(_PROFILE)
_ENABLED = (False, None, False)


def shared(value):
    """One copy of a text many hosts report alike (a cell, a zone, a
    hypervisor type)."""
    return sys.intern(value) if type(value) is str else value


def _profile_field(index):
    def get(self):
        return self._profile[index]

    def set(self, value):
        profile = list(self._profile)
        profile[index] = shared(value)
        self._profile = _PROFILES.get(tuple(profile))

    return property(get, set)


def _status_field(index):
    def get(self):
        return self._status[index]
    return property(get)


class HostState:
    """One compute node as the filters and weighers see it.

    Slotted, and what many hosts hold alike is shared (see the module).
    """

    __slots__ = (
        'uuid', 'host', 'nodename', '_profile', 'availability_zone',
        'aggregates', 'disabled', 'reported_disabled', '_status',
        'last_report_at', 'host_ip', '_resources', 'used', 'instances',
        'failed_builds', 'num_io_ops', 'report_digest', 'traits',
        'reported_traits', 'children')

    def __init__(self, uuid, host, nodename, cell_uuid):
        self.uuid = uuid
        self.host = host
        # Most compute nodes are named as their host: one text for both.
        self.nodename = host if nodename == host else nodename
        # What the compute reports of its cell, its zone and its
        # hypervisor (the contract of ImagePropertiesFilter, among
        # others): see _PROFILE.
        self._profile = _NO_PROFILE
        self.cell_uuid = cell_uuid
        # The effective zone: its aggregates', else what it reports.
        self.availability_zone = None
        # The aggregates the host is in (scheduler.aggregates.Aggregate).
        self.aggregates = ()
        # Whether builds may not come here: the compute's own report or
        # the operator's status (os-services).
        self.disabled = False
        self.reported_disabled = False
        self._status = _ENABLED
        self.last_report_at = None
        self.host_ip = None
        # (inventory, capacities): {resource class: (total, reserved,
        # allocation_ratio)} and what claims may take of each.
        self._resources = _INVENTORIES.get(())
        # {resource class: amount allocated}
        self.used = _NO_USAGE
        # The consumers (instances) holding allocations here, for the
        # same_host and different_host hints; shared and empty until the
        # first one comes.
        self.instances = _NO_INSTANCES
        # What the compute counts of its builds: failures in a row, and
        # builds in flight (plus those claimed here since its report).
        self.failed_builds = 0
        self.num_io_ops = 0
        # A digest of the last report written for this node: a report
        # that carries nothing new is not written again (see
        # ReportWriter.record).
        self.report_digest = None
        # Its traits (a shared frozenset), and of those the ones its
        # compute reports (the others an operator set).
        self.traits = _NO_TRAITS
        self.reported_traits = _NO_TRAITS
        # The providers below the compute node (ChildState), in the
        # order of their ids: most hosts have none.
        self.children = ()

    cell_uuid = _profile_field(0)
    reported_availability_zone = _profile_field(1)
    hypervisor_type = _profile_field(2)
    hypervisor_version = _profile_field(3)
    cpu_arch = _profile_field(4)
    cpu_info = _profile_field(5)

    service_disabled = _status_field(0)
    disabled_reason = _status_field(1)
    forced_down = _status_field(2)

    def set_reported(self, cell_uuid, zone, hypervisor_type,
                     hypervisor_version, cpu_arch, cpu_info):
        """What the compute reports of where it is and what it runs, at
        once (see _PROFILE)."""
        self._profile = _PROFILES.get((
            shared(cell_uuid), shared(zone), shared(hypervisor_type),
            hypervisor_version, shared(cpu_arch), shared(cpu_info)))

    @property
    def inventory(self):
        return self._resources[0]

    @inventory.setter
    def inventory(self, inventory):
        # Capacities are read for every host a request considers; they
        # change only with the inventory. Hosts of one kind share one
        # copy of both (neither is changed in place).
        self._resources = _INVENTORIES.get(tuple(sorted(inventory.items())))

    def set_traits(self, traits, reported):
        """Every trait of the host, and those its compute reports."""
        self.traits = _TRAITS.get(frozenset(traits))
        self.reported_traits = _TRAITS.get(frozenset(reported))

    def report_traits(self, reported):
        """A report's traits replace those of the last report; an
        operator's stay."""
        reported = frozenset(reported)
        if reported != self.reported_traits:
            self.set_traits((self.traits - self.reported_traits) | reported,
                            reported)

    def tree_traits(self):
        """The traits of every provider of the host's tree."""
        if not self.children:
            return self.traits
        return self.traits.union(*(c.traits for c in self.children))

    def tree_classes(self):
        """The classes some provider of the tree has room for at all."""
        classes = {rc for rc, cap in self._resources[1].items() if cap > 0}
        for child in self.children:
            classes.update(rc for rc, cap in child._resources[1].items()
                           if cap > 0)
        return classes

    def tree_room(self, rc):
        """What is free of ``rc`` over the whole tree."""
        room = self.free(rc)
        for child in self.children:
            room += child.free(rc)
        return room

    def place(self, request):
        """``{provider uuid: resources}`` of ``request`` (a
        ``ResourceRequest``) on this host's tree as memory has it, or
        None if it does not fit."""
        if not self.children and not request.placed_by_groups():
            resources = request.totals()
            return {self.uuid: resources} if self.fits(resources) else None
        return tree_fit.place((self,) + self.children, request)

    def child(self, uuid):
        for child in self.children:
            if child.uuid == uuid:
                return child
        return None

    def consume_allocation(self, allocation):
        """Count ``{provider uuid: resources}`` of a claim on the tree."""
        for uuid, resources in allocation.items():
            provider = self if uuid == self.uuid else self.child(uuid)
            if provider is not None:
                provider.consume(resources)

    def add_instance(self, consumer):
        if self.instances is _NO_INSTANCES:
            self.instances = set()
        self.instances.add(consumer)

    def drop_instances(self, consumers):
        if self.instances:
            self.instances.difference_update(consumers)

    @property
    def num_instances(self):
        return len(self.instances)

    def __repr__(self):
        return '<HostState %s/%s cell=%s>' % (self.host, self.nodename,
                                              self.cell_uuid)

    def capacity(self, rc):
        return self._resources[1].get(rc, 0)

    def free(self, rc):
        return self._resources[1].get(rc, 0) - self.used.get(rc, 0)

    def fits(self, resources):
        return all(self.free(rc) >= amount
                   for rc, amount in resources.items() if amount)

    def consume(self, resources):
        used = dict(self.used)
        for rc, amount in resources.items():
            used[rc] = used.get(rc, 0) + amount
        self.used = used

    def give_back(self, resources):
        used = {rc: max(0, amount - resources.get(rc, 0))
                for rc, amount in self.used.items()}
        self.used = used if any(used.values()) else _NO_USAGE

    def set_usage(self, used):
        """``{resource class: amount allocated}`` as the database sums it.
        """
        self.used = used if used else _NO_USAGE

    def set_aggregates(self, aggregates):
        self.aggregates = aggregates
        self.availability_zone = aggregates_mod.zone_of(
            aggregates, self.reported_availability_zone)

    def set_status(self, service_disabled, disabled_reason, forced_down):
        self._status = _STATUSES.get((bool(service_disabled),
                                      disabled_reason, bool(forced_down)))
        self.disabled = self.reported_disabled or self._status[0]

    def is_up(self, since=None):
        """Whether the compute reports in time and is not forced down
        (:func:`scheduler_split.servicegroup.is_up`)."""
        return servicegroup.is_up(self.last_report_at, self.forced_down,
                                  since)

    def status(self):
        """The operator's status: (disabled, reason, forced down)."""
        return self._status

    def takes_builds(self, since=None):
        """Whether builds may come here: enabled, and up. ``since`` is
        :func:`scheduler_split.servicegroup.up_since`, worked out once
        for the many hosts of a request."""
        return not self.disabled and servicegroup.is_up(
            self.last_report_at, self._status[2], since)

    def copy_from(self, other):
        """Take every value of ``other`` (a fresh reading of this host)
        in place: a request in flight holds this object."""
        for name in self.__slots__:
            setattr(self, name, getattr(other, name))


class ChildState:
    """A provider below a compute node (a GPU's VGPUs, a PCI device, a
    NIC's bandwidth): what placements of the host's tree read of it."""

    __slots__ = ('uuid', 'name', 'parent_uuid', 'traits', '_resources',
                 'used')

    def __init__(self, uuid, name, parent_uuid):
        self.uuid = uuid
        self.name = name
        self.parent_uuid = parent_uuid
        self.traits = _NO_TRAITS
        self._resources = _INVENTORIES.get(())
        self.used = _NO_USAGE

    inventory = HostState.inventory
    free = HostState.free
    consume = HostState.consume
    give_back = HostState.give_back
    set_usage = HostState.set_usage

    def set_traits(self, traits):
        self.traits = _TRAITS.get(frozenset(traits))

    def key(self):
        """What a report sets of it, comparable."""
        return (self.uuid, self.name, self.parent_uuid, self.traits,
                self._resources)

    def __repr__(self):
        return '<ChildState %s %s>' % (self.name, self.uuid)


# What a compute reports of its hypervisor, kept as it says.
HYPERVISOR_FIELDS = ('host_ip', 'hypervisor_type', 'hypervisor_version',
                     'cpu_arch', 'cpu_info')
# The counts of its builds a compute reports.
BUILD_COUNTS = ('failed_builds', 'num_io_ops')
REPORTED_FIELDS = HYPERVISOR_FIELDS + BUILD_COUNTS
