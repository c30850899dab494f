"""The all-in-one command, run as a user runs it, in both concurrency
modes: native threads (the default) and eventlet."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.functional


def start_all_in_one(state_dir, eventlet=False, config_files=()):
    """Run ``scheduler-split-all-in-one`` as a child process; returns the
    process, the API's base URL and the lines it printed."""
    env = dict(os.environ)
    env.pop('SCHEDULER_SPLIT_EVENTLET', None)
    if eventlet:
        env['SCHEDULER_SPLIT_EVENTLET'] = '1'
    proc = subprocess.Popen(
        [sys.executable, '-m', 'scheduler_split.cmd.all_in_one',
         '--state-dir', str(state_dir), '--port', '0', '--cells', '2',
         '--hosts-per-cell', '2',
         *[a for f in config_files for a in ('--config-file', str(f))]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith('export OS_CLIENT_CONFIG_FILE='):
            url = re.search(r'compute API (http://\S+)/v2.1',
                            ''.join(lines)).group(1)
            return proc, url, lines
    proc.kill()
    raise AssertionError('all-in-one did not start:\n%s\n%s'
                         % (''.join(lines), proc.stderr.read()))


@pytest.mark.parametrize('eventlet', [False, True],
                         ids=['native-threads', 'eventlet'])
def test_all_in_one_boots_a_server_and_stops_on_ctrl_c(tmp_path, eventlet):
    proc, url, lines = start_all_in_one(tmp_path, eventlet)
    try:
        clouds = lines[-1].split('=', 1)[1].split()[0]
        assert os.path.exists(clouds)
        api = fixtures.Api(url)
        server = api.wait_for(api.boot(name='e2e'), timeout=60)
        assert server['status'] == 'ACTIVE'
        assert server['OS-EXT-SRV-ATTR:host'].startswith('cell')
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert 'Stopped.' in out
    assert 'Traceback' not in err
