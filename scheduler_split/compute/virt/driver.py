"""The contract between the compute manager and a hypervisor.

The part of Nova's virt driver API this compute calls, one method per
thing it asks of a host. :func:`load` picks the driver that
``[DEFAULT] compute_driver`` names, with Nova's names:
``fake.FakeDriver`` (a hypervisor that spawns nothing) and
``libvirt.LibvirtDriver`` (QEMU/KVM guests through libvirtd).

Every method takes the instance as the compute read it from its cell.
A failure is an exception: ``RescheduledException`` from :meth:`spawn`
sends the build to an alternate, anything else ends the step with a
fault. The scheduler and the claims never learn which driver runs: a
driver says what its host has through :meth:`get_available_resource`
and the resource tracker reports it like any other host's.
"""

import importlib

from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF

# Power states, as Nova's (nova.compute.power_state).
NOSTATE = 0
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4
CRASHED = 6
SUSPENDED = 7

# What compute_driver may name: Nova's spelling -> module, class.
DRIVERS = {
    'fake.FakeDriver': ('scheduler_split.compute.virt.fake', 'FakeDriver'),
    'libvirt.LibvirtDriver': ('scheduler_split.compute.virt.libvirt',
                              'LibvirtDriver'),
}


class DriverNotAvailable(exception.SchedulerSplitException):
    msg_fmt = 'compute driver %(driver)s cannot run here: %(reason)s'
    code = 500


def load(host, name=None):
    """The driver ``name`` (``[DEFAULT] compute_driver`` by default) for
    compute host ``host``; ``DriverNotAvailable`` when it names no known
    driver or its library is missing."""
    name = name or CONF.compute_driver
    try:
        module_name, class_name = DRIVERS[name]
    except KeyError:
        raise DriverNotAvailable(
            driver=name, reason='not one of %s' % ', '.join(sorted(DRIVERS)))
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(host)


class ComputeDriver:
    """A hypervisor of one compute host. Subclasses implement every
    method; the base only names them, so that a driver missing one
    fails the step that needs it with a clear error."""

    # Where the driver puts a server's root disk, shown by the API.
    root_device_name = None

    def __init__(self, host):
        self.host = host

    def _missing(self, what):
        raise NotImplementedError('%s does not %s' % (
            type(self).__name__, what))

    def init_host(self):
        """At the compute's start, before it takes any message: connect
        to the hypervisor. Raises when it cannot, so that the service
        does not take builds it cannot run."""

    def cleanup_host(self):
        """At the compute's stop."""

    def register_event_listener(self, callback):
        """Have ``callback(uuid)`` called, from a thread of the
        driver's, when the hypervisor says a server's guest changed state
        (it stopped, started, was paused): a driver without such events
        leaves it to the periodic power-state sync."""

    # --- what the host has -------------------------------------------------

    def nodename(self):
        """The name of this host's compute node (its resource provider)."""
        return self.host

    def get_available_resource(self):
        """What this host has: ``vcpus``, ``memory_mb``, ``local_gb``;
        ``resources`` ({class: total} beyond those), ``traits``,
        ``providers`` (children of the compute node), and the
        hypervisor's ``hypervisor_type``, ``hypervisor_version``,
        ``cpu_arch``, ``cpu_info`` (JSON)."""
        self._missing('report its resources')

    def list_instances(self):
        """The uuids of the servers this host's hypervisor holds."""
        self._missing('list its servers')

    # --- a server's life on this host ---------------------------------------

    def spawn(self, context, instance, image_id=None):
        """Create and start the server from its image (``image_id``: from
        that image instead, as an unshelve from the shelved one); it runs
        when this returns."""
        self._missing('spawn')

    def destroy(self, instance):
        """Stop the server and remove everything it has on this host.
        A server this host does not hold is no error."""
        self._missing('destroy')

    def get_power_state(self, instance):
        """The server's power state (one of this module's), NOSTATE for
        one this host does not hold."""
        self._missing('read power states')

    def power_off(self, instance):
        self._missing('power off')

    def power_on(self, instance):
        self._missing('power on')

    def reboot(self, instance, reboot_type):
        """``reboot_type`` ``SOFT`` (the guest is asked) or ``HARD``."""
        self._missing('reboot')

    def pause(self, instance):
        self._missing('pause')

    def unpause(self, instance):
        self._missing('unpause')

    def suspend(self, instance):
        self._missing('suspend')

    def resume(self, instance):
        self._missing('resume')

    def soft_delete(self, instance):
        """A delete that may be undone: the server stops, its disk stays."""
        self._missing('soft delete')

    def restore(self, instance):
        """Undo :meth:`soft_delete`: the server runs again."""
        self._missing('restore')

    def reimage(self, context, instance, power_on=True):
        """A rebuild on the server's own host: a new root disk from its
        (new) ``image_ref``; running afterwards unless ``power_on`` is
        False."""
        self._missing('rebuild')

    def shelve(self, context, instance, image_id):
        """The server stops; its disk is uploaded as the data of the
        queued image ``image_id`` (one an API made active already stays
        as it is)."""
        self._missing('shelve')

    def snapshot(self, context, instance, image_id):
        """Upload the server's disk as the data of the queued image
        ``image_id``; the server is as it was afterwards."""
        self._missing('snapshot')

    # --- what a server shows of itself ---------------------------------------

    def get_console_output(self, instance):
        """The server's console output, as text."""
        self._missing('show console output')

    def get_diagnostics(self, instance):
        """Nova's diagnostics of 2.48 for the server."""
        self._missing('show diagnostics')

    # --- moves ------------------------------------------------------------

    def check_can_take(self, instance):
        """Destination of a resize or cold migration: whether it takes
        the server."""
        self._missing('take a resize')

    def migrate_disk_and_power_off(self, context, instance, migration):
        """Source: stop the server and send its disk off for
        ``migration``; its copy stays here until the move is confirmed
        or reverted."""
        self._missing('resize')

    def finish_migration(self, context, instance, migration, power_on):
        """Destination: start the moved server with the migration's new
        flavor (running unless ``power_on`` is False)."""
        self._missing('finish a resize')

    def confirm_migration(self, context, instance, migration):
        """Source: the move is confirmed; its copy here goes."""
        self._missing('confirm a resize')

    def finish_revert_migration(self, context, instance, migration,
                                power_on):
        """Source: the move is reverted (or failed); its copy here runs
        again with the migration's old flavor."""
        self._missing('revert a resize')

    def pre_live_migration(self, context, instance, migration):
        """Destination: get ready to take the server live; raises if it
        cannot."""
        self._missing('take a live migration')

    def live_migration(self, context, instance, migration):
        """Source: send the running server to ``migration.dest_compute``;
        raises, the server still running here, if it could not."""
        self._missing('live migrate')

    def post_live_migration_at_destination(self, context, instance,
                                           migration, power_state):
        """Destination: the server runs here now."""
        self._missing('finish a live migration')

    def rebuild(self, context, instance, power_on=True):
        """Destination of an evacuation: the server again, from its
        image."""
        self._missing('evacuate')
