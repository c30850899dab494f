"""Live migration of libvirt guests: a block migration, since no
storage is shared.

The destination makes the server's disks as overlays on its own cached
copy of the image (:meth:`LiveMigrationMixin.pre_live_migration`); the
source's QEMU then sends the guest's memory and what the guest wrote to
its disks (libvirt's incremental storage copy) straight to the
destination's, while the guest runs, and libvirt defines the domain
there as the destination's (:meth:`LiveMigrationMixin.live_migration`).
A server's files have the same path on both hosts ([DEFAULT]
instances_path alike on every host, as Nova has it).
"""

import logging
import shutil
import threading
import time

from scheduler_split.compute.virt.libvirt import config
from scheduler_split.compute.virt.libvirt import host as libvirt_host
from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class LiveMigrationMixin:
    """The live migration steps of :class:`.driver.LibvirtDriver`."""

    def pre_live_migration(self, context, instance, migration):
        """Destination: the server's disks, kernel and ramdisk ready;
        refuses (MigrationPreCheckError) what it cannot take."""
        binding = libvirt_host.libvirt_binding()
        try:
            self.host_api.conn.lookupByUUIDString(instance.uuid)
        except binding.libvirtError as exc:
            if exc.get_error_code() != binding.VIR_ERR_NO_DOMAIN:
                raise exception.MigrationPreCheckError(
                    reason='the libvirtd of %s does not answer: %s' % (
                        self.host, exc))
        else:
            raise exception.MigrationPreCheckError(
                reason='%s shares its libvirtd with the guest\'s host: a '
                       'live migration needs a libvirtd of its own on each '
                       'end' % self.host)
        extra_specs = getattr(instance.flavor, 'extra_specs', None) or {}
        if extra_specs.get('hw:cpu_policy') == 'dedicated':
            raise exception.MigrationPreCheckError(
                reason='the libvirt driver does not live migrate a server '
                       'with pinned CPUs (hw:cpu_policy=dedicated); cold '
                       'migrate it')
        try:
            self._create_disks(context, instance)
        except Exception as exc:
            shutil.rmtree(self.instance_dir(instance), ignore_errors=True)
            raise exception.MigrationPreCheckError(
                reason='%s cannot make the disks of instance %s: %s' % (
                    self.host, instance.uuid, exception.describe(exc)))

    @staticmethod
    def live_migration_uri(dest):
        return 'qemu+%s://%s/system' % (CONF.libvirt.live_migration_scheme,
                                        dest)

    def live_migration(self, context, instance, migration):
        """Source: send the running guest to ``migration.dest_compute``;
        when this returns it runs there (its domain defined there, owned
        by the destination) and nothing of it is left here. Raises, with
        the guest still running here, if it could not be sent within
        ``[libvirt] live_migration_completion_timeout``."""
        binding = libvirt_host.libvirt_binding()
        domain = self._domain(instance)
        dest = migration.dest_compute
        xml = config.with_owner(domain.XMLDesc(
            binding.VIR_DOMAIN_XML_MIGRATABLE |
            binding.VIR_DOMAIN_XML_SECURE), dest)
        params = {
            binding.VIR_MIGRATE_PARAM_URI: 'tcp://%s' % dest,
            binding.VIR_MIGRATE_PARAM_DEST_XML: xml,
            binding.VIR_MIGRATE_PARAM_PERSIST_XML: xml,
            binding.VIR_MIGRATE_PARAM_MIGRATE_DISKS: config.disk_targets(xml),
            # The destination's QEMU and its disk server take the data on
            # any of its addresses: the source reaches it by name.
            binding.VIR_MIGRATE_PARAM_LISTEN_ADDRESS: '0.0.0.0',
        }
        if CONF.libvirt.live_migration_bandwidth:
            params[binding.VIR_MIGRATE_PARAM_BANDWIDTH] = \
                CONF.libvirt.live_migration_bandwidth
        flags = (binding.VIR_MIGRATE_LIVE | binding.VIR_MIGRATE_PEER2PEER |
                 binding.VIR_MIGRATE_PERSIST_DEST |
                 binding.VIR_MIGRATE_UNDEFINE_SOURCE |
                 binding.VIR_MIGRATE_NON_SHARED_INC)
        flavor = instance.flavor
        gib = (flavor.memory_mb / 1024.0 + (flavor.root_gb or 0) +
               (flavor.ephemeral_gb or 0))
        limit = CONF.libvirt.live_migration_completion_timeout * max(gib, 1)
        uri = self.live_migration_uri(dest)
        LOG.info('Live migrating instance %s to %s (%s)', instance.uuid,
                 dest, uri, extra={'instance_uuid': instance.uuid})
        failure = self._watch_migration(
            instance, domain, lambda: domain.migrateToURI3(uri, params,
                                                           flags), limit)
        if failure is not None:
            if self.host_api.lookup(instance.uuid) is not None:
                raise failure
            # libvirt reported an error after the source let go of the
            # guest: it runs on the destination.
            LOG.warning('Live migration of instance %s ended with "%s", '
                        'but its guest left %s: taking it as sent',
                        instance.uuid, failure, self.host,
                        extra={'instance_uuid': instance.uuid})
        self.host_api.unpin(instance.uuid)
        shutil.rmtree(self.instance_dir(instance), ignore_errors=True)

    def _watch_migration(self, instance, domain, migrate, limit):
        """Run ``migrate`` in a thread, logging its progress, and abort
        the job once it has run ``limit`` seconds (0: never); the
        exception it ended with, or None."""
        ended = {}

        def run():
            try:
                migrate()
            except Exception as exc:
                ended['failure'] = exc

        worker = threading.Thread(
            target=run, daemon=True,
            name='live-migration-%s' % instance.uuid)
        started = time.monotonic()
        worker.start()
        logged = started
        aborted = False
        interval = CONF.libvirt.live_migration_progress_interval
        while worker.is_alive():
            worker.join(1)
            now = time.monotonic()
            if not worker.is_alive():
                break
            if limit and now - started > limit and not aborted:
                LOG.warning('Live migration of instance %s has run %d s, '
                            'over its limit of %d s: aborting it',
                            instance.uuid, now - started, limit,
                            extra={'instance_uuid': instance.uuid})
                aborted = True
                try:
                    domain.abortJob()
                except Exception as exc:
                    LOG.warning('Could not abort the live migration of '
                                'instance %s: %s', instance.uuid, exc,
                                extra={'instance_uuid': instance.uuid})
            if now - logged >= interval:
                logged = now
                self._log_progress(instance, domain, now - started)
        LOG.info('Live migration of instance %s ended after %.1f s%s',
                 instance.uuid, time.monotonic() - started,
                 ': %s' % ended['failure'] if ended else '',
                 extra={'instance_uuid': instance.uuid})
        return ended.get('failure')

    @staticmethod
    def _log_progress(instance, domain, elapsed):
        try:
            stats = domain.jobStats()
        except Exception:
            return
        mib = 1024 * 1024
        LOG.info('Live migration of instance %s: %d s, memory %d of %d '
                 'MiB sent, disks %d of %d MiB', instance.uuid, elapsed,
                 stats.get('memory_processed', 0) // mib,
                 stats.get('memory_total', 0) // mib,
                 stats.get('disk_processed', 0) // mib,
                 stats.get('disk_total', 0) // mib,
                 extra={'instance_uuid': instance.uuid})

    def post_live_migration_at_destination(self, context, instance,
                                           migration, power_state):
        """Destination: the guest runs here; its domain's XML is kept
        beside its disks, as a spawn keeps it."""
        domain = self._domain(instance)
        with open(self._path(instance, 'libvirt.xml'), 'w') as f:
            f.write(domain.XMLDesc(0))
