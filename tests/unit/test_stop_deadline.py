"""A service given SIGTERM or SIGINT is gone within
``[DEFAULT] graceful_shutdown_timeout``, whatever it was waiting for: a
periodic run or a start blocked on a broker or database that is away is
abandoned, with one WARNING that names it, and the process exits 0."""

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from scheduler_split.db import outage
from scheduler_split import exception

# What an operator's ``systemctl stop`` may take.
STOP_SECONDS = 2

_SERVICE = textwrap.dedent("""\
    import sys
    import threading
    import time

    from scheduler_split.cmd import common
    from scheduler_split import service

    never = threading.Event()

    def build():
        if sys.argv[1] == 'start-blocks':
            # A broker that does not answer, as kombu waits for it.
            while True:
                time.sleep(1)
        svc = service.Service('fake-compute', kind='compute')
        if sys.argv[1] == 'run-blocks':
            svc.add_periodic(never.wait, 60)
        return svc

    common.parse_args(['fake-compute', '--config-file', sys.argv[2]])
    print('ready', flush=True)
    sys.exit(common.run(build))
    """)


def _stop(tmp_path, mode, signum):
    """Run a service of ``mode``, signal it once running: (exit code,
    seconds from the signal to the exit, its log)."""
    log = tmp_path / 'service.log'
    config = tmp_path / 'service.conf'
    config.write_text('[DEFAULT]\nlog_file = %s\n' % log)
    proc = subprocess.Popen([sys.executable, '-c', _SERVICE, mode,
                             str(config)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline() == 'ready\n'
        # Into build() and start(), and the periodic task's first run.
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signum)
        code = proc.wait(timeout=30)
        return code, time.monotonic() - sent, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT],
                         ids=['SIGTERM', 'SIGINT'])
def test_an_idle_service_stops_gracefully(tmp_path, signum):
    code, took, log = _stop(tmp_path, 'idle', signum)

    assert (code, took < STOP_SECONDS) == (0, True), (took, log)
    assert 'Stopped\n' in log
    assert 'abandoning' not in log


def test_a_periodic_run_that_never_ends_is_abandoned_at_the_deadline(
        tmp_path):
    code, took, log = _stop(tmp_path, 'run-blocks', signal.SIGINT)

    assert (code, took < STOP_SECONDS) == (0, True), (took, log)
    assert 'abandoning what still runs (on a broker or a database that ' \
        'is away, or past the deadline): periodic task fake-compute-wait' \
        in log


def test_a_start_that_waits_for_ever_is_given_up(tmp_path):
    code, took, log = _stop(tmp_path, 'start-blocks', signal.SIGTERM)

    assert (code, took < STOP_SECONDS) == (0, True), (took, log)
    assert 'Stopped before it had started' in log


@pytest.fixture
def stopping():
    yield outage.give_up
    outage._stopping.clear()


def test_a_database_outage_is_no_longer_waited_out_once_stopping(
        override, stopping):
    override('retry_timeout', 60.0, group='database')
    override('retry_interval', 0.05, group='database')

    def refused():
        raise outage.DATABASE_UNAVAILABLE[0]('SELECT 1', {}, Exception(
            'connection refused'))

    ended = []

    def _work():
        try:
            outage.run(refused)
        except exception.DatabaseUnavailable as exc:
            ended.append((time.monotonic(), exc))

    worker = threading.Thread(target=_work, daemon=True)
    worker.start()
    time.sleep(0.3)
    assert not ended
    stopping()
    gave_up = time.monotonic()
    worker.join(5)

    assert ended and ended[0][0] - gave_up < 0.5
    assert outage.wait_seconds() == 0
