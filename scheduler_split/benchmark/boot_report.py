"""What a boot run (:mod:`.boot`) found: the records it keeps as it
goes (each POST, where each server came to rest, what the CPU meter saw
of a measured run, with the thresholds that close its window) and what
is drawn from them once it is over: the report (a JSON-able dict, which
``scheduler-split-bench`` prints or tabulates), a row per POST for a
plot, and the CPU the processes used over the run for a plot."""

import dataclasses

from scheduler_split.benchmark import cpu
from scheduler_split.benchmark import db_stats
from scheduler_split.benchmark import stats

# The processes are quiet once, over QUIET_SPAN seconds, all of them
# together used less CPU than their idle rate plus QUIET_MARGIN cores. A
# tenth of a core is above the jitter of the kernel's accounting (10 ms
# ticks) and of a periodic task firing, and well below what building
# servers costs; builds that wait without working (a spawn delay) end a
# quiet span too, and the look at the servers that follows it finds them
# unfinished, so the wait goes on.
QUIET_SPAN = 1.0
QUIET_MARGIN = 0.1
# What the report says of time to ACTIVE when the CPU is measured.
TIME_TO_ACTIVE_UNMEASURED = (
    'not measured while the CPU is: the servers are not watched during '
    'the run, since every look at them costs the API and the databases '
    'CPU')


@dataclasses.dataclass
class Post:
    """One POST /servers: when it started (monotonic seconds), how long
    it took, what it answered."""
    name: str
    started: float
    latency: float
    status: int = None
    server_id: str = None
    message: str = None


@dataclasses.dataclass
class Outcome:
    """Where a server's build came to rest, as the watcher first saw it."""
    status: str
    seen: float
    fault: str = None


@dataclasses.dataclass
class TimelineRow:
    """One POST as a plot draws it: when it was posted (seconds from the
    first POST), its latency (seconds), where its server came to rest
    (ACTIVE, ERROR, BUILD when the run ended first, or ``POST failed``)
    and its time to ACTIVE when that was measured."""
    posted_at: float
    latency: float
    status: str
    to_active: float = None


@dataclasses.dataclass
class CpuWindow:
    """What the meter saw of a run: the processes' idle rate (CPU
    seconds per second each) over ``idle_span`` seconds before it, the
    Samples that open and close the measured window, the cost of each of
    the bench's looks at the servers inside it (CPU seconds each), and
    ``looks``, ``(start, end)`` of each of them in monotonic time."""
    idle: dict
    idle_span: float
    start: cpu.Sample
    end: cpu.Sample
    costs: list
    looks: list
    # With a db_stats.DbStats: the database's counts in the window, less
    # those of the looks, and over the idle span (db_stats.Reading).
    db: object = None
    db_idle: object = None


def report(bench):
    """The run of ``bench`` (a boot.BootBenchmark) as a JSON-able dict."""
    accepted = [p for p in bench.posts if p.server_id]
    failed = [p for p in bench.posts if not p.server_id]
    active, errors = {}, {}
    for post in accepted:
        outcome = bench.outcomes.get(post.server_id)
        if outcome is None:
            continue
        (active if outcome.status == 'ACTIVE' else errors)[
            post.server_id] = (post, outcome)
    first_post = min((p.started for p in bench.posts), default=None)
    if bench.cpu_window is not None and first_post is not None:
        # The servers were seen only once the processes were quiet:
        # the boots took until the window closed.
        duration = bench.cpu_window.end.at - first_post
        if not active:
            duration = None
    else:
        last_active = max((o.seen for _, o in active.values()),
                          default=None)
        duration = (last_active - first_post if last_active is not None
                    else None)
    attempts = [a for a in bench.attempts.values() if a]
    unread = sum(1 for a in bench.attempts.values() if a is None)
    report = {
        'posted': len(accepted),
        'failed_posts': len(failed),
        'failed_post_reasons': stats.reasons(
            '%d %s' % (p.status, p.message) if p.status else p.message
            for p in failed),
        'active': len(active),
        'error': len(errors),
        'error_reasons': stats.reasons(o.fault or 'no fault message'
                                       for _, o in errors.values()),
        'still_building': len(accepted) - len(active) - len(errors),
        'timed_out': bench.timed_out,
        'reschedules': sum(a - 1 for a in attempts if a > 1),
        'rescheduled_servers': sum(1 for a in attempts if a > 1),
        'servers_without_actions_read': unread,
        'failed_polls': bench.poll_errors,
        'duration_s': round(duration, 3) if duration else None,
        'boots_per_s': (round(len(active) / duration, 2)
                        if duration else None),
        'post_latency_ms': stats.rounded(stats.percentiles(
            [p.latency * 1000 for p in accepted]), 1),
        'time_to_active_s': stats.rounded(stats.percentiles(
            [o.seen - p.started for p, o in active.values()]), 3),
    }
    if bench.cpu_meter is not None:
        report['time_to_active_s'] = None
        report['time_to_active_not_measured'] = TIME_TO_ACTIVE_UNMEASURED
        report['cpu'] = cpu_report(bench, len(active))
        if bench.cpu_window is not None and bench.cpu_window.db:
            report['database'] = db_stats.report(
                bench.cpu_window.db, bench.cpu_window.db_idle,
                bench.cpu_window.idle_span, len(active),
                bench.db_stats.what)
    return report


def cpu_report(bench, active):
    """What each name of the meter used in the window, and per boot
    (``active`` the servers ACTIVE)."""
    window = bench.cpu_window
    if window is None:
        return None
    used = window.end.since(window.start)
    looks = {name: sum(cost[name] for cost in window.costs)
             for name in used}

    def figures(processes, seconds, idle):
        return {
            'processes': processes,
            'cpu_s': round(seconds, 3),
            'cpu_ms_per_boot': (round(seconds * 1000 / active, 1)
                                if active else None),
            'idle_cpu_ms_per_s': round(idle * 1000, 1),
        }

    spent = {name: max(0.0, used[name] - looks[name]) for name in used}
    by_name = {name: figures(processes, spent[name], window.idle[name])
               for name, processes in bench.cpu_meter.counts.items()}
    return {
        'window_s': round(window.end.at - window.start.at, 3),
        'idle_measured_s': round(window.idle_span, 3),
        'quiet_span_s': QUIET_SPAN,
        'quiet_margin_cores': QUIET_MARGIN,
        'looks_in_window': len(window.costs),
        'looks_cpu_s': round(sum(looks.values()), 3),
        'by_name': by_name,
        'total': figures(sum(bench.cpu_meter.counts.values()),
                         sum(spent.values()), sum(window.idle.values())),
        'vanished': {str(pid): name for pid, name
                     in sorted(bench.cpu_meter.vanished.items())},
    }


def timeline(bench):
    """A TimelineRow of each POST of ``bench``, in the order they were
    posted."""
    if not bench.posts:
        return []
    first = min(p.started for p in bench.posts)
    rows = []
    for post in sorted(bench.posts, key=lambda p: p.started):
        outcome = (bench.outcomes.get(post.server_id)
                   if post.server_id else None)
        if not post.server_id:
            status = 'POST failed'
        else:
            status = outcome.status if outcome else 'BUILD'
        to_active = None
        if status == 'ACTIVE' and bench.cpu_meter is None:
            to_active = outcome.seen - post.started
        rows.append(TimelineRow(post.started - first, post.latency,
                                status, to_active))
    return rows


def cpu_timeline(bench, interval=0.3):
    """The meter's Samples of a measured run for a plot, in seconds
    from the first POST: ``{'names', 'at' (the midpoint of each
    interval of at least ``interval`` seconds between two Samples:
    over a single tenth of a second, the kernel's 10 ms ticks make
    the rates jump), 'cores' ({name: CPU seconds per second over
    each interval}), 'window' ((start, end)), 'looks' ([(start,
    end)] of the bench's looks at the servers), 'idle' ({name:
    cores})}``; None if the run was not measured."""
    window = bench.cpu_window
    if window is None or not bench.posts:
        return None
    first = min(p.started for p in bench.posts)
    names = list(bench.cpu_meter.counts)
    samples = bench.cpu_samples
    at, cores = [], {name: [] for name in names}
    earlier = samples[0] if samples else None
    for index, later in enumerate(samples[1:], 1):
        if later.at - earlier.at < interval and \
                index < len(samples) - 1:
            continue
        at.append((earlier.at + later.at) / 2 - first)
        for name, rate in cpu.rates(earlier, later).items():
            cores[name].append(rate)
        earlier = later
    return {'names': names, 'at': at, 'cores': cores,
            'window': (window.start.at - first, window.end.at - first),
            'looks': [(a - first, b - first) for a, b in window.looks],
            'idle': dict(window.idle)}
