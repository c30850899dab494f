"""The figures of a report: percentiles of timings, and messages
counted."""

import collections
import math

# Percentiles every report gives.
POINTS = (50, 95, 99)


def percentiles(values, points=POINTS):
    """Nearest-rank percentiles of ``values``: ``{'p50': ..., ...}``,
    each None when there are no values."""
    ordered = sorted(values)
    result = {}
    for point in points:
        if ordered:
            rank = max(1, math.ceil(point / 100.0 * len(ordered)))
            result['p%d' % point] = ordered[rank - 1]
        else:
            result['p%d' % point] = None
    return result


def rounded(stats, digits):
    """``stats`` with each figure rounded to ``digits``."""
    return {k: (round(v, digits) if v is not None else None)
            for k, v in stats.items()}


def reasons(messages):
    """``{message: how many}``, the most frequent first."""
    return dict(collections.Counter(messages).most_common())
