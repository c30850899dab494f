"""Which cells the scheduler can confirm: a cell whose database does not
answer gets no new instance.

The super-conductor creates each instance in the database of the cell
its host is in. While that database is away (stopped, or cut from the
controllers), a boot the scheduler placed there would wait for it and
then fail; the hosts of the other cells had room. So the scheduler
service looks at every cell's database every ``[scheduler]
cell_check_interval`` seconds, beside the selects: one ``SELECT 1``
that does not wait for an outage, bounded by ``CHECK_TIMEOUT``. A cell
whose last ``DOWN_AFTER`` looks failed is down: the selects leave out
its hosts (the reason a request that found no host gives names it)
until a look succeeds again. A database away for a single look (a
restart, a fail-over, connections cut as a Galera node leaves) is waited
out by the services as before, not steered around. Nor is anything left
out while every cell is down: that says more about this scheduler's own
link to the databases than about the cells, and leaving every host out
would only turn the waits for the databases into failed boots. A cell
that goes down is one WARNING in the log, and its return one INFO.

The look is a confirmation, not a vote: a cell that answered is used
even if its computes' reports lag, and the claim in the scheduler
database still decides.
"""

import logging
import threading

import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import metrics

LOG = logging.getLogger(__name__)

# Seconds a look at a cell's database may take before the cell counts as
# down: as long as opening a connection may take. A look still running
# then (a partition, packets dropped) is left to end on its own; the
# cell stays down at least until it did.
CHECK_TIMEOUT = engines.CONNECT_TIMEOUT
# How many looks in a row must fail before a cell is down.
DOWN_AFTER = 2


def _look(url):
    """Raise unless the database at ``url`` answers a query now."""
    with outage.not_waiting():
        with engines.connection(url) as conn:
            conn.execute(sa.text('SELECT 1'))


class CellHealth:
    """The cells this scheduler process can confirm, as of its last
    look."""

    def __init__(self, look=_look, timeout=CHECK_TIMEOUT):
        self._look = look
        self.timeout = timeout
        self._lock = threading.Lock()
        # uuid -> name of the cells down.
        self._down = {}
        # uuid -> how many looks in a row failed.
        self._failures = {}
        # The uuids of the cells the last check looked at.
        self._looked = frozenset()
        # uuid -> the thread of a look that outlived its timeout.
        self._hanging = {}

    @property
    def down(self):
        """The uuids of the cells down."""
        return frozenset(self._down)

    @property
    def excluded(self):
        """The uuids of the cells whose hosts get no new instance: those
        down, unless every cell is."""
        down = self.down
        return down if down and not down >= self._looked else frozenset()

    def name(self, uuid):
        return self._down.get(uuid, uuid)

    def check(self, cells):
        """Look at the database of each of ``cells`` (CellMappings;
        cell0 has no hosts and is skipped), each in a thread of its own,
        and mark each up or down. Returns the uuids of those down."""
        looks = {}
        every_cell_was_down = bool(self.down) and not self.excluded
        for cell in cells:
            if cell.is_cell0:
                continue
            hanging = self._hanging.get(cell.uuid)
            if hanging is not None and hanging.is_alive():
                looks[cell] = (None, 'its last look at its database has '
                                     'not ended')
                continue
            self._hanging.pop(cell.uuid, None)
            result = []
            thread = threading.Thread(
                target=self._run, args=(cell.database_connection, result),
                name='cell-check-%s' % cell.name, daemon=True)
            thread.start()
            looks[cell] = (thread, result)
        for cell, (thread, result) in looks.items():
            if thread is None:
                self._mark(cell, result)
                continue
            thread.join(self.timeout)
            if thread.is_alive():
                self._hanging[cell.uuid] = thread
                self._mark(cell, 'its database did not answer within %d '
                                 'seconds' % self.timeout)
            else:
                self._mark(cell, result[0] if result else None)
        self._looked = frozenset(cell.uuid for cell in looks)
        if self.down and not self.excluded and not every_cell_was_down:
            LOG.warning('No cell can be confirmed: the selects leave none '
                        'out, and the services wait for the databases')
        return self.down

    def _run(self, url, result):
        try:
            self._look(url)
        except Exception as exc:
            result.append(outage.reason(exc) if outage.is_database_outage(
                exc) else 'its database cannot be used: %s' % exc)

    def _mark(self, cell, why):
        with self._lock:
            was_down = cell.uuid in self._down
            if why is None:
                self._failures.pop(cell.uuid, None)
                self._down.pop(cell.uuid, None)
            else:
                failures = self._failures.get(cell.uuid, 0) + 1
                self._failures[cell.uuid] = failures
                if failures < DOWN_AFTER:
                    LOG.debug('Cell %s (%s) did not answer a look (%s); '
                              'looking again', cell.name, cell.uuid, why)
                    return
                self._down[cell.uuid] = cell.name
        is_down = cell.uuid in self._down
        metrics.CELL_DOWN.labels(cell=cell.name).set(1 if is_down else 0)
        if why is not None and not was_down:
            LOG.warning('Cell %s (%s) cannot be confirmed: %s. Its hosts get '
                        'no new instances until its database answers.',
                        cell.name, cell.uuid, why)
        elif why is None and was_down:
            LOG.info('Cell %s (%s) answers again; its hosts get new '
                     'instances', cell.name, cell.uuid)
