"""A boot run drawn as a picture (``scheduler-split-bench --plot``)."""

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
