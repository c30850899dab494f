"""The scheduler process: one manager listening on every bus.

Launchers find :func:`build` through the ``scheduler_split.services``
entry point named ``scheduler``, so that nothing outside this package
imports scheduler code other than the client library.
"""

from scheduler_split import conf
from scheduler_split import rpc
from scheduler_split.scheduler import manager as scheduler_manager
from scheduler_split.scheduler import rpcapi as scheduler_rpcapi
from scheduler_split import service

CONF = conf.CONF


class SchedulerService(service.Service):

    def __init__(self, manager):
        super().__init__('scheduler')
        self.manager = manager

    def known_hosts(self):
        """Hosts whose reports arrived and are recent."""
        return {h.host for h in self.manager.host_manager.host_states()
                if h.is_up()}


def build(cell_mappings):
    """The scheduler service on the API bus and on every cell's bus."""
    manager = scheduler_manager.SchedulerManager()
    svc = SchedulerService(manager)
    svc.listen(rpc.get_transport(), scheduler_rpcapi.TOPIC,
               [manager.endpoint(None)], CONF.host)
    for cell in cell_mappings:
        if cell.is_cell0:
            continue
        svc.listen(rpc.get_transport(cell.transport_url),
                   scheduler_rpcapi.TOPIC, [manager.endpoint(cell.uuid)],
                   CONF.host)
    return svc
