"""``[DEFAULT] thread_switch_interval``: how long a thread of a service
holds the interpreter lock before one waiting for it gets it."""

import subprocess
import sys

_SERVICE = ('import sys\n'
            'from scheduler_split.cmd import common\n'
            'common.parse_args(sys.argv)\n'
            'print(sys.getswitchinterval())\n')


def _start(tmp_path, text):
    conf = tmp_path / 'service.conf'
    conf.write_text(text)
    return subprocess.run([sys.executable, '-c', _SERVICE, '--config-file',
                           str(conf)], capture_output=True, text=True,
                          timeout=120)


def test_a_service_hands_the_lock_over_every_millisecond_by_default(
        tmp_path):
    out = _start(tmp_path, '[DEFAULT]\n')
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.splitlines()[-1]) == 0.001


def test_a_service_takes_the_interval_its_configuration_gives(tmp_path):
    out = _start(tmp_path, '[DEFAULT]\nthread_switch_interval = 0.004\n')
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.splitlines()[-1]) == 0.004


def test_an_interval_out_of_range_stops_the_service_saying_so(tmp_path):
    out = _start(tmp_path, '[DEFAULT]\nthread_switch_interval = 2\n')
    assert out.returncode == 1
    assert 'thread_switch_interval' in out.stderr
    assert 'Traceback' not in out.stderr
