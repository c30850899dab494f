"""Client side of the compute RPC API (topic ``compute``, server = host).

Version history:
    1.0 - build_and_run_instance, terminate_instance
    1.1 - build_and_run_instance: host_list carries Selection 1.1 (with
          the host's availability zone)
    1.2 - Instance 1.2 (accessIPv4/accessIPv6) in build_and_run_instance
          and terminate_instance
    1.3 - stop_instance, start_instance, reboot_instance, pause_instance,
          unpause_instance, suspend_instance, resume_instance; Instance
          1.3 (locked, locked_by, locked_reason, tags)
    1.4 - RequestSpec 1.2 (the image's properties) in
          build_and_run_instance
    1.5 - moves, carrying Migration 1.0: prep_resize, resize_instance,
          finish_resize, confirm_resize, revert_resize,
          finish_revert_resize (resizes, cold migrations);
          pre_live_migration (a call), live_migration,
          post_live_migration_at_destination,
          rollback_live_migration_at_destination (live migrations);
          rebuild_instance (evacuations); RequestSpec 1.3
          (requested_cell) in build_and_run_instance
    1.6 - rebuild_in_place (a rebuild on the server's own host);
          soft_delete_instance, restore_instance (a delete that waits
          for [DEFAULT] reclaim_instance_interval, and its undoing);
          get_console_output, get_diagnostics (calls);
          Instance 1.4 (user_data, kernel_id, ramdisk_id,
          root_device_name) in every cast
    1.7 - shelve_instance, shelve_offload_instance, unshelve_instance;
          Instance 1.5 (system_metadata) in every cast
    1.8 - snapshot_instance (createImage, createBackup: the compute
          uploads the image's data); shelve_instance uploads the data of
          the shelved image, which the API leaves queued
"""

import oslo_messaging as messaging

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc

CONF = conf.CONF

TOPIC = 'compute'

# The objects each version of this API carries, at the versions it
# carries them; a client capped at a version sends them so.
OBJECT_VERSIONS = {
    '1.0': {'Instance': '1.1', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.0'},
    '1.1': {'Instance': '1.1', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.2': {'Instance': '1.2', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.3': {'Instance': '1.3', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.1', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.4': {'Instance': '1.3', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.2', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1'},
    '1.5': {'Instance': '1.3', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.3', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1',
            'Migration': '1.0'},
    '1.6': {'Instance': '1.4', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.3', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1',
            'Migration': '1.0'},
    '1.7': {'Instance': '1.5', 'InstanceFault': '1.0', 'Flavor': '1.0',
            'RequestSpec': '1.3', 'InstanceGroup': '1.0',
            'SchedulerRetries': '1.0', 'Selection': '1.1',
            'Migration': '1.0'},
}
OBJECT_VERSIONS['1.8'] = OBJECT_VERSIONS['1.7']

# The casts of 1.3, each a power or pause/suspend action on one instance.
LIFECYCLE_CASTS = ('stop_instance', 'start_instance', 'reboot_instance',
                   'pause_instance', 'unpause_instance', 'suspend_instance',
                   'resume_instance')


def version_cap(cell_db):
    """``[upgrade_levels] compute`` for the computes of the cell whose
    database is ``cell_db``: ``auto`` reads their service records there.
    """
    def minimum():
        ctx = ss_context.targeted(ss_context.get_admin_context(), cell_db)
        return service_obj.Service.get_minimum_version(
            ctx, service_obj.COMPUTE)
    return rpc.VersionCap(
        'compute_rpc', CONF.upgrade_levels.compute, minimum,
        cache_key=cell_db,
        receivers='the computes of %s' % rpc.database_name(cell_db))


class ComputeAPI:
    VERSION = '1.8'

    def __init__(self, transport, cell_db, conductor=None, timeout=None,
                 retry=None):
        """A client for the computes of one cell: its bus and database.
        A compute, which has no database, passes ``cell_db`` None and its
        ``conductor`` client: ``auto`` then asks the cell conductor.
        ``timeout`` and ``retry`` bound its calls and sends as
        :func:`scheduler_split.rpc.get_client` says."""
        if cell_db is None:
            cap = rpc.VersionCap(
                'compute_rpc', CONF.upgrade_levels.compute,
                lambda: conductor.get_minimum_compute_version(
                    ss_context.get_admin_context()),
                cache_key=('bus', id(transport)),
                receivers='the computes of this cell')
        else:
            cap = version_cap(cell_db)
        self.client = rpc.Client(transport, TOPIC, self.VERSION,
                                 OBJECT_VERSIONS, cap, timeout=timeout,
                                 retry=retry)

    def build_and_run_instance(self, ctx, host, node, instance, request_spec,
                               host_list, retry):
        """Cast from a conductor to the chosen compute.

        ``host_list`` holds the alternates not tried yet, in order;
        ``retry`` records the attempt number and the hosts tried.
        """
        cctxt, _ = self.client.prepare('1.7', '1.6', '1.5', '1.4', '1.2',
                                       '1.1', '1.0', server=host)
        cctxt.cast(ctx, 'build_and_run_instance', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry, node=node)

    def terminate_instance(self, ctx, host, instance):
        """Cast from the API to the instance's compute: delete it."""
        cctxt, _ = self.client.prepare('1.3', '1.2', '1.0', server=host)
        cctxt.cast(ctx, 'terminate_instance', instance=instance)

    def can_send(self, version):
        """Whether the computes of the cell take the casts of
        ``version`` (raises ``RPCVersionCapError`` if not), before
        anything is recorded."""
        self.client.prepare(version)

    def can_send_lifecycle(self):
        """Whether the computes of the cell take the 1.3 casts."""
        self.can_send('1.3')

    def _lifecycle_cast(self, ctx, method, host, instance, **kwargs):
        cctxt, _ = self.client.prepare('1.3', server=host)
        cctxt.cast(ctx, method, instance=instance, **kwargs)

    def stop_instance(self, ctx, host, instance):
        """Cast from the API: power the instance off (1.3)."""
        self._lifecycle_cast(ctx, 'stop_instance', host, instance)

    def start_instance(self, ctx, host, instance):
        """Cast from the API: power a stopped instance on (1.3)."""
        self._lifecycle_cast(ctx, 'start_instance', host, instance)

    def reboot_instance(self, ctx, host, instance, reboot_type):
        """Cast from the API: reboot, ``SOFT`` or ``HARD`` (1.3)."""
        self._lifecycle_cast(ctx, 'reboot_instance', host, instance,
                             reboot_type=reboot_type)

    def pause_instance(self, ctx, host, instance):
        self._lifecycle_cast(ctx, 'pause_instance', host, instance)

    def unpause_instance(self, ctx, host, instance):
        self._lifecycle_cast(ctx, 'unpause_instance', host, instance)

    def suspend_instance(self, ctx, host, instance):
        self._lifecycle_cast(ctx, 'suspend_instance', host, instance)

    def resume_instance(self, ctx, host, instance):
        self._lifecycle_cast(ctx, 'resume_instance', host, instance)

    # --- 1.5: resizes and cold migrations ---------------------------------
    # Each a cast to one compute (``host``); the Migration carries the
    # source and the destination.

    @classmethod
    def for_cell(cls, cell):
        """A client for the computes of ``cell`` (a CellMapping), for the
        API and the super-conductor: bounded by ``[DEFAULT]
        cell_rpc_timeout``, so that a cell whose bus is away fails what
        is sent into it (MessageDeliveryFailure, nothing sent) or waits
        for an answer (MessagingTimeout) only that long."""
        return cls(rpc.get_transport(cell.transport_url),
                   cell.database_connection, timeout=rpc.cell_call_timeout(),
                   retry=rpc.cell_retries())

    def can_move(self):
        """Whether the computes of the cell take the casts of moves
        (raises ``RPCVersionCapError`` if not)."""
        self.client.prepare('1.5')

    def _move_cast(self, ctx, method, host, **kwargs):
        cctxt, _ = self.client.prepare('1.5', server=host)
        cctxt.cast(ctx, method, **kwargs)

    def prep_resize(self, ctx, host, instance, migration, flavor,
                    request_spec, host_list, retry):
        """To the claimed destination: take the server."""
        self._move_cast(ctx, 'prep_resize', host, instance=instance,
                        migration=migration, flavor=flavor,
                        request_spec=request_spec, host_list=host_list,
                        retry=retry)

    def resize_instance(self, ctx, host, instance, migration, flavor):
        """To the source: send the server to the destination."""
        self._move_cast(ctx, 'resize_instance', host, instance=instance,
                        migration=migration, flavor=flavor)

    def finish_resize(self, ctx, host, instance, migration, flavor):
        """To the destination: start the server there."""
        self._move_cast(ctx, 'finish_resize', host, instance=instance,
                        migration=migration, flavor=flavor)

    def confirm_resize(self, ctx, host, instance, migration):
        """To the source: drop its copy and give the source's resources
        back."""
        self._move_cast(ctx, 'confirm_resize', host, instance=instance,
                        migration=migration)

    def revert_resize(self, ctx, host, instance, migration):
        """To the destination: drop the server there."""
        self._move_cast(ctx, 'revert_resize', host, instance=instance,
                        migration=migration)

    def finish_revert_resize(self, ctx, host, instance, migration):
        """To the source: start the server there again."""
        self._move_cast(ctx, 'finish_revert_resize', host,
                        instance=instance, migration=migration)

    # Live migrations: the conductor asks the destination, then the
    # source sends the running server.

    def pre_live_migration(self, ctx, host, instance, migration,
                           timeout=None):
        """Call to a live migration's destination: get ready to take the
        server (a refusal raises, and the conductor tries the next
        alternate)."""
        cctxt, _ = self.client.prepare('1.5', server=host, timeout=timeout)
        return cctxt.call(ctx, 'pre_live_migration', instance=instance,
                          migration=migration)

    def live_migration(self, ctx, host, instance, migration):
        """To the source: send the running server to the destination."""
        self._move_cast(ctx, 'live_migration', host, instance=instance,
                        migration=migration)

    def post_live_migration_at_destination(self, ctx, host, instance,
                                           migration):
        self._move_cast(ctx, 'post_live_migration_at_destination', host,
                        instance=instance, migration=migration)

    def rollback_live_migration_at_destination(self, ctx, host, instance,
                                               migration):
        self._move_cast(ctx, 'rollback_live_migration_at_destination',
                        host, instance=instance, migration=migration)

    # Evacuations: the destination rebuilds a server whose host is down.

    def rebuild_instance(self, ctx, host, instance, migration):
        self._move_cast(ctx, 'rebuild_instance', host, instance=instance,
                        migration=migration)

    # --- 1.6: rebuilds on the server's own host, soft deletes ------------

    def can_send_16(self):
        """Whether the computes of the cell take the casts of 1.6
        (raises ``RPCVersionCapError`` if not)."""
        self.client.prepare('1.6')

    def soft_delete_instance(self, ctx, host, instance):
        """To the server's host: power it off, SOFT_DELETED."""
        cctxt, _ = self.client.prepare('1.6', server=host)
        cctxt.cast(ctx, 'soft_delete_instance', instance=instance)

    def restore_instance(self, ctx, host, instance):
        """To the server's host: a SOFT_DELETED server runs again."""
        cctxt, _ = self.client.prepare('1.6', server=host)
        cctxt.cast(ctx, 'restore_instance', instance=instance)

    def rebuild_in_place(self, ctx, host, instance, orig_image_ref,
                         preserve_ephemeral=False):
        """To the server's own host: rebuild it from its image (the one
        the API wrote, ``orig_image_ref`` the one before)."""
        cctxt, _ = self.client.prepare('1.6', server=host)
        cctxt.cast(ctx, 'rebuild_in_place', instance=instance,
                   orig_image_ref=orig_image_ref,
                   preserve_ephemeral=preserve_ephemeral)

    def get_console_output(self, ctx, host, instance, tail_length=None):
        """Call to the server's host: its console output."""
        cctxt, _ = self.client.prepare('1.6', server=host)
        return cctxt.call(ctx, 'get_console_output', instance=instance,
                          tail_length=tail_length)

    def get_diagnostics(self, ctx, host, instance):
        """Call to the server's host: its diagnostics (Nova's 2.48)."""
        cctxt, _ = self.client.prepare('1.6', server=host)
        return cctxt.call(ctx, 'get_diagnostics', instance=instance)

    # --- 1.7: shelve, offload, unshelve ----------------------------------

    def can_shelve(self):
        """Whether the computes of the cell take the casts of 1.7
        (raises ``RPCVersionCapError`` if not)."""
        self.client.prepare('1.7')

    def uploads_images(self):
        """Whether the computes of the cell upload the data of their
        servers' images (1.8): the API then leaves the images of
        snapshots and shelves queued for them."""
        try:
            self.client.prepare('1.8')
        except messaging.RPCVersionCapError:
            return False
        return True

    def snapshot_instance(self, ctx, host, instance, image_id):
        """Cast from the API to the server's host (1.8): upload the
        server's disk as the data of the queued image ``image_id``."""
        cctxt, _ = self.client.prepare('1.8', server=host)
        cctxt.cast(ctx, 'snapshot_instance', instance=instance,
                   image_id=image_id)

    def shelve_instance(self, ctx, host, instance, image_id):
        """Cast from the API to the server's host: power it off and keep
        it as the shelved image ``image_id`` (from 1.8 the compute
        uploads its data); offloaded at once with ``[DEFAULT]
        shelved_offload_time`` 0."""
        cctxt, _ = self.client.prepare('1.8', '1.7', server=host)
        cctxt.cast(ctx, 'shelve_instance', instance=instance,
                   image_id=image_id)

    def shelve_offload_instance(self, ctx, host, instance):
        """Cast from the API or the cell conductor's sweep to a shelved
        server's host: its VM goes, its claim is given back."""
        cctxt, _ = self.client.prepare('1.7', server=host)
        cctxt.cast(ctx, 'shelve_offload_instance', instance=instance)

    def unshelve_instance(self, ctx, host, instance, request_spec=None,
                          host_list=None, retry=None, node=None):
        """Cast from a conductor: a shelved server runs again on its host;
        an offloaded one is spawned on ``host``, which the scheduler
        claimed for it (``host_list``: the same-cell alternates not tried
        yet; ``retry``: the attempts so far)."""
        cctxt, _ = self.client.prepare('1.7', server=host)
        cctxt.cast(ctx, 'unshelve_instance', instance=instance,
                   request_spec=request_spec, host_list=host_list,
                   retry=retry, node=node)
