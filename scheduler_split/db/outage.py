"""A database server that goes away for a while (a restart, a
fail-over): the services wait for it rather than fail what they were
doing, for ``[database] retry_timeout`` seconds.

Each rule lives here, once:

- Opening a connection that the server refuses (it is down, starting up
  or shutting down) is tried again with a growing pause (:func:`connect`,
  the engines' connect hook). The API does not wait: its requests run
  :func:`not_waiting` and answer 503 with ``Retry-After`` at once.
- An RPC method of a conductor whose transaction the outage broke is
  run again from the start, within the same bound, if it did nothing
  that outlives it yet: no commit, no message sent (:func:`retrying`,
  or :func:`run` for one step of a longer piece of work; the engines
  and the RPC clients count those per thread, :func:`note_effect`).
  Otherwise, or past the bound, its caller gets
  :class:`~scheduler_split.exception.DatabaseUnavailable` and the log a
  WARNING line rather than a traceback. The scheduler's methods answer
  so at once (:class:`RetryingEndpoint` with ``again`` False): a claim
  also changes the hosts it holds in memory.
- A transaction the database aborted for a race (a deadlock; on
  Galera, a commit refused because another node committed a write of
  the same rows first) wrote nothing: the work is run again at once, a
  bounded number of times (:func:`retry_races`), in every service and
  in the API, if it did nothing else that outlives it.
- The first connection refused logs one WARNING for its database, and
  the first one opened after it one INFO (:class:`_Outages`); a periodic
  task failing on an outage does the same (``service.PeriodicTask``,
  with :func:`is_outage`); a connection the pool could not reset is one
  WARNING line too (:class:`_PoolResetFilter`).
"""

import functools
import inspect
import logging
import random
import threading
import time

import oslo_messaging as messaging
from sqlalchemy import exc as sa_exc

from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# What SQLAlchemy (and oslo.db, when installed) raises when a database
# cannot be reached, dropped the connection, is locked or has no free
# connection: none of them says anything about the request.
DATABASE_UNAVAILABLE = (sa_exc.OperationalError, sa_exc.InterfaceError,
                        sa_exc.DisconnectionError, sa_exc.TimeoutError,
                        exception.DatabaseUnavailable)
try:
    from oslo_db import exception as _db_exc
except ImportError:  # oslo.db is not a dependency
    pass
else:
    DATABASE_UNAVAILABLE += (_db_exc.DBConnectionError,)
_UNAVAILABLE_NAMES = frozenset(cls.__name__ for cls in DATABASE_UNAVAILABLE)

# What the bus raises when a message or its answer could not travel.
BUS_UNAVAILABLE = (messaging.MessagingTimeout,
                   messaging.MessageDeliveryFailure)

# What a server that is down, starting, stopping or full answers a
# connection with (PostgreSQL's and MySQL's/MariaDB's words, lower case):
# worth waiting for. Anything else (a wrong password, a database that
# does not exist) fails at once.
_TRANSIENT = ('connection refused', 'starting up', 'shutting down',
              'in recovery mode', 'server closed the connection',
              'could not connect', "can't connect", 'lost connection',
              'timeout expired', 'timed out', 'too many connections',
              'terminating connection', 'connection reset',
              'not yet accepting connections')

# The longest pause between two tries.
MAX_PAUSE = 2.0

_local = threading.local()

# Set as the process stops: waiting for a database that may not come
# back before the stop deadline would only make the stop abandon work
# that can still end with an answer (DatabaseUnavailable) instead.
_stopping = threading.Event()


# The drivers whose own errors SQLAlchemy lets through unwrapped (as it
# sets a connection's isolation level, say), and which of those say
# that the server is away.
_DRIVERS = ('pymysql', 'MySQLdb', 'psycopg2', 'psycopg')
_DRIVER_UNAVAILABLE = ('OperationalError', 'InterfaceError')


# PostgreSQL's deadlock_detected and serialization_failure (SQLSTATE).
_PG_ABORTED = ('40P01', '40001')
# MySQL's ER_LOCK_DEADLOCK (errno): InnoDB rolled the whole transaction
# back, or a Galera node refused it at commit (certification: another
# node committed a write of the same rows first).
_MYSQL_ABORTED = (1213,)


def aborted_for_a_race(exc):
    """Whether the database aborted the transaction that raised ``exc``
    (a ``DBAPIError``) to break a deadlock or a serialization conflict
    with another one (on Galera, at its commit, to another node's):
    nothing of it was written, and trying it again may succeed."""
    orig = getattr(exc, 'orig', exc)
    if getattr(orig, 'pgcode', None) in _PG_ABORTED:
        return True
    args = getattr(orig, 'args', ())
    return (type(orig).__module__.split('.')[0] in ('pymysql', 'MySQLdb')
            and bool(args) and args[0] in _MYSQL_ABORTED)


def is_database_outage(exc):
    """Whether ``exc`` says a database could not be used, here or (a
    ``RemoteError``) in the service that answered."""
    if isinstance(exc, DATABASE_UNAVAILABLE):
        return True
    cls = type(exc)
    if (cls.__name__ in _DRIVER_UNAVAILABLE and
            cls.__module__.split('.')[0] in _DRIVERS):
        return True
    return (isinstance(exc, messaging.RemoteError) and
            exc.exc_type in _UNAVAILABLE_NAMES)


class _PoolResetFilter(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not reset as it came
    back (the server went away meanwhile) as an ERROR with a traceback;
    the pool drops it and opens another. Here it is one WARNING line."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        if record.levelno >= logging.ERROR and exc is not None and \
                is_database_outage(exc):
            record.msg = '%s: %s' % (record.getMessage(), describe(exc))
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno = logging.WARNING
            record.levelname = logging.getLevelName(logging.WARNING)
        return True


for _pool in ('QueuePool', 'NullPool', 'SingletonThreadPool',
              'StaticPool'):
    logging.getLogger('sqlalchemy.pool.impl.%s' % _pool).addFilter(
        _PoolResetFilter())


def is_outage(exc):
    """Whether ``exc`` says a database or the bus is away, rather than
    that something is wrong with the work itself."""
    return is_database_outage(exc) or isinstance(exc, BUS_UNAVAILABLE)


def describe(exc):
    """The first line of what ``exc`` says, for a one-line log."""
    text = exception.describe(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _transient(exc):
    text = str(exc).lower()
    return any(marker in text for marker in _TRANSIENT)


def give_up():
    """From now on no thread waits for a database: the process stops.
    Those waiting give up at once."""
    _stopping.set()


def pause(seconds):
    """Sleep ``seconds``, or less if the process stops meanwhile; False
    if it stops."""
    return not _stopping.wait(seconds)


def wait_seconds():
    """How long this thread waits for a database to come back."""
    if getattr(_local, 'not_waiting', False) or _stopping.is_set():
        return 0.0
    return CONF.database.retry_timeout


class not_waiting:
    """Within it, this thread waits for no database (the API's
    requests)."""

    def __enter__(self):
        self._before = getattr(_local, 'not_waiting', False)
        _local.not_waiting = True
        return self

    def __exit__(self, *exc_info):
        _local.not_waiting = self._before


def note_effect():
    """This thread did something that outlives a failure: a writer is
    about to commit, or a message went out. Running its work again from
    the start could do it twice."""
    _local.effects = getattr(_local, 'effects', 0) + 1


class repeatable:
    """Within it, what this thread commits may be committed again with
    no harm (a row made if it is missing): it is no effect."""

    def __enter__(self):
        self._mark = _effects()
        return self

    def __exit__(self, *exc_info):
        _local.effects = self._mark


def withdraw_effect():
    """The commit :func:`note_effect` announced was aborted by the
    database (:func:`aborted_for_a_race`): nothing of it was written."""
    _local.effects = getattr(_local, 'effects', 0) - 1


def _effects():
    return getattr(_local, 'effects', 0)


# How often work whose transaction the database aborted for a race is
# tried in all, and the longest pause before each next try: RACE_PAUSE
# seconds, doubling with each try up to MAX_PAUSE / 2. The pauses are
# random, so that the racers part. On Galera with every controller
# writing to its own node, a burst of one project's boots through three
# APIs all update that project's quota row: one boot in a hundred then
# takes ten tries or more.
RACE_TRIES = 20
RACE_PAUSE = 0.02


def retry_races(func, *args, **kwargs):
    """``func(*args, **kwargs)``, run again (RACE_TRIES times in all at
    most) when the database aborted its transaction to break a deadlock
    or, on Galera, at commit for a write another node committed first,
    if nothing of it outlived the failure (no commit, no message): the
    database answers, so this is not an outage to wait out, and even
    the API, which waits for no database, runs it again."""
    for attempt in range(1, RACE_TRIES + 1):
        mark = _effects()
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if (attempt == RACE_TRIES or _effects() != mark or
                    not isinstance(exc, sa_exc.DBAPIError) or
                    not aborted_for_a_race(exc)):
                raise
            LOG.debug('%s: the database aborted it for a race (%s); '
                      'running it again', getattr(func, '__name__', func),
                      describe(exc))
        time.sleep(random.uniform(
            0, min(MAX_PAUSE / 2, RACE_PAUSE * 2 ** attempt)))


class _Pauses:
    """``[database] retry_interval``, doubling up to MAX_PAUSE, until
    ``seconds`` have passed: ``next()`` sleeps the next pause, or
    returns False once no time is left."""

    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds
        self.pause = CONF.database.retry_interval

    def next(self):
        left = self.deadline - time.monotonic()
        if left <= 0 or not pause(min(self.pause, left)):
            return False
        self.pause = min(self.pause * 2, MAX_PAUSE)
        return True


class _Outages:
    """Which databases refuse connections now: one WARNING as the first
    refusal is seen, one INFO as the first connection opens after it."""

    def __init__(self):
        self._since = {}
        self._lock = threading.Lock()

    def refused(self, name, exc):
        with self._lock:
            if name in self._since:
                return
            self._since[name] = time.monotonic()
        LOG.warning('Database %s refuses connections (%s); waiting for it '
                    'for up to %s seconds a step ([database] '
                    'retry_timeout)', name, describe(exc), wait_seconds())

    def opened(self, name):
        if name not in self._since:
            return
        with self._lock:
            since = self._since.pop(name, None)
        if since is not None:
            LOG.info('Database %s accepts connections again after %.1f '
                     'seconds', name, time.monotonic() - since)


_outages = _Outages()


def connect(name):
    """The engines' ``do_connect`` hook for the database ``name`` (a URL
    without its password): open a DBAPI connection, waiting for a server
    that refuses it."""
    def _connect(dialect, conn_rec, cargs, cparams):
        pauses = None
        while True:
            try:
                connection = dialect.connect(*cargs, **cparams)
            except Exception as exc:
                if not _transient(exc) or not wait_seconds():
                    raise
                _outages.refused(name, exc)
                if pauses is None:
                    pauses = _Pauses(wait_seconds())
                if not pauses.next():
                    raise
                continue
            _outages.opened(name)
            return connection
    return _connect


def run(func, *args, what=None, again=True, idempotent=False, check=None,
        **kwargs):
    """``func(*args, **kwargs)``, run again when a database outage broke
    it, for ``[database] retry_timeout`` seconds (with ``again`` False,
    run once). What still fails on an outage raises
    ``DatabaseUnavailable`` (from the outage's error) after one WARNING
    line that says what failed (``what``, by default the function's
    name).

    A server that dies closes the connections in use: the statement under
    way fails, or the commit, and a commit that failed may have been
    written or not. ``func`` is run again after a failure before it
    committed or sent anything; after one that may have committed, only
    if it is ``idempotent`` (running it twice does what running it once
    does), or once ``check()`` (run as soon as the database answers
    again) says it was not done: ``check`` returns ``(done, result)``,
    ``result`` being what ``func`` returns when it was."""
    what = what or func.__name__
    pauses = None
    while True:
        mark = _effects()
        try:
            return retry_races(func, *args, **kwargs)
        except Exception as exc:
            if not is_database_outage(exc):
                raise
            if getattr(exc, 'waited_out', False):
                # A step within waited already.
                raise
            failure = exc
        if pauses is None:
            pauses = _Pauses(wait_seconds() if again else 0)
        unsure = _effects() != mark
        if (not unsure or idempotent or check is not None) and \
                pauses.next():
            LOG.debug('%s met a database outage (%s); running it again',
                      what, describe(failure))
            if not unsure or idempotent:
                continue
            try:
                done, result = _checked(check, pauses)
            except Exception as exc:
                if not is_database_outage(exc):
                    raise
                failure = exc
            else:
                if done:
                    return result
                continue
        LOG.warning('%s failed: a database is unavailable (%s)', what,
                    describe(failure))
        error = exception.DatabaseUnavailable(reason=describe(failure))
        error.waited_out = True
        raise error from failure


def _checked(check, pauses):
    """``check()``, once the database answers it (within ``pauses``)."""
    while True:
        try:
            return check()
        except Exception as exc:
            if not is_database_outage(exc) or not pauses.next():
                raise


def retrying(func, what=None, again=True):
    """``func`` (an RPC method) as :func:`run` runs it (or, with
    ``again`` False, run once). What still fails on an outage reaches
    the caller as ``DatabaseUnavailable`` through oslo's
    ``ExpectedException``: the dispatcher logs it at DEBUG, not as a
    traceback."""
    what = what or func.__name__

    @functools.wraps(func)
    def _run(*args, **kwargs):
        try:
            return run(func, *args, what=what, again=again, **kwargs)
        except exception.DatabaseUnavailable:
            raise messaging.ExpectedException()
    return _run


class RetryingEndpoint:
    """An RPC endpoint whose exposed methods are :func:`retrying`.
    ``again`` False: they are not run again, only answered with
    ``DatabaseUnavailable`` at once (the scheduler's, whose writes also
    change the hosts it holds in memory), but for the methods named in
    ``again_for``, which may be run again."""

    def __init__(self, endpoint, again=True, again_for=()):
        self._endpoint = endpoint
        self._again = again
        self._again_for = frozenset(again_for)
        self._methods = {}

    def __getattr__(self, name):
        value = getattr(self._endpoint, name)
        if name.startswith('_') or not inspect.ismethod(value):
            # A Target is callable too: only methods are RPC methods.
            return value
        method = self._methods.get(name)
        if method is None:
            method = self._methods[name] = retrying(
                value, '%s.%s' % (type(self._endpoint).__name__, name),
                again=self._again or name in self._again_for)
        return method
