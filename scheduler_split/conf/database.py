from oslo_config import cfg

api_database_group = cfg.OptGroup(
    'api_database',
    help='The API database: cell mappings, host and instance mappings, '
         'build requests, request specs, flavors, quotas, key pairs and '
         'server groups. Read by the API and the super-conductor; the '
         'scheduler reads only its cell mappings, to find every cell\'s '
         'bus.')
database_group = cfg.OptGroup(
    'database',
    help='The cell database of a cell conductor: the instances, faults, '
         'instance actions, migrations and service records of its cell. '
         'Computes have none: their cell conductor reads and writes for '
         'them. scheduler-split-manage db sync upgrades it too, and '
         'cell_v2 map_cell0 and create_cell take it when no database is '
         'given.')
scheduler_database_group = cfg.OptGroup(
    'scheduler_database',
    help='The scheduler database: compute nodes as resource providers, '
         'their inventories, the allocations (claims) of instances, host '
         'aggregates and the schedulers\' service records. Read by the '
         'schedulers only; everything else asks a scheduler.')


def _connection_opt(what):
    return cfg.StrOpt('connection', secret=True,
                      help='SQLAlchemy URL of the %s, e.g. '
                           'postgresql+psycopg2://user:pass@127.0.0.1/db or '
                           'sqlite:////var/lib/scheduler-split/db.sqlite'
                           % what)


api_database_opts = [_connection_opt('API database')]
database_opts = [_connection_opt('cell database')]
scheduler_database_opts = [_connection_opt('scheduler database')]


# How every database of a service is waited for while its server is
# away (see scheduler_split.db.outage).
database_opts += [
    cfg.FloatOpt('retry_timeout', default=30.0, min=0.0,
                 help='Seconds a service waits for a database server that '
                      'refuses connections or dropped them (a restart, a '
                      'fail-over) before the step it was taking fails: '
                      'connections are opened again, and an RPC method '
                      'of a conductor or the scheduler that nothing '
                      'committed yet runs again, with a pause growing '
                      'from retry_interval up to 2 seconds. It applies '
                      'to every database the service opens, the API and '
                      'scheduler databases included. The API does not '
                      'wait: it answers 503 with Retry-After at once. 0: '
                      'never wait.'),
    cfg.IntOpt('link_timeout', default=10, min=2, max=600,
               help='Seconds a connection to a database server may go '
                    'without hearing from the server\'s host (a cut '
                    'link, a host gone, packets dropped) before it counts '
                    'as lost: the call under way fails as in an outage '
                    '(the API lists the cells it can read, a service '
                    'waits for the server as for a restart) instead of '
                    'hanging for the quarter of an hour TCP would wait. '
                    'Kept by TCP keep-alive probes and TCP_USER_TIMEOUT, '
                    'so a long statement on a server that answers is not '
                    'cut. Opening a connection is bounded by the lower of '
                    'this and 5 seconds, so a call on a pooled connection '
                    'that finds the link cut fails within this plus that. '
                    'It applies to every database the service opens '
                    'through psycopg2 or psycopg (PostgreSQL; '
                    'TCP_USER_TIMEOUT from libpq 12) or PyMySQL '
                    '(MySQL/MariaDB); other drivers get neither.'),
    cfg.IntOpt('idle_transaction_timeout', default=30, min=0, max=3600,
               help='Seconds the database server keeps a transaction of '
                    'this service open while its client sends nothing '
                    '(MariaDB 10.3 and later: idle_transaction_timeout; '
                    'PostgreSQL: idle_in_transaction_session_timeout), '
                    'set on each connection as it opens. A service cut '
                    'from the server between a write and its commit '
                    'leaves that transaction open, holding its row '
                    'locks, and every other service that writes those '
                    'rows waits for them; past this the server ends the '
                    'transaction and its connection, and the locks go. '
                    'No transaction of the services waits on anything '
                    'but its own statements. 0 leaves the server\'s '
                    'setting (MariaDB\'s and PostgreSQL\'s default: no '
                    'limit; the locks then go only when the server '
                    'drops the connection, after its wait_timeout or TCP '
                    'keep-alive, hours by default). MySQL has no such '
                    'setting and is left as it is.'),
    cfg.FloatOpt('retry_interval', default=0.2, min=0.01,
                 help='Seconds of the first pause while waiting for a '
                      'database server (see retry_timeout); each next '
                      'pause is twice as long, up to 2 seconds.'),
]


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
