"""The boot benchmark against separate processes, at a tiny size, run as
a user runs it: every server is accounted for and nothing is left
running. Nothing here asserts a speed."""

import json
import os
import subprocess
import sys

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.integration

# Enough boots that every process, PostgreSQL's backends included, spends
# at least a clock tick (10 ms) of CPU on them: with 6 a database's
# backends could be read at 0.
SERVERS = 20


def test_a_run_against_separate_processes_sees_every_server_active(
        tmp_path):
    base = tmp_path / 'bench'
    run = subprocess.run(
        [sys.executable, '-m', 'tests.integration.bench', '--servers',
         str(SERVERS),
         '--hosts', '2', '--schedulers', '2', '--concurrency', '2',
         '--keep', str(base), '--', '--json'],
        capture_output=True, text=True, timeout=600,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report['posted'], report['active'], report['error'],
            report['still_building']) == (SERVERS, SERVERS, 0, 0), (
        report['error_reasons'], report['failed_post_reasons'])
    assert report['failed_posts'] == 0
    assert report['endpoint'].endswith('/v2.1')
    # The CPU of every process it started, a row per kind: both cells'
    # conductors, both schedulers and both computes each summed.
    measured = report['cpu']
    assert {name: row['processes'] for name, row
            in measured['by_name'].items()} == {
        'api': 1, 'super-conductor': 1, 'cell-conductor': 2,
        'scheduler': 2, 'compute': 2, 'postgresql': 1, 'rabbitmq': 1}
    # Every one of them takes part in a boot.
    for name, row in measured['by_name'].items():
        assert row['cpu_s'] > 0, name
        assert row['cpu_ms_per_boot'] > 0, name
    assert measured['total']['processes'] == 10
    assert measured['vanished'] == {}
    # What the boots sent PostgreSQL: statements and transactions in the
    # API's, a cell's and the scheduler's databases, each boot a row of
    # the API's build requests and one of a cell's instances.
    sent = report['database']
    assert 'pg_stat_statements' in sent['what']
    for part in ('statements_by_database', 'transactions_by_database'):
        for name in ('ss_api', 'ss_scheduler'):
            assert sent[part][name]['per_boot'] > 0, (part, name)
        assert sum(row['count'] for name, row in sent[part].items()
                   if name in ('ss_cell1', 'ss_cell2')) > 0, part
    assert sent['total']['statements']['per_boot'] > \
        sent['total']['transactions']['per_boot'] > 0
    # Each transaction's BEGIN and COMMIT are statements of their own.
    sent_most = [top['statement'] for top in sent['top_statements']]
    assert 'BEGIN' in sent_most and 'COMMIT' in sent_most, sent_most
    assert report['time_to_active_s'] is None
    # Both schedulers served, with the bench's intervals in force.
    for name in ('scheduler', 'scheduler-2'):
        assert (base / 'log' / ('%s.log' % name)).stat().st_size > 0
    assert 'unfinished_build_check_interval = 60' in (
        base / 'etc' / 'bench.conf').read_text()
    # Torn down: no process of the deployment is left.
    assert fixtures.processes_naming(str(base)) == []
