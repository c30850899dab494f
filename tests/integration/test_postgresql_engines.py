"""The engines on a PostgreSQL server of their own: every transaction at
READ COMMITTED whatever the server's default, the snapshot reader at
REPEATABLE READ for its transaction alone, and what one short
transaction costs in statements, as pg_stat_statements counts them."""

import pytest
import sqlalchemy as sa

from scheduler_split.db import engines
from tests.integration import backends

pytestmark = pytest.mark.integration


@pytest.fixture(scope='module')
def server():
    pg = backends.PostgreSQL().start()
    try:
        yield pg
    finally:
        engines.dispose_all()
        pg.stop()


def _database(server, name):
    url = server.create_database(name)
    # A server whose default is another level: the engines set theirs.
    with sa.create_engine(url, isolation_level='AUTOCOMMIT').connect() as c:
        c.exec_driver_sql("ALTER DATABASE %s SET default_transaction_isolation"
                          " = 'repeatable read'" % name)
    return url


def _statements(server, database):
    """``{statement: calls}`` the server counted in ``database``."""
    with sa.create_engine(server.stats_url(),
                          isolation_level='AUTOCOMMIT').connect() as c:
        return dict(c.execute(sa.text(
            'SELECT s.query, s.calls FROM pg_stat_statements s '
            'JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = :name'),
            {'name': database}).all())


def _level(session_or_conn):
    return session_or_conn.execute(sa.text(
        'SHOW transaction_isolation')).scalar()


def test_every_transaction_runs_at_read_committed(server):
    url = _database(server, 'levels')
    with engines.writer(url) as session:
        writing = _level(session)
    with engines.reader(url) as session:
        reading = _level(session)
    with engines.snapshot(url) as conn:
        snapshot = _level(conn)
    # The connection the snapshot used is back at the session's level.
    with engines.reader(url) as session:
        after = _level(session)
    engines.dispose_all()
    assert (writing, reading, snapshot, after) == (
        'read committed', 'read committed', 'repeatable read',
        'read committed')


def test_a_transaction_costs_its_statements_a_begin_and_a_commit(server):
    url = _database(server, 'trips')
    # Both engines' first connections, which ask the server about itself.
    with engines.writer(url) as session:
        session.execute(sa.text('SELECT 41'))
    with engines.snapshot(url) as conn:
        conn.execute(sa.text('SELECT 41'))
    before = _statements(server, 'trips')
    for _ in range(20):
        with engines.writer(url) as session:
            session.execute(sa.text('SELECT 42'))
    with engines.snapshot(url) as conn:
        conn.execute(sa.text('SELECT 43'))
    for _ in range(20):
        with engines.writer(url) as session:
            session.execute(sa.text('SELECT 42'))
    after = _statements(server, 'trips')
    engines.dispose_all()
    sent = {text: calls - before.get(text, 0) for text, calls in after.items()
            if calls != before.get(text, 0)}
    # Per transaction: BEGIN, the statement, COMMIT; no ping of a
    # connection in steady use, and no SET of the isolation level, before
    # or after the snapshot.
    assert sent.pop('BEGIN') == 41
    assert sent.pop('COMMIT') == 41
    assert sent.pop('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ') == 1
    assert sent.pop('SELECT $1') == 41
    assert sent == {}, sent


def _backend_pid(url):
    with engines.writer(url) as session:
        return session.execute(sa.text('SELECT pg_backend_pid()')).scalar()


def _dropped(server, name):
    """A new database ``name`` whose one pooled connection the server
    has closed, as a restart or an idle timeout would: its URL and that
    connection's backend pid."""
    url = _database(server, name)
    pid = _backend_pid(url)
    with sa.create_engine(server.stats_url(),
                          isolation_level='AUTOCOMMIT').connect() as c:
        assert c.execute(sa.text('SELECT pg_terminate_backend(:pid)'),
                         {'pid': pid}).scalar()
    return url, pid


def test_a_rested_connection_the_server_dropped_is_replaced_unseen(
        server, monkeypatch):
    url, first = _dropped(server, 'rested')
    # It rested long enough to be pinged as it is taken out again.
    monkeypatch.setattr(engines, 'PING_AFTER_REST', 0)
    second = _backend_pid(url)
    engines.dispose_all()
    assert second != first


def test_a_connection_dropped_in_steady_use_fails_once_then_all_reconnect(
        server, monkeypatch):
    url, first = _dropped(server, 'steady')
    # Taken out again at once: not pinged, so its statement meets the
    # closed connection; the pool then replaces every connection.
    monkeypatch.setattr(engines, 'PING_AFTER_REST', 3600)
    with pytest.raises(sa.exc.OperationalError) as info:
        _backend_pid(url)
    assert info.value.connection_invalidated
    second = _backend_pid(url)
    engines.dispose_all()
    assert second != first
