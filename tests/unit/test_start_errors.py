"""What an operator reads when a script cannot start for its
configuration: one line on stderr that names the files looked for and
the options missing or wrong, no traceback; and ``--version`` in one
form for every script.

The scripts' ``main`` run in this process; the service itself is never
built (``common.run`` is replaced), so that a script that would start
with a configuration it should refuse fails the test instead of
connecting somewhere.
"""

import signal

import pytest

from scheduler_split.cmd import all_in_one
from scheduler_split.cmd import api
from scheduler_split.cmd import bench
from scheduler_split.cmd import common
from scheduler_split.cmd import compute
from scheduler_split.cmd import conductor
from scheduler_split.cmd import manage
from scheduler_split.cmd import preflight
from scheduler_split.cmd import scheduler
from scheduler_split import conf

CONF = conf.CONF

DAEMONS = {
    'scheduler-split-api': api.main,
    'scheduler-split-conductor': conductor.main,
    'scheduler-split-scheduler': scheduler.main,
    'scheduler-split-compute': compute.main,
}


@pytest.fixture
def script(monkeypatch, tmp_path, capsys):
    """``script(prog, *args)``: run a script's main as its console script
    would, with no configuration file in the default places; returns
    (exit code, stdout, stderr) as a shell sees them."""
    monkeypatch.setenv('HOME', str(tmp_path))
    for name in ('SNAP', 'SNAP_COMMON'):
        monkeypatch.delenv(name, raising=False)
    handlers = {signum: signal.getsignal(signum)
                for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}

    def _started(build):
        raise AssertionError('the service was started')

    monkeypatch.setattr(common, 'run', _started)
    # As in a fresh process: what a test before this one ran in this
    # process (an all-in-one's bus and databases) is no configuration.
    for group, name in (preflight.TRANSPORT_URL, preflight.API_DATABASE,
                        preflight.SCHEDULER_DATABASE,
                        preflight.CELL_DATABASE):
        group = None if group == 'DEFAULT' else group
        common.CONF.clear_override(name, group=group)
        common.CONF.clear_default(name, group=group)
    monkeypatch.setattr(common, '_needs', [], raising=False)

    def _script(prog, *args):
        capsys.readouterr()
        monkeypatch.setattr('sys.argv', ['/usr/bin/' + prog] + list(args))
        try:
            if prog in DAEMONS:
                rc = DAEMONS[prog]()
            else:
                rc = {'scheduler-split-manage': manage.main,
                      'scheduler-split-all-in-one': all_in_one.main,
                      'scheduler-split-bench': bench.main}[prog](list(args))
        except SystemExit as exc:
            rc = exc.code
        out, err = capsys.readouterr()
        if isinstance(rc, str):
            # What the interpreter does with sys.exit('message').
            err, rc = err + rc + '\n', 1
        return rc or 0, out, err

    yield _script
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    CONF.reset()
    CONF.clear()


def test_every_script_prints_its_name_and_version_alike(script):
    version = common.version()
    printed = {}
    for prog in list(DAEMONS) + ['scheduler-split-manage',
                                 'scheduler-split-all-in-one',
                                 'scheduler-split-bench']:
        rc, out, err = script(prog, '--version')
        assert rc == 0, (prog, out, err)
        printed[prog] = out.strip()
    assert printed == {prog: '%s %s' % (prog, version) for prog in printed}


def _one_line(rc, out, err):
    assert rc == 1, (out, err)
    assert 'Traceback' not in out + err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize('prog,missing', [
    ('scheduler-split-compute', ['[DEFAULT] transport_url']),
    ('scheduler-split-scheduler', ['[DEFAULT] transport_url',
                                   '[api_database] connection',
                                   '[scheduler_database] connection']),
    ('scheduler-split-conductor', ['[DEFAULT] transport_url',
                                   '[database] connection']),
    ('scheduler-split-api', ['[api_database] connection']),
])
def test_a_daemon_with_no_config_says_which_files_it_looked_for(
        script, prog, missing):
    line = _one_line(*script(prog))

    assert line.startswith(prog + ': no configuration file'), line
    for looked_for in ('scheduler-split.conf', '/etc/scheduler-split/',
                       '--config-file'):
        assert looked_for in line
    for option in missing:
        assert option in line


def test_a_config_file_without_the_databases_names_them_and_the_file(
        script, tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text('[DEFAULT]\ntransport_url = rabbit://h:5672/\n')

    line = _one_line(*script('scheduler-split-scheduler',
                             '--config-file', str(path)))

    assert '[api_database] connection' in line
    assert '[scheduler_database] connection' in line
    assert '[DEFAULT] transport_url' not in line
    assert str(path) in line


def test_a_sqlite_database_in_a_missing_directory_is_said_at_once(
        script, tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text('[DEFAULT]\ntransport_url = rabbit://h:5672/\n'
                    '[api_database]\nconnection = sqlite:///%s/gone/api.db\n'
                    '[scheduler_database]\nconnection = sqlite:///%s/s.db\n'
                    % (tmp_path, tmp_path))

    line = _one_line(*script('scheduler-split-scheduler',
                             '--config-file', str(path)))

    assert '[api_database] connection' in line
    assert str(tmp_path / 'gone') in line


def test_a_bad_value_in_a_config_file_is_one_line_naming_it(
        script, tmp_path):
    path = tmp_path / 'compute.conf'
    path.write_text('[DEFAULT]\ntransport_url = memory:///cell1\n'
                    'report_interval = often\n')

    line = _one_line(*script('scheduler-split-compute',
                             '--config-file', str(path)))

    assert 'report_interval' in line
    assert 'often' in line
    assert str(path) in line


def test_a_config_file_that_does_not_exist_is_one_line(script, tmp_path):
    missing = tmp_path / 'nowhere.conf'

    line = _one_line(*script('scheduler-split-compute',
                             '--config-file', str(missing)))

    assert str(missing) in line


def test_a_config_dir_without_the_bus_names_the_option_and_the_dir(
        script, tmp_path):
    conf_dir = tmp_path / 'compute.conf.d'
    conf_dir.mkdir()
    (conf_dir / 'host.conf').write_text('[DEFAULT]\nhost = c1\n')

    line = _one_line(*script('scheduler-split-compute',
                             '--config-dir', str(conf_dir)))

    assert '[DEFAULT] transport_url is not set' in line
    assert str(conf_dir) in line
