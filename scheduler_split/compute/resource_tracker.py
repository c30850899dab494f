"""What this compute host has, told to the scheduler through its library.

Each report also carries the hypervisor's details (address, type,
version, CPU architecture) and what the operator last said of this
compute's service (its cell record, as the conductor answered the last
heartbeat), so that a status change the API could not tell the scheduler
reaches it within a report interval.

The resource tracker never touches the scheduler's tables: capacity,
reserved amounts, allocation ratios, the availability zone and liveness go
out as ``update_resource_stats`` every ``report_interval`` seconds.
"""

import logging

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.objects import service as service_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)


# What a compute node's provider has while its service is disabled, by
# the compute or the operator, as Nova's computes report it.
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'


def initial_allocation_ratios():
    """``{class: ratio}`` a new compute node's inventory starts with
    where its ``[compute] *_allocation_ratio`` is unset."""
    opts = CONF.compute
    return {'VCPU': opts.initial_cpu_allocation_ratio,
            'MEMORY_MB': opts.initial_ram_allocation_ratio,
            'DISK_GB': opts.initial_disk_allocation_ratio}


def allocation_ratios():
    """``{class: ratio}`` this compute's configuration gives a new
    compute node."""
    opts = CONF.compute
    initial = initial_allocation_ratios()
    configured = {'VCPU': opts.cpu_allocation_ratio,
                  'MEMORY_MB': opts.ram_allocation_ratio,
                  'DISK_GB': opts.disk_allocation_ratio}
    return {rc: initial[rc] if ratio is None else ratio
            for rc, ratio in configured.items()}


def report(resources, host_ip, disabled=False, service_status=None,
           failed_builds=0, num_io_ops=0):
    """The stats dict ``update_resource_stats`` carries for a host whose
    driver has ``resources``, with this host's ``[compute]`` options."""
    opts = CONF.compute
    stats = {
        'vcpus': resources['vcpus'],
        'memory_mb': resources['memory_mb'],
        'local_gb': resources['local_gb'],
        'reserved_vcpus': opts.reserved_host_cpus,
        'reserved_memory_mb': opts.reserved_host_memory_mb,
        'reserved_disk_gb': (opts.reserved_host_disk_mb + 1023) // 1024,
        'initial_allocation_ratios': initial_allocation_ratios(),
        'availability_zone': opts.availability_zone,
        'disabled': disabled,
        'service_status': service_status,
        'host_ip': host_ip,
        'hypervisor_type': resources.get('hypervisor_type'),
        'hypervisor_version': resources.get('hypervisor_version'),
        'cpu_arch': resources.get('cpu_arch'),
        'cpu_info': resources.get('cpu_info'),
        'failed_builds': failed_builds,
        'num_io_ops': num_io_ops,
        # What the driver has beyond VCPU, MEMORY_MB and DISK_GB
        # ({class: total}) and the traits it reports.
        'resources': dict(resources.get('resources') or {}),
        'traits': sorted(set(resources.get('traits') or ()) | (
            {DISABLED_TRAIT} if disabled or (service_status or {}).get(
                'disabled') else set())),
        # The providers below the compute node: [{name, parent (a name,
        # None for the compute node), resources, traits}], parents first.
        'providers': [dict(child) for child in
                      resources.get('providers') or ()],
    }
    # A ratio left unset is not sent: the provider's stays as it is (an
    # operator's), and a new compute node starts with the initial one.
    for key in ('cpu_allocation_ratio', 'ram_allocation_ratio',
                'disk_allocation_ratio'):
        if getattr(opts, key) is not None:
            stats[key] = getattr(opts, key)
    return stats


class ResourceTracker:

    def __init__(self, host, driver, scheduler, conductor):
        self.host = host
        self.driver = driver
        self.scheduler = scheduler
        self.conductor = conductor
        self.disabled = False
        # What the operator said of this service, as its cell conductor
        # last answered a heartbeat (None before the first answer).
        self.service_status = None
        # Whether a heartbeat of this process recorded its service (only
        # the first may create the record), and whether the operator
        # deleted the record since (os-services DELETE): the host then
        # stays out of scheduling until this compute restarts.
        self.service_recorded = False
        self.service_deleted = False
        # Builds that failed here in a row (a success resets it), for
        # the scheduler's BuildFailureWeigher.
        self.failed_builds = 0
        # How many builds run here now (set by the compute manager).
        self.builds_in_flight = lambda: 0

    def stats(self):
        return report(self.driver.get_available_resource(), CONF.my_ip,
                      disabled=self.disabled,
                      service_status=self.service_status,
                      failed_builds=self.failed_builds,
                      num_io_ops=self.builds_in_flight())

    def build_failed(self, ctx):
        """Count a failed build and tell the scheduler now, so that the
        next build weighs this host down without waiting for a report."""
        self.failed_builds += 1
        self._report_soon(ctx)

    def build_succeeded(self, ctx):
        if self.failed_builds:
            self.failed_builds = 0
            self._report_soon(ctx)

    def _report_soon(self, ctx):
        try:
            self.report(ctx)
        except Exception:
            LOG.exception('Could not report to the scheduler; the next '
                          'periodic report will')

    def heartbeat(self, ctx):
        """Refresh this compute's service record in the cell database,
        through the cell conductor, with this release's service version.
        """
        # Not answered within report_interval (the conductor was not
        # listening yet, say), it is superseded by the next heartbeat.
        try:
            status = self.conductor.service_heartbeat(
                ctx, self.host, service_obj.COMPUTE, 'compute',
                service_obj.SERVICE_VERSION,
                timeout=min(CONF.report_interval, CONF.rpc_response_timeout),
                create=not self.service_recorded)
        except exception.ServiceNotFound:
            if not self.service_deleted:
                self._deleted(ctx)
            return
        self.service_recorded = True
        if isinstance(status, dict):
            # The next report carries it to the scheduler, which keeps it
            # unless it already holds a newer reading of the record.
            self.service_status = status

    def _deleted(self, ctx):
        """The operator deleted this compute's service record: stop
        reporting, and have the scheduler forget the host again, since a
        report sent before this heartbeat may have brought it back."""
        self.service_deleted = True
        LOG.warning('The service record of compute %s was deleted; it no '
                    'longer reports to the scheduler, which sends it no '
                    'builds, until this service is restarted', self.host)
        try:
            self.scheduler.delete_host(ctx, self.host)
        except Exception as exc:
            LOG.warning('Could not have the scheduler forget host %s (%s)',
                        self.host, exc)

    def report(self, ctx):
        """Send one report of capacity and liveness to the scheduler (a
        cast: it never waits for the conductor nor the database); nothing
        once the operator deleted this compute's service record."""
        if self.service_deleted:
            return
        self.scheduler.update_resource_stats(
            ctx, (self.host, self.driver.nodename()), self.stats())
