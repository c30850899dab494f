"""Why the engines run MySQL/MariaDB at READ COMMITTED: read-then-write
transactions against one MariaDB server, raced by real second
connections, once at the engines' level and once at MariaDB's default,
REPEATABLE READ."""

import threading
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split.db import migration
from scheduler_split import exception
from scheduler_split import quota
from scheduler_split.scheduler import claims
from scheduler_split.scheduler import host_manager
from tests.integration import backends
from tests.unit import helpers

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

CONF = conf.CONF

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'
SMALL = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
# MariaDB's ER_CHECKREAD ("Record has changed since last read") and
# ER_LOCK_WAIT_TIMEOUT.
RECORD_CHANGED, LOCK_WAIT_TIMEOUT = 1020, 1205


@pytest.fixture(scope='module')
def server():
    db = backends.MariaDB().start()
    # What MariaDB 11.6 and later do by default: at REPEATABLE READ, a
    # write to a row changed since the transaction's snapshot fails.
    db.sql('SET GLOBAL innodb_snapshot_isolation = ON')
    # A lock no one will release is given up after 3 seconds, not 50.
    db.sql('SET GLOBAL innodb_lock_wait_timeout = 3')
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
        # The claim read the provider, its inventory and its usage in
        # one statement; the other claim commits before this one writes
        # (its first write: the allocations, whose foreign key would then
        # hold the provider's row for it).
        if not fired and statement.startswith('INSERT INTO allocations'):
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


@pytest.fixture
def api_db(server):
    """A new API database, the one the quota code uses."""
    url = _database(server, 'api')
    CONF.set_override('connection', url, group='api_database')
    yield url
    CONF.clear_override('connection', group='api_database')


def _quota_generation(url):
    with engines.reader(url) as session:
        return session.scalar(sa.select(
            api_models.ProjectQuotaLock.generation))


def test_the_first_create_of_a_project_takes_its_turn(api_db, isolation):
    """A project's first counted create finds no quota row to update,
    makes it in a transaction of its own and then updates it. At
    REPEATABLE READ its empty update holds a gap lock that the insert
    waits for until InnoDB gives up (a 503 to its user)."""
    url = api_db
    try:
        with engines.writer(url) as session:
            quota.lock_project(session, 'project')
        outcome = 'took its turn'
    except sa.exc.DBAPIError as exc:
        outcome = _errnos(exc)

    if isolation == 'engines':
        assert outcome == 'took its turn'
        assert _quota_generation(url) == 1
    else:
        assert LOCK_WAIT_TIMEOUT in outcome, outcome
        assert _quota_generation(url) is None


def test_first_creates_of_a_project_racing_each_take_their_turn(api_db):
    """Eight first creates of one project all insert its quota row at
    once: one makes it, each takes its turn after the one before."""
    url = api_db
    engine = engines.get_engine(url, writer=True)
    creates = 8
    all_inserting = threading.Barrier(creates)
    met = threading.Event()

    def _before(conn, cursor, statement, parameters, context,
                executemany):
        if statement.startswith('INSERT INTO project_quota_locks') and \
                not met.is_set():
            all_inserting.wait(timeout=30)
            met.set()

    outcomes = {}

    def create(index):
        try:
            with engines.writer(url) as session:
                quota.lock_project(session, 'project')
            outcomes[index] = 'took its turn'
        except Exception as exc:
            outcomes[index] = repr(exc)

    event.listen(engine, 'before_cursor_execute', _before)
    try:
        threads = [threading.Thread(target=create, args=(index,))
                   for index in range(creates)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        event.remove(engine, 'before_cursor_execute', _before)

    assert outcomes == dict.fromkeys(range(creates), 'took its turn')
    assert _quota_generation(url) == creates
