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
  that outlives it yet: no commit, no message sent
  (:func:`.retrying.retrying`, or :func:`run` for one step of a longer
  piece of work; the engines and the RPC clients count those per
  thread, :func:`note_effect`). Otherwise, or past the bound, its
  caller gets :class:`~scheduler_split.exception.DatabaseUnavailable`
  and the log a WARNING line rather than a traceback. The scheduler's
  methods answer so at once (:class:`.retrying.RetryingEndpoint` with
  ``again`` False): a claim also changes the hosts it holds in memory.
  A process that stands aside (its peers reach the database and take
  its work, :mod:`scheduler_split.stand_aside`) waits no more.
- A transaction the database aborted for a race (a deadlock; on
  Galera, a commit refused because another node committed a write of
  the same rows first) wrote nothing: the work is run again at once, a
  bounded number of times (:func:`retry_races`), in every service and
  in the API, if it did nothing else that outlives it.
- An outage of a database server is one WARNING line in each process's
  log, and its end one INFO (:class:`_Outages`): the first sign of it
  (a connection it refused, or work that failed for it after it closed
  a connection in use) is the WARNING, the first connection opened to
  it after that the INFO. What else fails for it meanwhile (requests
  answered 503, periodic tasks, work given up, connections the pool
  could not reset) logs at DEBUG (:func:`report`, which those callers
  log through), and so does work that logs the outage's error with its
  traceback (:class:`_OneLine`, on every handler of the log): not one
  WARNING per request or per task, and never a traceback.
"""

import logging
import random
import threading
import time

import oslo_messaging as messaging
from sqlalchemy.engine import url as sa_url
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
              'not yet accepting connections',
              'not currently accepting connections')

# The longest pause between two tries.
MAX_PAUSE = 2.0

_local = threading.local()

# Set as the process stops: waiting for a database that may not come
# back before the stop deadline would only make the stop abandon work
# that can still end with an answer (DatabaseUnavailable) instead.
_stopping = threading.Event()
# Set while the process stands aside (scheduler_split.stand_aside): its
# peers take the work, and what waits for the database here gives up.
_aside = threading.Event()
_asides = set()
_waiting = threading.Condition()


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


class _OneLine(logging.Filter):
    """A record that carries the error of a database outage (work that
    met it, logged with its traceback by ``LOG.exception``; SQLAlchemy's
    pool, which logs a connection it could not reset as it came back as
    an ERROR with a traceback, and drops it) is one line, with what the
    error says: a WARNING if it is the first sign of the outage
    (:func:`report`), else at DEBUG. On the pool's loggers, and on every
    handler of the services' logs (:func:`one_line_outages`)."""

    def filter(self, record):
        # Every handler sees the record: it is decided once.
        shown = getattr(record, 'outage_line_shown', None)
        if shown is not None:
            return shown
        exc = record.exc_info[1] if record.exc_info else None
        if record.levelno < logging.WARNING or exc is None or \
                not is_database_outage(exc):
            return True
        level = (logging.WARNING if _outages.first_failure()
                 else logging.DEBUG)
        record.msg = '%s: %s' % (record.getMessage(), reason(exc))
        record.args = None
        record.exc_info = record.exc_text = None
        record.levelno = level
        record.levelname = logging.getLevelName(level)
        record.outage_line_shown = logging.getLogger(
            record.name).isEnabledFor(level)
        return record.outage_line_shown


_one_line = _OneLine()
for _pool in ('QueuePool', 'NullPool', 'SingletonThreadPool',
              'StaticPool'):
    logging.getLogger('sqlalchemy.pool.impl.%s' % _pool).addFilter(
        _one_line)


def one_line_outages():
    """Have every handler of the log (set up already) write a record
    that carries a database outage's error as :class:`_OneLine` does:
    never a traceback."""
    for handler in logging.getLogger().handlers:
        if _one_line not in handler.filters:
            handler.addFilter(_one_line)


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


def give_up(aside=False):
    """From now on no thread waits for a database: the process stops
    (or, with ``aside``, stands aside until no service of it does any
    more: :func:`stand_aside`). Those waiting give up at once."""
    (_aside if aside else _stopping).set()
    with _waiting:
        _waiting.notify_all()


def stand_aside(owner, aside):
    """``owner`` (a service) stands aside, or takes part again: the
    process waits for no database while any of its services stands
    aside."""
    with _waiting:
        (_asides.add if aside else _asides.discard)(owner)
        if not _asides:
            _aside.clear()
    if aside:
        give_up(aside=True)


def standing_aside():
    """Whether the process stands aside now (:func:`stand_aside`): its
    peers reach the database and take the work of its queues."""
    return _aside.is_set()


def _pause_for_database(seconds):
    """Sleep ``seconds``, or less if the process stops or stands aside
    meanwhile; False if it does."""
    with _waiting:
        if not (_stopping.is_set() or _aside.is_set()):
            _waiting.wait(seconds)
    return not (_stopping.is_set() or _aside.is_set())


def pause(seconds):
    """Sleep ``seconds``, or less if the process stops meanwhile; False
    if it stops."""
    return not _stopping.wait(seconds)


def wait_seconds():
    """How long this thread waits for a database to come back."""
    if getattr(_local, 'not_waiting', False) or _stopping.is_set() or \
            _aside.is_set():
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
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.pause = CONF.database.retry_interval

    def ran_out(self):
        """Whether it waited its whole time, and no more is left."""
        return bool(self.seconds) and self.deadline <= time.monotonic()

    def next(self):
        left = self.deadline - time.monotonic()
        if left <= 0 or not _pause_for_database(min(self.pause, left)):
            return False
        self.pause = min(self.pause * 2, MAX_PAUSE)
        return True


class _Outages:
    """The database servers this process sees away, each named by its
    URL without user, password nor database (:func:`server_of`): one
    WARNING as the first sign of an outage is seen, one INFO as the first
    connection to the server opens after it.

    A connection the server closed as it was in use (:func:`cut`, the
    engines' hook) is a sign only once work fails for it
    (:meth:`first_failure`) or a connection is refused: a server that
    closed one idle connection is no outage, and the next connection
    opened says so silently. Work that failed for an outage another
    service met (its answer was ``DatabaseUnavailable``) is the WARNING
    of an outage of no server named; what this process meets of one in
    the next ``[database] retry_timeout`` seconds, or until a connection
    opens, is taken for that outage."""

    def __init__(self):
        # {server: when the WARNING said it was away}.
        self._since = {}
        # Servers that closed a connection in use, not reported yet.
        self._cut = set()
        # When work failed for an outage of no server named, if it did.
        self._heard = None
        self._lock = threading.Lock()

    def _heard_of_one(self, now):
        return (self._heard is not None and
                now - self._heard < CONF.database.retry_timeout)

    def refused(self, name, exc):
        now = time.monotonic()
        with self._lock:
            if name in self._since:
                return
            self._since[name] = now
            self._cut.discard(name)
            if self._heard_of_one(now):
                return
        seconds = wait_seconds()
        if seconds:
            LOG.warning('Database server %s refuses connections (%s); '
                        'waiting for it for up to %s seconds a step '
                        '([database] retry_timeout)', name, describe(exc),
                        seconds)
        else:
            LOG.warning('Database server %s refuses connections (%s)',
                        name, describe(exc))

    def cut(self, name):
        with self._lock:
            if name not in self._since:
                self._cut.add(name)

    def first_failure(self):
        """Work failed for a database outage: whether it is the first
        sign of one that this process sees (to log as a WARNING), the
        servers that closed connections in use since their last one
        opened being away from now on; False while one is reported."""
        now = time.monotonic()
        with self._lock:
            if self._since or self._heard_of_one(now):
                return False
            if not self._cut:
                self._heard = now
            for name in self._cut:
                self._since[name] = now
            self._cut.clear()
            return True

    def opened(self, name):
        if name not in self._since and name not in self._cut and \
                self._heard is None:
            return
        with self._lock:
            since = self._since.pop(name, None)
            self._cut.discard(name)
            self._heard = None
        if since is not None:
            LOG.info('Database server %s accepts connections again after '
                     '%.1f seconds', name, time.monotonic() - since)


_outages = _Outages()


def server_of(url):
    """How :class:`_Outages` names the server of ``url`` (a SQLAlchemy
    URL): the databases of one server are away together."""
    return sa_url.URL.create(url.drivername, host=url.host, port=url.port,
                             query={key: value for key, value
                                    in url.query.items() if key in
                                    ('host', 'port', 'unix_socket')}
                             ).render_as_string()


def connect(name, opener=None):
    """The engines' ``do_connect`` hook for the database server ``name``
    (:func:`server_of`): open a DBAPI connection (``opener(dialect,
    cargs, cparams)``, by default the dialect's), waiting for a server
    that refuses it."""
    def _connect(dialect, conn_rec, cargs, cparams):
        pauses = None
        while True:
            try:
                if opener is None:
                    connection = dialect.connect(*cargs, **cparams)
                else:
                    connection = opener(dialect, cargs, cparams)
            except Exception as exc:
                if not _transient(exc):
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


def cut(name):
    """The engines' ``handle_error`` hook for the database server
    ``name``: note a connection it closed in use."""
    def _handle_error(context):
        if (not context.is_disconnect and context.connection is not None
                and 'timed out' in str(
                    context.original_exception).lower()):
            # A connection in use whose peer stopped answering
            # (link_timeout): the pool replaces it and those opened
            # before it.
            context.is_disconnect = True
        if context.is_disconnect:
            _outages.cut(name)
    return _handle_error


def reason(exc):
    """Why work failed, in one line: for a database outage, that a
    database is unavailable and the first line of the driver's error
    (never its SQL)."""
    if is_database_outage(exc):
        return 'a database is unavailable (%s)' % describe(exc)
    return exception.describe(exc)


def report(log, exc, msg, *args, **kwargs):
    """Log ``msg % args``, said of work that failed for ``exc``: as a
    WARNING, but for a database outage this process reported already,
    at DEBUG (:class:`_Outages`). True if it was a WARNING."""
    if is_database_outage(exc) and not _outages.first_failure():
        log.debug(msg, *args, **kwargs)
        return False
    log.warning(msg, *args, **kwargs)
    return True


def run(func, *args, what=None, again=True, idempotent=False, check=None,
        **kwargs):
    """``func(*args, **kwargs)``, run again when a database outage broke
    it, for ``[database] retry_timeout`` seconds (with ``again`` False,
    run once). What still fails on an outage raises
    ``DatabaseUnavailable`` (from the outage's error) after one line that
    says what failed (``what``, by default the function's name): a
    WARNING past the bound, else as :func:`report` logs it.

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
        # Past the bound, the work fails for good: a WARNING of its own.
        # Answered at once, or unsure whether it committed, it is part of
        # the outage reported already.
        message = '%s failed: a database is unavailable (%s)'
        if pauses.ran_out():
            LOG.warning(message, what, describe(failure))
        else:
            report(LOG, failure, message, what, describe(failure))
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
