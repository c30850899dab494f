"""scheduler-split-manage: databases, cells and flavors.

    scheduler-split-manage db sync
    scheduler-split-manage cell_v2 map_cell0 [--database_connection URL]
    scheduler-split-manage cell_v2 create_cell --name N --transport-url U \\
        --database-connection D
    scheduler-split-manage cell_v2 discover_hosts
    scheduler-split-manage cell_v2 list_cells [--verbose]
    scheduler-split-manage flavor create-defaults
"""

import argparse
import sys

from oslo_log import log as oslo_logging
import sqlalchemy.exc

from scheduler_split import cells
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split import rpc

CONF = conf.CONF


def _parser():
    parser = argparse.ArgumentParser(prog='scheduler-split-manage')
    parser.add_argument('--config-file', action='append', default=[])
    parser.add_argument('--config-dir', action='append', default=[])
    groups = parser.add_subparsers(dest='category', required=True)

    db = groups.add_parser('db', help='database schemas')
    db_cmds = db.add_subparsers(dest='action', required=True)
    db_cmds.add_parser('sync', help='create or upgrade the API, scheduler '
                                    'and every cell database')
    db_cmds.add_parser('version', help='show the schema revisions')

    cell = groups.add_parser('cell_v2', help='cells')
    cell_cmds = cell.add_subparsers(dest='action', required=True)
    map0 = cell_cmds.add_parser('map_cell0', help='map the cell0 database')
    map0.add_argument('--database_connection', '--database-connection',
                      dest='database_connection',
                      help='cell0 database URL (default: [database] '
                           'connection with the database name suffixed '
                           '_cell0)')
    create = cell_cmds.add_parser('create_cell', help='map a new cell')
    create.add_argument('--name', required=True)
    create.add_argument('--transport-url', '--transport_url',
                        dest='transport_url',
                        help='the cell bus (default: [DEFAULT] '
                             'transport_url)')
    create.add_argument('--database-connection', '--database_connection',
                        dest='database_connection',
                        help='the cell database (default: [database] '
                             'connection)')
    create.add_argument('--uuid')
    cell_cmds.add_parser('discover_hosts',
                         help='map compute hosts found in the cells')
    lst = cell_cmds.add_parser('list_cells', help='list the cells')
    lst.add_argument('--verbose', action='store_true',
                     help='show credentials in URLs')

    flavor = groups.add_parser('flavor', help='flavors')
    flavor_cmds = flavor.add_subparsers(dest='action', required=True)
    flavor_cmds.add_parser('create-defaults',
                           help='create m1.tiny ... m1.xlarge')
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
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    oslo_logging.register_options(CONF)
    rpc.register_opts(CONF)
    conf_args = []
    for path in args.config_file:
        conf_args += ['--config-file', path]
    for path in args.config_dir:
        conf_args += ['--config-dir', path]
    CONF(conf_args, project='scheduler-split')
    objects.register_all()
    try:
        return _run(args)
    except exception.SchedulerSplitException as exc:
        print('ERROR: %s' % exc.format_message(), file=sys.stderr)
        return 1
    except ValueError as exc:
        print('ERROR: %s' % exc, file=sys.stderr)
        return 1
    except sqlalchemy.exc.SQLAlchemyError as exc:
        print('ERROR: database: %s' % exc, file=sys.stderr)
        return 1


def _run(args):
    if not CONF.api_database.connection:
        raise exception.CellsNotConfigured(
            reason='[api_database] connection is not set')
    if args.category == 'db' and args.action == 'sync':
        cells.db_sync()
    elif args.category == 'db' and args.action == 'version':
        from scheduler_split.db import migration
        for kind, url in (('api', CONF.api_database.connection),
                          ('scheduler',
                           CONF.scheduler_database.connection)):
            print('%s: %s (head %s)' % (kind, migration.current(kind, url),
                                        migration.head(kind)))
    elif args.action == 'map_cell0':
        url = args.database_connection
        if not url:
            if not CONF.database.connection:
                raise exception.CellsNotConfigured(
                    reason='give --database_connection or set [database] '
                           'connection')
            url = _cell0_url(CONF.database.connection)
        cells.map_cell0(url)
    elif args.action == 'create_cell':
        transport_url = args.transport_url or CONF.transport_url
        database = args.database_connection or CONF.database.connection
        if not transport_url or not database:
            raise exception.CellsNotConfigured(
                reason='a cell needs --transport-url and '
                       '--database-connection (or [DEFAULT] transport_url '
                       'and [database] connection)')
        cells.create_cell(args.name, transport_url, database,
                          uuid=args.uuid)
    elif args.action == 'discover_hosts':
        found = cells.discover_hosts()
        if not found:
            print('No new hosts found.')
    elif args.action == 'list_cells':
        cells.list_cells(verbose=args.verbose)
    elif args.category == 'flavor':
        cells.create_default_flavors()
    return 0


if __name__ == '__main__':
    sys.exit(main())
