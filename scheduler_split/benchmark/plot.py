"""Runs drawn as pictures (``scheduler-split-bench --plot``): a boot run
over time, a scheduler run over the number of hosts."""

import math


def plot_boots(bench, path, title):
    """Two panels to ``path``: the boots completed in each second, and
    each server's POST latency and time to ACTIVE against when it was
    posted."""
    # An optional extra (bench): imported only when a plot is asked for,
    # and drawn without a display.
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    rows = bench.timeline()
    posted_at = [r[0] for r in rows]
    finished_at = [r[0] + r[2] for r in rows if r[2] is not None]
    span = max(posted_at + finished_at + [1.0])
    figure, (top, bottom) = pyplot.subplots(2, 1, sharex=True,
                                            figsize=(10, 7))
    top.hist(finished_at, bins=range(0, math.ceil(span) + 1),
             color='tab:green')
    top.set_ylabel('boots completed per second')
    top.set_title(title)
    bottom.scatter(posted_at, [r[1] for r in rows], s=8,
                   label='POST latency', color='tab:blue')
    bottom.scatter([r[0] for r in rows if r[2] is not None],
                   [r[2] for r in rows if r[2] is not None], s=8,
                   label='time to ACTIVE', color='tab:orange')
    bottom.set_xlabel('seconds since the first POST')
    bottom.set_ylabel('seconds')
    bottom.legend(loc='upper left')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def plot_scheduler(report, path, title):
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
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
