"""The scheduler alone (``scheduler-split-bench --scheduler-only``): it
speaks only to the scheduler library, on the buses, as the conductors and
computes do.

One size, in phases: a burst of first reports (every host registers), a
burst of reports that say nothing new, a burst of reports that each say
something new; selects one after another (and the memory the hosts
take); selects while a steady stream of changed reports comes from a
process of its own (:mod:`.report_stream`), with the host states
reloaded every ``RELOAD_INTERVAL`` seconds meanwhile; then a restart of
the scheduler, timed to its first select answered and to the end of its
load. How many reports the scheduler absorbed is what it counts in its
metrics (as a scrape of its ``/metrics`` would show), and at the end of
each burst every host's last report is looked up through the library.
"""

import ctypes
import gc
import json
import os
import time

from oslo_utils import uuidutils

from scheduler_split.benchmark import base
from scheduler_split.benchmark import report_stream
from scheduler_split.benchmark import stats
from scheduler_split.compute import resource_tracker
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import engines
from scheduler_split import deployment
from scheduler_split.image import catalog as images
from scheduler_split import metrics
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
# How often a burst looks at what the scheduler counted.
COUNT_POLL = 0.05
# The most reports of a burst sent and not yet taken by the scheduler:
# the rest wait with the sender, as they would in the broker rather than
# in the scheduler's process (a real scheduler's memory never holds a
# whole burst).
BURST_WINDOW = 2000
# The reports a second of the stream, and how long selects are timed
# under it (after STREAM_WARMUP seconds of it), one every SELECT_PAUSE
# seconds at most: a super-conductor's pace, not a closed loop.
DEFAULT_REPORT_RATE = 2000
DEFAULT_STREAM_SECONDS = 20.0
STREAM_WARMUP = 2.0
SELECT_PAUSE = 0.05
# Seconds between two reloads of the host states during the run, so that
# reloads happen while selects are timed under the stream.
RELOAD_INTERVAL = 10
# How long a restarted scheduler may take to load every host.
LOAD_TIMEOUT = 600.0


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


# What a host with devices (see --device-hosts) has beyond the others:
# GPUs below its compute node, each with VGPUs and the GPU's traits;
# and what the device selects ask of it.
DEVICE_GPUS = 2
DEVICE_RESOURCES = {'VGPU': 2}
DEVICE_TRAITS = ['CUSTOM_GPU', 'HW_GPU_API_VULKAN']
DEVICE_EXTRA_SPECS = {'resources:VGPU': '1',
                      'trait:CUSTOM_GPU': 'required'}


def device_children(hostname):
    """The GPUs a host with devices reports below its compute node."""
    return [{'name': '%s_pgpu%d' % (hostname, gpu), 'parent': None,
             'resources': dict(DEVICE_RESOURCES),
             'traits': list(DEVICE_TRAITS)}
            for gpu in range(DEVICE_GPUS)]


def synthetic_stats(index, device_every=0, hostname=None):
    """What a compute's resource tracker reports (see
    ``compute/resource_tracker.py``), for a host bigger than the fake
    driver's default; every ``device_every``-th host (none if 0) also
    has GPUs below it (``device_children`` of ``hostname``)."""
    arch = CONF.fake_driver.cpu_arch
    devices = bool(device_every) and index % device_every == 0
    return resource_tracker.report({
        'providers': device_children(hostname or 'host%d' % index)
        if devices else [],
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


def _counter(name, labels=None):
    """The value of a metric of this process (``name`` as Prometheus
    shows it): what a scrape of the scheduler's ``/metrics`` would
    read."""
    total = 0.0
    for metric in metrics.REPORTS.collect() + \
            metrics.HOST_STATE_LOAD_SECONDS.collect() + \
            _reload_metric().collect() + metrics.SELECT_SECONDS.collect():
        for sample in metric.samples:
            if sample.name == name and all(
                    sample.labels.get(k) == v
                    for k, v in (labels or {}).items()):
                total += sample.value
    return total


def _reload_metric():
    """The histogram of the periodic reloads of the host states (of
    every load, for a scheduler that reloads every host each time)."""
    return getattr(metrics, 'HOST_STATE_RELOAD_SECONDS',
                   metrics.HOST_STATE_LOAD_SECONDS)


def _reports_counted():
    """The reports the scheduler accounted for, whatever became of
    each: ``(all of them, those it could not write)``."""
    every = _counter('scheduler_split_scheduler_compute_reports_total')
    dropped = _counter('scheduler_split_scheduler_compute_reports_total',
                       {'outcome': 'dropped'})
    return every, dropped


def _selects_inside():
    """``(count, seconds)`` of the selects so far, as the scheduler timed
    them from the call's arrival to its answer."""
    return (_counter('scheduler_split_scheduler_select_destinations_seconds'
                     '_count'),
            _counter('scheduler_split_scheduler_select_destinations_seconds'
                     '_sum'))


def _mean_ms(before, after):
    count = after[0] - before[0]
    return round(1000.0 * (after[1] - before[1]) / count, 2) if count \
        else None


def _reloads():
    """``(count, seconds)`` of the reloads so far."""
    prefix = 'scheduler_split_scheduler_host_state_%s_seconds' % (
        'reload' if hasattr(metrics, 'HOST_STATE_RELOAD_SECONDS')
        else 'load')
    return _counter(prefix + '_count'), _counter(prefix + '_sum')


class SchedulerBenchmark:
    """The scheduler service alone, on the in-memory buses, fed by
    synthetic hosts and asked to place instances one at a time.

    Every question goes through :class:`SchedulerClient`: the reports on
    each cell's bus, as computes send them, and the selects on the API
    bus, as the super-conductor sends them.
    """

    def __init__(self, state_dir, num_hosts, num_cells, selects, timeout,
                 progress=None, report_rate=DEFAULT_REPORT_RATE,
                 stream_seconds=DEFAULT_STREAM_SECONDS, stream_setup=None,
                 device_every=0):
        self.state_dir = state_dir
        self.num_hosts = num_hosts
        self.num_cells = num_cells
        self.selects = selects
        self.timeout = timeout
        self.progress = progress or base.Progress()
        self.report_rate = report_rate
        self.stream_seconds = stream_seconds
        # (config files, debug, run directory, CPUs) of the feeder
        # process.
        self.stream_setup = stream_setup or ([], False, state_dir, None)
        # Every device_every-th host has VGPUs and GPU traits, and every
        # other select asks for one (0: none).
        self.device_every = device_every
        self._selected = 0
        self._device_spec = None
        self.ctx = ss_context.get_admin_context()
        self.api = None
        self.scheduler = None
        self._spec = None

    def run(self):
        """Measure one size; the row of the report."""
        CONF.set_override('host_state_refresh_interval', RELOAD_INTERVAL,
                          group='filter_scheduler')
        system = deployment.AllInOne(self.state_dir, self.num_cells,
                                     hosts_per_cell=0)
        system.setup(echo=lambda line: None)
        # Where the super-conductor asks: the API bus.
        self.api = scheduler_client.SchedulerClient(rpc.get_transport())
        self.scheduler = deployment.scheduler_service(system.cells)
        self.scheduler.start()
        try:
            return self._measure(system.cells)
        finally:
            self.scheduler.stop(graceful=False)
            self.scheduler.wait()

    def _show(self, text):
        self.progress.show('%d hosts: %s' % (self.num_hosts, text))

    def _done(self, text):
        self.progress.done('%d hosts: %s' % (self.num_hosts, text))

    def _measure(self, cell_mappings):
        cells = [cell for cell in cell_mappings if not cell.is_cell0]
        # Where each compute reports: its cell's bus.
        reporters = {cell.name: scheduler_client.SchedulerClient(
            rpc.get_transport(cell.transport_url)) for cell in cells}
        urls = {cell.name: cell.transport_url for cell in cells}
        hosts = synthetic_hosts(self.num_hosts, self.num_cells)
        first = [synthetic_stats(i, self.device_every, hosts[i][0])
                 for i in range(len(hosts))]
        rss_before = rss_bytes(trim=True)
        rss_before_untrimmed = rss_bytes()

        row = {'hosts': self.num_hosts, 'cells': self.num_cells}
        for label, key, turn in (('reports', 'reports', None),
                                 ('unchanged reports', 'unchanged_reports',
                                  None),
                                 ('changed reports', 'changed_reports', 1)):
            burst = [(reporters[cell], (host, host),
                      first[i] if turn is None else
                      report_stream.changed_stats(first[i], i, turn))
                     for i, (host, cell) in enumerate(hosts)]
            figures = self._burst(label, burst, first=key == 'reports')
            row[key + '_per_s'] = figures['per_s']
            row[key + '_lost'] = figures['lost']
            del burst

        inside = _selects_inside()
        times, failures, rss = self._time_selects(self.selects,
                                                  measure_rss=True)
        row['select_inside_ms'] = _mean_ms(inside, _selects_inside())
        rss_after_untrimmed, rss_after = rss
        self._done('%d selects, p50 %.1f ms' % (
            self.selects, stats.percentiles(times)['p50'] * 1000))
        device = [t * 1000 for t, flag in zip(times, self.device_flags)
                  if flag]
        plain = [t * 1000 for t, flag in zip(times, self.device_flags)
                 if not flag]
        row.update({
            'selects': self.selects,
            'select_failures': failures,
            'select_ms': stats.rounded(stats.percentiles(
                [t * 1000 for t in times]), 2),
            # With --device-hosts: the selects asking a VGPU, and the
            # others.
            'device_select_ms': stats.rounded(stats.percentiles(device), 2)
            if device else None,
            'plain_select_ms': stats.rounded(stats.percentiles(plain), 2)
            if device else None,
            'rss_kib_per_host': None,
            # The same before memory freed after the report bursts (the
            # messages this process queued to itself, as the computes'
            # senders share it here) goes back to the system.
            'rss_kib_per_host_untrimmed': None,
        })
        if rss_before is not None and rss_after is not None:
            row['rss_kib_per_host'] = round(
                (rss_after - rss_before) / 1024.0 / self.num_hosts, 2)
            row['rss_kib_per_host_untrimmed'] = round(
                (rss_after_untrimmed - rss_before_untrimmed) / 1024.0 /
                self.num_hosts, 2)
        row['stream'] = self._stream(
            [(host, urls[cell]) for host, cell in hosts]) \
            if self.report_rate else None
        row['restart'] = self._restart(cell_mappings)
        return row

    # --- reports -------------------------------------------------------------

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

    def _wait_counted(self, label, expected, since, started):
        """Wait until the scheduler accounted for ``expected`` reports
        more than ``since`` (or their count stalls); ``(when the count
        stopped growing, how many it grew by)``."""
        counted, counted_at = 0, started
        while True:
            now = time.monotonic()
            grown = int(_reports_counted()[0] - since)
            if grown > counted:
                counted, counted_at = grown, now
            self._show('%s %d/%d' % (label, counted, expected))
            if counted >= expected or now - counted_at > REPORT_STALL or \
                    now - started > self.timeout:
                return counted_at, counted
            time.sleep(COUNT_POLL)

    def _burst(self, label, reports, first=False):
        """Cast every report as fast as the scheduler takes them (at most
        BURST_WINDOW waiting), then wait until the scheduler accounted for
        them all; then check that every host's report arrived: each host
        known (``first``), or its last report newer than before.
        ``{'per_s', 'lost'}``."""
        baseline = None if first else self._last_reports()
        since = _reports_counted()[0]
        started = time.monotonic()
        for sent, (reporter, name, host_stats) in enumerate(reports):
            if sent % 100 == 0:
                while sent - (_reports_counted()[0] - since) > BURST_WINDOW:
                    self._show('%s %d sent' % (label, sent))
                    time.sleep(0.01)
            reporter.update_resource_stats(self.ctx, name, host_stats)
        counted_at, _ = self._wait_counted(label, len(reports), since,
                                           started)
        seen = self._last_reports()
        if baseline is None:
            absorbed = len(seen)
        else:
            absorbed = sum(1 for host, at in seen.items()
                           if at != baseline.get(host))
        elapsed = counted_at - started
        per_s = round(absorbed / elapsed, 1) if elapsed > 0 else None
        lost = len(reports) - absorbed
        self._done('%s %d/%d in %.2f s%s' % (
            label, absorbed, len(reports), elapsed,
            ', %d lost' % lost if lost else ''))
        return {'per_s': per_s, 'lost': lost}

    # --- selects -------------------------------------------------------------

    def _request_spec(self):
        """A RequestSpec as the API writes it and the super-conductor
        hands it to the scheduler: one instance of an m1.small of cirros.
        """
        if self._spec is None:
            flavor = next(f for f in objects.Flavor.get_all(self.ctx)
                          if f.name == SELECT_FLAVOR)
            image_id, _, _, _, _, properties = images.find(SELECT_IMAGE)
            self._spec = objects.RequestSpec(
                instance_uuid=uuidutils.generate_uuid(), project_id='bench',
                user_id='bench', flavor=flavor, image_ref=image_id,
                num_instances=1, availability_zone=None, force_hosts=None,
                scheduler_hints={}, instance_group=None,
                image_properties=dict(properties))
        return self._spec

    def _device_request_spec(self):
        """The RequestSpec of a server asking a VGPU of a host with the
        GPU's trait."""
        if self._device_spec is None:
            spec = self._request_spec()
            flavor = objects.Flavor(**{
                name: getattr(spec.flavor, name)
                for name in spec.flavor.fields
                if spec.flavor.obj_attr_is_set(name)})
            flavor.extra_specs = dict(spec.flavor.extra_specs,
                                      **DEVICE_EXTRA_SPECS)
            self._device_spec = objects.RequestSpec(
                instance_uuid=spec.instance_uuid, project_id='bench',
                user_id='bench', flavor=flavor, image_ref=spec.image_ref,
                num_instances=1, availability_zone=None, force_hosts=None,
                scheduler_hints={}, instance_group=None,
                image_properties=dict(spec.image_properties))
        return self._device_spec

    def _select(self):
        """One select of one instance; ``(seconds, whether it found a
        host)``. With hosts with devices, every other select asks for
        one."""
        self._selected += 1
        self.last_was_device = bool(self.device_every and
                                    self._selected % 2 == 0)
        spec = (self._device_request_spec() if self.last_was_device
                else self._request_spec())
        uuid = uuidutils.generate_uuid()
        spec.instance_uuid = uuid
        started = time.monotonic()
        try:
            self.api.select_destinations(self.ctx, spec, [uuid],
                                         return_alternates=True,
                                         num_alternates=SELECT_ALTERNATES)
            placed = True
        except scheduler_client.NoValidHost:
            placed = False
        return time.monotonic() - started, placed

    def _time_selects(self, count, measure_rss=False, until=None):
        """``count`` selects one after another (or, with ``until``, one
        every SELECT_PAUSE seconds until then); ``(times, failures,
        (RSS untrimmed, RSS) after the first)``; which of them asked a
        device is left in ``device_flags``."""
        times, failures, rss = [], 0, (None, None)
        self.device_flags = []
        while (len(times) < count if until is None
               else time.monotonic() < until):
            took, placed = self._select()
            times.append(took)
            self.device_flags.append(self.last_was_device)
            failures += not placed
            if measure_rss and len(times) == 1:
                rss = (rss_bytes(), rss_bytes(trim=True))
            self._show('select %d' % len(times) + (
                '/%d' % count if until is None else ''))
            if until is not None:
                time.sleep(max(0.0, SELECT_PAUSE - took))
        return times, failures, rss

    # --- selects under a stream of reports -----------------------------------

    def _stream(self, hosts):
        """Selects while ``report_rate`` changed reports a second arrive
        from the feeder process; the figures of that phase."""
        stream = report_stream.ReportStream(*self.stream_setup,
                                            hosts=hosts,
                                            rate=self.report_rate,
                                            device_every=self.device_every)
        since = _reports_counted()
        reloads = _reloads()
        inside = None
        self._show('starting a stream of %d reports/s' % self.report_rate)
        stream.start()
        started = time.monotonic()
        cpu = time.process_time()
        time.sleep(STREAM_WARMUP)
        inside = _selects_inside()
        times, failures, _ = self._time_selects(
            0, until=time.monotonic() + self.stream_seconds)
        inside = _mean_ms(inside, _selects_inside())
        sent = stream.stop()
        stopped = time.monotonic()
        cpu = time.process_time() - cpu
        drained_at, counted = self._wait_counted(
            'stream', sent, since[0], stopped)
        dropped = int(_reports_counted()[1] - since[1])
        reload_count, reload_seconds = _reloads()
        reload_count -= reloads[0]
        reload_seconds -= reloads[1]
        lost = sent - counted + dropped
        figures = {
            'rate': self.report_rate,
            'sent': sent,
            'sent_per_s': round(sent / (stopped - started), 1),
            'absorbed_per_s': round((counted - dropped) /
                                    (max(drained_at, stopped) - started), 1),
            'drain_s': round(max(0.0, drained_at - stopped), 2),
            # The CPU this process (the scheduler, the relay and the
            # selects' client) used while the stream ran, in percent of
            # one CPU.
            'cpu_percent': round(100.0 * cpu / (stopped - started), 1),
            'lost': lost,
            'selects': len(times),
            'select_failures': failures,
            'select_ms': stats.rounded(stats.percentiles(
                [t * 1000 for t in times]), 2),
            # The mean of the same selects as the scheduler timed them,
            # from the call's dispatch to its answer.
            'select_inside_ms': inside,
            'reloads': int(reload_count),
            'reload_s': round(reload_seconds / reload_count, 3)
            if reload_count else None,
        }
        self._done('%d selects under %.0f reports/s (%d sent%s), p99 %.1f '
                   'ms' % (len(times), figures['sent_per_s'], sent,
                           ', %d lost' % lost if lost else '',
                           figures['select_ms']['p99'] or 0))
        return figures

    # --- a restart -----------------------------------------------------------

    def _restart(self, cell_mappings):
        """Stop the scheduler, forget what it held and start another:
        ``{'first_select_s', 'loaded_s'}``: from its start to its first
        select answered, and how long its load of every host took (as it
        timed it)."""
        self.scheduler.stop(graceful=False)
        self.scheduler.wait()
        self.scheduler = None
        gc.collect()
        engines.dispose_all()
        loads = (_counter('scheduler_split_scheduler_host_state_load_'
                          'seconds_count'),
                 _counter('scheduler_split_scheduler_host_state_load_'
                          'seconds_sum'))
        self._show('restarting the scheduler')
        started = time.monotonic()
        self.scheduler = deployment.scheduler_service(cell_mappings)
        self.scheduler.start()
        took, _ = self._select()
        first_select = time.monotonic() - started
        while _counter('scheduler_split_scheduler_host_state_load_seconds'
                       '_count') <= loads[0]:
            if time.monotonic() - started > LOAD_TIMEOUT:
                raise base.BenchError('the restarted scheduler did not load '
                                      'its hosts within %d s' % LOAD_TIMEOUT)
            time.sleep(COUNT_POLL)
        loaded = _counter('scheduler_split_scheduler_host_state_load_seconds'
                          '_sum') - loads[1]
        self._done('restarted: first select answered after %.2f s; the '
                   'load of every host took %.2f s' % (first_select, loaded))
        return {'first_select_s': round(first_select, 3),
                'loaded_s': round(loaded, 3)}
