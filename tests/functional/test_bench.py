"""scheduler-split-bench at a tiny size, run as a user runs it: in a
process of its own, with its JSON report read back. Nothing here asserts
a speed; only that every server and every report is accounted for."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.functional


def bench(*args):
    return subprocess.run(
        [sys.executable, '-m', 'scheduler_split.cmd.bench', *args],
        capture_output=True, text=True, timeout=120)


def assert_ordered(stats):
    assert None not in stats.values(), stats
    assert stats['p50'] <= stats['p95'] <= stats['p99'], stats


def test_a_boot_run_sees_every_server_active():
    # --no-cpu: watched server by server, as a run measuring no CPU is,
    # and so timed to ACTIVE.
    run = bench('--servers', '6', '--hosts', '4', '--cells', '2',
                '--concurrency', '2', '--no-cpu', '--json')
    assert run.returncode == 0, run.stderr
    assert 'Traceback' not in run.stderr
    report = json.loads(run.stdout)
    assert (report['posted'], report['active'], report['error'],
            report['still_building']) == (6, 6, 0, 0)
    assert report['failed_posts'] == 0
    assert (report['hosts'], report['cells']) == (4, 2)
    assert report['reschedules'] == 0
    assert report['servers_without_actions_read'] == 0
    assert report['boots_per_s'] > 0
    assert_ordered(report['post_latency_ms'])
    assert_ordered(report['time_to_active_s'])
    assert 'cpu' not in report


def test_a_boot_run_of_the_all_in_one_reports_its_cpu_per_boot():
    run = bench('--servers', '5', '--hosts', '2', '--cells', '1',
                '--concurrency', '2', '--json')
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report['posted'], report['active'], report['error'],
            report['still_building']) == (5, 5, 0, 0)
    assert report['boots_per_s'] > 0
    assert_ordered(report['post_latency_ms'])
    # Not watched while measured: no time to ACTIVE, and it says why.
    assert report['time_to_active_s'] is None
    assert 'not measured' in report['time_to_active_not_measured']
    measured = report['cpu']
    assert list(measured['by_name']) == ['all-in-one']
    process = measured['by_name']['all-in-one']
    assert process['processes'] == 1
    assert process['cpu_s'] > 0
    assert process['cpu_ms_per_boot'] == pytest.approx(
        process['cpu_s'] * 1000 / 5, abs=0.1)
    assert process['idle_cpu_ms_per_s'] >= 0
    assert measured['total']['cpu_s'] == process['cpu_s']
    assert measured['window_s'] >= report['duration_s'] > 0
    assert measured['vanished'] == {}
    # The reads of the build attempts came after the window.
    assert report['servers_without_actions_read'] == 0


def test_the_cpu_of_a_boot_run_is_a_table_row_per_process():
    run = bench('--servers', '3', '--hosts', '2', '--cells', '1',
                '--concurrency', '1')
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    header = next(line for line in lines if 'CPU ms/boot' in line)
    assert header.split() == ['processes', 'CPU', 's', 'CPU', 'ms/boot',
                              'idle', 'CPU', 'ms/s']
    rows = {line.split()[0]: line.split()[1:] for line in lines
            if line.startswith(('  all-in-one ', '  total '))}
    assert sorted(rows) == ['all-in-one', 'total']
    assert rows['all-in-one'] == rows['total']
    assert rows['total'][0] == '1'
    assert float(rows['total'][1]) > 0
    assert any(line.startswith('  time to ACTIVE s  not measured')
               for line in lines)
    assert 'The window runs from the first POST' in run.stdout


def test_a_cpu_of_process_that_is_gone_stops_the_run():
    gone = subprocess.Popen([sys.executable, '-c', 'pass'])
    gone.wait()
    run = bench('--endpoint', 'http://127.0.0.1:1/v2.1', '--cpu-of',
                'api=%d' % gone.pid)
    assert run.returncode == 1
    assert 'no process %d' % gone.pid in run.stderr


def test_the_all_in_one_it_starts_runs_apart_and_is_stopped():
    # --keep names the run's directory; the all-in-one served from its
    # own process there, and logged there, and is gone afterwards.
    run = bench('--servers', '2', '--hosts', '2', '--cells', '1',
                '--concurrency', '1', '--keep', '--json')
    assert run.returncode == 0, run.stderr
    kept = re.search(r'kept (\S+) ', run.stderr).group(1)
    try:
        with open(os.path.join(kept, 'state', 'all-in-one.out')) as f:
            assert 'scheduler-split is running' in f.read()
        assert os.path.getsize(os.path.join(kept, 'state',
                                            'scheduler-split.log')) > 0
        assert fixtures.processes_naming(kept) == []
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_scheduler_run_has_a_row_per_size_and_loses_no_report():
    run = bench('--scheduler-only', '--hosts', '20,40', '--servers', '10',
                '--report-rate', '100', '--stream-seconds', '1', '--json')
    assert run.returncode == 0, run.stderr
    assert 'Traceback' not in run.stderr
    report = json.loads(run.stdout)
    rows = report['rows']
    assert [row['hosts'] for row in rows] == [20, 40]
    assert report['report_rate'] == 100
    for row in rows:
        for burst in ('reports', 'unchanged_reports', 'changed_reports'):
            assert row[burst + '_lost'] == 0
            assert row[burst + '_per_s'] > 0
        assert row['select_failures'] == 0
        assert_ordered(row['select_ms'])
        assert row['rss_kib_per_host'] is not None
        # Selects timed while a stream of changed reports came from a
        # process of its own: every report it sent was taken.
        stream = row['stream']
        assert stream['sent'] > 0
        assert stream['lost'] == 0
        assert stream['selects'] > 0
        assert stream['select_failures'] == 0
        assert_ordered(stream['select_ms'])
        # A restarted scheduler answered, and loaded every host.
        assert row['restart']['first_select_s'] > 0
        assert row['restart']['loaded_s'] > 0


def test_a_scheduler_run_draws_its_figures_over_the_sizes(tmp_path):
    picture = tmp_path / 'scheduler.png'
    run = bench('--scheduler-only', '--hosts', '10,20', '--servers', '3',
                '--report-rate', '0', '--plot', str(picture))
    assert run.returncode == 0, run.stderr
    assert 'Scheduler alone: 2 cells' in run.stdout
    assert 'plot written to %s' % picture in run.stderr
    with open(picture, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_a_list_run_times_every_page_at_its_length():
    # 30 servers in pages of 10: the first page, the second by marker
    # (the middle one of three), and the first of the summaries.
    run = bench('--list-servers', '--servers', '30', '--limit', '10',
                '--repeats', '3', '--concurrency', '4', '--json')
    assert run.returncode == 0, run.stderr
    assert 'Traceback' not in run.stderr
    report = json.loads(run.stdout)
    assert (report['posted'], report['active'], report['listed']) == (
        30, 30, 30)
    assert (report['hosts'], report['cells']) == (8, 2)
    assert sorted(report['servers_per_cell']) == ['cell1', 'cell2']
    assert sum(report['servers_per_cell'].values()) == 30
    requests = report['requests']
    assert list(requests) == ['detail_first', 'detail_marker',
                              'summary_first']
    assert '&marker=' in requests['detail_marker']['path']
    assert 'after 10' in requests['detail_marker']['label']
    for kind in requests.values():
        assert kind['expected_length'] == 10
        assert kind['lengths'] == [10], kind
        assert all(value > 0 for value in kind['ms'].values()), kind
        assert kind['ms']['p50'] <= kind['ms']['p95'] <= \
            kind['ms']['p99'] <= kind['ms']['max'], kind


def test_a_list_run_prints_its_figures_in_a_table():
    run = bench('--list-servers', '--servers', '3', '--hosts', '2',
                '--repeats', '2')
    assert run.returncode == 0, run.stderr
    assert 'List servers: 3 servers of m1.tiny' in run.stdout
    rows = {line.split('  ')[1].strip(): line.split()[-5:]
            for line in run.stdout.splitlines()
            if line.startswith(('  detail,', '  summary,'))
            and ' ms' not in line and '/servers' not in line}
    # One server before the marker (one page holds them all): two after.
    assert sorted(rows) == ['detail, by marker after 1',
                            'detail, first page', 'summary, first page']
    for name, (servers, *figures) in rows.items():
        assert int(servers) == (2 if 'marker' in name else 3)
        assert all(float(value) > 0 for value in figures), figures


@pytest.mark.parametrize('args, message', [
    (['--servers', '0'], '--servers: must be at least 1, not 0'),
    (['--concurrency', 'many'], "--concurrency: 'many' is not a whole "
                                'number'),
    (['--scheduler-only', '--hosts', '100,0'],
     '--hosts: must be at least 1, not 0'),
    (['--hosts', '1', '--cells', '2'], '--hosts (1) must be at least '
                                       '--cells (2)'),
    (['--endpoint', 'http://127.0.0.1:1/v2.1', '--hosts', '4'],
     '--hosts describes the system the bench starts'),
    (['--token', 'abc'], '--token is for --endpoint'),
    (['--repeats', '5'], '--repeats is for --list-servers'),
    (['--list-servers', '--scheduler-only'], 'ask for one'),
    (['--list-servers', '--endpoint', 'http://127.0.0.1:1/v2.1'],
     '--list-servers starts its own all-in-one'),
    (['--report-rate', '100'], '--report-rate is for --scheduler-only'),
    (['--list-servers', '--plot', 'x.png'], 'not --list-servers'),
    (['--endpoint', 'http://127.0.0.1:1/v2.1', '--cpu-of', 'api=x'],
     "--cpu-of: 'api=x' is not NAME=PID or PID"),
    (['--endpoint', 'http://127.0.0.1:1/v2.1', '--cpu-of', 'api=1,,2'],
     "--cpu-of: 'api=1,,2' has an empty entry"),
    (['--cpu-of', 'api=1'], '--cpu-of names processes of the deployment '
                            'at --endpoint'),
    (['--endpoint', 'http://127.0.0.1:1/v2.1', '--no-cpu'],
     '--no-cpu is for a boot run of the all-in-one'),
])
def test_a_bad_argument_exits_2_with_the_reason(args, message):
    run = bench(*args)
    assert run.returncode == 2
    assert message in run.stderr
    assert run.stdout == ''
