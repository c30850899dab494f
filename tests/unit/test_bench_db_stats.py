"""scheduler-split-bench --db-stats: what the counts of a window are
made of, the report a user reads, and the errors of a bad URL. A run
against a real PostgreSQL is in tests/integration/test_bench.py."""

import pytest

from scheduler_split.benchmark import base
from scheduler_split.benchmark import db_stats
from scheduler_split.benchmark import tables
from scheduler_split.cmd import bench as bench_cmd


def _reading(api, cell, texts):
    return db_stats.Reading({'ss_api': api, 'ss_cell1': cell},
                            {'ss_api': api // 4, 'ss_cell1': cell // 4},
                            texts)


def test_a_window_is_the_end_less_its_start_and_the_looks_in_it():
    start = _reading(100, 40, {('ss_api', 'BEGIN'): 10,
                               ('ss_api', 'SELECT x'): 5})
    end = _reading(300, 80, {('ss_api', 'BEGIN'): 60,
                             ('ss_api', 'SELECT x'): 5,
                             ('ss_cell1', 'INSERT y'): 7})
    look = db_stats.Reading({'ss_api': 20}, {'ss_api': 4},
                            {('ss_api', 'BEGIN'): 4})
    counted = end.since(start).minus(look)
    assert counted.statements == {'ss_api': 180, 'ss_cell1': 40}
    assert counted.transactions == {'ss_api': 46, 'ss_cell1': 10}
    # A statement the window did not send is not listed.
    assert counted.by_text == {('ss_api', 'BEGIN'): 46,
                               ('ss_cell1', 'INSERT y'): 7}


def test_without_statements_only_transactions_are_counted():
    start = db_stats.Reading(None, {'ss_api': 3}, {})
    end = db_stats.Reading(None, {'ss_api': 23}, {})
    counted = end.since(start)
    report = db_stats.report(counted, db_stats.Reading(None, {}, {}), 2.0,
                             10, 'pg_stat_database')
    assert report['total'] == {
        'statements': None,
        'transactions': {'count': 20, 'per_boot': 2.0, 'idle_per_s': 0.0}}
    assert report['statements_by_database'] is None


def test_the_report_counts_per_boot_and_lists_what_was_sent_most():
    counted = db_stats.Reading(
        {'ss_api': 270, 'ss_scheduler': 130},
        {'ss_api': 40, 'ss_scheduler': 20},
        {('ss_api', 'BEGIN'): 40, ('ss_api', 'COMMIT'): 40,
         ('ss_scheduler', 'UPDATE resource_providers SET x'): 50})
    idle = db_stats.Reading({'ss_scheduler': 8}, {'ss_scheduler': 2}, {})
    report = db_stats.report(counted, idle, 2.0, 10, 'pg_stat_statements')
    assert report['total']['statements'] == {
        'count': 400, 'per_boot': 40.0, 'idle_per_s': 4.0}
    assert report['total']['transactions']['per_boot'] == 6.0
    assert report['statements_by_database']['ss_api']['per_boot'] == 27.0
    assert [top['per_boot'] for top in report['top_statements']] == [
        5.0, 4.0, 4.0]
    assert report['top_statements'][0]['database'] == 'ss_scheduler'
    lines = '\n'.join(tables._database({'database': report}))
    assert 'ss_api' in lines and 'ss_scheduler' in lines
    assert '40.0' in lines and 'UPDATE resource_providers SET x' in lines
    assert 'pg_stat_statements' in lines


def test_db_stats_counts_over_the_cpu_window_only():
    with pytest.raises(SystemExit):
        bench_cmd.parse_args(['--endpoint', 'http://127.0.0.1:1/v2.1',
                              '--db-stats', 'postgresql://x@127.0.0.1/y'])


@pytest.mark.parametrize('url, reason', [
    ('nonsense', 'is not a database URL'),
    ('sqlite:///x.db', 'reads PostgreSQL, MySQL or MariaDB, not sqlite'),
    ('postgresql+psycopg2://nobody@127.0.0.1:1/none',
     'cannot read the statistics of'),
])
def test_a_database_that_cannot_be_counted_says_why(url, reason):
    with pytest.raises(base.BenchError) as caught:
        db_stats.DbStats(url)
    assert reason in str(caught.value)
