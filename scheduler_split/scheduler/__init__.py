"""The scheduler service.

Code outside this package talks to the scheduler only through
:mod:`scheduler_split.scheduler.client`; a test enforces that.
"""


def load_named(kind, known, names):
    """Instances of the classes ``names`` picks from ``known`` (name ->
    class), in that order; ``ValueError`` naming any unknown one."""
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError('Unknown scheduler %s: %s (known: %s)'
                         % (kind, ', '.join(unknown),
                            ', '.join(sorted(known))))
    return [known[n]() for n in names]
