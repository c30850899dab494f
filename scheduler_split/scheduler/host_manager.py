"""What the scheduler knows about every host of every cell, in memory.

Loaded from the scheduler database at start and every
``host_state_refresh_interval`` seconds, and kept current in between by
the reports computes send and by this scheduler's own claims and releases.
Memory only steers the choice; the claim in the database decides.
"""

import logging
import threading
import time

import sqlalchemy as sa
from oslo_utils import uuidutils

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import models
from scheduler_split.objects import base as obj_base
from scheduler_split.scheduler import claims

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class HostState:
    """One compute node as the filters and weighers see it."""

    def __init__(self, uuid, host, nodename, cell_uuid):
        self.uuid = uuid
        self.host = host
        self.nodename = nodename
        self.cell_uuid = cell_uuid
        self.availability_zone = None
        self.disabled = False
        self.last_report_at = None
        # {resource class: (total, reserved, allocation_ratio)}
        self.inventory = {}
        # {resource class: amount allocated}
        self.used = {}

    def __repr__(self):
        return '<HostState %s/%s cell=%s>' % (self.host, self.nodename,
                                              self.cell_uuid)

    def capacity(self, rc):
        inv = self.inventory.get(rc)
        return claims.capacity(*inv) if inv else 0

    def free(self, rc):
        return self.capacity(rc) - self.used.get(rc, 0)

    def fits(self, resources):
        return all(self.free(rc) >= amount
                   for rc, amount in resources.items() if amount)

    def consume(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = self.used.get(rc, 0) + amount

    def give_back(self, resources):
        for rc, amount in resources.items():
            self.used[rc] = max(0, self.used.get(rc, 0) - amount)

    def is_up(self, now=None):
        if self.last_report_at is None:
            return False
        now = now or obj_base.naive_utc(obj_base.utcnow())
        return (now - self.last_report_at).total_seconds() <= \
            CONF.service_down_time


class HostManager:

    def __init__(self, db_url=None):
        self.db_url = db_url or CONF.scheduler_database.connection
        self._hosts = {}
        self._loaded_at = None
        self._lock = threading.RLock()

    # --- reading ------------------------------------------------------------

    def host_states(self):
        """Every known host, reloaded from the database when stale."""
        with self._lock:
            if (self._loaded_at is None or
                    time.monotonic() - self._loaded_at >
                    CONF.filter_scheduler.host_state_refresh_interval):
                self._load_all()
            return list(self._hosts.values())

    def _load_all(self):
        hosts = self._read_states()
        self._hosts = hosts
        self._loaded_at = time.monotonic()
        LOG.debug('Loaded %d host states', len(hosts))

    def _read_states(self, uuid=None):
        """``{uuid: HostState}`` from the database: every provider, or
        only ``uuid``."""
        rp, inv_t = models.ResourceProvider, models.Inventory
        alloc = models.Allocation
        inventories = sa.select(inv_t)
        usage = sa.select(alloc.resource_provider_id, alloc.resource_class,
                          sa.func.sum(alloc.used)).group_by(
            alloc.resource_provider_id, alloc.resource_class)
        providers = sa.select(rp)
        with engines.reader(self.db_url) as session:
            if uuid is not None:
                providers = providers.where(rp.uuid == uuid)
            by_id = {row.id: self._state_from_row(row)
                     for row in session.scalars(providers)}
            if uuid is not None:
                if not by_id:
                    return {}
                inventories = inventories.where(
                    inv_t.resource_provider_id.in_(list(by_id)))
                usage = usage.where(
                    alloc.resource_provider_id.in_(list(by_id)))
            for inv in session.scalars(inventories):
                state = by_id.get(inv.resource_provider_id)
                if state is not None:
                    state.inventory[inv.resource_class] = (
                        inv.total, inv.reserved, inv.allocation_ratio)
            for rp_id, rc, used in session.execute(usage):
                state = by_id.get(rp_id)
                if state is not None:
                    state.used[rc] = int(used)
        return {state.uuid: state for state in by_id.values()}

    @staticmethod
    def _state_from_row(row):
        state = HostState(row.uuid, row.host, row.name, row.cell_uuid)
        state.availability_zone = row.availability_zone
        state.disabled = row.disabled
        state.last_report_at = row.last_report_at
        return state

    def refresh_host(self, uuid):
        """Reload one host after the database disagreed with memory."""
        state = self._read_states(uuid).get(uuid)
        if state is None:
            with self._lock:
                self._hosts.pop(uuid, None)
            return None
        with self._lock:
            existing = self._hosts.get(uuid)
            if existing is None:
                self._hosts[uuid] = state
                return state
            # Update in place: a request in flight holds this object.
            existing.__dict__.update(state.__dict__)
            return existing

    def get(self, uuid):
        with self._lock:
            return self._hosts.get(uuid)

    # --- writing ------------------------------------------------------------

    def note_claim(self, uuid, resources):
        with self._lock:
            state = self._hosts.get(uuid)
            if state is not None:
                state.consume(resources)

    def note_release(self, released):
        """Apply ``{provider_uuid: resources}`` given back by a release."""
        with self._lock:
            for uuid, resources in released.items():
                state = self._hosts.get(uuid)
                if state is not None:
                    state.give_back(resources)

    def update_from_stats(self, cell_uuid, host, nodename, stats):
        """Record a compute's report: capacity, zone, enabled, liveness.

        Creates the compute node's resource provider on its first report.
        Usage is not taken from the compute: allocations are the truth.
        """
        now = obj_base.naive_utc(obj_base.utcnow())
        inventory = {
            'VCPU': (stats['vcpus'], stats.get('reserved_vcpus', 0),
                     stats.get('cpu_allocation_ratio', 1.0)),
            'MEMORY_MB': (stats['memory_mb'],
                          stats.get('reserved_memory_mb', 0),
                          stats.get('ram_allocation_ratio', 1.0)),
            'DISK_GB': (stats['local_gb'], stats.get('reserved_disk_gb', 0),
                        stats.get('disk_allocation_ratio', 1.0)),
        }
        rp = models.ResourceProvider
        with engines.writer(self.db_url) as session:
            row = session.scalars(sa.select(rp).where(
                rp.host == host, rp.name == nodename)).first()
            if row is None:
                row = rp(uuid=stats.get('uuid') or
                         uuidutils.generate_uuid(), host=host, name=nodename,
                         generation=0)
                session.add(row)
            row.cell_uuid = cell_uuid or row.cell_uuid
            row.availability_zone = stats.get('availability_zone')
            row.disabled = bool(stats.get('disabled', False))
            row.last_report_at = now
            session.flush()
            current = {inv.resource_class: inv for inv in session.scalars(
                sa.select(models.Inventory).where(
                    models.Inventory.resource_provider_id == row.id))}
            changed = False
            for rc, (total, reserved, ratio) in inventory.items():
                inv = current.get(rc)
                if inv is None:
                    session.add(models.Inventory(
                        resource_provider_id=row.id, resource_class=rc,
                        total=total, reserved=reserved,
                        allocation_ratio=ratio))
                    changed = True
                elif (inv.total, inv.reserved, inv.allocation_ratio) != (
                        total, reserved, ratio):
                    inv.total, inv.reserved = total, reserved
                    inv.allocation_ratio = ratio
                    changed = True
            uuid = row.uuid
            if changed:
                # An inventory change must fail claims that read the old
                # one; the bump is computed by the database so that a
                # concurrent claim's bump is never lost.
                session.flush()
                session.execute(sa.update(rp).where(rp.id == row.id).values(
                    generation=rp.generation + 1))
        with self._lock:
            state = self._hosts.get(uuid)
            if state is None:
                state = self._hosts[uuid] = HostState(uuid, host, nodename,
                                                      cell_uuid)
            state.cell_uuid = cell_uuid or state.cell_uuid
            state.availability_zone = stats.get('availability_zone')
            state.disabled = bool(stats.get('disabled', False))
            state.last_report_at = now
            state.inventory = inventory
        return uuid
