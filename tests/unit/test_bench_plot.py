"""scheduler-split-bench --plot: the panels a reader sees for a run
watched server by server and for a run whose CPU was measured, drawn
from runs made up here (no system is started)."""

import os

import pytest

from scheduler_split.benchmark import boot
from scheduler_split.benchmark import boot_report
from scheduler_split.benchmark import cpu
from scheduler_split.benchmark import plot

pytest.importorskip('matplotlib')

FIRST_POST = 1000.0


def made_up_run(measured):
    """40 POSTs a tenth of a second apart: the 8th failed, the 12th's
    server went to ERROR, every other one ACTIVE 1.5 s after its POST."""
    bench = boot.BootBenchmark(
        'http://127.0.0.1:1/v2.1', 'admin:admin', 'admin', servers=40,
        concurrency=4, flavor='m1.tiny', image='cirros', timeout=60)
    for index in range(40):
        started = FIRST_POST + index * 0.1
        post = boot_report.Post('bench-%d' % index, started,
                                latency=0.05 + index % 5 * 0.01)
        if index == 7:
            post.status, post.message = 500, 'no answer'
        else:
            post.status, post.server_id = 202, 'server-%d' % index
            bench.outcomes[post.server_id] = boot_report.Outcome(
                'ERROR' if index == 11 else 'ACTIVE', started + 1.5)
        bench.posts.append(post)
    if measured:
        bench.cpu_meter = cpu.CpuMeter([('all-in-one', os.getpid())])
        bench.cpu_samples = [
            cpu.Sample(FIRST_POST - 2 + step * 0.1,
                       {'all-in-one': step * 0.05})
            for step in range(90)]
        bench.cpu_window = boot_report.CpuWindow(
            idle={'all-in-one': 0.01}, idle_span=2.0,
            start=bench.cpu_samples[20], end=bench.cpu_samples[70],
            costs=[{'all-in-one': 0.01}],
            looks=[(FIRST_POST + 5.0, FIRST_POST + 5.1)])
    return bench


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """``drawn(bench)``: the panel titles and legend labels of the plot
    of ``bench``, which is written to a PNG."""
    from matplotlib import pyplot
    figures = []
    close = pyplot.close
    monkeypatch.setattr(pyplot, 'close',
                        lambda figure: (figures.append(figure),
                                        close(figure)))

    def _drawn(bench):
        path = tmp_path / 'run.png'
        plot.plot_boots(bench, str(path), 'the run')
        with open(path, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
        titles, labels = [], []
        for ax in figures[-1].axes:
            titles.append(ax.get_title())
            legend = ax.get_legend()
            labels += [t.get_text() for t in legend.get_texts()] \
                if legend else []
        return titles, labels

    return _drawn


def test_a_watched_run_shows_boots_latency_and_time_to_active(drawn):
    titles, labels = drawn(made_up_run(measured=False))
    assert titles[0].startswith('boots seen ACTIVE per second, in bins')
    assert titles[1].startswith('POST latency')
    assert titles[2].startswith('time to ACTIVE')
    assert len(titles) == 3
    assert {'p50', 'p95', 'p99', 'failed POST (1)',
            'server in ERROR (1)'} <= set(labels)


def test_a_measured_run_shows_posts_latency_and_cpu(drawn):
    titles, labels = drawn(made_up_run(measured=True))
    assert titles[0].startswith('POSTs accepted per second')
    assert titles[1].startswith('POST latency')
    assert titles[2].startswith('CPU of the processes measured')
    assert len(titles) == 3
    assert {'all-in-one', 'window', 'look at the servers',
            'idle rate', 'failed POST (1)'} <= set(labels)


def test_the_last_bin_is_partial_and_never_a_sliver():
    assert plot.bins(3.6, 1) == [(0, 1), (1, 1), (2, 1),
                                 (3, pytest.approx(0.6))]
    # 0.2 s left over joins the bin before it.
    edges = plot.bins(3.2, 1)
    assert len(edges) == 3
    assert edges[-1] == (2, pytest.approx(1.2))
    assert plot.bins(3.0, 1) == [(0, 1), (1, 1), (2, 1)]


def test_bins_are_round_and_hold_several_events_each():
    assert plot.bin_width(60, 2000) == 2
    assert plot.bin_width(3, 60) == 0.5
    assert plot.bin_width(3, 5) == 5


def test_the_title_says_where_how_hard_and_how_fast():
    report = {'servers': 200, 'hosts': 20, 'cells': 2, 'endpoint': None,
              'concurrency': 8, 'boots_per_s': 41.237}
    assert plot.title(report) == ('200 servers, 20 hosts in 2 cells, '
                                  'concurrency 8: 41.24 boots/s')
    report.update(hosts=None, cells=None,
                  endpoint='http://127.0.0.1:8774/v2.1', boots_per_s=None)
    assert plot.title(report) == ('200 servers, http://127.0.0.1:8774/v2.1, '
                                  'concurrency 8: no server ACTIVE')
