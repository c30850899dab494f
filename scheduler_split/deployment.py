"""How the services are put together: per process, or all in one.

The builders here are what each console script runs; :class:`AllInOne`
runs all of them in one process on in-memory buses and SQLite.
"""

import importlib.metadata
import logging
import os
import time

from scheduler_split import cells
from scheduler_split.compute import fencing
from scheduler_split.compute import manager as compute_manager
from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import cell_manager
from scheduler_split.conductor import cell_periodic
from scheduler_split.conductor import records
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor import super_manager
from scheduler_split.conductor import super_periodic
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import retrying
from scheduler_split import exception
from scheduler_split.image import catalog as images
from scheduler_split import objects
from scheduler_split import rpc
from scheduler_split.scheduler import client as scheduler_client
from scheduler_split import service

CONF = conf.CONF
LOG = logging.getLogger(__name__)

objects.register_all()


def _builder(name):
    """The service builder registered as entry point ``name``."""
    for entry_point in importlib.metadata.entry_points(
            group='scheduler_split.services'):
        if entry_point.name == name:
            return entry_point.load()
    raise RuntimeError('No service %r in the scheduler_split.services entry '
                       'points: is scheduler-split installed?' % name)


def scheduler_service(cell_mappings):
    """The scheduler: listens on the API bus and on every cell's bus."""
    return _builder('scheduler')(cell_mappings)


def super_conductor_service():
    manager = super_manager.SuperConductorManager(rpc.get_transport())
    sweeps = super_periodic.SuperConductorPeriodics(rpc.get_transport())
    svc = service.Service('super-conductor')
    # A database that goes away mid-call is waited for (db.outage).
    svc.listen(rpc.get_transport(), conductor_rpcapi.TOPIC,
               [retrying.RetryingEndpoint(manager)], CONF.host)
    # Cut from it, the process leaves the boots to its peers.
    svc.watch_databases([CONF.api_database.connection])
    svc.add_periodic(sweeps.fail_lost_builds,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.redrive_lost_boots,
                     CONF.conductor.lost_build_check_interval,
                     run_first=False)
    svc.add_periodic(sweeps.resume_orphaned_boots,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.clean_up_placements,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.heal_allocations,
                     CONF.conductor.heal_allocations_interval,
                     run_first=False)
    svc.add_periodic(sweeps.report_service, CONF.report_interval)
    svc.manager = manager
    return svc


def cell_conductor_service(transport_url, cell_db, name='cell-conductor'):
    """A cell conductor: its own endpoint and the computes' records on
    one RPC server of its cell's bus, and the cell's sweeps."""
    transport = rpc.get_transport(transport_url)
    manager = cell_manager.CellConductorManager(cell_db, transport)
    sweeps = cell_periodic.CellConductorPeriodics(cell_db, transport)
    svc = service.Service(name, kind='cell-conductor')
    svc.listen(transport, conductor_rpcapi.TOPIC,
               [retrying.RetryingEndpoint(manager),
                retrying.RetryingEndpoint(records.ComputeRecords(cell_db))],
               CONF.host)
    svc.watch_databases([cell_db])
    svc.add_periodic(sweeps.recover_builds,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.fail_lost_builds,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.fail_lost_moves,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.fail_lost_tasks,
                     CONF.conductor.lost_build_check_interval)
    svc.add_periodic(sweeps.report_service, CONF.report_interval)
    if CONF.resize_confirm_window:
        svc.add_periodic(sweeps.confirm_old_resizes,
                         min(60, CONF.resize_confirm_window),
                         run_first=False)
    if CONF.reclaim_instance_interval:
        svc.add_periodic(sweeps.reclaim_soft_deleted,
                         min(60, CONF.reclaim_instance_interval),
                         run_first=False)
    if CONF.shelved_offload_time > 0:
        svc.add_periodic(sweeps.offload_shelved,
                         min(60, CONF.shelved_offload_time),
                         run_first=False)
    svc.manager = manager
    return svc


def compute_service(host, transport_url, driver=None):
    """A compute on its cell's bus: it needs no database, everything it
    persists goes through its cell conductor. ``driver``: its hypervisor,
    ``[DEFAULT] compute_driver``'s by default."""
    transport = rpc.get_transport(transport_url)
    manager = compute_manager.ComputeManager(host, transport, driver=driver)
    svc = service.Service('compute-%s' % host, kind='compute')
    svc.listen(transport, compute_rpcapi.TOPIC, [manager], host)
    svc.add_periodic(manager.report, CONF.report_interval)
    svc.add_periodic(manager.heartbeat, CONF.report_interval)
    # Its own task: a heartbeat may hang on a bus that is away.
    svc.add_periodic(manager.fence, fencing.CHECK_INTERVAL)
    svc.add_periodic(manager.settle_instances,
                     CONF.compute.unfinished_build_check_interval)
    if CONF.sync_power_state_interval > 0:
        svc.add_periodic(manager.sync_power_states,
                         CONF.sync_power_state_interval, run_first=False)
    if CONF.running_deleted_instance_poll_interval > 0:
        svc.add_periodic(manager.reap_unowned_guests,
                         CONF.running_deleted_instance_poll_interval,
                         run_first=False)
    svc.manager = manager
    return svc


class AllInOne:
    """Every service in this process, on in-memory buses and SQLite."""

    API_BUS = 'memory:///api'

    def __init__(self, state_dir, num_cells=2, hosts_per_cell=4,
                 compute_driver=None):
        self.state_dir = os.path.abspath(state_dir)
        self.num_cells = num_cells
        self.hosts_per_cell = hosts_per_cell
        # None: as [DEFAULT] compute_driver says.
        self.compute_driver = compute_driver
        self.services = []
        self.cells = []

    def _libvirt(self):
        return (self.compute_driver or CONF.compute_driver) == \
            'libvirt.LibvirtDriver'

    def _driver(self, host):
        """The hypervisor of compute ``host``: with libvirt, every host
        shares this machine's libvirtd, each with its own directory below
        ``[DEFAULT] instances_path`` and its share of the machine."""
        if not self._libvirt():
            return None
        from scheduler_split.compute.virt import libvirt
        return libvirt.LibvirtDriver(
            host, instances_path=os.path.join(CONF.instances_path, host))

    def _sqlite(self, name):
        return 'sqlite:///' + os.path.join(self.state_dir, name + '.sqlite')

    def configure(self):
        CONF.set_override('transport_url', self.API_BUS)
        CONF.set_override('connection', self._sqlite('api'),
                          group='api_database')
        CONF.set_override('connection', self._sqlite('scheduler'),
                          group='scheduler_database')
        # noauth2 unless the configuration files ask for keystone.
        CONF.set_default('auth_strategy', 'noauth2', group='api')
        # The built-in catalog keeps the data of uploads beside the
        # databases, unless the configuration files put it elsewhere.
        CONF.set_default('builtin_store_dir',
                         os.path.join(self.state_dir, 'images'),
                         group='glance')
        CONF.set_override('host', 'all-in-one')
        if self.compute_driver:
            CONF.set_override('compute_driver', self.compute_driver)
        if self._libvirt():
            hosts = self.num_cells * self.hosts_per_cell
            CONF.set_default('host_share', max(0.01, 1.0 / hosts),
                             group='libvirt')
            if self.num_cells > 1:
                # Domain names from cell ids would repeat on the one
                # libvirtd all the cells share.
                CONF.set_default('instance_name_template',
                                 'instance-%(uuid)s')

    def setup(self, echo=print):
        """Create or upgrade the databases, cells and default flavors."""
        os.makedirs(self.state_dir, exist_ok=True)
        self.configure()
        cells.db_sync(echo=echo)
        ctx = ss_context.get_admin_context()
        existing = {c.name: c for c in objects.CellMapping.get_all(ctx)}
        if 'cell0' not in existing:
            cells.map_cell0(self._sqlite('cell0'), echo=echo)
        for index in range(1, self.num_cells + 1):
            name = 'cell%d' % index
            if name not in existing:
                cells.create_cell(name, 'memory:///%s' % name,
                                  self._sqlite(name), echo=echo)
        cells.create_default_flavors(echo=echo)
        self.cells = objects.CellMapping.get_all(ctx)

    def write_config(self):
        """Write ``<state-dir>/scheduler-split.conf``, the databases and
        the image store of this all-in-one for ``scheduler-split-manage
        --config-file``, beside it while it runs or after it stopped; its
        path. The cell databases are the cell mappings' (in the API
        database), as in a deployment. No bus: those of the all-in-one
        are in its memory, out of any other process's reach."""
        path = os.path.join(self.state_dir, 'scheduler-split.conf')
        cell_lines = ['#   %s: %s' % (cell.name, cell.database_connection)
                      for cell in self.cells]
        text = '\n'.join([
            '# The databases of the scheduler-split-all-in-one of this '
            'directory, for',
            '# scheduler-split-manage --config-file. Written at each start '
            'of the',
            '# all-in-one, which does not read it. The cells, mapped in '
            'the API database:',
            *cell_lines,
            '',
            '[api_database]',
            'connection = %s' % self._sqlite('api'),
            '',
            '[scheduler_database]',
            'connection = %s' % self._sqlite('scheduler'),
            '',
            '[glance]',
            'builtin_store_dir = %s' % CONF.glance.builtin_store_dir,
            ''])
        # A manage command running meanwhile reads the old file or the
        # new one, never half of one.
        with open(path + '.new', 'w') as f:
            f.write(text)
        os.replace(path + '.new', path)
        return path

    def served_at(self, base_url):
        """The API serves at ``base_url``: compute hosts move image data
        (snapshots, shelves, the images they boot) through its Image API
        when it serves the built-in catalog."""
        if images.served():
            CONF.set_default('api_servers', [base_url + '/image'],
                             group='glance')

    def hosts_of(self, cell):
        return ['%s-compute%d' % (cell.name, i)
                for i in range(1, self.hosts_per_cell + 1)]

    def start(self):
        real_cells = [c for c in self.cells if not c.is_cell0]
        self.services.append(scheduler_service(self.cells))
        self.services.append(super_conductor_service())
        self.computes = {}
        for cell in real_cells:
            self.services.append(cell_conductor_service(
                cell.transport_url, cell.database_connection,
                name='cell-conductor-%s' % cell.name))
            for host in self.hosts_of(cell):
                svc = compute_service(host, cell.transport_url,
                                      driver=self._driver(host))
                self.computes[host] = svc
                self.services.append(svc)
        for svc in self.services:
            svc.start()
        # Every compute reports once before the API opens, so that the
        # first boot already finds every host.
        for svc in self.computes.values():
            svc.manager.heartbeat()
            svc.manager.report()
        self._wait_for_hosts(self.services[0])
        cells.discover_hosts(echo=lambda line: LOG.info('%s', line))
        self.recover()

    def recover(self):
        """Settle builds a previous run left in flight.

        The in-memory bus loses every message when the process stops, so a
        build request still in the API database is scheduled again, and an
        instance caught between two hosts of a reschedule ends in ERROR
        with a fault (computes settle the builds on their own hosts, at
        their start and periodically).
        """
        ctx = ss_context.get_admin_context()
        transport = rpc.get_transport()
        scheduler = scheduler_client.SchedulerClient(transport)
        for cell in self.cells:
            if cell.is_cell0:
                continue
            cctx = ss_context.target_cell(ctx, cell)
            for instance in objects.Instance.get_all(cctx, host=None):
                if instance.vm_state != 'building':
                    continue
                LOG.warning('Instance %s was being rescheduled when the '
                            'system stopped; putting it in ERROR',
                            instance.uuid)
                scheduler.release_resources(cctx, instance.uuid)
                instance.save_error(cctx, exception.BuildAbortException(
                    instance_uuid=instance.uuid,
                    reason='the system restarted during a reschedule'))
        conductor = conductor_rpcapi.SuperConductorAPI(transport)
        for br in (objects.BuildRequest.get_placed(ctx, 0) +
                   objects.BuildRequest.get_all(ctx)):
            mapping = objects.InstanceMapping.get_by_instance_uuid(
                ctx, br.instance_uuid)
            if mapping.cell_mapping is not None:
                # The instance reached its cell before the stop; that row
                # is the server now (settled above or by its compute).
                LOG.info('Build request of %s outlived its move to cell '
                         '%s; deleting it', br.instance_uuid,
                         mapping.cell_mapping.name)
                try:
                    br.destroy(ctx)
                except exception.BuildRequestNotFound:
                    pass
                continue
            LOG.info('Scheduling build request %s left from the last run',
                     br.instance_uuid)
            # Whatever took it was this process's last run.
            br.give_back(ctx)
            spec = objects.RequestSpec.get_by_instance_uuid(
                ctx, br.instance_uuid)
            conductor.schedule_and_build_instances(ctx, [br], [spec])

    def _wait_for_hosts(self, scheduler, timeout=60):
        """Reports are casts: wait until the scheduler has every host."""
        deadline = time.monotonic() + timeout
        expected = set(self.computes)
        while time.monotonic() < deadline:
            known = scheduler.known_hosts()
            if expected <= known:
                return
            time.sleep(0.05)
        LOG.warning('The scheduler does not know hosts %s yet',
                    sorted(expected - known))

    def wsgi_app(self):
        """The compute API, with the stand-ins of the services a laptop
        has not got (``api.wsgi.stand_ins``): an identity endpoint for
        noauth2 clients and the built-in image catalog."""
        from scheduler_split.api import wsgi
        return wsgi.make_app()

    def stop(self):
        """Stop from the edge in: the computes first, while the conductors
        and the scheduler still answer the calls their in-flight builds
        make; then the conductors, while the scheduler still answers
        theirs; then the scheduler. The services of one layer stop
        together. A build a conductor casts to a compute already stopped
        waits for the next start, which settles it."""
        computes = [s for s in self.services
                    if s in self.computes.values()]
        scheduler = self.services[:1]
        conductors = [s for s in self.services
                      if s not in computes and s not in scheduler]
        for layer in (computes, conductors, scheduler):
            for svc in layer:
                svc.stop(graceful=False)
            service.wait_all(layer)
        self.services = []
