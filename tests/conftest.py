"""How the suite shares a machine between pytest-xdist workers.

CI runs the suite in two parts (the README's test command):
``-n 2 --dist loadgroup -m 'not serial'``, then ``-m serial`` alone.
Under ``--dist loadgroup`` each test file is one group, run whole on one
worker, so that its module fixtures (an all-in-one, a deployment of
processes) are set up once, as in a run without workers. Tests marked
``serial`` need the machine to themselves; should a parallel run select
them, they share one group and so run one after the other.
"""

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Ahead of xdist's own hook, which reads the groups.
    if getattr(config.option, 'dist', 'no') != 'loadgroup':
        return
    for item in items:
        if item.get_closest_marker('xdist_group') is not None:
            continue
        if item.get_closest_marker('serial') is not None:
            group = 'serial'
        else:
            group = item.nodeid.split('::', 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
