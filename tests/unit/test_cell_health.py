"""The scheduler's look at the cells' databases: which cells it can
confirm (a cell is down after two failed looks in a row, and none is
left out while all are), one WARNING when a cell goes and one INFO when
it is back, and a look that hangs (a partition) bounded."""

import logging
import socket
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


def test_a_cell_that_refuses_twice_is_down_once_and_back_once(looks,
                                                              caplog):
    caplog.set_level(logging.INFO, logger=cell_health.__name__)
    health = cell_health.CellHealth(look=looks)
    assert health.check(CELLS) == frozenset()
    # cell0 has no hosts: it is never looked at.
    assert looks.looked == ['db-of-cell1', 'db-of-cell2']

    looks.refusing.add('db-of-cell2')
    # One look that fails is a blip the services wait out.
    assert health.check(CELLS) == frozenset()
    assert health.check(CELLS) == {'cell2-uuid'}
    assert health.excluded == {'cell2-uuid'}
    assert health.check(CELLS) == {'cell2-uuid'}
    looks.refusing.clear()
    assert health.check(CELLS) == frozenset()
    assert health.excluded == frozenset()

    assert _lines(caplog) == [
        ('WARNING', 'Cell cell2 (cell2-uuid) cannot be confirmed: a database '
                    'is unavailable ((builtins.Exception) connection '
                    'refused). Its hosts get no new instances until it '
                    'answers again.'),
        ('INFO', 'Cell cell2 (cell2-uuid) answers again; its hosts get new '
                 'instances')]


def test_a_blip_between_answers_leaves_the_cell_up(looks):
    health = cell_health.CellHealth(look=looks)
    for refusing in (True, False, True, False):
        looks.refusing = {'db-of-cell1'} if refusing else set()
        assert health.check(CELLS) == frozenset()


def test_with_every_cell_down_none_is_left_out(looks, caplog):
    caplog.set_level(logging.INFO, logger=cell_health.__name__)
    health = cell_health.CellHealth(look=looks)
    looks.refusing = {'db-of-cell1', 'db-of-cell2'}
    health.check(CELLS)
    assert health.check(CELLS) == {'cell1-uuid', 'cell2-uuid'}
    assert health.check(CELLS) == {'cell1-uuid', 'cell2-uuid'}
    assert health.excluded == frozenset()
    assert [line for line in _lines(caplog) if 'No cell' in line[1]] == [
        ('WARNING', 'No cell can be confirmed: the selects leave none out, '
                    'and the services wait for the databases and buses')]
    looks.refusing = {'db-of-cell1'}
    health.check(CELLS)
    assert health.excluded == {'cell1-uuid'}


def test_a_look_that_hangs_counts_as_failed_and_is_not_piled_up(looks):
    health = cell_health.CellHealth(look=looks, timeout=0.2)
    looks.hanging.add('db-of-cell1')
    assert health.check(CELLS) == frozenset()
    # The hanging look is not started again while it lasts, and counts
    # as a failed look again.
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
    health = cell_health.CellHealth()
    health.check([cell, gone])
    assert health.check([cell, gone]) == {'cell2-uuid'}


def test_a_cell_whose_bus_refuses_is_down_though_its_database_answers(
        tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=cell_health.__name__)
    port = _refused_port()
    cell = _Cell('cell1')
    cell.database_connection = 'sqlite:///%s' % (tmp_path / 'cell1.sqlite')
    cell.transport_url = 'memory://'
    cut = _Cell('cell2')
    cut.database_connection = 'sqlite:///%s' % (tmp_path / 'cell2.sqlite')
    cut.transport_url = ('rabbit://guest:guest@127.0.0.1:%d,'
                         'guest:guest@127.0.0.1:%d/cell2' % (port, port))
    health = cell_health.CellHealth()
    health.check([cell, cut])
    assert health.check([cell, cut]) == {'cell2-uuid'}
    assert health.excluded == {'cell2-uuid'}
    [(level, line)] = _lines(caplog)
    assert level == 'WARNING'
    assert line.startswith('Cell cell2 (cell2-uuid) cannot be confirmed: '
                           'its bus cannot be reached: no broker took a '
                           'connection (127.0.0.1:%d: ' % port), line
    assert 'Connection refused' in line

    # The bus answers again (here: the cell moved to one that does).
    cut.transport_url = 'memory://'
    assert health.check([cell, cut]) == frozenset()
    assert _lines(caplog)[-1] == (
        'INFO', 'Cell cell2 (cell2-uuid) answers again; its hosts get new '
                'instances')


def test_a_bus_look_that_hangs_counts_as_failed_within_the_timeout():
    hang = threading.Event()
    cell = _Cell('cell1')
    cell.transport_url = 'rabbit://somewhere/'
    health = cell_health.CellHealth(look=lambda url: None, timeout=0.2,
                                    look_at_bus=lambda url: hang.wait(10))
    try:
        health.check([cell])
        assert health.check([cell]) == {'cell1-uuid'}
    finally:
        hang.set()


def _refused_port():
    """A port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
