"""The scheduler's look at the cells' databases: which cells it can
confirm, one WARNING when a cell goes and one INFO when it is back, and
a look that hangs (a partition) bounded."""

import logging
import threading

import pytest
import sqlalchemy as sa

from scheduler_split.scheduler import cell_health


class _Cell:
    def __init__(self, name, is_cell0=False):
        self.uuid = name + '-uuid'
        self.name = name
        self.database_connection = 'db-of-' + name
        self.is_cell0 = is_cell0


CELLS = [_Cell('cell0', is_cell0=True), _Cell('cell1'), _Cell('cell2')]


class _Looks:
    """What each database does when looked at: answers, refuses, or
    hangs until released."""

    def __init__(self):
        self.refusing = set()
        self.hanging = set()
        self.release = threading.Event()
        self.looked = []

    def __call__(self, url):
        self.looked.append(url)
        if url in self.hanging:
            self.release.wait(10)
        if url in self.refusing:
            raise sa.exc.OperationalError(
                'SELECT 1', {}, Exception('connection refused'))


@pytest.fixture
def looks():
    found = _Looks()
    yield found
    found.release.set()


def _lines(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == cell_health.__name__]


def test_a_cell_that_refuses_is_down_once_and_back_once(looks, caplog):
    caplog.set_level(logging.INFO, logger=cell_health.__name__)
    health = cell_health.CellHealth(look=looks)
    assert health.check(CELLS) == frozenset()
    # cell0 has no hosts: it is never looked at.
    assert looks.looked == ['db-of-cell1', 'db-of-cell2']

    looks.refusing.add('db-of-cell2')
    assert health.check(CELLS) == {'cell2-uuid'}
    assert health.check(CELLS) == {'cell2-uuid'}
    looks.refusing.clear()
    assert health.check(CELLS) == frozenset()

    assert _lines(caplog) == [
        ('WARNING', 'Cell cell2 (cell2-uuid) cannot be confirmed: a database '
                    'is unavailable ((builtins.Exception) connection '
                    'refused). Its hosts get no new instances until its '
                    'database answers.'),
        ('INFO', 'Cell cell2 (cell2-uuid) answers again; its hosts get new '
                 'instances')]


def test_a_look_that_hangs_counts_as_down_and_is_not_piled_up(looks):
    health = cell_health.CellHealth(look=looks, timeout=0.2)
    looks.hanging.add('db-of-cell1')
    assert health.check(CELLS) == {'cell1-uuid'}
    # The hanging look is not started again while it lasts.
    assert health.check(CELLS) == {'cell1-uuid'}
    assert looks.looked.count('db-of-cell1') == 1
    looks.release.set()
    looks.hanging.clear()
    for thread in list(health._hanging.values()):
        thread.join(5)
    assert health.check(CELLS) == frozenset()
    assert looks.looked.count('db-of-cell1') == 2


def test_a_database_that_answers_is_looked_at_for_real(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell1.sqlite')
    cell = _Cell('cell1')
    cell.database_connection = url
    gone = _Cell('cell2')
    gone.database_connection = 'sqlite:///%s' % (
        tmp_path / 'no-such-dir' / 'cell2.sqlite')
    assert cell_health.CellHealth().check([cell, gone]) == {'cell2-uuid'}
