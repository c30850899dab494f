"""A database server away for a while: connections wait for it, RPC
methods that committed nothing run again, and each outage is one WARNING
and one INFO in the log, not a traceback per try."""

import logging
import socket
import sys
import threading
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split.db import retrying
from scheduler_split import exception
from scheduler_split import rpc
from scheduler_split import service

REFUSED = Exception('connection to server at "127.0.0.1", port 5432 '
                    'failed: Connection refused')


@pytest.fixture
def quick(override):
    override('retry_timeout', 2.0, group='database')
    override('retry_interval', 0.01, group='database')


class _Dialect:
    """Refuses the first ``refusals`` connections with ``error``."""

    def __init__(self, refusals, error=REFUSED):
        self.refusals = refusals
        self.error = error
        self.tries = 0

    def connect(self, *args, **kwargs):
        self.tries += 1
        if self.tries <= self.refusals:
            raise self.error
        return 'connection'


def _records(caplog, level):
    return [r for r in caplog.records if r.levelno == level]


def test_a_refused_connection_is_opened_once_the_server_is_back(
        quick, caplog):
    caplog.set_level(logging.INFO)
    dialect = _Dialect(refusals=3)
    connect = outage.connect('postgresql://u@127.0.0.1/db-back')
    assert connect(dialect, None, (), {}) == 'connection'
    assert dialect.tries == 4
    warnings = _records(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert 'db-back refuses connections' in warnings[0].getMessage()
    (info,) = _records(caplog, logging.INFO)
    assert 'db-back accepts connections again' in info.getMessage()
    assert not _records(caplog, logging.ERROR)


class _DownUntil:
    """Refuses every connection until ``until`` (monotonic)."""

    def __init__(self, until):
        self.until = until

    def connect(self, *args, **kwargs):
        if time.monotonic() < self.until:
            raise REFUSED
        return 'connection'


def test_many_waiters_of_one_outage_log_it_once(quick, caplog):
    caplog.set_level(logging.INFO)
    connect = outage.connect('db-many')
    dialect = _DownUntil(time.monotonic() + 0.3)
    opened = []
    # All eight ask while the server is away, however late a loaded
    # machine starts the last thread: the outage starts when all are
    # ready, and is one outage, seen by all of them.

    def away_from_now():
        dialect.until = time.monotonic() + 0.3

    together = threading.Barrier(8, action=away_from_now)

    def waiter():
        together.wait()
        opened.append(connect(dialect, None, (), {}))

    threads = [threading.Thread(target=waiter) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert opened == ['connection'] * 8
    assert [r.levelname for r in caplog.records] == ['WARNING', 'INFO']


def test_a_server_that_stays_away_fails_the_connection_after_the_timeout(
        override, caplog):
    override('retry_timeout', 0.3, group='database')
    override('retry_interval', 0.05, group='database')
    dialect = _Dialect(refusals=10 ** 6)
    start = time.monotonic()
    with pytest.raises(Exception, match='Connection refused'):
        outage.connect('db-away')(dialect, None, (), {})
    assert 0.3 <= time.monotonic() - start < 1.5
    assert dialect.tries > 2


def test_a_wrong_password_fails_at_once(quick):
    dialect = _Dialect(refusals=1, error=Exception(
        'FATAL:  password authentication failed for user "nova"'))
    with pytest.raises(Exception, match='password authentication'):
        outage.connect('db-password')(dialect, None, (), {})
    assert dialect.tries == 1


def test_an_api_request_does_not_wait(quick):
    dialect = _Dialect(refusals=1)
    with outage.not_waiting():
        with pytest.raises(Exception, match='Connection refused'):
            outage.connect('db-api')(dialect, None, (), {})
    assert dialect.tries == 1
    # Outside the request, the same refusal is waited for.
    assert outage.connect('db-api')(_Dialect(1), None, (), {})


def test_a_real_engine_waits_for_a_server_that_starts_listening(
        override, caplog):
    """psycopg2 against a port nothing listens on: the connection is
    refused by the kernel, for real, until the timeout."""
    pytest.importorskip('psycopg2')
    override('retry_timeout', 0.5, group='database')
    override('retry_interval', 0.05, group='database')
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    url = 'postgresql+psycopg2://u:secret@127.0.0.1:%d/nowhere' % port
    start = time.monotonic()
    with pytest.raises(sa_exc.OperationalError, match='refused'):
        with engines.reader(url) as session:
            session.execute(sa.text('SELECT 1'))
    assert time.monotonic() - start >= 0.5
    (warning,) = _records(caplog, logging.WARNING)
    assert 'secret' not in warning.getMessage()
    assert ('Database server postgresql+psycopg2://127.0.0.1:%d refuses '
            'connections' % port) in warning.getMessage()
    engines.dispose_all()


def _broken(message='server closed the connection unexpectedly'):
    return sa_exc.OperationalError('UPDATE instances', {},
                                   Exception(message))


def test_a_method_that_committed_nothing_runs_again(quick):
    calls = []

    def method(ctx, uuid):
        calls.append(uuid)
        if len(calls) < 3:
            raise _broken()
        return 'saved'

    assert retrying.retrying(method)(None, uuid='u1') == 'saved'
    assert calls == ['u1'] * 3


def test_a_method_that_committed_is_not_run_again(quick, caplog):
    calls = []

    def method(ctx):
        calls.append(1)
        outage.note_effect()
        raise _broken()

    with pytest.raises(messaging.ExpectedException) as info:
        retrying.retrying(method, 'Records.instance_save')(None)
    assert calls == [1]
    # What the caller gets over the bus: the dispatcher sends exc_info.
    exc = info.value.exc_info[1]
    assert isinstance(exc, exception.DatabaseUnavailable)
    assert exc.code == 503
    (warning,) = _records(caplog, logging.WARNING)
    assert warning.getMessage().startswith(
        'Records.instance_save failed: a database is unavailable')
    assert warning.exc_info is None


def test_a_method_that_sent_a_message_is_not_run_again(quick):
    """What it sent may have been acted on: running it again could do it
    twice."""
    class Client:
        target = messaging.Target(topic='compute')

        def cast(self, ctx, method, **kwargs):
            sent.append(method)

    sent, calls = [], []
    client = rpc._Patient(Client())

    def method():
        calls.append(1)
        client.cast(None, 'build_and_run_instance')
        raise _broken()

    with pytest.raises(messaging.ExpectedException):
        retrying.retrying(method)()
    assert calls == [1] and sent == ['build_and_run_instance']


def test_a_method_gives_up_after_the_timeout(override):
    override('retry_timeout', 0.2, group='database')
    override('retry_interval', 0.05, group='database')
    calls = []

    def method():
        calls.append(1)
        raise _broken('Connection refused')

    start = time.monotonic()
    with pytest.raises(messaging.ExpectedException):
        retrying.retrying(method)()
    assert 0.2 <= time.monotonic() - start < 1.0
    assert len(calls) >= 3


def test_other_errors_are_not_retried(quick):
    calls = []

    def method():
        calls.append(1)
        raise exception.InstanceNotFound(instance_id='u1')

    with pytest.raises(exception.InstanceNotFound):
        retrying.retrying(method)()
    assert calls == [1]


def test_an_endpoint_keeps_what_oslo_dispatches_on():
    class Endpoint:
        target = messaging.Target(version='1.2')

        @messaging.expose
        def instance_get(self, ctx, uuid):
            return uuid

    wrapped = retrying.RetryingEndpoint(Endpoint())
    assert wrapped.target is Endpoint.target
    assert wrapped.instance_get.exposed
    assert wrapped.instance_get(None, 'u1') == 'u1'
    assert not hasattr(wrapped, 'instance_delete')


def test_a_periodic_task_logs_an_outage_once_and_its_end(caplog):
    caplog.set_level(logging.INFO)
    errors = [_broken('Connection refused'),
              messaging.RemoteError('OperationalError', 'refused'),
              messaging.MessagingTimeout('no answer'), None,
              ValueError('a bug'), ValueError('a bug')]

    def run():
        error = errors.pop(0)
        if error is not None:
            raise error

    task = service.PeriodicTask('conductor-sweep', run, 60)
    for _ in range(6):
        task.run_once()
    lines = [(r.levelname, r.getMessage().split(':')[0], bool(r.exc_info))
             for r in caplog.records if r.name == 'scheduler_split.service']
    assert lines == [
        ('WARNING', 'Periodic task conductor-sweep cannot run', False),
        ('INFO', 'Periodic task conductor-sweep runs again, after 0.0 '
                 'seconds', False),
        ('ERROR', 'Periodic task conductor-sweep failed', True),
        ('ERROR', 'Periodic task conductor-sweep failed', True)]


def test_one_outage_is_one_warning_whatever_meets_it(quick, caplog):
    """A server away: the first refusal is the WARNING; the requests,
    periodic tasks and work that fail for it meanwhile, and the refusals
    of its other databases, are DEBUG lines; the first connection opened
    after it is the INFO. The next outage is a WARNING again."""
    caplog.set_level(logging.DEBUG)
    server = outage.server_of(sa.engine.make_url(
        'postgresql+psycopg2://nova:secret@db:5432/nova_api'))
    assert server == outage.server_of(sa.engine.make_url(
        'postgresql+psycopg2://other@db:5432/nova_cell1')) == (
        'postgresql+psycopg2://db:5432')
    log = logging.getLogger('scheduler_split.test')
    with outage.not_waiting():
        for _ in range(2):
            with pytest.raises(Exception, match='Connection refused'):
                outage.connect(server)(_Dialect(1), None, (), {})
            assert not outage.report(log, _broken('Connection refused'),
                                     'Request %s failed', 'r1')
    failures = [_broken(), None]

    def reload():
        failure = failures.pop(0)
        if failure is not None:
            raise failure

    task = service.PeriodicTask('scheduler-reload', reload, 5)
    task.run_once()
    task.run_once()
    with pytest.raises(exception.DatabaseUnavailable):
        outage.run(reload_fails, again=False)
    assert outage.connect(server)(_Dialect(0), None, (), {})
    assert outage.report(log, _broken(), 'Request %s failed', 'r2')
    lines = [(r.levelname, r.getMessage().split(' (')[0])
             for r in caplog.records if r.levelno > logging.DEBUG]
    assert lines == [
        ('WARNING', 'Database server postgresql+psycopg2://db:5432 refuses '
                    'connections'),
        ('INFO', 'Database server postgresql+psycopg2://db:5432 accepts '
                 'connections again after 0.0 seconds'),
        ('WARNING', 'Request r2 failed')]
    assert not [r for r in caplog.records if r.exc_info]


def reload_fails():
    raise _broken()


class _Context:
    """What SQLAlchemy hands its ``handle_error`` hooks."""

    def __init__(self, is_disconnect, error='closed', connection=object()):
        self.is_disconnect = is_disconnect
        self.original_exception = Exception(error)
        self.connection = connection


def test_a_call_timed_out_on_a_connection_in_use_is_a_disconnect():
    """What a cut link gives (link_timeout): the connection is replaced,
    as one the server closed would be; a connect that timed out is the
    connect hook's to wait for, and a lock wait is no disconnect."""
    cut = outage.cut('pg')
    timed_out = _Context(False, 'could not receive data from server: '
                                'Connection timed out')
    cut(timed_out)
    assert timed_out.is_disconnect
    for context in (_Context(False, 'Connection timed out',
                             connection=None),
                    _Context(False, 'Lock wait timeout exceeded')):
        cut(context)
        assert not context.is_disconnect


def test_a_connection_closed_in_use_is_an_outage_once_work_fails(
        quick, caplog):
    caplog.set_level(logging.INFO)
    log = logging.getLogger('scheduler_split.test')
    cut = outage.cut('pg')
    # A server that closed one connection and opens the next is no
    # outage; nor is an error that is no disconnect.
    cut(_Context(is_disconnect=True))
    cut(_Context(is_disconnect=False))
    assert outage.connect('pg')(_Dialect(0), None, (), {})
    assert not caplog.records
    # Work failing after a connection was closed is the outage's
    # WARNING; the refusals that follow are part of it.
    cut(_Context(is_disconnect=True))
    assert outage.report(log, _broken(), 'Periodic task %s cannot run',
                         'sweep')
    assert outage.connect('pg')(_Dialect(2), None, (), {})
    assert [(r.levelname, r.getMessage()[:30]) for r in caplog.records] == [
        ('WARNING', 'Periodic task sweep cannot run'),
        ('INFO', 'Database server pg accepts con')]


def test_an_outage_another_service_met_is_the_one_this_one_meets(
        quick, caplog):
    """The scheduler answered DatabaseUnavailable: that is the outage's
    WARNING here, and the refusals that follow are part of it, until a
    connection opens; then the next one is a WARNING again."""
    caplog.set_level(logging.INFO)
    log = logging.getLogger('scheduler_split.test')
    answer = messaging.RemoteError('DatabaseUnavailable', 'away')
    assert outage.report(log, answer, 'The reconciliation stopped')
    assert not outage.report(log, answer, 'The reconciliation stopped')
    assert outage.connect('pg')(_Dialect(2), None, (), {})
    assert outage.report(log, answer, 'The reconciliation stopped')
    assert [(r.levelname, r.getMessage()[:30]) for r in caplog.records] == [
        ('WARNING', 'The reconciliation stopped'),
        ('INFO', 'Database server pg accepts con'),
        ('WARNING', 'The reconciliation stopped')]


def test_what_is_no_database_outage_is_always_a_warning(caplog):
    with outage.not_waiting():
        with pytest.raises(Exception):
            outage.connect('pg')(_Dialect(1), None, (), {})
    log = logging.getLogger('scheduler_split.test')
    assert outage.report(log, messaging.MessagingTimeout('no answer'),
                         'Heartbeat failed')
    assert outage.report(log, ValueError('a bug'), 'Something failed')
    assert [r.levelname for r in caplog.records] == ['WARNING'] * 3


def test_a_broker_that_is_away_is_a_warning_not_an_error(caplog):
    # scheduler_split.rpc filters the driver's log.
    log = logging.getLogger('oslo.messaging._drivers.impl_rabbit')
    log.error('[%(connection_id)s] AMQP server on %(hostname)s:%(port)s is '
              'unreachable: %(err_str)s. Trying again in %(sleep_time)d '
              'seconds.', {'connection_id': 'c1', 'hostname': '127.0.0.1',
                           'port': 5672, 'err_str': 'Connection refused',
                           'sleep_time': 1})
    log.error('Connection failed: %s (retrying in %s seconds)',
              'Connection refused', 1.0)
    log.error('[%(connection_id)s] AMQP server %(hostname)s:%(port)s closed '
              'the connection. Check login credentials: %(err_str)s',
              {'connection_id': 'c1', 'hostname': '127.0.0.1', 'port': 5672,
               'err_str': 'Socket closed'})
    assert [r.levelname for r in caplog.records
            if r.name == log.name] == ['WARNING', 'WARNING', 'ERROR']


def test_a_drivers_own_error_counts_as_an_outage():
    """What SQLAlchemy lets through unwrapped, as it sets an isolation
    level on a connection the server dropped."""
    pymysql = pytest.importorskip('pymysql')
    assert outage.is_database_outage(pymysql.err.OperationalError(
        2013, 'Lost connection to MySQL server during query'))
    assert not outage.is_database_outage(pymysql.err.ProgrammingError(
        1064, 'You have an error in your SQL syntax'))


def test_a_connection_the_pool_could_not_reset_is_one_warning(caplog):
    log = logging.getLogger('sqlalchemy.pool.impl.QueuePool')
    try:
        raise _broken('server closed the connection unexpectedly')
    except sa_exc.OperationalError:
        log.error('Exception during reset or similar', exc_info=True)
    try:
        raise ValueError('a bug')
    except ValueError:
        log.error('Exception during reset or similar', exc_info=True)
    (outage_record, bug) = [r for r in caplog.records if r.name == log.name]
    assert (outage_record.levelname, outage_record.exc_info) == (
        'WARNING', None)
    assert outage_record.getMessage() == (
        'Exception during reset or similar: a database is unavailable '
        '((builtins.Exception) server closed the connection unexpectedly)')
    assert bug.levelname == 'ERROR' and bug.exc_info


class _Kept(logging.Handler):
    """A handler that keeps what it is given to write."""

    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_work_that_logs_an_outage_with_its_traceback_is_one_line():
    """``LOG.exception`` of work that met the outage, through every
    handler of the log: one line, a WARNING as the first sign of the
    outage, and not shown after; a bug keeps its traceback."""
    root = logging.getLogger()
    kept = [_Kept(), _Kept()]
    for handler in kept:
        root.addHandler(handler)
    log = logging.getLogger('scheduler_split.test')
    # At INFO, as a service logs without debug (an earlier test of this
    # process may have left the logger at DEBUG).
    level = log.level
    log.setLevel(logging.INFO)
    try:
        outage.one_line_outages()
        # The statement under way met a connection the server closed.
        outage.cut('pg')(_Context(is_disconnect=True))
        for error in (_broken(), _broken(), ValueError('a bug')):
            try:
                raise error
            except Exception:
                log.exception('Looking for strays failed')
    finally:
        log.setLevel(level)
        for handler in root.handlers:
            handler.removeFilter(outage._one_line)
        for handler in kept:
            root.removeHandler(handler)
    for handler in kept:
        assert [(r.levelname, r.getMessage(), bool(r.exc_info))
                for r in handler.records] == [
            ('WARNING', 'Looking for strays failed: a database is '
                        'unavailable ((builtins.Exception) server closed '
                        'the connection unexpectedly)', False),
            ('ERROR', 'Looking for strays failed', True)]


def test_a_warning_with_a_traceback_reads_as_a_warning_on_every_line():
    from oslo_config import cfg
    from oslo_log import formatters

    from scheduler_split.cmd import common

    # Options of its own: the global ones may have been parsed already
    # by an earlier test of this process, and CLI options cannot be
    # registered then.
    options = cfg.ConfigOpts()
    common.register_logging_options(options)
    formatter = formatters.ContextFormatter(config=options)
    try:
        raise _broken()
    except sa_exc.OperationalError:
        record = logging.getLogger('scheduler_split.test').makeRecord(
            'scheduler_split.test', logging.WARNING, __file__, 1,
            'Server %s is being deleted', ('u1',), sys.exc_info())
    lines = formatter.format(record).splitlines()
    traceback = [line for line in lines if 'Traceback' in line or
                 '  File "' in line]
    assert len(traceback) >= 2
    assert all(' WARNING scheduler_split.test ' in line
               for line in traceback), lines
    assert not [line for line in lines if ' ERROR ' in line]


def test_the_schedulers_methods_are_answered_not_run_again(quick, caplog):
    calls = []

    class Endpoint:
        @messaging.expose
        def list_consumers(self, ctx):
            calls.append(1)
            raise _broken('Lost connection to MySQL server during query')

    with pytest.raises(messaging.ExpectedException) as info:
        retrying.RetryingEndpoint(Endpoint(), again=False).list_consumers(
            None)
    assert calls == [1]
    assert isinstance(info.value.exc_info[1], exception.DatabaseUnavailable)
    (warning,) = _records(caplog, logging.WARNING)
    assert warning.getMessage().startswith(
        'Endpoint.list_consumers failed: a database is unavailable')


class _Race(Exception):
    """What psycopg2 raises for a deadlock the server broke."""
    pgcode = '40P01'


def _race():
    return sa_exc.OperationalError('COMMIT', None, _Race('deadlock'))


def test_work_the_database_aborted_for_a_race_runs_again_in_the_api():
    """A deadlock, or Galera's certification refusing a commit, wrote
    nothing, and the database answers: even a request that waits for no
    database is run again."""
    calls = []

    def handler(req):
        calls.append(req)
        if len(calls) < 3:
            raise _race()
        return 'created'

    with outage.not_waiting():
        assert outage.retry_races(handler, 'req') == 'created'
    assert calls == ['req'] * 3


def test_races_are_run_again_a_bounded_number_of_times():
    calls = []

    def handler():
        calls.append(1)
        raise _race()

    with pytest.raises(sa_exc.OperationalError):
        outage.retry_races(handler)
    assert len(calls) == outage.RACE_TRIES


def test_a_race_after_a_message_was_sent_is_not_run_again():
    calls = []

    def handler():
        calls.append(1)
        outage.note_effect()
        raise _race()

    with pytest.raises(sa_exc.OperationalError):
        outage.retry_races(handler)
    assert calls == [1]


def test_a_commit_aborted_for_a_race_is_nothing_written(tmp_path):
    """The writer's commit fails as a Galera node refuses it: the work is
    run again, and its second commit is the only row."""
    url = 'sqlite:///%s' % (tmp_path / 'race.db')
    engine = engines.get_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (x INTEGER)')
    refusals = [_race()]

    @sa.event.listens_for(engine, 'commit')
    def _refuse(conn):
        if refusals:
            conn.exec_driver_sql('DELETE FROM t')
            raise refusals.pop()

    def insert():
        with engines.writer(url) as session:
            session.execute(sa.text('INSERT INTO t VALUES (1)'))
        return 'inserted'

    try:
        assert outage.retry_races(insert) == 'inserted'
        with engine.connect() as conn:
            assert conn.exec_driver_sql('SELECT x FROM t').all() == [(1,)]
    finally:
        engines.dispose_all()


def test_a_report_cut_by_an_outage_is_one_line_saying_so(monkeypatch,
                                                         caplog):
    # The statement of a compute's report under way when the server
    # went away: one WARNING line that says a database is unavailable,
    # not the driver's SQL and parameters.
    from scheduler_split.scheduler import reports

    def cut(*args, **kwargs):
        raise sa_exc.OperationalError(
            'UPDATE resource_providers SET last_report_at=%(seen)s', {
                'seen': 'now'}, Exception(
                    'server closed the connection unexpectedly\n\tThis '
                    'probably means the server terminated abnormally'))

    writer = reports.ReportWriter('sqlite://', cache=None)
    monkeypatch.setattr(writer, '_store', cut)
    failed = writer._write_batch({('host1', 'node1'): {}}, {})

    assert list(failed) == [('host1', 'node1')]
    (warning,) = _records(caplog, logging.WARNING)
    message = warning.getMessage()
    assert message.startswith(
        'Could not record the report of host1/node1: a database is '
        'unavailable (')
    assert 'server closed the connection unexpectedly' in message
    assert '\n' not in message and 'SQL' not in message
