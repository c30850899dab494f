"""The all-in-one command, run as a user runs it, in both concurrency
modes: native threads (the default) and eventlet."""

import os
import pathlib
import shlex
import signal
import subprocess
import sys

import pytest

from tests.functional import fixtures

pytestmark = pytest.mark.functional


@pytest.mark.parametrize('eventlet', [False, True],
                         ids=['native-threads', 'eventlet'])
def test_all_in_one_boots_a_server_and_stops_on_ctrl_c(tmp_path, eventlet):
    proc, url, lines = fixtures.start_all_in_one(tmp_path, eventlet)
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


def _readme_manage_command(state_dir):
    """The ``scheduler-split-manage`` command of the all-in-one's install
    guide, for the all-in-one of ``state_dir``."""
    section = (pathlib.Path(__file__).parents[2] / 'doc' / 'source' /
               'install' / 'all-in-one.md').read_text()
    line = next(line for line in section.splitlines()
                if 'scheduler-split-manage --config-file' in line)
    words = shlex.split(line.replace('~/.local/state/scheduler-split',
                                     str(state_dir)))
    assert words[0] == '.venv/bin/scheduler-split-manage', line
    words[0] = os.path.join(os.path.dirname(sys.executable),
                            'scheduler-split-manage')
    return words


def _manage(words, *more):
    result = subprocess.run(words + list(more), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, (words, result.stdout, result.stderr)
    return result.stdout


def test_manage_reads_the_all_in_one_config_running_or_stopped(tmp_path):
    state_dir = tmp_path / 'state'
    proc, url, lines = fixtures.start_all_in_one(state_dir)
    try:
        command = _readme_manage_command(state_dir)
        config = command[command.index('--config-file') + 1]
        base = command[:command.index('--config-file') + 2]

        listed = _manage(command)
        for cell in ('cell0', 'cell1', 'cell2'):
            assert cell in listed
        assert 'cell1-compute1' in _manage(base, 'cell_v2', 'list_hosts')
        _manage(base, 'db', 'version')
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert os.path.dirname(config) == str(state_dir)
    assert 'cell2' in _manage(command)
    assert 'cell2-compute2' in _manage(base, 'cell_v2', 'list_hosts')
