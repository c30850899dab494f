"""The scheduler process: one scheduler listening on every bus.

Launchers find :func:`build` through the ``scheduler_split.services``
entry point named ``scheduler``, so that nothing outside this package
imports scheduler code other than the client library.
"""

import logging

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import retrying
from scheduler_split import metrics
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import process
from scheduler_split.scheduler import rpcapi as scheduler_rpcapi
from scheduler_split import service
from scheduler_split import servicegroup

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The methods run again when a database outage broke them before they
# wrote anything: a select or an alternate's claim whose question was
# only read so far. (Their claims wait out an outage themselves.) The
# others answer DatabaseUnavailable at once.
AGAIN = ('select_destinations', 'claim_resources')


class SchedulerService(service.Service):

    def __init__(self, manager):
        super().__init__('scheduler')
        self.manager = manager
        self._cells = set()
        self.add_periodic(manager.report_service, CONF.report_interval)
        self.add_periodic(self.discover_cells,
                          CONF.scheduler.cell_discovery_interval,
                          run_first=False)
        if CONF.scheduler.cell_check_interval:
            self.add_periodic(self.check_cells,
                              CONF.scheduler.cell_check_interval)
        # In the background, so that no select waits for a reload (at
        # tens of thousands of hosts it takes a second).
        self.add_periodic(manager.host_manager.reload,
                          CONF.filter_scheduler.host_state_refresh_interval,
                          run_first=False)

    def known_hosts(self):
        """Hosts whose reports arrived and are recent."""
        since = servicegroup.up_since()
        return {h.host for h in self.manager.host_manager.host_states()
                if h.is_up(since)}

    def listen_on_cell(self, cell):
        """Consume the scheduler topic on the bus of ``cell``."""
        if cell.is_cell0 or cell.uuid in self._cells:
            return False
        self._cells.add(cell.uuid)
        metrics.name_cell(cell.uuid, cell.name)
        # In the background: a cell whose bus cannot be reached holds up
        # neither this service's start nor the other cells (its hosts'
        # reports wait for its bus, and the selects leave it out).
        self.listen(rpc.get_transport(cell.transport_url),
                    scheduler_rpcapi.TOPIC,
                    [retrying.RetryingEndpoint(
                        self.manager.endpoint(cell.uuid), again=False,
                        again_for=AGAIN)],
                    CONF.host, wait=False,
                    on_start=lambda: LOG.info(
                        'Listening on the bus of cell %s (%s)', cell.name,
                        cell.uuid))
        return True

    def discover_cells(self):
        """Listen on the bus of every cell mapped since the last look."""
        ctx = ss_context.get_admin_context()
        for cell in objects.CellMapping.get_all(ctx):
            self.listen_on_cell(cell)

    def check_cells(self):
        """Look at the database of every cell: the selects leave out
        the hosts of those that do not answer (see :mod:`cell_health`)."""
        ctx = ss_context.get_admin_context()
        self.manager.cell_health.check(objects.CellMapping.get_all(ctx))

    def reload(self):
        self.discover_cells()

    def start(self, serve_metrics=False):
        metrics.watch_scheduler(self.manager.host_manager)
        super().start(serve_metrics)

    def stop(self, graceful=True):
        super().stop(graceful)
        metrics.unwatch_scheduler(self.manager.host_manager)


def build(cell_mappings):
    """The scheduler service on the API bus and on every cell's bus."""
    manager = process.Scheduler()
    # Before the first request rather than in it, and beside it: the
    # first select waits only for the first page of hosts, and chooses
    # among the hosts read so far (see host_manager).
    manager.host_manager.start_loading()
    svc = SchedulerService(manager)
    svc.listen(rpc.get_transport(), scheduler_rpcapi.TOPIC,
               [retrying.RetryingEndpoint(manager.endpoint(None),
                                          again=False, again_for=AGAIN)],
               CONF.host)
    for cell in cell_mappings:
        svc.listen_on_cell(cell)
    # Cut from the database of its claims, the process leaves the
    # selects to its peers, on every bus it listens on.
    svc.watch_databases([manager.db_url])
    return svc
