"""Runs drawn as pictures (``scheduler-split-bench --plot``): a boot run
over time, a scheduler run over the number of hosts."""

import math

from scheduler_split.benchmark import stats

# Bin widths a time axis is cut into (seconds): the first that gives at
# most MAX_BINS bins with MIN_PER_BIN events each on average (fewer and
# the bars are noise).
BIN_WIDTHS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600)
MAX_BINS = 40
MIN_PER_BIN = 8
# How the percentiles of a bin are drawn.
POINTS = (('p50', '-', 'o'), ('p95', '--', 's'), ('p99', ':', '^'))
FAILED_POST = dict(marker='x', color='tab:red', s=40, zorder=5)
IN_ERROR = dict(marker='v', color='darkred', s=40, zorder=5)


def title(report):
    """What the run was, on one line: servers, hosts and cells when the
    bench started them (else the endpoint), concurrency and boots/s."""
    where = ('%d hosts in %d cells' % (report['hosts'], report['cells'])
             if report.get('hosts') else report['endpoint'])
    rate = ('%.2f boots/s' % report['boots_per_s']
            if report['boots_per_s'] is not None else 'no server ACTIVE')
    return '%d servers, %s, concurrency %d: %s' % (
        report['servers'], where, report['concurrency'], rate)


def bin_width(span, events):
    """A round bin width for ``events`` over ``span`` seconds."""
    for width in BIN_WIDTHS:
        if span / width <= min(MAX_BINS, max(1, events / MIN_PER_BIN)):
            return width
    return BIN_WIDTHS[-1]


def bins(span, width):
    """``[(start, width)]`` cutting ``[0, span]``. When ``width`` does
    not divide ``span``, the last bin is partial: what is left over, or,
    where that is less than half a bin, that and the bin before it (a
    rate over a sliver of a bin would be noise)."""
    edges = []
    for index in range(math.ceil(span / width)):
        start = index * width
        edges.append((start, min(width, span - start)))
    if len(edges) > 1 and edges[-1][1] < width / 2:
        edges[-2:] = [(edges[-2][0], width + edges[-1][1])]
    return edges or [(0.0, width)]


def _partial(real, width):
    """Whether a bin of ``real`` seconds is not a whole one (a bin short
    of a whole one by a rounding of the clock is whole)."""
    return abs(real - width) > width / 100


def _bin_of(when, edges):
    for index, (start, width) in enumerate(edges):
        if when < start + width or index == len(edges) - 1:
            return index
    return len(edges) - 1


def _rates(ax, times, edges, width, label, color):
    """Bars of events per second in each bin; the last, partial bin
    hatched, its rate over its own width and labelled so."""
    counts = [0] * len(edges)
    for when in times:
        counts[_bin_of(when, edges)] += 1
    for index, ((start, real), count) in enumerate(zip(edges, counts)):
        partial = _partial(real, width)
        ax.bar(start, count / real, width=real, align='edge',
               color=color, alpha=0.45 if partial else 0.85,
               hatch='//' if partial else None, edgecolor='black',
               linewidth=0.6)
        if partial:
            ax.annotate('%d in the last %.2g s' % (count, real),
                        (start + real / 2, count / real),
                        textcoords='offset points', xytext=(0, 3),
                        ha='center', fontsize=7)
    ax.set_ylabel('per second')
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.set_title('%s per second, in bins of %g s%s' % (
        label, width, '; hatched: the last bin, partial, its rate over its '
        'own width' if _partial(edges[-1][1], width) else ''),
        fontsize=9)


def _legend(ax):
    """The legend beside the panel, where it hides no data."""
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8,
              borderaxespad=0)


def _percentiles(ax, rows, value, edges, unit):
    """p50/p95/p99 of ``value(row)`` over the rows posted in each bin, at
    the bin's middle."""
    grouped = [[] for _ in edges]
    for row in rows:
        found = value(row)
        if found is not None:
            grouped[_bin_of(row.posted_at, edges)].append(found)
    middles = [start + width / 2 for start, width in edges]
    for point, style, marker in POINTS:
        ys = [stats.percentiles(values)[point] if values else math.nan
              for values in grouped]
        ax.plot(middles, ys, linestyle=style, marker=marker, markersize=3,
                label=point)
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)


def _errors(ax, rows, at_latency):
    """Failed POSTs and servers in ERROR, at when they were posted: at
    their POST latency where ``at_latency``, else along the bottom."""
    for status, style, label in (('POST failed', FAILED_POST, 'failed POST'),
                                 ('ERROR', IN_ERROR, 'server in ERROR')):
        marked = [row for row in rows if row.status == status]
        if not marked:
            continue
        xs = [row.posted_at for row in marked]
        if at_latency:
            ax.scatter(xs, [row.latency * 1000 for row in marked],
                       label='%s (%d)' % (label, len(marked)), **style)
        else:
            ax.scatter(xs, [0.03] * len(xs),
                       transform=ax.get_xaxis_transform(),
                       label='%s (%d)' % (label, len(marked)), **style)


def _cpu(ax, measured):
    """The cores each kind of process kept busy, stacked, with the
    measured window shaded and the bench's looks at the servers
    marked."""
    names = measured['names']
    ax.stackplot(measured['at'], [measured['cores'][n] for n in names],
                 labels=names, alpha=0.8, step='mid')
    start, end = measured['window']
    ax.axvspan(start, end, color='gray', alpha=0.12, label='window')
    for edge in (start, end):
        ax.axvline(edge, color='dimgray', linewidth=1.2)
    for index, (first, last) in enumerate(measured['looks']):
        ax.axvspan(first, max(last, first + 0.05), color='tab:orange',
                   alpha=0.5, label='look at the servers' if index == 0
                   else None)
    ax.axhline(sum(measured['idle'].values()), color='black',
               linestyle='--', linewidth=0.8, label='idle rate')
    ax.set_ylabel('cores busy')
    ax.set_ylim(bottom=0)
    _legend(ax)


def plot_boots(bench, path, heading):
    """The run to ``path``: the rate of boots per time bin, the
    percentiles of the POST latency (and of time to ACTIVE, when it was
    measured) per bin of when the servers were posted, with the errors
    marked, and, when the CPU was measured, the cores each kind of
    process kept busy."""
    # An optional extra (bench): imported only when a plot is asked for,
    # and drawn without a display.
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    rows = bench.timeline()
    measured = bench.cpu_timeline()
    timed = [row for row in rows if row.to_active is not None]
    if measured is None:
        events = [row.posted_at + row.to_active for row in timed]
        rate_label = 'boots seen ACTIVE'
    else:
        # The servers are seen only once the processes are quiet: what
        # the run can tell over time is when the API took them.
        events = [row.posted_at + row.latency for row in rows
                  if row.status != 'POST failed']
        rate_label = 'POSTs accepted'
    span = max(events + [row.posted_at for row in rows] + [0.1])
    width = bin_width(span, len(events))
    edges = bins(span, width)
    # The latencies are binned by when the servers were posted, which
    # ends before the boots do.
    posting = max([row.posted_at for row in rows] + [0.1])
    posted = bins(posting, bin_width(posting, len(rows)))

    panels = ['rate', 'post']
    if timed:
        panels.append('active')
    if measured is not None:
        panels.append('cpu')
    figure, axes = pyplot.subplots(
        len(panels), 1, sharex=True, layout='constrained',
        figsize=(12, 2.6 * len(panels) + 0.6))
    axes = dict(zip(panels, axes))
    figure.suptitle(heading, fontsize=11)

    _rates(axes['rate'], events, edges, width, rate_label, 'tab:green')

    ax = axes['post']
    ax.scatter([row.posted_at for row in rows if row.status != 'POST failed'],
               [row.latency * 1000 for row in rows
                if row.status != 'POST failed'],
               s=4, color='lightgray', label='each POST', zorder=1)
    _percentiles(ax, [row for row in rows if row.status != 'POST failed'],
                 lambda row: row.latency * 1000, posted, 'ms')
    _errors(ax, rows, at_latency=True)
    ax.set_title('POST latency per bin of when the servers were posted',
                 fontsize=9)
    _legend(ax)

    if 'active' in axes:
        ax = axes['active']
        _percentiles(ax, timed, lambda row: row.to_active, posted, 's')
        _errors(ax, rows, at_latency=False)
        ax.set_title('time to ACTIVE per bin of when the servers were '
                     'posted', fontsize=9)
        _legend(ax)
    elif measured is not None:
        axes['post'].text(
            0.01, 0.95, 'time to ACTIVE not measured while the CPU is',
            transform=axes['post'].transAxes, fontsize=7, va='top',
            color='dimgray')

    if 'cpu' in axes:
        _cpu(axes['cpu'], measured)
        axes['cpu'].set_title('CPU of the processes measured (the window '
                              'shaded)', fontsize=9)

    axes[panels[-1]].set_xlabel('seconds since the first POST')
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def plot_scheduler(report, path, heading):
    """Four panels to ``path``, each figure of a ``--scheduler-only``
    report against the number of hosts: select p50 and p99 (alone and
    under the stream of reports), reports absorbed a second, RSS per
    host, and the restart (first select answered, every host loaded)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    rows = sorted(report['rows'], key=lambda row: row['hosts'])
    hosts = [row['hosts'] for row in rows]

    def series(*keys):
        values = []
        for row in rows:
            value = row
            for key in keys:
                value = (value or {}).get(key)
            values.append(value)
        return values

    def draw(axes, label, values, style='o-'):
        points = [(h, v) for h, v in zip(hosts, values) if v is not None]
        if points:
            axes.plot([p[0] for p in points], [p[1] for p in points],
                      style, label=label)

    figure, panels = pyplot.subplots(2, 2, figsize=(11, 8))
    selects, reports, memory, restart = panels.flat
    draw(selects, 'p50', series('select_ms', 'p50'))
    draw(selects, 'p99', series('select_ms', 'p99'))
    draw(selects, 'p50 under the stream', series('stream', 'select_ms',
                                                 'p50'), 's--')
    draw(selects, 'p99 under the stream', series('stream', 'select_ms',
                                                 'p99'), 's--')
    selects.set_ylabel('select_destinations ms')
    draw(reports, 'first reports', series('reports_per_s'))
    draw(reports, 'unchanged', series('unchanged_reports_per_s'))
    draw(reports, 'changed', series('changed_reports_per_s'))
    draw(reports, 'stream absorbed', series('stream', 'absorbed_per_s'),
         's--')
    reports.set_ylabel('reports absorbed per second')
    draw(memory, 'RSS', series('rss_kib_per_host'))
    draw(memory, 'untrimmed', series('rss_kib_per_host_untrimmed'), 'o:')
    memory.set_ylabel('RSS KiB per host')
    draw(restart, 'first select answered', series('restart',
                                                  'first_select_s'))
    draw(restart, 'every host loaded', series('restart', 'loaded_s'))
    restart.set_ylabel('seconds after a restart')
    for axes in panels.flat:
        axes.set_xscale('log')
        axes.set_xlabel('hosts')
        axes.grid(True, which='both', alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc='best', fontsize='small')
    figure.suptitle(heading)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
