"""``[DEFAULT] cpu_affinity``: which CPUs a service process keeps to."""

import os
import subprocess
import sys

import pytest

from scheduler_split.cmd import common


def test_empty_leaves_the_process_where_it_is():
    assert common.parse_cpus('', {0, 1}, 1234) is None
    assert common.parse_cpus('  ', {0, 1}, 1234) is None


def test_lists_and_ranges():
    assert common.parse_cpus('1', {0, 1, 2, 3}, 1) == {1}
    assert common.parse_cpus('0,2-3', {0, 1, 2, 3}, 1) == {0, 2, 3}
    assert common.parse_cpus(' 3 , 1 ', {0, 1, 2, 3}, 1) == {1, 3}


def test_auto_is_one_allowed_cpu_chosen_by_the_process_id():
    assert common.parse_cpus('auto', {2, 5}, 10) == {2}
    assert common.parse_cpus('auto', {2, 5}, 11) == {5}


@pytest.mark.parametrize('text,says', [
    ('x', 'not "auto" nor a list of CPUs'),
    ('1-', 'not "auto" nor a list of CPUs'),
    ('-1', 'not "auto" nor a list of CPUs'),
    ('3-1', 'empty range'),
    ('0,7', 'CPU 7 is not one this process may use (0, 1)'),
])
def test_bad_values_are_refused_with_what_is_wrong(text, says):
    with pytest.raises(ValueError) as err:
        common.parse_cpus(text, {0, 1}, 1)
    assert says in str(err.value)


@pytest.mark.skipif(not hasattr(os, 'sched_getaffinity'),
                    reason='no CPU affinity on this system')
def test_a_service_keeps_to_its_cpus_and_refuses_a_cpu_it_cannot_use(
        tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    conf = tmp_path / 'affinity.conf'
    script = ('import os, sys\n'
              'from scheduler_split.cmd import common\n'
              'common.parse_args(sys.argv)\n'
              'print(sorted(os.sched_getaffinity(0)))\n')
    conf.write_text('[DEFAULT]\ncpu_affinity = %d\n' % allowed[-1])
    out = subprocess.run([sys.executable, '-c', script, '--config-file',
                          str(conf)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == str([allowed[-1]])

    conf.write_text('[DEFAULT]\ncpu_affinity = %d\n' % (allowed[-1] + 64))
    out = subprocess.run([sys.executable, '-c', script, '--config-file',
                          str(conf)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    assert 'is not one this process may use' in out.stderr
