"""The scheduler alone (``scheduler-split-bench --scheduler-only``): it
speaks only to the scheduler library, on the buses, as the conductors and
computes do."""

import ctypes
import gc
import json
import os
import time

import oslo_messaging as messaging
from oslo_utils import uuidutils

from scheduler_split.api import images
from scheduler_split.benchmark import base
from scheduler_split.benchmark import stats
from scheduler_split.compute import resource_tracker
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import deployment
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF

# What each synthetic host reports having: a plausible hypervisor of today.
SYNTHETIC_VCPUS = 32
SYNTHETIC_MEMORY_MB = 128 * 1024
SYNTHETIC_LOCAL_GB = 2048
# The flavor each select asks for, the image it boots, and how many
# alternates it wants (as many as the super-conductor asks for by default:
# [conductor] build_max_attempts - 1).
SELECT_FLAVOR = 'm1.small'
SELECT_IMAGE = 'cirros'
SELECT_ALTERNATES = 2
# A report burst whose count has not grown for this long is over: what
# has not arrived by then is lost.
REPORT_STALL = 60.0


def rss_bytes(trim=False):
    """This process's resident memory, or None where /proc has none.

    With ``trim``, after a garbage collection and after handing the
    memory the C allocator holds free back to the system (glibc's
    ``malloc_trim``): what is left is what the process still uses, not
    what a burst of messages once needed.
    """
    if trim:
        gc.collect()
        try:
            ctypes.CDLL('libc.so.6').malloc_trim(0)
        except (OSError, AttributeError):
            pass
    try:
        with open('/proc/self/statm') as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident_pages * os.sysconf('SC_PAGE_SIZE')


def synthetic_hosts(count, num_cells):
    """``[(host, cell name)]``: ``count`` hosts dealt in turn to the
    cells ``cell1`` to ``cellK`` the all-in-one sets up, each host named
    ``cellN-hostM``."""
    hosts = []
    for i in range(count):
        cell = 'cell%d' % (i % num_cells + 1)
        hosts.append(('%s-host%d' % (cell, i // num_cells + 1), cell))
    return hosts


def synthetic_stats(index):
    """What a compute's resource tracker reports (see
    ``compute/resource_tracker.py``), for a host bigger than the fake
    driver's default."""
    arch = CONF.fake_driver.cpu_arch
    return resource_tracker.report({
        'vcpus': SYNTHETIC_VCPUS,
        'memory_mb': SYNTHETIC_MEMORY_MB,
        'local_gb': SYNTHETIC_LOCAL_GB,
        'hypervisor_type': 'fake',
        'hypervisor_version': CONF.fake_driver.hypervisor_version,
        'cpu_arch': arch,
        'cpu_info': json.dumps({
            'arch': arch, 'model': 'fake', 'vendor': 'fake',
            'topology': {'cells': 1, 'sockets': 1,
                         'cores': SYNTHETIC_VCPUS, 'threads': 1},
            'features': []}),
    }, '10.%d.%d.%d' % (index >> 16 & 255, index >> 8 & 255, index & 255))


class SchedulerBenchmark:
    """The scheduler service alone, on the in-memory buses, fed by
    synthetic hosts and asked to place instances one at a time.

    Every question goes through :class:`SchedulerClient`: the reports on
    each cell's bus, as computes send them, and the selects on the API
    bus, as the super-conductor sends them.
    """

    def __init__(self, state_dir, num_hosts, num_cells, selects, timeout,
                 progress=None):
        self.state_dir = state_dir
        self.num_hosts = num_hosts
        self.num_cells = num_cells
        self.selects = selects
        self.timeout = timeout
        self.progress = progress or base.Progress()
        self.ctx = ss_context.get_admin_context()
        self.api = None

    def run(self):
        """Measure one size; the row of the report."""
        system = deployment.AllInOne(self.state_dir, self.num_cells,
                                     hosts_per_cell=0)
        system.setup(echo=lambda line: None)
        # Where the super-conductor asks: the API bus.
        self.api = scheduler_client.SchedulerClient(rpc.get_transport())
        scheduler = deployment.scheduler_service(system.cells)
        scheduler.start()
        try:
            return self._measure(system.cells)
        finally:
            scheduler.stop(graceful=False)
            scheduler.wait()

    def _measure(self, cell_mappings):
        # Where each compute reports: its cell's bus.
        reporters = {cell.name: scheduler_client.SchedulerClient(
            rpc.get_transport(cell.transport_url))
            for cell in cell_mappings if not cell.is_cell0}
        hosts = synthetic_hosts(self.num_hosts, self.num_cells)
        reports = [(reporters[cell], (host, host), synthetic_stats(i))
                   for i, (host, cell) in enumerate(hosts)]
        rss_before = rss_bytes(trim=True)
        rss_before_untrimmed = rss_bytes()

        first, seen = self._report_round('reports', reports)
        unchanged, _ = self._report_round('unchanged reports', reports,
                                          baseline=seen)

        spec = self._request_spec()
        times, failures = [], 0
        rss_after = rss_after_untrimmed = None
        for index in range(self.selects):
            uuid = uuidutils.generate_uuid()
            spec.instance_uuid = uuid
            started = time.monotonic()
            try:
                self.api.select_destinations(self.ctx, spec, [uuid],
                                             return_alternates=True,
                                             num_alternates=SELECT_ALTERNATES)
            except scheduler_client.NoValidHost:
                failures += 1
            times.append(time.monotonic() - started)
            if index == 0:
                rss_after_untrimmed = rss_bytes()
                rss_after = rss_bytes(trim=True)
            self.progress.show('%d hosts: select %d/%d'
                               % (self.num_hosts, index + 1, self.selects))
        self.progress.done('%d hosts: %d selects, p50 %.1f ms' % (
            self.num_hosts, self.selects,
            stats.percentiles(times)['p50'] * 1000))
        per_host = untrimmed = None
        if rss_before is not None and rss_after is not None:
            per_host = round((rss_after - rss_before) / 1024.0 /
                             self.num_hosts, 2)
            untrimmed = round((rss_after_untrimmed - rss_before_untrimmed) /
                              1024.0 / self.num_hosts, 2)
        return {
            'hosts': self.num_hosts,
            'cells': self.num_cells,
            'reports_per_s': first['per_s'],
            'reports_lost': first['lost'],
            'unchanged_reports_per_s': unchanged['per_s'],
            'unchanged_reports_lost': unchanged['lost'],
            'selects': self.selects,
            'select_failures': failures,
            'select_ms': stats.rounded(stats.percentiles(
                [t * 1000 for t in times]), 2),
            'rss_kib_per_host': per_host,
            # The same before memory freed after the report bursts (the
            # messages this process queued to itself, as the computes'
            # senders share it here) goes back to the system.
            'rss_kib_per_host_untrimmed': untrimmed,
        }

    def _last_reports(self):
        """``{host: when its last report arrived}`` as the scheduler holds
        it in memory, where it chooses hosts from (the database may learn
        of a report that changed nothing only later)."""
        seen = {}
        for hosts in self.api.get_availability_zones(self.ctx).values():
            for host, entry in hosts.items():
                seen[host] = max(seen.get(host) or '',
                                 entry['updated_at'] or '')
        return seen

    def _report_round(self, label, reports, baseline=None):
        """Cast every report at once, then poll the scheduler until it
        has absorbed them all: every host known (the first round), or
        every host's last report newer than in ``baseline``. Returns
        ``({'per_s', 'lost'}, {host: last report})``."""
        started = time.monotonic()
        for reporter, name, host_stats in reports:
            reporter.update_resource_stats(self.ctx, name, host_stats)
        absorbed, absorbed_at, seen = 0, started, {}
        while True:
            asked = time.monotonic()
            try:
                seen = self._last_reports()
            except messaging.MessagingTimeout:
                pass
            answered = time.monotonic()
            if baseline is None:
                count = len(seen)
            else:
                count = sum(1 for host, at in seen.items()
                            if at != baseline.get(host))
            if count > absorbed:
                absorbed, absorbed_at = count, answered
            self.progress.show('%d hosts: %s %d/%d' % (
                self.num_hosts, label, absorbed, len(reports)))
            if absorbed >= len(reports) or \
                    answered - absorbed_at > REPORT_STALL or \
                    answered - started > self.timeout:
                break
            # Polling a large scheduler is itself work for it: look
            # less often the longer an answer takes.
            time.sleep(max(0.05, 2 * (answered - asked)))
        elapsed = absorbed_at - started
        per_s = round(absorbed / elapsed, 1) if elapsed > 0 else None
        lost = len(reports) - absorbed
        self.progress.done('%d hosts: %s %d/%d in %.2f s%s' % (
            self.num_hosts, label, absorbed, len(reports), elapsed,
            ', %d lost' % lost if lost else ''))
        return {'per_s': per_s, 'lost': lost}, seen

    def _request_spec(self):
        """A RequestSpec as the API writes it and the super-conductor
        hands it to the scheduler: one instance of an m1.small of cirros.
        """
        flavor = next(f for f in objects.Flavor.get_all(self.ctx)
                      if f.name == SELECT_FLAVOR)
        image = images.describe(images.find(SELECT_IMAGE))
        return objects.RequestSpec(
            instance_uuid=uuidutils.generate_uuid(), project_id='bench',
            user_id='bench', flavor=flavor, image_ref=image['id'],
            num_instances=1, availability_zone=None, force_hosts=None,
            scheduler_hints={}, instance_group=None,
            image_properties=image['properties'])
