from oslo_config import cfg

api_database_group = cfg.OptGroup(
    'api_database',
    help='The API database: cell mappings, host and instance mappings, '
         'build requests, request specs and flavors.')
database_group = cfg.OptGroup(
    'database',
    help='The cell database of a cell-level service (cell conductor, '
         'compute): instances, faults and services of that cell.')
scheduler_database_group = cfg.OptGroup(
    'scheduler_database',
    help='The scheduler database: compute nodes as resource providers, '
         'their inventories and the allocations (claims) of instances.')


def _connection_opt(what):
    return cfg.StrOpt('connection', secret=True,
                      help='SQLAlchemy URL of the %s, e.g. '
                           'postgresql+psycopg2://user:pass@127.0.0.1/db or '
                           'sqlite:////var/lib/scheduler-split/db.sqlite'
                           % what)


api_database_opts = [_connection_opt('API database')]
database_opts = [_connection_opt('cell database')]
scheduler_database_opts = [_connection_opt('scheduler database')]


def register_opts(conf):
    for group, opts in ((api_database_group, api_database_opts),
                        (database_group, database_opts),
                        (scheduler_database_group, scheduler_database_opts)):
        conf.register_group(group)
        conf.register_opts(opts, group=group)


def list_opts():
    return {api_database_group: api_database_opts,
            database_group: database_opts,
            scheduler_database_group: scheduler_database_opts}
