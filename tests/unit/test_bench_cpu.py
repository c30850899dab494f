"""The CPU meter of scheduler-split-bench against real processes, and
how --cpu-of is read. Nothing here asserts a speed: a process that burns
CPU is waited for until its reading grows, however slow the machine."""

import subprocess
import sys
import time

import pytest

from scheduler_split.benchmark import base
from scheduler_split.benchmark import cpu
from scheduler_split.cmd import bench as bench_cmd

BURN = 'while True: pass'
# Prints once it is up (its imports done), then does nothing.
IDLE = 'import time; print("up", flush=True); time.sleep(600)'
# Starts a burning child of its own, says its pid, then waits for it.
PARENT = ('import subprocess, sys; '
          'child = subprocess.Popen([sys.executable, "-c", %r]); '
          'print(child.pid, flush=True); child.wait()' % BURN)


@pytest.fixture
def start():
    """``start(code)``: a python child running ``code``, killed after the
    test (and whatever it started, as its process group)."""
    started = []

    def _start(code):
        proc = subprocess.Popen([sys.executable, '-c', code],
                                stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        started.append(proc)
        return proc

    yield _start
    for proc in started:
        subprocess.run(['kill', '-9', '--', '-%d' % proc.pid],
                       stderr=subprocess.DEVNULL)
        proc.wait()


def grows(meter, name, by=0.2, timeout=60):
    """The Samples before and after ``name`` used ``by`` more CPU
    seconds."""
    first = meter.read()
    deadline = time.monotonic() + timeout
    while True:
        last = meter.read()
        if last.seconds[name] - first.seconds[name] >= by:
            return first, last
        assert time.monotonic() < deadline, (
            '%s did not use %.1f s of CPU in %d s' % (name, by, timeout))
        time.sleep(0.05)


def test_a_burning_process_gains_cpu_time_and_an_idle_one_none(start):
    idle = start(IDLE)
    assert idle.stdout.readline().strip() == 'up'
    burner = start(BURN)
    meter = cpu.CpuMeter([('burner', burner.pid), ('idler', idle.pid)])
    first, last = grows(meter, 'burner')
    used = last.since(first)
    assert used['burner'] >= 0.2
    assert used['idler'] < used['burner'] / 4
    assert meter.vanished == {}


def test_a_descendant_counts_under_its_ancestors_name(start):
    parent = start(PARENT)
    child = int(parent.stdout.readline())
    meter = cpu.CpuMeter([('parent', parent.pid)])
    # Only the child burns: what the parent's name gains is its child's.
    first, last = grows(meter, 'parent')
    assert last.since(first)['parent'] >= 0.2
    assert meter.counts == {'parent': 1} and child not in (
        pid for _, pid in meter.processes)


def test_a_process_is_counted_under_the_nearest_name_given(start):
    parent = start(PARENT)
    child = int(parent.stdout.readline())
    meter = cpu.CpuMeter([('parent', parent.pid), ('child', child)])
    first, last = grows(meter, 'child')
    used = last.since(first)
    assert used['parent'] < used['child'] / 4


def test_processes_of_one_name_are_summed_and_counted(start):
    burners = [start(BURN), start(BURN)]
    meter = cpu.CpuMeter([('compute', p.pid) for p in burners])
    assert meter.counts == {'compute': 2}
    alone = [cpu.CpuMeter([('compute', p.pid)]) for p in burners]
    grows(meter, 'compute')
    together = meter.read().seconds['compute']
    apart = sum(m.read().seconds['compute'] for m in alone)
    # Read one after the other: the second reading can only be higher.
    assert together <= apart


def test_a_bare_pid_is_named_by_its_command(start):
    idle = start(IDLE)
    meter = cpu.CpuMeter([(None, idle.pid)])
    assert meter.names == [open('/proc/%d/comm' % idle.pid).read().strip()]


def test_a_pid_gone_before_the_run_is_refused():
    gone = subprocess.Popen([sys.executable, '-c', 'pass'])
    gone.wait()
    with pytest.raises(base.BenchError) as caught:
        cpu.CpuMeter([('api', gone.pid)])
    assert str(caught.value) == 'no process %d' % gone.pid


def test_a_process_gone_during_the_run_keeps_its_time_and_is_named(start):
    burner = start(BURN)
    idle = start(IDLE)
    meter = cpu.CpuMeter([('compute', burner.pid), ('compute', idle.pid)])
    _, before = grows(meter, 'compute')
    burner.kill()
    burner.wait()
    after = meter.read()
    assert meter.vanished == {burner.pid: 'compute'}
    assert after.seconds['compute'] >= before.seconds['compute']


def sample(at, total):
    return cpu.Sample(at, {'all': total})


def test_the_window_ends_where_the_processes_went_quiet():
    # Busy at one core until 2.0 s, then nearly idle.
    samples = [sample(t / 10, min(t / 10, 2.0) + t / 1000)
               for t in range(0, 50)]
    quiet = cpu.quiet_start(samples, 1.0, threshold=0.1)
    assert quiet.at == pytest.approx(2.0)


def test_processes_that_stay_busy_are_never_quiet():
    samples = [sample(t / 10, t / 20) for t in range(0, 50)]
    assert cpu.quiet_start(samples, 1.0, threshold=0.1) is None


@pytest.mark.parametrize('spec, processes', [
    ('api=812', [('api', 812)]),
    ('4242', [(None, 4242)]),
    ('compute=900, compute=901,4242',
     [('compute', 900), ('compute', 901), (None, 4242)]),
    ('cell-conductor = 7', [('cell-conductor', 7)]),
])
def test_a_cpu_spec_names_its_processes(spec, processes):
    assert cpu.parse_spec(spec) == processes


@pytest.mark.parametrize('spec, reason', [
    ('api=', "'api=' is not NAME=PID or PID: '' is not a process id"),
    ('api=x', "'api=x' is not NAME=PID or PID: 'x' is not a process id"),
    ('=12', "'=12' has no name before its \"=\""),
    ('a=b=3', "'a=b=3' is not NAME=PID: one \"=\" only"),
    ('api=1,,2', "'api=1,,2' has an empty entry"),
    ('0', "'0' is not NAME=PID or PID: '0' is not a process id"),
    ('-5', "'-5' is not NAME=PID or PID"),
])
def test_a_bad_cpu_spec_says_what_is_wrong(spec, reason):
    with pytest.raises(base.BenchError) as caught:
        cpu.parse_spec(spec)
    assert reason in str(caught.value)


def test_cpu_of_may_repeat_and_its_processes_add_up():
    args = bench_cmd.parse_args([
        '--endpoint', 'http://127.0.0.1:1/v2.1',
        '--cpu-of', 'api=10,compute=11', '--cpu-of', 'compute=12'])
    assert args.cpu_of == [('api', 10), ('compute', 11), ('compute', 12)]
