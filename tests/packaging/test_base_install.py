"""``pip install scheduler-split`` and nothing else, as a user who tries
the all-in-one has it: every command starts, and the all-in-one boots a
server."""

import os
import queue
import re
import signal
import subprocess
import threading
import time

import pytest

from tests.packaging import compute_api
from tests.packaging import installs

pytestmark = pytest.mark.packaging

# What the production install guide runs; each must be there.
DOCUMENTED_MANAGE_COMMANDS = {
    ('db', 'sync'), ('cell_v2', 'map_cell0'), ('cell_v2', 'create_cell'),
    ('cell_v2', 'discover_hosts'), ('flavor', 'create-defaults')}


@pytest.fixture(scope='module')
def venv(wheel, tmp_path_factory):
    """A fresh venv with the wheel alone (its base dependencies)."""
    return installs.UserVenv.create(tmp_path_factory.mktemp('base-venv'),
                                    wheel)


def _answers_help(venv, *command):
    result = venv.run(*command, '--help')
    return result.returncode == 0 and 'usage:' in result.stdout.lower(), (
        '%s --help: rc %d\n%s%s' % (' '.join(command), result.returncode,
                                    result.stdout, result.stderr))


def test_every_console_script_answers_help(venv):
    scripts = venv.console_scripts()
    assert 'scheduler-split-all-in-one' in scripts, scripts
    failures = []
    for script in scripts:
        ok, report = _answers_help(venv, script)
        if not ok:
            failures.append(report)
    assert not failures, '\n\n'.join(failures)


def test_every_console_script_prints_its_name_and_version_alike(venv):
    version = venv.python('import importlib.metadata; print('
                          'importlib.metadata.version("scheduler-split"))')
    printed = {}
    for script in venv.console_scripts():
        result = venv.run(script, '--version')
        printed[script] = (result.returncode, result.stdout.strip())
    assert printed == {script: (0, '%s %s' % (script, version.strip()))
                       for script in printed}


def test_a_daemon_with_no_config_says_so_in_one_line_at_once(venv):
    """Started from a home with no scheduler-split.conf and no
    --config-file: it names where it looked and what it misses, and
    exits, rather than waiting for a broker on localhost."""
    for script in ('scheduler-split-compute', 'scheduler-split-scheduler',
                   'scheduler-split-conductor', 'scheduler-split-api'):
        try:
            result = venv.run(script, timeout=20)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError('%s was still running after 20 s: %s' % (
                script, exc.stderr)) from None
        lines = result.stderr.splitlines()
        assert result.returncode == 1, (script, result.stderr)
        assert len(lines) == 1, (script, result.stderr)
        assert lines[0].startswith(script + ': no configuration file'), \
            lines
        assert 'scheduler-split.conf' in lines[0]
        assert 'connection' in lines[0] or 'transport_url' in lines[0]
        assert 'Traceback' not in result.stdout + result.stderr


def _subcommands(help_text):
    """The choices of the first group of subcommands in a usage text."""
    found = re.search(r'\{([\w,-]+)\}', help_text)
    return found.group(1).split(',') if found else []


def test_manage_and_each_of_its_subcommands_answer_help(venv):
    failures, leaves = [], set()
    pending = [()]
    while pending:
        words = pending.pop()
        result = venv.run('scheduler-split-manage', *words, '--help')
        if result.returncode != 0 or 'usage:' not in result.stdout:
            failures.append('scheduler-split-manage %s --help: rc %d\n%s%s'
                            % (' '.join(words), result.returncode,
                               result.stdout, result.stderr))
            continue
        more = _subcommands(result.stdout)
        pending.extend(words + (word,) for word in more)
        if not more:
            leaves.add(words)
    assert not failures, '\n\n'.join(failures)
    assert DOCUMENTED_MANAGE_COMMANDS <= leaves, sorted(leaves)


class AllInOne:
    """``scheduler-split-all-in-one`` run as a user runs it, in a shell."""

    def __init__(self, venv, state_dir):
        # Without --verbose, what goes wrong is only in its log.
        self.log_path = os.path.join(state_dir, 'scheduler-split.log')
        self.stderr_path = os.path.join(state_dir, 'stderr')
        self.stderr = open(self.stderr_path, 'w')
        self.proc = subprocess.Popen(
            [venv.executable('scheduler-split-all-in-one'), '--port', '0',
             '--state-dir', state_dir], stdout=subprocess.PIPE,
            stderr=self.stderr, text=True, cwd=venv.path, env=venv.env())
        self.lines = []
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def output(self):
        with open(self.stderr_path) as f:
            text = 'stdout:\n%s\nstderr:\n%s' % (''.join(self.lines),
                                                 f.read())
        try:
            with open(self.log_path) as f:
                log = f.readlines()
        except OSError:
            log = []
        return '%s\nlast lines of %s:\n%s' % (text, self.log_path,
                                              ''.join(log[-40:]))

    def wait_until_serving(self, timeout=180):
        """The API's root URL, once it says how to reach it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait()
                raise AssertionError('the all-in-one exited with %s before '
                                     'serving:\n%s' % (self.proc.returncode,
                                                       self.output()))
            self.lines.append(line)
            if line.startswith('export OS_CLIENT_CONFIG_FILE='):
                return re.search(r'compute API (http://\S+)/v2\.1',
                                 ''.join(self.lines)).group(1)
        raise AssertionError('the all-in-one did not serve within %ss:\n%s'
                             % (timeout, self.output()))

    def interrupt(self, timeout=90):
        """Ctrl-C; its exit status."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.stderr.close()


def test_all_in_one_boots_a_server_and_stops_on_ctrl_c(venv, tmp_path):
    aio = AllInOne(venv, str(tmp_path))
    try:
        root = aio.wait_until_serving()
        server = compute_api.boot_to_active(root, 'plain-install')
    finally:
        code = aio.interrupt()
    assert server['status'] == 'ACTIVE', (server, aio.output())
    assert code == 0, aio.output()
