"""Engines and transactions, one engine pair per database URL.

SQLite (the all-in-one) gets WAL, a busy timeout and ``BEGIN IMMEDIATE``
for writing transactions, so that concurrent writers queue on the
database lock instead of failing in the middle of a read-then-write
transaction. The writers of one process also queue on a lock of their
own per database first: SQLite's busy handler sleeps ever longer between
its tries (up to a tenth of a second), so a writer that waited for it
would go on sleeping after the lock was free. PostgreSQL and MySQL keep
their default isolation; claims rely on the generation check, not on
the isolation level.
"""

import contextlib
import threading

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

_engines = {}
_lock = threading.Lock()

# Seconds to open a connection: a database server that is gone fails a
# request (the API answers 503) instead of hanging it.
CONNECT_TIMEOUT = 5
_TAKE_CONNECT_TIMEOUT = ('psycopg2', 'psycopg', 'pymysql', 'mysqldb')


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
        cursor.close()

    @event.listens_for(engine, 'begin')
    def _begin(connection):
        connection.exec_driver_sql(begin)

    return engine


def _create(url, writer):
    if url.startswith('sqlite'):
        return _sqlite_engine(url, 'BEGIN IMMEDIATE' if writer else 'BEGIN')
    # Pre-ping replaces a pooled connection the server dropped before it
    # is used.
    connect_args = {}
    if sa.engine.make_url(url).get_driver_name() in _TAKE_CONNECT_TIMEOUT:
        connect_args['connect_timeout'] = CONNECT_TIMEOUT
    return sa.create_engine(url, pool_pre_ping=True, pool_size=10,
                            max_overflow=20, connect_args=connect_args)


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


def _write_lock(url):
    if not url.startswith('sqlite'):
        return None
    with _lock:
        lock = _write_locks.get(url)
        if lock is None:
            lock = _write_locks[url] = threading.RLock()
        return lock


@contextlib.contextmanager
def writer(url):
    """A session in a transaction that commits on success."""
    engine = get_engine(url, True)
    lock = _write_lock(url)
    held = lock is not None and lock.acquire(timeout=WRITE_LOCK_TIMEOUT)
    try:
        with orm.Session(engine, expire_on_commit=False) as s:
            with s.begin():
                yield s
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


def dispose_all():
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
