"""The all-in-one command, run as a user runs it, in both concurrency
modes: native threads (the default) and eventlet."""

import os
import signal

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
