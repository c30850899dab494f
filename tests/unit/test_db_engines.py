"""A database URL whose driver is not installed; the lock the writers of
a SQLite database queue on; what a SQLite commit promises."""

import signal
import subprocess
import sys
import threading
import time

import pytest
import sqlalchemy as sa

from scheduler_split.db import engines


def test_a_url_whose_driver_is_missing_names_the_extra_to_install():
    # mysqlclient (MySQLdb), SQLAlchemy's default MySQL driver, is not
    # among the project's dependencies.
    pytest.importorskip('pymysql')
    with pytest.raises(ImportError) as info:
        engines.get_engine('mysql+mysqldb://nova:secret@127.0.0.1/nova')
    message = str(info.value)
    assert "pip install 'scheduler-split[deploy]'" in message
    assert 'mysql+pymysql://' in message
    assert 'secret' not in message


# --- the write lock of a SQLite database ------------------------------------

def _waiting(lock, order, name, bulk=False):
    """A thread that takes ``lock`` (as ``bulk`` or not) and notes its
    turn in ``order``; started, and waiting once this returns."""
    queued = len(lock._urgent) + len(lock._bulk)

    def write():
        assert lock.acquire(timeout=10, bulk=bulk)
        order.append(name)
        lock.release()

    thread = threading.Thread(target=write)
    thread.start()
    while len(lock._urgent) + len(lock._bulk) == queued:
        time.sleep(0.001)
    return thread


def test_a_silent_peer_is_given_up_at_the_link_timeout_for_every_value(
        override):
    """Linux drops a connection with TCP_USER_TIMEOUT at the first
    keep-alive probe due once that long passed since the peer was last
    heard: one must fall due exactly at link_timeout, or the drop comes
    up to an interval later."""
    for timeout in range(2, 601):
        override('link_timeout', timeout, group='database')
        bounds = engines.link_bounds()
        assert bounds.idle >= 1 and bounds.interval >= 1, timeout
        due = [bounds.idle + k * bounds.interval
               for k in range(1, bounds.probes + 1)]
        assert timeout in due, (timeout, bounds)
        assert bounds.user_timeout_ms == timeout * 1000
        assert bounds.connect == min(engines.CONNECT_TIMEOUT, timeout)


def test_a_claim_waiting_goes_before_the_next_batch_of_reports():
    lock = engines.WriteLock()
    order = []
    assert lock.acquire(bulk=True)
    threads = [_waiting(lock, order, 'reports', bulk=True),
               _waiting(lock, order, 'claim')]
    lock.release()
    for thread in threads:
        thread.join(10)
    assert order == ['claim', 'reports']


def test_a_writer_that_writes_again_at_once_lets_the_one_waiting_go_first():
    lock = engines.WriteLock()
    order = []
    assert lock.acquire()
    thread = _waiting(lock, order, 'waiting')
    lock.release()
    # The lock went to the thread that waited: taking it again waits.
    assert lock.acquire(timeout=10)
    order.append('again')
    lock.release()
    thread.join(10)
    assert order == ['waiting', 'again']


def test_the_write_lock_is_taken_again_by_its_holder():
    lock = engines.WriteLock()
    assert lock.acquire()
    assert lock.acquire()
    lock.release()
    results = []
    other = threading.Thread(target=lambda: results.append(
        lock.acquire(timeout=0.1)))
    other.start()
    other.join(10)
    assert results == [False]
    lock.release()
    assert lock.acquire(timeout=1)


def test_many_writers_racing_each_get_the_lock_alone_and_none_is_lost():
    lock = engines.WriteLock()
    inside = []
    overlaps = []
    done = []

    def write(name):
        for _ in range(200):
            assert lock.acquire(timeout=30)
            inside.append(name)
            if len(inside) > 1:
                overlaps.append(list(inside))
            time.sleep(0)
            inside.remove(name)
            lock.release()
        done.append(name)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(done) == list(range(8))
    assert overlaps == []
    # Free again once they are all done.
    assert lock.acquire(timeout=0)
    lock.release()


# --- what a SQLite commit promises -------------------------------------------

_WRITE_AND_DIE = """
import os, signal, sys
from scheduler_split.db import engines
with engines.writer(sys.argv[1]) as session:
    session.connection().exec_driver_sql(
        "INSERT INTO boots (name) VALUES ('committed')")
# Killed the moment the commit returned: nothing is closed or flushed.
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sqlite_commit_survives_the_process_being_killed(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'state.sqlite')
    with engines.writer(url) as session:
        conn = session.connection()
        # What each connection runs with: the log synced at checkpoints,
        # not at every commit.
        assert conn.exec_driver_sql('PRAGMA journal_mode').scalar() == 'wal'
        assert conn.exec_driver_sql('PRAGMA synchronous').scalar() == 1
        conn.exec_driver_sql('CREATE TABLE boots (name TEXT)')
    engines.dispose_all()
    proc = subprocess.run([sys.executable, '-c', _WRITE_AND_DIE, url],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT name FROM boots').scalars().all() == ['committed']
    finally:
        engine.dispose()
