"""scheduler-split-manage: databases, cells and flavors.

    scheduler-split-manage db sync
    scheduler-split-manage db version
    scheduler-split-manage cell_v2 map_cell0 [--database_connection URL]
    scheduler-split-manage cell_v2 create_cell --name N --transport-url U \\
        --database_connection D [--uuid UUID]
    scheduler-split-manage cell_v2 discover_hosts
    scheduler-split-manage cell_v2 list_cells [--verbose]
    scheduler-split-manage cell_v2 list_hosts [--cell_uuid U]
    scheduler-split-manage cell_v2 delete_cell --cell_uuid U [--force]
    scheduler-split-manage cell_v2 update_cell --cell_uuid U [--name N] \\
        [--transport-url U] [--database_connection D]
    scheduler-split-manage flavor create-defaults

``--config-file``, ``--config-dir`` and ``--debug`` go before or after
the command. An error is one line on stderr and a non-zero exit code:
1 in general, 2 for arguments the command cannot take; the cell_v2
commands that Nova also has return Nova's codes (see each ``--help``).
"""

import argparse
import logging
import sys

from oslo_config import cfg
from oslo_log import log as oslo_logging

from scheduler_split import cells
from scheduler_split.cmd import common as script
from scheduler_split import conf
from scheduler_split.db import migration
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

PROG = 'scheduler-split-manage'


class CommandFailed(Exception):
    """What the operator reads on stderr, and the exit code."""

    def __init__(self, message, rc=1):
        super().__init__(message)
        self.rc = rc


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line, as every other error of the command."""

    def error(self, message):
        print('%s: error: %s (see %s --help)' % (self.prog, message,
                                                 self.prog),
              file=sys.stderr)
        sys.exit(2)


class _Common:
    """The options every command takes, wherever they stand on the
    command line, in the order given (later config files override
    earlier ones)."""

    def __init__(self):
        self.conf_args = []
        self.debug = False


class _ConfigPath(argparse.Action):
    def __init__(self, common, **kwargs):
        super().__init__(**kwargs)
        self.common = common

    def __call__(self, parser, namespace, value, option_string=None):
        self.common.conf_args += [self.option_strings[0], value]


class _Debug(argparse.Action):
    def __init__(self, common, **kwargs):
        super().__init__(nargs=0, **kwargs)
        self.common = common

    def __call__(self, parser, namespace, value, option_string=None):
        self.common.debug = True


def _add_common(parser, common):
    group = parser.add_argument_group('options of every command')
    group.add_argument('--config-file', action=_ConfigPath, common=common,
                       metavar='PATH', default=argparse.SUPPRESS,
                       help='a configuration file to read; may be given '
                            'more than once, later files override earlier '
                            'ones (default: scheduler-split.conf in '
                            '~/.scheduler-split/, ~/, /etc/scheduler-split/ '
                            'or /etc/)')
    group.add_argument('--config-dir', action=_ConfigPath, common=common,
                       metavar='DIR', default=argparse.SUPPRESS,
                       help='a directory whose *.conf files are read after '
                            'the config files, in alphabetical order')
    group.add_argument('--debug', action=_Debug, common=common,
                       default=argparse.SUPPRESS,
                       help='log at DEBUG level on stderr and, on an '
                            'unexpected error, the traceback before the '
                            'error line')


def _command(commands, common, name, help, description=None, epilog=None):
    parser = commands.add_parser(
        name, help=help, description=description or help, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_common(parser, common)
    return parser


def _parser(common):
    parser = _Parser(
        prog=PROG, description='Set up and inspect the databases and cells '
                               'of scheduler-split.')
    script.add_version_argument(parser)
    _add_common(parser, common)
    groups = parser.add_subparsers(dest='category', required=True,
                                   metavar='{db,cell_v2,flavor,image}')

    db = _command(groups, common, 'db', 'database schemas')
    db_cmds = db.add_subparsers(dest='action', required=True)
    _command(db_cmds, common, 'sync',
             'create or upgrade the API, scheduler and every mapped cell '
             'database (cell0 included), and [database] connection')
    _command(db_cmds, common, 'version',
             'list every database (API, scheduler, cell0, each mapped cell) '
             'with its current revision, the head revision and whether it '
             'is up to date',
             epilog='Exit code 1 when a database cannot be read (its row '
                    'says "unreachable"), 0 otherwise, up to date or not.')

    cell = _command(groups, common, 'cell_v2', 'cells')
    cell_cmds = cell.add_subparsers(dest='action', required=True)
    map0 = _command(cell_cmds, common, 'map_cell0',
                    'map the cell0 database, where instances that reach no '
                    'cell are kept, and create its schema')
    map0.add_argument('--database_connection', '--database-connection',
                      dest='database_connection', metavar='URL',
                      help='cell0 database URL (default: [database] '
                           'connection with _cell0 appended to the '
                           'database name)')

    create = _command(cell_cmds, common, 'create_cell',
                      'map a new cell and create its database schema',
                      epilog='Exit codes: 0 created, 1 a URL is missing or '
                             'invalid, 2 a cell has this name or this '
                             'transport URL and database already.')
    create.add_argument('--name', required=True,
                        help='the cell name (unique)')
    create.add_argument('--transport-url', '--transport_url',
                        dest='transport_url', metavar='URL',
                        help='the cell bus (default: [DEFAULT] '
                             'transport_url)')
    create.add_argument('--database_connection', '--database-connection',
                        dest='database_connection', metavar='URL',
                        help='the cell database (default: [database] '
                             'connection)')
    create.add_argument('--uuid', help='the cell UUID (default: a new one)')

    _command(cell_cmds, common, 'discover_hosts',
             'map the compute hosts found in the cells\' service records '
             'that are not mapped yet')
    lst = _command(cell_cmds, common, 'list_cells', 'list the cells')
    lst.add_argument('--verbose', action='store_true',
                     help='show the passwords in URLs (masked otherwise)')

    hosts = _command(cell_cmds, common, 'list_hosts',
                     'list the mapped compute hosts and their cells',
                     epilog='Exit codes: 0 listed, 1 no cell has that '
                            'UUID.')
    hosts.add_argument('--cell_uuid', '--cell-uuid', dest='cell_uuid',
                       metavar='UUID',
                       help='only the hosts of this cell (default: all)')

    delete = _command(
        cell_cmds, common, 'delete_cell', 'unmap an empty cell',
        description='Unmap a cell. Its databases and vhost are left as '
                    'they are.',
        epilog='Exit codes:\n'
               '  0  the cell is unmapped\n'
               '  1  no cell has that UUID\n'
               '  2  hosts are mapped to the cell (and no --force)\n'
               '  3  the cell holds instances not deleted (even with '
               '--force)\n'
               '  4  instance mappings name the cell although its '
               'instances are\n'
               '     all deleted (and no --force)')
    delete.add_argument('--cell_uuid', '--cell-uuid', dest='cell_uuid',
                        metavar='UUID', required=True,
                        help='the cell to unmap')
    delete.add_argument('--force', action='store_true',
                        help='also unmap the cell\'s hosts and delete the '
                             'instance mappings of its deleted instances; '
                             'a cell that holds instances is still '
                             'refused')

    update = _command(
        cell_cmds, common, 'update_cell',
        'change the name, transport URL or database of a cell',
        description='Change the name, transport URL or database of a '
                    'cell; what is not given stays as it is. Services '
                    'that already use the cell keep its old bus and '
                    'database until they restart.',
        epilog='Exit codes:\n'
               '  0  updated\n'
               '  1  no cell has that UUID\n'
               '  2  a URL is invalid, or a transport URL for cell0 '
               '(which has no bus)\n'
               '  3  another cell has this name, or this transport URL '
               'and database')
    update.add_argument('--cell_uuid', '--cell-uuid', dest='cell_uuid',
                        metavar='UUID', required=True,
                        help='the cell to change')
    update.add_argument('--name', help='the new cell name')
    update.add_argument('--transport-url', '--transport_url',
                        dest='transport_url', metavar='URL',
                        help='the new cell bus')
    update.add_argument('--database_connection', '--database-connection',
                        dest='database_connection', metavar='URL',
                        help='the new cell database')

    parser.update_cell = update

    flavor = _command(groups, common, 'flavor', 'flavors')
    flavor_cmds = flavor.add_subparsers(dest='action', required=True)
    _command(flavor_cmds, common, 'create-defaults',
             'create the flavors m1.tiny (id 1) to m1.xlarge (id 5) that '
             'do not exist yet')

    image = _command(groups, common, 'image', 'images')
    image_cmds = image.add_subparsers(dest='action', required=True)
    build = _command(
        image_cmds, common, 'build-guest',
        'build the test guest (a kernel and a busybox ramdisk of this '
        'machine\'s Debian packages, and a qcow2 disk) and register it '
        'as public images of the built-in catalog, unless it has them',
        epilog='With [glance] source = glance it registers nothing and '
               'prints the openstack commands that upload the three files '
               'to the Image service.')
    build.add_argument('--dest', metavar='DIR', required=True,
                       help='where the kernel, ramdisk and disk are built')
    return parser


def _cell0_url(url):
    from sqlalchemy.engine import make_url
    parsed = make_url(url)
    if parsed.drivername.startswith('sqlite'):
        return url.rsplit('.', 1)[0] + '_cell0.sqlite' if '.' in \
            url.rsplit('/', 1)[-1] else url + '_cell0'
    return parsed.set(database=(parsed.database or '') + '_cell0') \
        .render_as_string(hide_password=False)


def main(argv=None):
    common = _Common()
    parser = _parser(common)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.action == 'update_cell' and not (
            args.name or args.transport_url is not None or
            args.database_connection is not None):
        parser.update_cell.error('give --name, --transport-url or '
                                 '--database_connection')
    oslo_logging.register_options(CONF)
    rpc.register_opts(CONF)
    try:
        CONF(common.conf_args, project='scheduler-split')
        debug = common.debug or CONF.debug
        if debug:
            CONF.set_override('debug', True)
            oslo_logging.setup(CONF, 'scheduler-split')
        objects.register_all()
        # A command says at once that it cannot reach a database.
        with outage.not_waiting():
            return _run(args)
    except CommandFailed as exc:
        return _fail(str(exc), exc.rc)
    except exception.CellMappingNotFound as exc:
        return _fail('no cell has uuid %s' % exc.kwargs.get('uuid'), 1)
    except exception.SchedulerSplitException as exc:
        return _fail(exc.format_message(), 1)
    except cfg.Error as exc:
        # A config file missing, unreadable or malformed, or a value of
        # the wrong type.
        return _fail(' '.join(str(exc).split()), 1)
    except OSError as exc:
        return _fail('%s: %s' % (exc.filename or type(exc).__name__,
                                 exc.strerror or exc), 1)
    except Exception as exc:
        if common.debug:
            LOG.exception('%s %s failed', args.category, args.action)
        return _fail('%s: %s' % (type(exc).__name__,
                                 ' '.join(str(exc).split())), 1)


def _fail(message, rc):
    print('ERROR: %s' % message, file=sys.stderr)
    return rc


def _check_api_database(need_schema=True):
    url = CONF.api_database.connection
    if not url:
        raise exception.CellsNotConfigured(
            reason='[api_database] connection is not set')
    if not need_schema:
        return
    with cells.database('api', url):
        current = migration.current('api', url)
    if current is None:
        raise CommandFailed('the API database %s has no schema yet: run '
                            '%s db sync first' % (cells.safe_url(url), PROG))


def _run(args):
    command = _COMMANDS[(args.category, args.action)]
    _check_api_database(need_schema=command is not _db_sync and
                        command is not _db_version)
    return command(args) or 0


def _db_sync(args):
    cells.db_sync()


def _db_version(args):
    rows, failures = cells.db_versions()
    cells.table([('Database', 'Current', 'Head', 'Up to date')] + rows)
    for failure in failures:
        _fail(failure.format_message(), 1)
    return 1 if failures else 0


def _map_cell0(args):
    url = args.database_connection
    if not url:
        if not CONF.database.connection:
            raise exception.CellsNotConfigured(
                reason='give --database_connection or set [database] '
                       'connection')
        url = _cell0_url(CONF.database.connection)
    _checked(cells.check_database_url, url, 1)
    with cells.database('cell0', url):
        cells.map_cell0(url)


def _create_cell(args):
    transport_url = args.transport_url or CONF.transport_url
    database = args.database_connection or CONF.database.connection
    if not transport_url or not database:
        raise exception.CellsNotConfigured(
            reason='a cell needs --transport-url and '
                   '--database_connection (or [DEFAULT] transport_url '
                   'and [database] connection)')
    _checked(cells.check_transport_url, transport_url, 1)
    _checked(cells.check_database_url, database, 1)
    try:
        with cells.database(args.name, database):
            cells.create_cell(args.name, transport_url, database,
                              uuid=args.uuid)
    except exception.Conflict as exc:
        raise CommandFailed(exc.format_message(), 2)


def _discover_hosts(args):
    found = cells.discover_hosts()
    if not found:
        print('No new hosts found.')


def _list_cells(args):
    cells.list_cells(verbose=args.verbose)


def _list_hosts(args):
    cells.list_hosts(cell_uuid=args.cell_uuid)


def _delete_cell(args):
    try:
        cells.delete_cell(args.cell_uuid, force=args.force)
    except exception.CellHasHosts as exc:
        raise CommandFailed(exc.format_message(), 2)
    except exception.CellHasInstances as exc:
        raise CommandFailed(exc.format_message(), 3)
    except exception.CellHasInstanceMappings as exc:
        raise CommandFailed(exc.format_message(), 4)


def _update_cell(args):
    try:
        cells.update_cell(args.cell_uuid, name=args.name,
                          transport_url=args.transport_url,
                          database_connection=args.database_connection)
    except (ValueError, exception.Invalid) as exc:
        raise CommandFailed(exception.describe(exc), 2)
    except exception.Conflict as exc:
        raise CommandFailed(exc.format_message(), 3)


def _create_default_flavors(args):
    cells.create_default_flavors()


def _checked(check, url, rc):
    try:
        check(url)
    except ValueError as exc:
        raise CommandFailed(str(exc), rc)


def _build_guest(args):
    from scheduler_split.image import guest
    from scheduler_split.image import guest_images
    if CONF.glance.source == 'builtin':
        image = guest_images.register_builtin(args.dest)
        print('Image %s (%s): boot it with openstack server create '
              '--image %s' % (image['name'], image['id'], image['name']))
        return
    paths = guest.build(args.dest)
    for line in guest_images.upload_commands(paths):
        print(line)


_COMMANDS = {
    ('db', 'sync'): _db_sync,
    ('db', 'version'): _db_version,
    ('cell_v2', 'map_cell0'): _map_cell0,
    ('cell_v2', 'create_cell'): _create_cell,
    ('cell_v2', 'discover_hosts'): _discover_hosts,
    ('cell_v2', 'list_cells'): _list_cells,
    ('cell_v2', 'list_hosts'): _list_hosts,
    ('cell_v2', 'delete_cell'): _delete_cell,
    ('cell_v2', 'update_cell'): _update_cell,
    ('flavor', 'create-defaults'): _create_default_flavors,
    ('image', 'build-guest'): _build_guest,
}


if __name__ == '__main__':
    sys.exit(main())
