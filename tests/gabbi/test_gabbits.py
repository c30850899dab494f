"""Placement's own gabbi tests that pass today keep passing.

Runs every gabbi file of openstack-placement 16.0.0 against the Placement
API of an all-in-one (see ``run``), in a Python process of its own, so
that nothing an earlier test left in this process (its configuration,
its threads) changes what the all-in-one answers. Prints the figures per
file and in all (on the terminal even under pytest's capture, so they
are in the CI log) and keeps them as JSON (``$SCHEDULER_SPLIT_GABBI_
RESULTS``, else ``.pytest_cache/gabbi/results.json``). It fails if a
test of ``pass_list.txt`` does not pass; more tests passing than the list
holds is said, not failed.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.gabbi import run

pytestmark = [pytest.mark.functional, pytest.mark.gabbi]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Far more than a run takes (about a minute): a run that hangs fails.
TIMEOUT = 900


def test_placement_gabbits_of_the_pass_list_pass(capsys, tmp_path):
    try:
        import gabbi  # noqa: F401
    except ImportError as exc:
        pytest.fail("gabbi is missing (pip install -e '.[test]'): %s" % exc)
    results = os.environ.get(run.RESULTS_ENV) or str(tmp_path /
                                                     'results.json')
    done = subprocess.run(
        [sys.executable, '-m', 'tests.gabbi.run', '--results', results],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    with capsys.disabled():
        sys.stdout.write('\n' + done.stdout)
        sys.stdout.flush()
    assert os.path.exists(results), done.stderr[-3000:]
    with open(results) as f:
        summary = json.load(f)
    regressions = summary['pass_list']['regressions']
    assert not regressions, (
        '%d tests of tests/gabbi/pass_list.txt did not pass:\n%s'
        % (len(regressions), '\n'.join(regressions)))
    assert summary['totals']['total'] > 0
    assert done.returncode == 0, done.stderr[-3000:]
