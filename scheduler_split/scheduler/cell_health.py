"""Which cells the scheduler can confirm: a cell whose database or bus
does not answer gets no new instance.

The super-conductor creates each instance in the database of the cell
its host is in, then casts the build to that host over the cell's bus.
While that database or bus is away (stopped, or cut from the
controllers), a boot the scheduler placed there would wait for it; the
hosts of the other cells had room. So the scheduler service looks at
every cell every ``[scheduler] cell_check_interval`` seconds, beside the
selects: one ``SELECT 1`` on its database that does not wait for an
outage, and a new connection to its bus (:func:`brokers.look_at_bus`), at
once, each bounded by ``CHECK_TIMEOUT``. A cell whose last
``DOWN_AFTER`` looks failed is down: the selects leave out its hosts
(the reason a request that found no host gives names it) until a look
succeeds again. A database or bus away for a single look (a restart, a
fail-over, connections cut as a Galera node leaves) is waited out by
the services as before, not steered around. Nor is anything left out
while every cell is down: that says more about this scheduler's own
links than about the cells, and leaving every host out would only turn
the waits into failed boots. A cell that goes down is one WARNING in
the log, and its return one INFO.

The look is a confirmation, not a vote: a cell that answered is used
even if its computes' reports lag, and the claim in the scheduler
database still decides.
"""

import logging
import threading
import time

from scheduler_split import brokers
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


def _look_at_bus(url):
    """Raise unless the bus at ``url`` takes a connection now."""
    brokers.look_at_bus(url, CHECK_TIMEOUT)


class CellHealth:
    """The cells this scheduler process can confirm, as of its last
    look."""

    def __init__(self, look=engines.look, timeout=CHECK_TIMEOUT,
                 look_at_bus=_look_at_bus):
        self._look = look
        self._look_at_bus = look_at_bus
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
        """Look at the database and the bus of each of ``cells``
        (CellMappings; cell0 has no hosts and is skipped), each in a
        thread of its own, and mark each up or down. Returns the uuids
        of those down."""
        looks = {}
        every_cell_was_down = bool(self.down) and not self.excluded
        for cell in cells:
            if cell.is_cell0:
                continue
            looks[cell] = []
            for what, attr, look in (
                    ('database', 'database_connection', self._look),
                    ('bus', 'transport_url', self._look_at_bus)):
                key = (cell.uuid, what)
                hanging = self._hanging.get(key)
                if hanging is not None and hanging.is_alive():
                    looks[cell].append((what, None, 'its last look at its '
                                        '%s has not ended' % what))
                    continue
                self._hanging.pop(key, None)
                result = []
                thread = threading.Thread(
                    target=self._run,
                    args=(look, what, getattr(cell, attr, None), result),
                    name='cell-check-%s' % cell.name, daemon=True)
                thread.start()
                looks[cell].append((what, thread, result))
        deadline = time.monotonic() + self.timeout
        for cell, found in looks.items():
            why = None
            for what, thread, result in found:
                if thread is None:
                    why = why or result
                    continue
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    self._hanging[(cell.uuid, what)] = thread
                    why = why or ('its %s did not answer within %d seconds'
                                  % (what, self.timeout))
                elif result:
                    why = why or result[0]
            self._mark(cell, why)
        self._looked = frozenset(cell.uuid for cell in looks)
        if self.down and not self.excluded and not every_cell_was_down:
            LOG.warning('No cell can be confirmed: the selects leave none '
                        'out, and the services wait for the databases and '
                        'buses')
        return self.down

    @staticmethod
    def _run(look, what, url, result):
        if url is None:
            return
        try:
            look(url)
        except Exception as exc:
            if what == 'database':
                result.append(outage.reason(exc) if outage.is_database_outage(
                    exc) else 'its database cannot be used: %s' % exc)
            else:
                result.append('its bus cannot be reached: %s'
                              % outage.describe(exc))

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
                        'no new instances until it answers again.',
                        cell.name, cell.uuid, why)
        elif why is None and was_down:
            LOG.info('Cell %s (%s) answers again; its hosts get new '
                     'instances', cell.name, cell.uuid)
