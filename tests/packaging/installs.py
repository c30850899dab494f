"""Installs as a user makes them: the wheel built from this tree, put in a
fresh venv with only what the docs tell a user to install."""

import glob
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Not part of a build: venvs, git, earlier build output (a stale build/lib
# would end up in the wheel, hiding a file the tree no longer has).
_NOT_SOURCE = shutil.ignore_patterns('.*', 'build', 'dist', '*.egg-info',
                                     '__pycache__')
# What would let an installed command import something other than the
# installed package (the source tree, the test venv's packages), or
# change how it runs.
NOT_INHERITED = ('PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP',
                 'PYTHONSAFEPATH', 'VIRTUAL_ENV', 'SCHEDULER_SPLIT_EVENTLET',
                 'SCHEDULER_SPLIT_CONFIG_FILES')
PIP_TIMEOUT = 900


def _run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True,
                            **kwargs)
    assert result.returncode == 0, '%s: rc %d\n%s\n%s' % (
        ' '.join(command), result.returncode, result.stdout, result.stderr)
    return result


def build_wheel(work_dir):
    """The wheel of this tree, built from a copy of it; its path."""
    source = os.path.join(work_dir, 'source')
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    wheelhouse = os.path.join(work_dir, 'wheelhouse')
    _run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '-q',
          '--wheel-dir', wheelhouse, source], timeout=PIP_TIMEOUT,
         env=user_env())
    wheels = glob.glob(os.path.join(wheelhouse, '*.whl'))
    assert len(wheels) == 1, wheels
    return wheels[0]


def user_env(bin_dir=None):
    """The environment of a user's shell, with ``bin_dir`` (a venv's)
    first in PATH as an activated venv would put it."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    if bin_dir:
        env['PATH'] = bin_dir + os.pathsep + env.get('PATH', '')
    return env


class UserVenv:
    """A venv made with ``python -m venv`` holding one ``pip install``."""

    def __init__(self, path):
        self.path = str(path)
        self.bin_dir = os.path.join(self.path, 'bin')

    @classmethod
    def create(cls, path, requirement):
        venv = cls(path)
        _run([_base_python(), '-m', 'venv', venv.path], timeout=300)
        _run([venv.executable('pip'), 'install', '-q', requirement],
             timeout=PIP_TIMEOUT, env=user_env(venv.bin_dir))
        # The package must come from this venv, not from a source tree.
        where = venv.python('import scheduler_split; '
                            'print(scheduler_split.__file__)').strip()
        assert where.startswith(venv.path + os.sep), where
        return venv

    def executable(self, name):
        return os.path.join(self.bin_dir, name)

    def env(self):
        return user_env(self.bin_dir)

    def python(self, code):
        """Run ``code`` in the venv's interpreter; its standard output."""
        return _run([self.executable('python'), '-c', code], cwd=self.path,
                    env=self.env(), timeout=120).stdout

    def run(self, command, *args, timeout=120):
        """One of the venv's commands, run from outside any source tree."""
        return subprocess.run(
            [self.executable(command), *args], capture_output=True,
            text=True, cwd=self.path, env=self.env(), timeout=timeout)

    def console_scripts(self):
        """The console scripts the installed distribution declares."""
        return json.loads(self.python(
            'import importlib.metadata, json; print(json.dumps(sorted('
            'e.name for e in importlib.metadata.distribution('
            '"scheduler-split").entry_points '
            'if e.group == "console_scripts")))'))


def _base_python():
    """The interpreter the test venv was made from: a user's python3."""
    return getattr(sys, '_base_executable', None) or sys.executable
