"""What the database server did during a boot run
(``scheduler-split-bench --db-stats URL``): the statements the services
sent it and the transactions they ended, counted from the server's own
statistics before and after the measured window.

- PostgreSQL: ``pg_stat_statements`` when the server loads it: each
  statement a client sent, by database and by normalised text (``BEGIN``
  and ``COMMIT`` count as statements, each a round trip of its own), and
  the transactions as the ``COMMIT`` and ``ROLLBACK`` among them. Without
  the extension, the transactions alone, from ``pg_stat_database``,
  which an idle backend may report up to ten seconds late.
- MySQL and MariaDB: the global status ``Questions`` (the statements
  clients sent) and ``Com_commit`` plus ``Com_rollback``.

The readings of this module are left out of the counts: its statements
carry a mark pg_stat_statements shows, and where the server's counters
cannot tell them apart, each reading takes its own one statement (one
autocommit transaction) off them.
"""

import dataclasses

import sqlalchemy as sa

from scheduler_split.benchmark import base

# The statements of pg_stat_statements that are this module's own.
_OWN_MARK = '/* scheduler-split-bench db-stats */'

_PG_HAS_STATEMENTS = sa.text(
    "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'"
    " " + _OWN_MARK)
_PG_STATEMENTS = sa.text(
    'SELECT d.datname, s.queryid, s.query, s.calls '
    'FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid '
    + _OWN_MARK)
_PG_TRANSACTIONS = sa.text(
    'SELECT datname, xact_commit + xact_rollback FROM pg_stat_database '
    'WHERE datname IS NOT NULL ' + _OWN_MARK)
_MY_STATUS = sa.text(
    "SHOW GLOBAL STATUS WHERE Variable_name IN "
    "('Questions', 'Com_commit', 'Com_rollback')")

# The statements that end a transaction.
_ENDS = ('COMMIT', 'ROLLBACK')
# How many statements the table lists (the JSON report has them all).
TOP = 12


@dataclasses.dataclass
class Reading:
    """Counters at one moment: ``{database: statements}`` (None when the
    server does not count them), ``{database: transactions}``, and
    ``{(database, text): calls}``."""
    statements: dict
    transactions: dict
    by_text: dict

    def since(self, earlier):
        def minus(now, then):
            if now is None or then is None:
                return None
            return {key: now[key] - then.get(key, 0) for key in now
                    if now[key] != then.get(key, 0)}
        return Reading(minus(self.statements, earlier.statements),
                       minus(self.transactions, earlier.transactions),
                       minus(self.by_text, earlier.by_text))

    def plus(self, other):
        def add(one, two):
            if one is None or two is None:
                return None
            total = dict(one)
            for key, value in two.items():
                total[key] = total.get(key, 0) + value
            return total
        return Reading(add(self.statements, other.statements),
                       add(self.transactions, other.transactions),
                       add(self.by_text, other.by_text))

    def minus(self, other):
        negated = Reading(
            *({key: -value for key, value in part.items()}
              if part is not None else None
              for part in (other.statements, other.transactions,
                           other.by_text)))
        return self.plus(negated)


class DbStats:
    """Reads the counters of the database server ``url`` (any database
    of it, as a role that may read the server's statistics)."""

    def __init__(self, url):
        try:
            self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        except sa.exc.ArgumentError as exc:
            raise base.BenchError('%r is not a database URL: %s'
                                  % (url, exc)) from exc
        except (ImportError, sa.exc.NoSuchModuleError) as exc:
            raise base.BenchError(
                'the driver of %s is missing (%s): install the deploy '
                'extra, pip install "scheduler-split[deploy]"'
                % (url.split('://')[0], exc)) from exc
        self.dialect = self.engine.dialect.name
        if self.dialect not in ('postgresql', 'mysql'):
            raise base.BenchError('--db-stats reads PostgreSQL, MySQL or '
                                  'MariaDB, not %s' % self.dialect)
        self.database = self.engine.url.database
        # The readings so far, each one statement the server's counters
        # hold, where they cannot be told apart.
        self._readings = 0
        try:
            with self.engine.connect() as conn:
                self.statements_counted = (
                    self.dialect == 'mysql' or
                    bool(conn.execute(_PG_HAS_STATEMENTS).scalar()))
        except sa.exc.DBAPIError as exc:
            raise base.BenchError(
                'cannot read the statistics of %s: %s'
                % (self.engine.url.render_as_string(), exc.orig)) from exc

    @property
    def what(self):
        """What the counts hold, for the report."""
        if self.dialect == 'mysql':
            return ('the server\'s global status: Questions (statements '
                    'sent by clients), Com_commit + Com_rollback')
        if self.statements_counted:
            return ('pg_stat_statements: each statement a client sent, '
                    'BEGIN and COMMIT included; transactions as the COMMIT '
                    'and ROLLBACK among them')
        return ('pg_stat_database: transactions only (the server does not '
                'load pg_stat_statements), as backends reported them, up '
                'to 10 s late')

    def read(self):
        self._readings += 1
        with self.engine.connect().execution_options(
                isolation_level='AUTOCOMMIT') as conn:
            if self.dialect == 'mysql':
                return self._read_mysql(conn)
            return self._read_postgresql(conn)

    def _read_postgresql(self, conn):
        if not self.statements_counted:
            transactions = dict(conn.execute(_PG_TRANSACTIONS).all())
            transactions[self.database] = transactions.get(
                self.database, 0) - self._readings
            return Reading(None, transactions, {})
        by_text, statements, transactions = {}, {}, {}
        for database, _, text, calls in conn.execute(_PG_STATEMENTS):
            if _OWN_MARK in (text or ''):
                continue
            text = _one_line(text)
            key = (database, text)
            by_text[key] = by_text.get(key, 0) + calls
            statements[database] = statements.get(database, 0) + calls
            if text.upper() in _ENDS:
                transactions[database] = transactions.get(database,
                                                          0) + calls
        return Reading(statements, transactions, by_text)

    def _read_mysql(self, conn):
        status = {name: int(value) for name, value
                  in conn.execute(_MY_STATUS).all()}
        # The server counts the statements of every database together.
        return Reading({'*': status.get('Questions', 0) - self._readings},
                       {'*': status.get('Com_commit', 0) +
                        status.get('Com_rollback', 0)},
                       {})


def _one_line(text):
    return ' '.join((text or '').split())


def report(counted, idle, idle_seconds, boots, what):
    """The JSON-able report of ``counted`` (a Reading of the window),
    per boot, with the background rate ``idle`` measured over
    ``idle_seconds``."""
    def per_boot(value):
        return round(value / boots, 1) if boots else None

    def rows(part, idle_part):
        if part is None:
            return None
        return {key: {'count': value, 'per_boot': per_boot(value),
                      'idle_per_s': round(
                          (idle_part or {}).get(key, 0) / idle_seconds, 1)
                      if idle_seconds else None}
                for key, value in sorted(part.items())}

    total = {}
    for name, part, idle_part in (
            ('statements', counted.statements, idle.statements),
            ('transactions', counted.transactions, idle.transactions)):
        if part is None:
            total[name] = None
            continue
        value = sum(part.values())
        total[name] = {'count': value, 'per_boot': per_boot(value),
                       'idle_per_s': round(sum((idle_part or {}).values())
                                           / idle_seconds, 1)
                       if idle_seconds else None}
    top = sorted((counted.by_text or {}).items(),
                 key=lambda item: -item[1])
    return {
        'what': what,
        'total': total,
        'statements_by_database': rows(counted.statements, idle.statements),
        'transactions_by_database': rows(counted.transactions,
                                         idle.transactions),
        'top_statements': [{'database': database, 'statement': text,
                            'calls': calls, 'per_boot': per_boot(calls)}
                           for (database, text), calls in top],
    }
