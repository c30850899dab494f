"""Engines and transactions, one engine pair per database URL.

SQLite (the all-in-one) gets WAL with ``synchronous=NORMAL``, a busy
timeout and ``BEGIN IMMEDIATE`` for writing transactions, so that
concurrent writers queue on the database lock instead of failing in the
middle of a read-then-write transaction. The writers of one process
also queue on a lock of their own per database first: SQLite's busy
handler sleeps ever longer between its tries (up to a tenth of a
second), so a writer that waited for it would go on sleeping after the
lock was free. That lock is handed to the writers in turn, those of
single requests (a claim) before those of bulk work (the group commit
of compute reports). In WAL mode ``synchronous=NORMAL`` syncs the log
to disk at checkpoints rather than at every commit: a commit that
returned survives the process being killed (it is in the log, which the
next start reads), and a power loss may undo the last commits but never
leaves the file inconsistent. A commit then costs no wait on the disk,
which every writer queued behind it would share.

PostgreSQL and MySQL/MariaDB run every transaction at READ COMMITTED,
set rather than left to the server's default (MySQL's and MariaDB's is
REPEATABLE READ): on the engine for MySQL, as the session's default
when a PostgreSQL connection opens. The code's read-then-write transactions
are built for it: each takes its lock (a guarded ``UPDATE``, a
``SELECT ... FOR UPDATE``) and then reads, and must see what the holder
before it committed; under REPEATABLE READ a read may still see the
snapshot of the transaction's first read (and MariaDB 11.6 refuses a
write to a row changed since), and an update of a row that does not
exist yet takes a gap lock that holds up the insert of that row. The
isolation paragraph of the production install guide says it per
transaction.
MySQL connections also get utf8mb4, a strict ``sql_mode`` (what
oslo.db sets) and are recycled before the server's ``wait_timeout``
drops them.

A transaction whose client was cut between a write and its commit stays
open on the server, its row locks held, until the server drops the
connection: hours by default, while every other service that writes
those rows waits. Each connection to MariaDB or PostgreSQL has the
server end a transaction idle for ``[database] idle_transaction_timeout``
seconds instead.

A connection to a server whose host stops answering (a cut link) is
given up ``[database] link_timeout`` seconds after the host was last
heard: TCP keep-alive probes start after about half of it without
traffic, and TCP_USER_TIMEOUT drops a connection whose data or probes go
unacknowledged that long (libpq's parameters for psycopg2 and psycopg,
set on the socket for PyMySQL from its handshake on; other drivers get
neither). Without them a read waits for an answer that never comes for
as long as TCP retransmits, a quarter of an hour, and holds up the
request, or the cell's part of a list, with it.
"""

import collections
import contextlib
import socket
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from scheduler_split import conf
from scheduler_split.db import outage

CONF = conf.CONF
_engines = {}
_lock = threading.Lock()

# Seconds to open a connection (at most; see link_bounds): a database
# server that is gone fails a request (the API answers 503) instead of
# hanging it.
CONNECT_TIMEOUT = 5
_TAKE_CONNECT_TIMEOUT = ('psycopg2', 'psycopg', 'pymysql', 'mysqldb')
# The drivers that take libpq's keep-alive and TCP_USER_TIMEOUT
# parameters (TCP_USER_TIMEOUT from libpq 12); PyMySQL's socket is made
# here with them (see _pymysql_opener).
_LIBPQ = ('psycopg2', 'psycopg')
_LIBPQ_USER_TIMEOUT = 120000
# Keep-alive probes after the idle time: the last one is sent
# link_timeout seconds after the peer was last heard, when
# TCP_USER_TIMEOUT drops the connection.
KEEPALIVE_PROBES = 3

ISOLATION_LEVEL = 'READ COMMITTED'
PG_ISOLATION_OPTION = '-c default_transaction_isolation=read\\ committed'
PG_IDLE_OPTION = '-c idle_in_transaction_session_timeout=%ds'
# Seconds a pooled MySQL connection lives: well below the server's
# wait_timeout (8 hours by default), after which it closes an idle
# connection that the pool would otherwise hand out dead.
MYSQL_POOL_RECYCLE = 3600
# On a Galera node: reads (1), and updates and deletes (2), wait for
# the writes the cluster committed before them (see _mysql_engine). An
# update of a row another node created a moment ago would otherwise
# match nothing while a node's loss holds up the others' applying.
GALERA_SYNC_WAIT = 3
# What oslo.db sets: values that do not fit a column are refused, not
# truncated or replaced by a zero.
MYSQL_SQL_MODE = 'TRADITIONAL'
# Seconds a pooled connection rests before it is pinged as it is taken
# out again (see _ping_rested).
PING_AFTER_REST = 1.0
# What the error names when a URL's driver is not installed.
DRIVERS_EXTRA = "pip install 'scheduler-split[deploy]'"


class DriverMissing(ImportError):
    """The database URL names a driver that is not installed."""

    def __init__(self, url, cause):
        super().__init__(
            'The database URL %s needs a driver that is not installed '
            '(%s); the PostgreSQL (postgresql+psycopg2://) and '
            'MySQL/MariaDB (mysql+pymysql://) drivers come with %s'
            % (url.render_as_string(hide_password=True), cause,
               DRIVERS_EXTRA))


def _sqlite_engine(url, begin):
    engine = sa.create_engine(
        url, connect_args={'check_same_thread': False, 'timeout': 60},
        poolclass=sa.pool.QueuePool, pool_size=5, max_overflow=20)

    @event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA journal_mode=WAL')
        cursor.execute('PRAGMA foreign_keys=ON')
        cursor.execute('PRAGMA busy_timeout=60000')
        cursor.execute('PRAGMA synchronous=NORMAL')
        cursor.close()

    @event.listens_for(engine, 'begin')
    def _begin(connection):
        connection.exec_driver_sql(begin)

    return engine


class LinkBounds(collections.namedtuple(
        'LinkBounds', 'connect idle interval probes user_timeout_ms')):
    """How long a connection waits on a silent peer, from
    ``[database] link_timeout``: seconds to connect, seconds without
    traffic before the first keep-alive probe, seconds between probes,
    how many, and TCP_USER_TIMEOUT in milliseconds."""


def link_bounds():
    """Linux drops a connection with TCP_USER_TIMEOUT set at the first
    keep-alive probe due once that long has passed since the peer was
    last heard (it then ignores the probe count): the idle time and the
    interval are chosen so that a probe falls due exactly then."""
    timeout = CONF.database.link_timeout
    interval = max(1, (timeout - max(1, timeout // 2)) // KEEPALIVE_PROBES)
    idle = max(1, timeout - KEEPALIVE_PROBES * interval)
    return LinkBounds(min(CONNECT_TIMEOUT, timeout), idle, interval,
                      KEEPALIVE_PROBES, timeout * 1000)


def _bound_link(sock, bounds):
    """Give the TCP socket ``sock`` the keep-alive probes and
    TCP_USER_TIMEOUT of ``bounds``; a Unix socket has no link to lose."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, bounds.idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL,
                    bounds.interval)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, bounds.probes)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT,
                    bounds.user_timeout_ms)


def _libpq_version(parsed):
    """The libpq version of the URL's driver (psycopg2 or psycopg), 0
    when the driver is not installed (the engine's creation says which
    extra brings it)."""
    try:
        dbapi = parsed.get_dialect().import_dbapi()
    except ImportError:
        return 0
    if parsed.get_driver_name() == 'psycopg2':
        return dbapi.extensions.libpq_version()
    return dbapi.pq.version()


def _libpq_link_args(parsed, bounds):
    args = {'keepalives': 1, 'keepalives_idle': bounds.idle,
            'keepalives_interval': bounds.interval,
            'keepalives_count': bounds.probes}
    if _libpq_version(parsed) >= _LIBPQ_USER_TIMEOUT:
        args['tcp_user_timeout'] = bounds.user_timeout_ms
    return args


def _pymysql_opener(bounds):
    """Open a PyMySQL connection on a socket made here with the link
    bounds, so that they hold from the handshake on (PyMySQL makes its
    own with no timeout past the TCP connect, and no way in before the
    handshake)."""
    def _open(dialect, cargs, cparams):
        connection = dialect.connect(*cargs, **dict(cparams,
                                                    defer_connect=True))
        if connection.unix_socket:
            connection.connect()
            return connection
        source = None
        if connection.bind_address:
            source = (connection.bind_address, 0)
        try:
            sock = socket.create_connection(
                (connection.host, connection.port), bounds.connect,
                source_address=source)
        except OSError as exc:
            raise dialect.loaded_dbapi.OperationalError(
                2003, "Can't connect to MySQL server on %r (%s)"
                % (connection.host, exc)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _bound_link(sock, bounds)
        # The handshake: its failures come as PyMySQL's own errors.
        connection.connect(sock)
        return connection
    return _open


def _mysql_engine(url, **kwargs):
    if 'charset' not in url.query:
        url = url.update_query_dict({'charset': 'utf8mb4'})
    engine = sa.create_engine(url, pool_recycle=MYSQL_POOL_RECYCLE,
                              **kwargs)

    @event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        cursor = dbapi_connection.cursor()
        cursor.execute("SET SESSION sql_mode = '%s'" % MYSQL_SQL_MODE)
        # A Galera node applies what the others committed a moment
        # later: a read, update or delete waits until it has, so that a
        # service working through one node sees what another service
        # wrote through another before it sent its message.
        cursor.execute("SHOW VARIABLES WHERE Variable_name IN "
                       "('wsrep_on', 'idle_transaction_timeout')")
        found = {name: value for name, value in cursor.fetchall()}
        if str(found.get('wsrep_on', '')).upper() == 'ON':
            cursor.execute('SET SESSION wsrep_sync_wait = %d'
                           % GALERA_SYNC_WAIT)
        idle = CONF.database.idle_transaction_timeout
        if idle and 'idle_transaction_timeout' in found:
            # MariaDB: a transaction whose client was cut before its
            # commit holds its locks no longer than that.
            cursor.execute('SET SESSION idle_transaction_timeout = %d'
                           % idle)
        cursor.close()

    return engine


def _create(url, writer):
    if url.startswith('sqlite'):
        return _sqlite_engine(url, 'BEGIN IMMEDIATE' if writer is True
                              else 'BEGIN')
    parsed = sa.engine.make_url(url)
    if writer == LOOK:
        # Its own connections: a pool that work keeps busy says nothing
        # about the server.
        kwargs = {'pool_size': 1, 'max_overflow': 1,
                  'pool_timeout': CONNECT_TIMEOUT, 'connect_args': {}}
    else:
        kwargs = {'pool_size': 10, 'max_overflow': 20, 'connect_args': {}}
    bounds = link_bounds()
    if parsed.get_driver_name() in _TAKE_CONNECT_TIMEOUT:
        kwargs['connect_args']['connect_timeout'] = bounds.connect
    opener = None
    if parsed.get_driver_name() in _LIBPQ:
        kwargs['connect_args'].update(_libpq_link_args(parsed, bounds))
    elif parsed.get_driver_name() == 'pymysql':
        opener = _pymysql_opener(bounds)
    try:
        engine = _ping_rested(_server_engine(parsed, kwargs))
    except ImportError as exc:
        raise DriverMissing(parsed, exc) from exc
    # A server that refuses connections is waited for (a restart), and
    # its outage is one WARNING in the log, whichever of its databases
    # and connections meet it.
    server = outage.server_of(parsed)
    event.listen(engine, 'do_connect', outage.connect(server, opener))
    event.listen(engine, 'handle_error', outage.cut(server))
    return engine


def _server_engine(parsed, kwargs):
    if parsed.get_backend_name() in ('mysql', 'mariadb'):
        return _mysql_engine(parsed, isolation_level=ISOLATION_LEVEL,
                             **kwargs)
    if parsed.get_backend_name() == 'postgresql':
        # The session's default, set as it connects, rather than the
        # driver's isolation level: psycopg2 then begins with a bare
        # BEGIN, and its ping (which switches to autocommit and back)
        # sends no SET of its own.
        options = parsed.query.get('options')
        idle = CONF.database.idle_transaction_timeout
        kwargs['connect_args']['options'] = ' '.join(filter(None, (
            options, PG_ISOLATION_OPTION,
            idle and PG_IDLE_OPTION % idle)))
    else:
        kwargs['isolation_level'] = ISOLATION_LEVEL
    return sa.create_engine(parsed, **kwargs)


def _ping_rested(engine):
    """Ping a pooled connection that rested in the pool for
    ``PING_AFTER_REST`` seconds or more as it is taken out, and replace
    it if the server dropped it (restarted, or closed it idle).

    A connection in steady use is not pinged: one the server dropped
    while it was in use fails its next statement as a disconnect, and
    SQLAlchemy then replaces every connection of the pool opened before
    it. The ping of every checkout that pool_pre_ping sends would be a
    round trip in each of a boot's ten transactions.
    """
    @event.listens_for(engine, 'checkin')
    def _checkin(dbapi_connection, record):
        record.info['rested_since'] = time.monotonic()

    @event.listens_for(engine, 'checkout')
    def _checkout(dbapi_connection, record, proxy):
        since = record.info.get('rested_since')
        if since is None or time.monotonic() - since < PING_AFTER_REST:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            # The pool drops this connection and opens another.
            raise sa.exc.DisconnectionError(
                'a pooled connection did not answer its ping: %s' % exc)

    return engine


# Kept here for the callers that ask it of a claim or a quota row.
aborted_for_a_race = outage.aborted_for_a_race


def get_engine(url, writer=True):
    if not url:
        raise ValueError('no database connection configured')
    key = (url, writer)
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _create(url, writer)
        return engine


# {SQLite URL: the lock this process's writers of it queue on}.
_write_locks = {}
# Seconds a writer waits for that lock before it goes on to SQLite's own
# (the busy timeout), so that no order of taking two databases' locks
# can hang a thread for good.
WRITE_LOCK_TIMEOUT = 30


class WriteLock:
    """The lock the writers of one SQLite database in this process queue
    on: reentrant, handed to the writer that waited longest when its
    holder lets it go (a thread that writes again at once does not take
    it back before the others), and to the writers of single requests (a
    claim) before those of bulk work (the group commit of reports), which
    would otherwise make a claim wait for batch after batch."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._owner = None
        self._depth = 0
        # The threads waiting, each a _Waiter, by kind.
        self._urgent = collections.deque()
        self._bulk = collections.deque()

    def acquire(self, timeout=None, bulk=False):
        me = threading.get_ident()
        with self._mutex:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None and not self._urgent and (
                    bulk is False or not self._bulk):
                self._owner, self._depth = me, 1
                return True
            waiter = _Waiter(me, self._mutex)
            queue = self._bulk if bulk else self._urgent
            queue.append(waiter)
            waiter.wait_for(lambda: waiter.granted, timeout)
            if waiter.granted:
                return True
            queue.remove(waiter)
            return False

    def release(self):
        with self._mutex:
            self._depth -= 1
            if self._depth:
                return
            self._owner = None
            for queue in (self._urgent, self._bulk):
                if queue:
                    waiter = queue.popleft()
                    self._owner, self._depth = waiter.thread, 1
                    waiter.granted = True
                    # Only the thread handed the lock wakes: the others
                    # would wake to find it not theirs, one after another.
                    waiter.notify()
                    return


class _Waiter(threading.Condition):
    """A thread waiting for a WriteLock, woken only when handed it."""

    def __init__(self, thread, mutex):
        super().__init__(mutex)
        self.thread = thread
        self.granted = False


def _write_lock(url):
    if not url.startswith('sqlite'):
        return None
    with _lock:
        lock = _write_locks.get(url)
        if lock is None:
            lock = _write_locks[url] = WriteLock()
        return lock


@contextlib.contextmanager
def writer(url, bulk=False):
    """A session in a transaction that commits on success. ``bulk``
    says that it writes for many requests at once (the group commit of
    compute reports): on SQLite, this process's writers for single
    requests go first."""
    engine = get_engine(url, True)
    lock = _write_lock(url)
    held = lock is not None and lock.acquire(timeout=WRITE_LOCK_TIMEOUT,
                                             bulk=bulk)
    committing = False
    try:
        with orm.Session(engine, expire_on_commit=False) as s:
            with s.begin():
                yield s
                # From here on, what fails may have been written...
                outage.note_effect()
                committing = True
    except sa.exc.DBAPIError as exc:
        # ...but for a commit the database aborted (a deadlock, Galera's
        # certification): nothing of it was.
        if committing and outage.aborted_for_a_race(exc):
            outage.withdraw_effect()
        raise
    finally:
        if held:
            lock.release()


@contextlib.contextmanager
def reader(url):
    """A session for reads; nothing it does is committed."""
    with orm.Session(get_engine(url, False), expire_on_commit=False) as s:
        with s.begin():
            yield s


@contextlib.contextmanager
def connection(url):
    """A Core connection in a read transaction: for the small reads on
    hot paths, without an ORM session's bookkeeping."""
    with get_engine(url, False).connect() as conn:
        with conn.begin():
            yield conn


# The engines of the looks at a server (look), beside its readers' and
# writers'.
LOOK = 'look'


def look(url):
    """Raise unless the database at ``url`` answers a query now: one
    ``SELECT 1`` that does not wait for an outage (a connection refused
    fails at once, one that hangs within CONNECT_TIMEOUT), on a
    connection of its own."""
    with outage.not_waiting():
        with get_engine(url, LOOK).connect() as conn:
            conn.execute(sa.text('SELECT 1'))


@contextlib.contextmanager
def snapshot(url):
    """A Core connection in a read transaction whose statements all see
    one snapshot of the database: REPEATABLE READ on PostgreSQL and
    MySQL/MariaDB (their reads are snapshots there), a read transaction
    on SQLite (one in WAL mode is one). For a reader that compares what
    several statements return."""
    with get_engine(url, False).connect() as conn:
        if conn.dialect.name == 'postgresql':
            # For this transaction alone: the connection goes back to the
            # pool at the session's default, with nothing to reset.
            with conn.begin():
                conn.exec_driver_sql(
                    'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
                yield conn
            return
        if conn.dialect.name != 'sqlite':
            conn = conn.execution_options(isolation_level='REPEATABLE READ')
        with conn.begin():
            yield conn


def dispose_all():
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
