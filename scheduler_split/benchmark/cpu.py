"""The CPU time the processes of the system under test spend, read from
``/proc`` (``scheduler-split-bench --cpu-of``).

A process is measured with every live descendant: the workers of
gunicorn, the backends PostgreSQL forks for each connection, RabbitMQ's
``beam.smp`` under its launcher script. Each counts its children's time
once they are reaped (``cutime`` and ``cstime``), so a worker that exits
moves its time to its parent instead of losing it. Processes of the same
name (a hundred computes as ``compute``) are summed.
"""

import bisect
import dataclasses
import os
import threading
import time

from scheduler_split.benchmark import base

# How many units of /proc/<pid>/stat's times make a second.
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')
# utime, stime, cutime and cstime: fields 14 to 17 of /proc/<pid>/stat,
# counted in the fields after the command name (which may hold spaces
# and parentheses).
_TIMES = slice(11, 15)


def parse_spec(text):
    """``api=812,compute=900,compute=901,4242`` -> ``[('api', 812),
    ('compute', 900), ('compute', 901), (None, 4242)]``: a bare pid is
    named later, after its ``/proc/<pid>/comm``. BenchError saying what
    is wrong otherwise."""
    processes = []
    for part in text.split(','):
        part = part.strip()
        if not part:
            raise base.BenchError('%r has an empty entry; give NAME=PID or '
                                  'PID, separated by commas' % text)
        name, equals, pid = part.rpartition('=')
        name = name.strip()
        if equals and not name:
            raise base.BenchError('%r has no name before its "="' % part)
        if equals and '=' in name:
            raise base.BenchError('%r is not NAME=PID: one "=" only' % part)
        pid = pid.strip()
        if not pid.isdigit() or int(pid) < 1:
            raise base.BenchError('%r is not NAME=PID or PID: %r is not a '
                                  'process id' % (part, pid))
        processes.append((name or None, int(pid)))
    return processes


def _fields(proc_dir, pid):
    """The fields of ``/proc/<pid>/stat`` after the command name (state,
    ppid, ...), or None once the process is gone."""
    try:
        with open('%s/%s/stat' % (proc_dir, pid), 'rb') as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(b')') + 2:].split()


def seconds(pid, proc_dir='/proc'):
    """The user and system CPU seconds of ``pid`` and of its children
    once reaped; 0 for a process that is gone."""
    fields = _fields(proc_dir, pid) if pid else None
    if fields is None:
        return 0.0
    return sum(int(v) for v in fields[_TIMES]) / CLOCK_TICKS


def _command_name(proc_dir, pid):
    try:
        with open('%s/%d/comm' % (proc_dir, pid)) as f:
            return f.read().strip()
    except OSError:
        return None


def _alive(fields):
    """Running: present, and not a zombie waiting for its parent."""
    return fields is not None and fields[0] != b'Z'


@dataclasses.dataclass
class Sample:
    """One reading of the meter: when (monotonic seconds, right after
    it was read), and the CPU seconds of each name so far."""
    at: float
    seconds: dict

    @property
    def total(self):
        return sum(self.seconds.values())

    def since(self, earlier):
        """``{name: CPU seconds}`` from ``earlier`` to this one."""
        return {name: self.seconds[name] - earlier.seconds[name]
                for name in self.seconds}


class CpuMeter:
    """The CPU time used so far by named processes, each with its live
    descendants.

    ``processes`` is ``[(name, pid)]`` (a name of None: the process's
    own command name). Every pid must be running when the meter is made
    (BenchError ``no process <pid>`` otherwise). One that exits later
    keeps the time read last while it ran, and is named in
    ``vanished``; its pid is not measured again, whatever comes to have
    it. A process counted under several of the pids (a pid given with
    one of its ancestors) is counted under the nearest one only.
    """

    def __init__(self, processes, proc_dir='/proc'):
        self.proc_dir = proc_dir
        self.processes = []
        for name, pid in processes:
            if not _alive(_fields(proc_dir, pid)):
                raise base.BenchError('no process %d' % pid)
            if name is None:
                name = _command_name(proc_dir, pid) or str(pid)
            self.processes.append((name, pid))
        if not self.processes:
            raise base.BenchError('no process to measure')
        # {name: how many pids}, in the order the names were given.
        self.counts = {}
        for name, _ in self.processes:
            self.counts[name] = self.counts.get(name, 0) + 1
        # {pid: name} of the processes gone since the meter was made.
        self.vanished = {}
        self._last = {}
        self._lock = threading.Lock()

    @property
    def names(self):
        return list(self.counts)

    def _scan(self):
        """``{pid: (ppid, CPU ticks)}`` of every process running now."""
        found = {}
        for entry in os.listdir(self.proc_dir):
            if not entry.isdigit():
                continue
            fields = _fields(self.proc_dir, entry)
            if fields is None:
                continue
            found[int(entry)] = (int(fields[1]), b'Z' != fields[0],
                                 sum(int(t) for t in fields[_TIMES]))
        return found

    def read(self):
        """A Sample: the CPU seconds of each name so far."""
        found = self._scan()
        roots = {pid for _, pid in self.processes}
        owners = {}

        def owner(pid):
            # The nearest measured pid among pid and its ancestors.
            path = []
            while pid not in owners:
                if pid in roots:
                    owners[pid] = pid
                    break
                path.append(pid)
                entry = found.get(pid)
                if entry is None:
                    break
                pid = entry[0]
            result = owners.get(pid)
            for step in path:
                owners[step] = result
            return result

        ticks = dict.fromkeys(roots, 0)
        for pid, (_, _, used) in found.items():
            root = owner(pid)
            if root is not None:
                ticks[root] += used
        with self._lock:
            seconds = dict.fromkeys(self.counts, 0.0)
            for name, pid in self.processes:
                entry = found.get(pid)
                if pid in self.vanished or entry is None or not entry[1]:
                    self.vanished.setdefault(pid, name)
                    value = self._last.get(pid, 0.0)
                else:
                    value = self._last[pid] = ticks[pid] / CLOCK_TICKS
                seconds[name] += value
        return Sample(time.monotonic(), seconds)


class Sampler:
    """A thread that reads a meter every ``interval`` seconds and keeps
    every Sample, oldest first."""

    def __init__(self, meter, interval):
        self.meter = meter
        self.interval = interval
        self.samples = []
        self._times = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run,
                                        name='bench-cpu', daemon=True)

    def start(self):
        self.take()
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def take(self):
        """Read the meter now, keep the Sample and return it."""
        # Read under the lock: Samples taken from two threads stay in
        # the order of their times.
        with self._lock:
            sample = self.meter.read()
            self.samples.append(sample)
            self._times.append(sample.at)
        return sample

    def _run(self):
        while not self._stop.wait(self.interval):
            self.take()

    def since(self, when):
        """The Samples taken at or after ``when``."""
        with self._lock:
            return self.samples[bisect.bisect_left(self._times, when):]

    def latest(self):
        with self._lock:
            return self.samples[-1]

    def busy(self, span):
        """CPU seconds per second of every name together, over about the
        last ``span`` seconds (0.0 before two Samples)."""
        with self._lock:
            last = self.samples[-1]
            first = self.samples[max(0, bisect.bisect_right(
                self._times, last.at - span) - 1)]
        if last.at <= first.at:
            return 0.0
        return (last.total - first.total) / (last.at - first.at)


def rates(first, last):
    """``{name: CPU seconds per second}`` between two Samples."""
    elapsed = last.at - first.at
    return {name: (used / elapsed if elapsed > 0 else 0.0)
            for name, used in last.since(first).items()}


def quiet_start(samples, span, threshold):
    """Where the first quiet span of ``samples`` begins: the first Sample
    after which every name together used less than ``threshold`` CPU
    seconds per second over ``span`` seconds. None if there is none
    yet."""
    times = [s.at for s in samples]
    for end, last in enumerate(samples):
        start = bisect.bisect_right(times, last.at - span) - 1
        if start < 0 or start >= end:
            continue
        first = samples[start]
        if (last.total - first.total) / (last.at - first.at) < threshold:
            return first
    return None
