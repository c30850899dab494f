"""Each service script as a systemd unit runs it, started while what it
needs is missing: an operator reads why on standard error within
seconds, one line naming the option or the address (its password
masked), and no traceback."""

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.functional

BIN = os.path.dirname(sys.executable)


def closed_port():
    """A port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Daemon:
    """A service script in a child process, its stderr read line by line.
    """

    def __init__(self, tmp_path, script, *args):
        self.stdout_path = tmp_path / (script + '.stdout')
        self.stdout = open(self.stdout_path, 'w')
        self.proc = subprocess.Popen(
            [os.path.join(BIN, script), *args], stdout=self.stdout,
            stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
            env=dict(os.environ, HOME=str(tmp_path)))
        self.lines = []
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_within(self, seconds, until):
        """The lines on stderr until one satisfies ``until``, or the
        process ends, or ``seconds`` pass."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
            if until(line):
                break
        return self.lines

    def terminate(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stdout.close()
        return self.stdout_path.read_text()


@pytest.fixture
def daemon(tmp_path):
    started = []

    def _daemon(script, *args):
        started.append(Daemon(tmp_path, script, *args))
        return started[-1]

    yield _daemon
    for proc in started:
        proc.terminate()


def test_a_compute_whose_bus_is_unreachable_says_so_in_seconds(
        daemon, tmp_path):
    port = closed_port()
    config = tmp_path / 'compute.conf'
    config.write_text('[DEFAULT]\nhost = c1\ntransport_url = '
                      'rabbit://guest:s3cret@127.0.0.1:%d/cell1\n' % port)
    address = '127.0.0.1:%d' % port

    compute = daemon('scheduler-split-compute', '--config-file', str(config))
    lines = compute.stderr_within(10, until=lambda line: address in line)

    assert any(address in line for line in lines), lines
    assert 'transport_url' in lines[-1]
    assert 's3cret' not in ''.join(lines)
    # It keeps trying: a broker that comes later is used.
    assert compute.proc.poll() is None
    log = compute.terminate()
    assert 'Traceback' not in log + ''.join(compute.lines)


def test_a_scheduler_whose_database_is_unreachable_says_so_in_seconds(
        daemon, tmp_path):
    port = closed_port()
    config = tmp_path / 'scheduler.conf'
    config.write_text(
        '[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:%d/\n'
        '[api_database]\nconnection = '
        'postgresql+psycopg2://ss:s3cret@127.0.0.1:%d/api\n'
        '[scheduler_database]\nconnection = '
        'postgresql+psycopg2://ss:s3cret@127.0.0.1:%d/scheduler\n'
        % (port, port, port))
    address = '127.0.0.1:%d/api' % port

    scheduler = daemon('scheduler-split-scheduler',
                       '--config-file', str(config))
    lines = scheduler.stderr_within(10, until=lambda line: address in line)

    assert any(address in line and '[api_database] connection' in line
               for line in lines), lines
    assert 's3cret' not in ''.join(lines)


def test_a_scheduler_with_no_config_says_so_in_one_line(daemon):
    scheduler = daemon('scheduler-split-scheduler')
    scheduler.proc.wait(timeout=30)
    lines = scheduler.stderr_within(5, until=lambda line: False)
    log = scheduler.terminate()

    assert scheduler.proc.returncode == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith('scheduler-split-scheduler: no configuration')
    assert '[api_database] connection' in lines[0]
    assert 'Traceback' not in log
