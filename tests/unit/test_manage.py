"""scheduler-split-manage as an operator runs it, against SQLite databases
in a temporary directory: its ``main()`` in this process, with the
working directory, HOME, stdout and stderr of a command line; the
console script itself in a child process where that is what is tested
(the installed command, a file its user cannot read)."""

import contextlib
import io
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler_split.cmd import manage as manage_module
from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import objects

CONF = conf.CONF

MANAGE = os.path.join(os.path.dirname(sys.executable),
                      'scheduler-split-manage')

# The databases of the template cloud are named relative to the working
# directory, so that each test runs on a copy of its own.
CONFIG = """\
[DEFAULT]
transport_url = kombu+memory:////api

[api_database]
connection = sqlite:///api.sqlite

[scheduler_database]
connection = sqlite:///scheduler.sqlite
"""


class Result:
    """What a command line shows: its exit code, stdout and stderr."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


@contextlib.contextmanager
def _command_line(cwd):
    """The working directory and HOME of a shell in ``cwd``."""
    before, home = os.getcwd(), os.environ.get('HOME')
    os.chdir(cwd)
    os.environ['HOME'] = str(cwd)
    try:
        yield
    finally:
        os.chdir(before)
        if home is None:
            os.environ.pop('HOME', None)
        else:
            os.environ['HOME'] = home


def manage(cwd, *args, config=True):
    """``scheduler-split-manage [--config-file scheduler-split.conf]
    ARGS`` run in ``cwd``: its ``main()``, called here."""
    argv = ['--config-file', 'scheduler-split.conf'] if config else []
    out, err = io.StringIO(), io.StringIO()
    try:
        with _command_line(cwd), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                rc = manage_module.main(argv + list(args))
            except SystemExit as exc:
                # argparse: --help, or arguments it refused.
                rc = exc.code
    finally:
        # A fresh process each time: options parsed anew, and no engine
        # kept open on a database named relative to another directory.
        CONF.reset()
        engines.dispose_all()
    return Result(rc or 0, out.getvalue(), err.getvalue())


def test_the_console_script_is_the_command(template, tmp_path):
    """The installed command runs the same ``main()``."""
    result = subprocess.run(
        [MANAGE, '--config-file', 'scheduler-split.conf', 'cell_v2',
         'list_cells'], cwd=template, capture_output=True, text=True,
        timeout=120, env=dict(os.environ, HOME=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
    assert [row[0] for row in rows(result.stdout)] == [
        'Name', 'cell0', 'cell1', 'cell2']


def ok(cwd, *args, **kwargs):
    result = manage(cwd, *args, **kwargs)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
    return result.stdout


def error(result, rc):
    """The one line an operator reads on stderr, after checking the exit
    code and that nothing else (a traceback) was printed."""
    assert result.returncode == rc, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert 'Traceback' not in result.stderr
    return lines[0]


def rows(table):
    """The rows of a boxed table, as lists of cells, header first."""
    return [[cell.strip() for cell in line.strip('|').split('|')]
            for line in table.splitlines() if line.startswith('|')]


@pytest.fixture(scope='module')
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp('cloud')
    (path / 'scheduler-split.conf').write_text(CONFIG)
    ok(path, 'db', 'sync')
    ok(path, 'cell_v2', 'map_cell0',
       '--database_connection', 'sqlite:///cell0.sqlite')
    for name in ('cell1', 'cell2'):
        ok(path, 'cell_v2', 'create_cell', '--name', name,
           '--transport-url', 'kombu+memory:////' + name,
           '--database_connection', 'sqlite:///%s.sqlite' % name)
    return path


@pytest.fixture
def cloud(template, tmp_path):
    path = tmp_path / 'cloud'
    shutil.copytree(template, path)
    return path


def _cells(cloud):
    return {row[0]: row[1] for row in rows(ok(
        cloud, 'cell_v2', 'list_cells'))[1:]}


def _insert(cloud, database, table, **values):
    engine = sa.create_engine('sqlite:///%s' % (cloud / database))
    with engine.begin() as connection:
        connection.execute(table.insert().values(**values))
    engine.dispose()


def _map_host(cloud, host, cell_uuid):
    engine = sa.create_engine('sqlite:///%s' % (cloud / 'api.sqlite'))
    with engine.begin() as connection:
        cell_id = connection.scalar(sa.select(api_models.CellMapping.id).where(
            api_models.CellMapping.uuid == cell_uuid))
        connection.execute(api_models.HostMapping.__table__.insert().values(
            host=host, cell_id=cell_id))
    engine.dispose()


def _add_instance(cloud, cell_name, cell_uuid, uuid, deleted=False):
    engine = sa.create_engine('sqlite:///%s' % (cloud / 'api.sqlite'))
    with engine.begin() as connection:
        cell_id = connection.scalar(sa.select(api_models.CellMapping.id).where(
            api_models.CellMapping.uuid == cell_uuid))
        connection.execute(
            api_models.InstanceMapping.__table__.insert().values(
                instance_uuid=uuid, cell_id=cell_id, project_id='p'))
    engine.dispose()
    _insert(cloud, cell_name + '.sqlite', cell_models.Instance.__table__,
            uuid=uuid, project_id='p', vm_state='active',
            flavor=objects.Flavor(
                flavorid='1', name='m1.tiny', memory_mb=512, vcpus=1,
                root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                is_public=True, disabled=False).to_json(),
            deleted=deleted)


# --- errors ---------------------------------------------------------------

def test_a_missing_config_file_is_one_line_naming_it(tmp_path):
    result = manage(tmp_path, '--config-file', 'nowhere.conf', 'db',
                    'version', config=False)
    assert 'nowhere.conf' in error(result, 1)


def test_a_config_file_that_is_a_directory_is_one_line(tmp_path):
    result = manage(tmp_path, 'db', 'version', '--config-file',
                    str(tmp_path), config=False)
    assert error(result, 1) == 'ERROR: %s: Is a directory' % tmp_path


def test_a_malformed_config_file_is_one_line(tmp_path):
    (tmp_path / 'bad.conf').write_text('[api_database\nconnection = x\n')
    result = manage(tmp_path, '--config-file', 'bad.conf', 'db', 'version',
                    config=False)
    assert 'bad.conf' in error(result, 1)


# root reads any file; without the capabilities that let it, it is
# refused like any user.
AS_USER = (['setpriv', '--inh-caps=-dac_override,-dac_read_search',
            '--bounding-set=-dac_override,-dac_read_search']
           if os.geteuid() == 0 else [])


@pytest.mark.skipif(bool(AS_USER) and shutil.which('setpriv') is None,
                    reason='root reads any file and setpriv is missing')
def test_an_unreadable_config_file_is_one_line_naming_it(tmp_path):
    conf = tmp_path / 'secret.conf'
    conf.write_text(CONFIG)
    conf.chmod(0)
    result = subprocess.run(
        AS_USER + [MANAGE, '--config-file', str(conf), 'db', 'version'],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, HOME=str(tmp_path)))
    assert error(result, 1) == (
        'ERROR: Failed to open some config files: %s' % conf)


def test_no_api_database_configured_is_one_line(tmp_path):
    (tmp_path / 'scheduler-split.conf').write_text('[DEFAULT]\n')
    result = manage(tmp_path, 'cell_v2', 'list_cells')
    assert error(result, 1) == (
        'ERROR: [api_database] connection is not set')


def test_an_unreachable_database_is_one_line_without_its_password(
        tmp_path):
    (tmp_path / 'scheduler-split.conf').write_text(
        '[api_database]\nconnection = postgresql+psycopg2://ss:S3CRET@'
        '127.0.0.1:9/ss_api\n')
    result = manage(tmp_path, 'cell_v2', 'list_cells')
    line = error(result, 1)
    assert line.startswith('ERROR: database api (postgresql+psycopg2://'
                           'ss:****@127.0.0.1:9/ss_api): ')
    assert 'S3CRET' not in line


def test_an_api_database_without_schema_asks_for_db_sync(tmp_path):
    (tmp_path / 'scheduler-split.conf').write_text(CONFIG)
    result = manage(tmp_path, 'cell_v2', 'list_hosts')
    assert error(result, 1) == (
        'ERROR: the API database sqlite:///api.sqlite has no schema yet: '
        'run scheduler-split-manage db sync first')


@pytest.mark.parametrize('argv, expected', [
    (['cell_v2', 'nothing'], "invalid choice: 'nothing'"),
    (['cell_v2', 'delete_cell'],
     'the following arguments are required: --cell_uuid'),
    (['cell_v2', 'update_cell', '--cell_uuid', 'x'],
     'give --name, --transport-url or --database_connection'),
    (['db', 'version', '--frobnicate'], 'unrecognized arguments'),
])
def test_bad_arguments_are_one_line_and_exit_code_2(tmp_path, argv,
                                                    expected):
    (tmp_path / 'scheduler-split.conf').write_text(CONFIG)
    line = error(manage(tmp_path, *argv), 2)
    assert expected in line
    assert line.endswith('--help)')


def test_an_unknown_cell_is_one_line(cloud):
    uuid = '11111111-2222-3333-4444-555555555555'
    for argv in (['list_hosts', '--cell_uuid', uuid],
                 ['delete_cell', '--cell_uuid', uuid],
                 ['update_cell', '--cell_uuid', uuid, '--name', 'x']):
        result = manage(cloud, 'cell_v2', *argv)
        assert error(result, 1) == 'ERROR: no cell has uuid %s' % uuid


# --- options after the command --------------------------------------------

def test_config_options_are_taken_after_the_command(cloud):
    (cloud / 'conf.d').mkdir()
    (cloud / 'conf.d' / 'api.conf').write_text(
        '[api_database]\nconnection = sqlite:///api.sqlite\n')
    out = ok(cloud, 'cell_v2', 'list_cells', '--config-dir', 'conf.d',
             '--debug', config=False)
    assert [row[0] for row in rows(out)] == [
        'Name', 'cell0', 'cell1', 'cell2']
    out = ok(cloud, 'db', 'version', '--config-file', 'scheduler-split.conf',
             config=False)
    assert rows(out)[1][0] == 'api'


def test_a_later_config_file_overrides_an_earlier_one_wherever_given(
        cloud):
    (cloud / 'other.conf').write_text(
        '[api_database]\nconnection = sqlite:///nowhere/api.sqlite\n')
    # other.conf comes last, after the command: its API database is used.
    result = manage(cloud, 'cell_v2', 'list_cells',
                    '--config-file', 'other.conf')
    assert 'nowhere/api.sqlite' in error(result, 1)
    # Given first, before the command, it is overridden.
    out = ok(cloud, '--config-file', 'other.conf', 'cell_v2', 'list_cells',
             '--config-file', 'scheduler-split.conf', config=False)
    assert len(rows(out)) == 4


# --- help -----------------------------------------------------------------

@pytest.mark.parametrize('command, options', [
    ([], ['--config-file', '--config-dir', '--debug']),
    (['db', 'sync'], ['--config-file']),
    (['db', 'version'], ['--config-file', 'Exit code']),
    (['cell_v2', 'map_cell0'], ['--database_connection']),
    (['cell_v2', 'create_cell'], ['--name', '--transport-url',
                                  '--database_connection', '--uuid']),
    (['cell_v2', 'discover_hosts'], ['--config-file']),
    (['cell_v2', 'list_cells'], ['--verbose']),
    (['cell_v2', 'list_hosts'], ['--cell_uuid']),
    (['cell_v2', 'delete_cell'], ['--cell_uuid', '--force', 'Exit codes']),
    (['cell_v2', 'update_cell'], ['--cell_uuid', '--name', '--transport-url',
                                  '--database_connection', 'Exit codes']),
    (['flavor', 'create-defaults'], ['--config-dir', '--debug']),
    (['image', 'build-guest'], ['--dest', 'source = glance']),
], ids=lambda v: ' '.join(v) if v and v[0] in (
    'db', 'cell_v2', 'flavor', 'image')
   else None)
def test_help_of_every_command_documents_its_options(tmp_path, command,
                                                     options):
    out = ok(tmp_path, *command, '--help', config=False)
    for option in options:
        assert option in out
    # Every option has a help text of its own.
    assert 'show this help message' in out


# --- db version -----------------------------------------------------------

def test_db_version_lists_every_database_and_whether_it_is_up_to_date(
        cloud):
    table = rows(ok(cloud, 'db', 'version'))
    assert table[0] == ['Database', 'Current', 'Head', 'Up to date']
    assert [row[0] for row in table[1:]] == [
        'api', 'scheduler', 'cell0', 'cell1', 'cell2']
    for name, current, head, up_to_date in table[1:]:
        assert current == head and up_to_date == 'yes', name

    engine = sa.create_engine('sqlite:///%s' % (cloud / 'cell2.sqlite'))
    with engine.begin() as connection:
        connection.execute(sa.text(
            "UPDATE alembic_version SET version_num = '0001'"))
    engine.dispose()
    table = rows(ok(cloud, 'db', 'version'))
    assert table[5][:2] == ['cell2', '0001']
    assert table[5][3] == 'no'


def test_db_version_shows_an_unreachable_cell_and_fails(cloud):
    cell1 = _cells(cloud)['cell1']
    ok(cloud, 'cell_v2', 'update_cell', '--cell_uuid', cell1,
       '--database_connection', 'sqlite:///gone/cell1.sqlite')
    result = manage(cloud, 'db', 'version')
    assert error(result, 1).startswith(
        'ERROR: database cell1 (sqlite:///gone/cell1.sqlite): ')
    table = rows(result.stdout)
    assert table[4][:2] == ['cell1', 'unreachable']
    assert table[5][0] == 'cell2' and table[5][3] == 'yes'


def test_create_cell_on_an_unreachable_database_maps_nothing(cloud):
    result = manage(cloud, 'cell_v2', 'create_cell', '--name', 'cell3',
                    '--transport-url', 'kombu+memory:////cell3',
                    '--database_connection', 'sqlite:///gone/cell3.sqlite')
    assert error(result, 1).startswith(
        'ERROR: database cell3 (sqlite:///gone/cell3.sqlite): ')
    assert 'cell3' not in _cells(cloud)


# --- list_hosts -----------------------------------------------------------

def test_list_hosts_of_all_cells_and_of_one(cloud):
    cells = _cells(cloud)
    for host, cell in (('c2-b', 'cell2'), ('c1-a', 'cell1'),
                       ('c2-a', 'cell2')):
        _insert(cloud, cell + '.sqlite', cell_models.Service.__table__,
                host=host, binary='scheduler-split-compute',
                topic='compute')
    assert 'Mapped host c1-a' in ok(cloud, 'cell_v2', 'discover_hosts')
    assert rows(ok(cloud, 'cell_v2', 'list_hosts')) == [
        ['Cell Name', 'Cell UUID', 'Hostname'],
        ['cell1', cells['cell1'], 'c1-a'],
        ['cell2', cells['cell2'], 'c2-a'],
        ['cell2', cells['cell2'], 'c2-b']]
    assert rows(ok(cloud, 'cell_v2', 'list_hosts', '--cell_uuid',
                   cells['cell2']))[1:] == [
        ['cell2', cells['cell2'], 'c2-a'],
        ['cell2', cells['cell2'], 'c2-b']]
    assert rows(ok(cloud, 'cell_v2', 'list_hosts', '--cell_uuid',
                   cells['cell0'])) == [['Cell Name', 'Cell UUID',
                                         'Hostname']]


# --- delete_cell ----------------------------------------------------------

def test_delete_cell_unmaps_an_empty_cell(cloud):
    cell2 = _cells(cloud)['cell2']
    out = ok(cloud, 'cell_v2', 'delete_cell', '--cell_uuid', cell2)
    assert out == 'Deleted cell cell2 (%s)\n' % cell2
    assert set(_cells(cloud)) == {'cell0', 'cell1'}
    # The database stays.
    assert (cloud / 'cell2.sqlite').exists()


def test_delete_cell_with_hosts_needs_force_which_unmaps_them(cloud):
    cells = _cells(cloud)
    _map_host(cloud, 'c1-a', cells['cell1'])
    _map_host(cloud, 'c2-a', cells['cell2'])
    result = manage(cloud, 'cell_v2', 'delete_cell', '--cell_uuid',
                    cells['cell1'])
    assert error(result, 2) == (
        'ERROR: cell cell1 (%s) has hosts mapped to it: c1-a; give --force '
        'to unmap them with the cell' % cells['cell1'])
    assert 'cell1' in _cells(cloud)

    out = ok(cloud, 'cell_v2', 'delete_cell', '--cell_uuid', cells['cell1'],
             '--force')
    assert out.splitlines() == ['Unmapped hosts c1-a',
                                'Deleted cell cell1 (%s)' % cells['cell1']]
    assert [row[2] for row in rows(ok(cloud, 'cell_v2', 'list_hosts'))] == [
        'Hostname', 'c2-a']


def test_delete_cell_refuses_instances_even_with_force(cloud):
    cells = _cells(cloud)
    _map_host(cloud, 'c1-a', cells['cell1'])
    _add_instance(cloud, 'cell1', cells['cell1'],
                  'aaaaaaaa-0000-0000-0000-000000000001')
    for force in ([], ['--force']):
        result = manage(cloud, 'cell_v2', 'delete_cell', '--cell_uuid',
                        cells['cell1'], *force)
        rc = 3 if force else 2
        assert error(result, rc).startswith('ERROR: cell cell1 (%s) '
                                            % cells['cell1'])
    assert 'holds 1 instances not deleted' in result.stderr
    assert 'cell1' in _cells(cloud)
    assert len(rows(ok(cloud, 'cell_v2', 'list_hosts'))) == 2


def test_delete_cell_whose_instances_are_deleted_needs_force(cloud):
    cells = _cells(cloud)
    _add_instance(cloud, 'cell2', cells['cell2'],
                  'aaaaaaaa-0000-0000-0000-000000000002', deleted=True)
    result = manage(cloud, 'cell_v2', 'delete_cell', '--cell_uuid',
                    cells['cell2'])
    assert error(result, 4) == (
        'ERROR: cell cell2 (%s) holds no instance but 1 instance mappings '
        'still name it; give --force to delete them with the cell'
        % cells['cell2'])
    ok(cloud, 'cell_v2', 'delete_cell', '--cell_uuid', cells['cell2'],
       '--force')
    assert 'cell2' not in _cells(cloud)


# --- update_cell ----------------------------------------------------------

def test_update_cell_changes_only_what_is_given(cloud):
    cell1 = _cells(cloud)['cell1']
    out = ok(cloud, 'cell_v2', 'update_cell', '--cell_uuid', cell1,
             '--name', 'east', '--transport-url',
             'rabbit://ss:S3CRET@10.0.0.1:5672/east')
    assert out == 'Updated cell east (%s): name, transport_url\n' % cell1
    table = rows(ok(cloud, 'cell_v2', 'list_cells', '--verbose'))
    assert table[2] == ['east', cell1, 'rabbit://ss:S3CRET@10.0.0.1:5672/east',
                        'sqlite:///cell1.sqlite', 'False']
    ok(cloud, 'cell_v2', 'update_cell', '--cell_uuid', cell1,
       '--database_connection', 'sqlite:///east.sqlite')
    table = rows(ok(cloud, 'cell_v2', 'list_cells'))
    assert table[2] == ['east', cell1, 'rabbit://ss:****@10.0.0.1:5672/east',
                        'sqlite:///east.sqlite', 'False']


def test_update_cell_refuses_a_transport_url_for_cell0(cloud):
    result = manage(cloud, 'cell_v2', 'update_cell', '--cell_uuid',
                    '00000000-0000-0000-0000-000000000000',
                    '--transport-url', 'rabbit://h:5672/cell0')
    assert error(result, 2) == (
        'ERROR: Invalid input: cell0 has no message bus; its transport URL '
        'stays none:///')
    assert rows(ok(cloud, 'cell_v2', 'list_cells'))[1][2] == 'none:///'


@pytest.mark.parametrize('option, url, expected', [
    ('--transport-url', 'no-scheme', 'invalid transport URL no-scheme'),
    ('--transport-url', 'rabbit://ss:S3CRET@h:port/v',
     'invalid transport URL rabbit://ss:****@h:port/v'),
    ('--transport-url', '', 'the transport URL is empty'),
    ('--database_connection', 'nonsense',
     'invalid database connection nonsense'),
    ('--database_connection', 'nodb://ss:S3CRET@h/x',
     'invalid database connection nodb://ss:****@h/x'),
])
def test_update_cell_refuses_an_invalid_url(cloud, option, url, expected):
    cell1 = _cells(cloud)['cell1']
    result = manage(cloud, 'cell_v2', 'update_cell', '--cell_uuid', cell1,
                    option, url)
    line = error(result, 2)
    assert line.startswith('ERROR: ' + expected)
    assert 'S3CRET' not in line
    table = rows(ok(cloud, 'cell_v2', 'list_cells'))
    assert table[2][2:4] == ['kombu+memory:////cell1',
                             'sqlite:///cell1.sqlite']


def test_update_cell_refuses_what_another_cell_has(cloud):
    cells = _cells(cloud)
    result = manage(cloud, 'cell_v2', 'update_cell', '--cell_uuid',
                    cells['cell1'], '--name', 'cell2')
    assert error(result, 3) == (
        'ERROR: Conflict: cell %s is already named cell2' % cells['cell2'])
    result = manage(cloud, 'cell_v2', 'update_cell', '--cell_uuid',
                    cells['cell1'], '--transport-url',
                    'kombu+memory:////cell2', '--database_connection',
                    'sqlite:///cell2.sqlite')
    assert error(result, 3) == (
        'ERROR: Conflict: cell cell2 (%s) already uses this transport URL '
        'and database' % cells['cell2'])
    assert rows(ok(cloud, 'cell_v2', 'list_cells'))[2][:3] == [
        'cell1', cells['cell1'], 'kombu+memory:////cell1']


def test_create_cell_refuses_an_existing_name_with_code_2(cloud):
    result = manage(cloud, 'cell_v2', 'create_cell', '--name', 'cell1',
                    '--transport-url', 'kombu+memory:////x',
                    '--database_connection', 'sqlite:///x.sqlite')
    assert 'a cell named cell1 exists' in error(result, 2)


def test_db_sync_names_a_cell_database_it_cannot_reach(cloud):
    cell2 = _cells(cloud)['cell2']
    ok(cloud, 'cell_v2', 'update_cell', '--cell_uuid', cell2,
       '--database_connection', 'sqlite:///gone/cell2.sqlite')
    result = manage(cloud, 'db', 'sync')
    assert error(result, 1) == (
        'ERROR: database cell2 (sqlite:///gone/cell2.sqlite): unable to '
        'open database file')
    assert pathlib.Path(cloud / 'cell1.sqlite').exists()


def test_the_cli_reference_documents_every_command():
    table = (pathlib.Path(__file__).resolve().parents[2] / 'doc' /
             'source' / 'cli' / 'manage.md').read_text()
    documented = {tuple(line.split('`')[1].split()[:2])
                  for line in table.splitlines() if line.startswith('| `')}
    assert documented == set(manage_module._COMMANDS)
