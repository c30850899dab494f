"""One compute node as the filters and weighers see it.

The host-state cache (:mod:`host_manager`) holds one per compute node, and
compute reports (:mod:`reports`) and claims keep them current.
"""

import sys

from scheduler_split import servicegroup
from scheduler_split.scheduler import aggregates as aggregates_mod
from scheduler_split.scheduler import claims


_NO_INSTANCES = frozenset()
# {inventory as a sorted tuple: (inventory, capacities)}: the inventories
# hosts share. Bounded: past the limit it starts again, which only costs
# copies.
_INVENTORIES = {}
_INVENTORIES_LIMIT = 4096


def _shared_inventory(inventory):
    key = tuple(sorted(inventory.items()))
    shared = _INVENTORIES.get(key)
    if shared is None:
        if len(_INVENTORIES) >= _INVENTORIES_LIMIT:
            _INVENTORIES.clear()
        shared = _INVENTORIES[key] = (
            dict(inventory), {rc: claims.capacity(*inv)
                              for rc, inv in inventory.items()})
    return shared


def shared(value):
    """One copy of a text many hosts report alike (a cell, a zone, a
    hypervisor type)."""
    return sys.intern(value) if type(value) is str else value


class HostState:
    """One compute node as the filters and weighers see it.

    Slotted: a scheduler holds one per compute node, tens of thousands of
    them at the largest sizes.
    """

    __slots__ = (
        'uuid', 'host', 'nodename', 'cell_uuid', 'availability_zone',
        'reported_availability_zone', 'aggregates', 'disabled',
        'reported_disabled', 'service_disabled', 'disabled_reason',
        'forced_down', 'last_report_at', 'host_ip', 'hypervisor_type',
        'hypervisor_version', 'cpu_arch', 'cpu_info', '_inventory',
        '_capacity', 'used', 'instances', 'failed_builds', 'num_io_ops',
        'report_digest', '__weakref__')

    def __init__(self, uuid, host, nodename, cell_uuid):
        self.uuid = uuid
        self.host = host
        self.nodename = nodename
        self.cell_uuid = cell_uuid
        # The effective zone: its aggregates', else what it reports.
        self.availability_zone = None
        self.reported_availability_zone = None
        # The aggregates the host is in (scheduler.aggregates.Aggregate).
        self.aggregates = ()
        # Whether builds may not come here: the compute's own report or
        # the operator's status (os-services).
        self.disabled = False
        self.reported_disabled = False
        self.service_disabled = False
        self.disabled_reason = None
        self.forced_down = False
        self.last_report_at = None
        # What the compute reports of its hypervisor (the contract of
        # ImagePropertiesFilter, among others).
        self.host_ip = None
        self.hypervisor_type = None
        self.hypervisor_version = None
        self.cpu_arch = None
        self.cpu_info = None
        # {resource class: (total, reserved, allocation_ratio)}
        self._inventory = {}
        self._capacity = {}
        # {resource class: amount allocated}
        self.used = {}
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
        # HostManager.update_from_stats).
        self.report_digest = None

    @property
    def inventory(self):
        return self._inventory

    @inventory.setter
    def inventory(self, inventory):
        # Capacities are read for every host a request considers; they
        # change only with the inventory. Hosts of one kind share one
        # copy of both (neither is changed in place).
        self._inventory, self._capacity = _shared_inventory(inventory)

    def add_instance(self, consumer):
        if self.instances is _NO_INSTANCES:
            self.instances = set()
        self.instances.add(consumer)

    def drop_instances(self, consumers):
        if self.instances is not _NO_INSTANCES:
            self.instances.difference_update(consumers)

    @property
    def num_instances(self):
        return len(self.instances)

    def __repr__(self):
        return '<HostState %s/%s cell=%s>' % (self.host, self.nodename,
                                              self.cell_uuid)

    def capacity(self, rc):
        return self._capacity.get(rc, 0)

    def free(self, rc):
        return self._capacity.get(rc, 0) - self.used.get(rc, 0)

    def fits(self, resources):
        return all(self.free(rc) >= amount
                   for rc, amount in resources.items() if amount)

    def consume(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = self.used.get(rc, 0) + amount

    def give_back(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = max(0, self.used.get(rc, 0) - amount)

    def set_aggregates(self, aggregates):
        self.aggregates = aggregates
        self.availability_zone = aggregates_mod.zone_of(
            aggregates, self.reported_availability_zone)

    def set_status(self, service_disabled, disabled_reason, forced_down):
        self.service_disabled = bool(service_disabled)
        self.disabled_reason = disabled_reason
        self.forced_down = bool(forced_down)
        self.disabled = self.reported_disabled or self.service_disabled

    def is_up(self, since=None):
        """Whether the compute reports in time and is not forced down
        (:func:`scheduler_split.servicegroup.is_up`)."""
        return servicegroup.is_up(self.last_report_at, self.forced_down,
                                  since)

    def status(self):
        """The operator's status: (disabled, reason, forced down)."""
        return (self.service_disabled, self.disabled_reason,
                self.forced_down)

    def takes_builds(self, since=None):
        """Whether builds may come here: enabled, and up. ``since`` is
        :func:`scheduler_split.servicegroup.up_since`, worked out once
        for the many hosts of a request."""
        return not self.disabled and servicegroup.is_up(
            self.last_report_at, self.forced_down, since)

    def copy_from(self, other):
        """Take every value of ``other`` (a fresh reading of this host)
        in place: a request in flight holds this object."""
        for name in self.__slots__:
            if name != '__weakref__':
                setattr(self, name, getattr(other, name))


# What a compute reports of its hypervisor, kept as it says.
HYPERVISOR_FIELDS = ('host_ip', 'hypervisor_type', 'hypervisor_version',
                     'cpu_arch', 'cpu_info')
# The counts of its builds a compute reports.
BUILD_COUNTS = ('failed_builds', 'num_io_ops')
REPORTED_FIELDS = HYPERVISOR_FIELDS + BUILD_COUNTS
