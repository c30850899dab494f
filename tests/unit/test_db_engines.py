"""A database URL whose driver is not installed; the lock the writers of
a SQLite database queue on."""

import threading
import time

import pytest

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
