"""Why the engines run MySQL/MariaDB at READ COMMITTED: two
read-then-write transactions, each raced by a real second connection on
one MariaDB server, once at the engines' level and once at MariaDB's
default, REPEATABLE READ."""

import threading
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from scheduler_split.db import engines
from scheduler_split.db import migration
from scheduler_split.db import models
from scheduler_split import exception
from scheduler_split import quota
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_manager
from tests.integration import backends
from tests.unit import helpers

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
# MySQL's ER_LOCK_DEADLOCK and MariaDB's ER_CHECKREAD ("Record has
# changed since last read").
DEADLOCK, RECORD_CHANGED = 1213, 1020


@pytest.fixture(scope='module')
def server():
    db = backends.MariaDB().start()
    # What MariaDB 11.6 and later do by default: at REPEATABLE READ, a
    # write to a row changed since the transaction's snapshot fails.
    db.sql('SET GLOBAL innodb_snapshot_isolation = ON')
    try:
        yield db
    finally:
        engines.dispose_all()
        db.stop()


def _database(server, kind):
    url = server.create_database('ss_%s_%s' % (kind, uuid.uuid4().hex[:8]))
    migration.upgrade(kind, url)
    return url


@pytest.fixture(params=['engines', 'repeatable-read'])
def isolation(request, monkeypatch):
    """The engines' own isolation level, or MariaDB's default."""
    engines.dispose_all()
    if request.param == 'repeatable-read':
        monkeypatch.setattr(engines, 'ISOLATION_LEVEL', 'REPEATABLE READ')
    yield request.param
    engines.dispose_all()


def _errno(exc):
    return exc.orig.args[0] if getattr(exc, 'orig', None) else None


def _errnos(exc):
    """The MySQL error numbers of ``exc`` and the errors it was raised
    while handling (a deadlock, then the savepoint it rolled back)."""
    found = []
    while exc is not None:
        if isinstance(exc, sa.exc.DBAPIError):
            found.append(_errno(exc))
        exc = exc.__context__
    return found


def test_the_engines_run_at_read_committed(server):
    url = _database(server, 'scheduler')
    with engines.writer(url) as session:
        level = session.execute(sa.text('SELECT @@tx_isolation')).scalar()
    with engines.reader(url) as session:
        charset = session.execute(sa.text(
            'SELECT @@character_set_connection')).scalar()
    engines.dispose_all()
    assert (level, charset) == ('READ-COMMITTED', 'utf8mb4')


def test_a_claim_that_another_claim_overtook_is_a_conflict(server,
                                                           isolation):
    """Another scheduler's claim commits on the provider after this
    claim read its generation: the guarded update must match no row and
    the claim end as a conflict, which the scheduler retries on fresh
    data. At REPEATABLE READ, MariaDB refuses the write to a row that
    changed since the claim's snapshot: an error, not a lost race."""
    url = _database(server, 'scheduler')
    rp = host_manager.HostManager(url).update_from_stats(
        CELL, 'host1', 'host1-node', helpers.host_stats())
    other = sa.create_engine(url)
    engine = engines.get_engine(url, writer=True)
    fired = []

    def _before(conn, cursor, statement, parameters, context,
                executemany):
        if not fired and 'sum(allocations.used)' in statement:
            with other.begin() as racing:
                racing.execute(sa.text(
                    'UPDATE resource_providers '
                    'SET generation = generation + 1'))
            fired.append(statement)

    event.listen(engine, 'before_cursor_execute', _before)
    try:
        with pytest.raises(Exception) as info:
            claims.claim(url, rp, 'consumer', SMALL)
    finally:
        event.remove(engine, 'before_cursor_execute', _before)
        other.dispose()

    assert fired, 'the racing claim never ran'
    assert claims.allocations_of(url, 'consumer') == {}
    if isolation == 'engines':
        assert isinstance(info.value, exception.ClaimConflict), info.value
    else:
        assert not isinstance(info.value, exception.ClaimConflict)
        assert _errno(info.value) == RECORD_CHANGED, info.value


def test_two_first_counted_creates_of_a_project_take_turns(server,
                                                           isolation):
    """The first two creates of a project race to make its quota row:
    neither finds one to update, both insert it. At READ COMMITTED the
    second waits for the first and then takes its turn after it; at
    REPEATABLE READ each one's empty update holds a gap lock the other's
    insert waits for, and the database aborts one of them (a 503 to its
    user)."""
    url = _database(server, 'api')
    engine = engines.get_engine(url, writer=True)
    both_updated = threading.Barrier(2)

    def _before(conn, cursor, statement, parameters, context,
                executemany):
        if statement.startswith('INSERT INTO project_quota_locks'):
            both_updated.wait(timeout=30)

    outcomes = {}

    def create(name):
        try:
            with engines.writer(url) as session:
                quota.lock_project(session, 'project')
            outcomes[name] = 'took its turn'
        except sa.exc.DBAPIError as exc:
            outcomes[name] = _errnos(exc)

    event.listen(engine, 'before_cursor_execute', _before)
    try:
        threads = [threading.Thread(target=create, args=(name,))
                   for name in ('first', 'second')]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        event.remove(engine, 'before_cursor_execute', _before)

    with engines.reader(url) as session:
        generation = session.scalar(sa.select(
            models.ProjectQuotaLock.generation))
    if isolation == 'engines':
        assert outcomes == {'first': 'took its turn',
                            'second': 'took its turn'}
        assert generation == 1
    else:
        failed = [o for o in outcomes.values() if o != 'took its turn']
        assert len(outcomes) == 2 and len(failed) == 1, outcomes
        assert DEADLOCK in failed[0], outcomes
        assert generation == 0
