"""QEMU/KVM guests through libvirtd: the driver Nova's reference
deployments run (``[DEFAULT] compute_driver = libvirt.LibvirtDriver``).

A server is a persistent domain named by ``[DEFAULT]
instance_name_template`` whose libvirt uuid is the server's, with a
directory of its own under ``[DEFAULT] instances_path``: its root disk
(a qcow2 overlay on the cached image), its ephemeral and swap disks, the
kernel and ramdisk of a direct kernel boot, and ``console.log``, where
virtlogd writes its serial console. Several compute hosts may share one
machine and its libvirtd (the all-in-one, tests of moves): each names
itself in the metadata of its domains and only ever sees its own, and
reports its ``[libvirt] host_share`` of the machine.
"""

import logging
import os
import shutil
import time
import uuid as uuid_lib

from scheduler_split.compute.virt import driver
from scheduler_split.compute.virt.libvirt import config
from scheduler_split.compute.virt.libvirt import host as libvirt_host
from scheduler_split.compute.virt.libvirt import imagebackend
from scheduler_split.compute.virt.libvirt import migration as live
from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import client as image_client

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The most of a console log the API is shown, as Nova's.
MAX_CONSOLE_BYTES = 100 * 1024
GiB = imagebackend.GiB


def _flavor_bytes(gigabytes):
    return int(gigabytes or 0) * GiB


class LibvirtDriver(live.LiveMigrationMixin, driver.ComputeDriver):

    root_device_name = '/dev/vda'

    def __init__(self, host, instances_path=None):
        super().__init__(host)
        # Compute hosts sharing a machine each have their own.
        self.instances_path = instances_path or CONF.instances_path
        self.host_api = libvirt_host.Host(host)
        self._cache = None
        self._disk_cache = 'none'

    # --- the host ---------------------------------------------------------

    def init_host(self):
        self.host_api.connect()
        os.makedirs(self.instances_path, exist_ok=True)
        libvirt_host.check_reachable(self.instances_path)
        self._cache = imagebackend.ImageCache(
            os.path.join(self.instances_path, '_base'))
        self._disk_cache = libvirt_host.disk_cache_mode(
            self.instances_path)
        LOG.info('Compute %s runs %s guests through %s, in %s',
                 self.host, CONF.libvirt.virt_type, self.host_api.uri,
                 self.instances_path)

    def cleanup_host(self):
        self.host_api.close()

    def register_event_listener(self, callback):
        def changed(uuid):
            # Only this host's guests: others share its libvirtd.
            if self.host_api.lookup(uuid) is not None:
                callback(uuid)
        self.host_api.on_event = changed

    def get_available_resource(self):
        return self.host_api.available_resource(self.instances_path)

    def list_instances(self):
        return sorted(self.host_api.own_domains())

    # --- names and paths --------------------------------------------------

    @staticmethod
    def instance_name(instance):
        template = CONF.instance_name_template
        if '%(' in template:
            return template % {'uuid': instance.uuid,
                               'id': instance.id or 0}
        return template % (instance.id or 0)

    def instance_dir(self, instance):
        return os.path.join(self.instances_path, instance.uuid)

    def _path(self, instance, name):
        return os.path.join(self.instance_dir(instance), name)

    # --- spawn and destroy ------------------------------------------------

    def spawn(self, context, instance, image_id=None):
        """Fetch the images, make the disks, define and start the
        domain: the guest runs when this returns. Whatever fails is
        rescheduled (the image service, the disks, libvirt refusing the
        domain), with nothing left on this host."""
        try:
            self._create_disks(context, instance, image_id=image_id)
            self._define_and_start(instance)
        except Exception as exc:
            reason = exception.describe(exc)
            LOG.warning('Spawning instance %s on %s failed: %s',
                        instance.uuid, self.host, reason,
                        extra={'instance_uuid': instance.uuid})
            self.destroy(instance)
            raise exception.RescheduledException(
                instance_uuid=instance.uuid, reason=reason)

    def _create_disks(self, context, instance, root_only=False,
                      image_id=None, flavor=None, root_from=None):
        """The server's disks: the root disk an overlay on the cached
        image (or, with ``root_from``, the whole disk a move sent, grown
        to the flavor's root disk), the kernel and ramdisk it boots with,
        its ephemeral and swap disks."""
        directory = self.instance_dir(instance)
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o755)
        flavor = flavor or instance.flavor
        root = self._path(instance, 'disk')
        if os.path.exists(root):
            os.unlink(root)
        if root_from is not None:
            root_from(root)
            imagebackend.grow(root, _flavor_bytes(flavor.root_gb))
        else:
            base = self._cache.fetch(context, image_id or instance.image_ref)
            imagebackend.create_overlay(base, root,
                                        _flavor_bytes(flavor.root_gb))
        for kind, boot_image in (('kernel', instance.kernel_id),
                                 ('ramdisk', instance.ramdisk_id)):
            target = self._path(instance, kind)
            if os.path.exists(target):
                os.unlink(target)
            if boot_image:
                shutil.copyfile(self._cache.fetch(context, boot_image),
                                target)
                os.chmod(target, 0o644)
        if root_only:
            return
        if flavor.ephemeral_gb:
            imagebackend.create_blank(self._path(instance, 'disk.local'),
                                      _flavor_bytes(flavor.ephemeral_gb))
        if flavor.swap:
            imagebackend.create_blank(self._path(instance, 'disk.swap'),
                                      int(flavor.swap) * 1024 * 1024)

    def _guest_spec(self, instance, flavor=None):
        flavor = flavor or instance.flavor
        disks = [config.Disk(self._path(instance, 'disk'), 'vda')]
        targets = iter('bcdefgh')
        for name in ('disk.local', 'disk.swap'):
            if os.path.exists(self._path(instance, name)):
                disks.append(config.Disk(self._path(instance, name),
                                         'vd' + next(targets)))
        kernel = self._path(instance, 'kernel')
        ramdisk = self._path(instance, 'ramdisk')
        cpu_mode = CONF.libvirt.cpu_mode
        if cpu_mode is None:
            cpu_mode = ('host-model' if CONF.libvirt.virt_type == 'kvm'
                        else 'none')
        extra_specs = getattr(flavor, 'extra_specs', None) or {}
        dedicated = extra_specs.get('hw:cpu_policy') == 'dedicated'
        return config.GuestSpec(
            name=self.instance_name(instance), uuid=instance.uuid,
            host=self.host, display_name=instance.display_name or '',
            flavor_name=flavor.name, vcpus=flavor.vcpus,
            memory_mb=flavor.memory_mb,
            virt_type=CONF.libvirt.virt_type,
            arch=self.host_api.arch, disks=disks,
            console_log=self._path(instance, 'console.log'),
            kernel=kernel if os.path.exists(kernel) else None,
            ramdisk=ramdisk if os.path.exists(ramdisk) else None,
            cmdline=CONF.libvirt.kernel_cmdline,
            cpu_mode=cpu_mode,
            cpu_model=(CONF.libvirt.cpu_models or [None])[0],
            pinned_cpus=(self.host_api.pin(instance.uuid, flavor.vcpus)
                         if dedicated else None),
            shared_cpus=self.host_api.shared_cpus() or None,
            disk_cache=self._disk_cache)

    def _define_and_start(self, instance, start=True, flavor=None):
        xml = config.domain_xml(self._guest_spec(instance, flavor))
        with open(self._path(instance, 'libvirt.xml'), 'w') as f:
            f.write(xml)
        domain = self.host_api.define(xml)
        if start:
            self.host_api.start(domain, CONF.libvirt.boot_timeout)
        return domain

    def destroy(self, instance):
        self.host_api.undefine(instance.uuid)
        self.host_api.unpin(instance.uuid)
        shutil.rmtree(self.instance_dir(instance), ignore_errors=True)

    # --- power ------------------------------------------------------------

    def get_power_state(self, instance):
        return self.host_api.power_state(instance.uuid)

    def _domain(self, instance):
        domain = self.host_api.lookup(instance.uuid)
        if domain is None:
            raise exception.InstanceNotFound(instance_id=instance.uuid)
        return domain

    def power_off(self, instance):
        """Ask the guest to shut down (ACPI), then destroy its domain
        after ``[libvirt] shutdown_timeout``."""
        domain = self.host_api.lookup(instance.uuid)
        if domain is None or not domain.isActive():
            return
        self.host_api.shut_down(domain, CONF.libvirt.shutdown_timeout)

    def power_on(self, instance):
        domain = self._domain(instance)
        if not domain.isActive():
            self.host_api.start(domain, CONF.libvirt.boot_timeout)
        elif self.get_power_state(instance) == driver.PAUSED:
            domain.resume()

    def reboot(self, instance, reboot_type):
        """SOFT: the guest is asked to shut down, then started again; a
        guest that does not within ``[libvirt] shutdown_timeout`` is
        rebooted HARD: its domain destroyed and started again."""
        domain = self._domain(instance)
        if reboot_type == 'SOFT' and domain.isActive():
            if self.host_api.shut_down(domain, CONF.libvirt.shutdown_timeout,
                                       force=False):
                self.host_api.start(domain, CONF.libvirt.boot_timeout)
                return
            LOG.info('Instance %s did not shut down within %d s; rebooting '
                     'it hard', instance.uuid, CONF.libvirt.shutdown_timeout,
                     extra={'instance_uuid': instance.uuid})
        if domain.isActive():
            domain.destroy()
        self.host_api.start(domain, CONF.libvirt.boot_timeout)

    def pause(self, instance):
        self._domain(instance).suspend()

    def unpause(self, instance):
        self._domain(instance).resume()

    def suspend(self, instance):
        """The guest's memory saved to disk (libvirt's managed save)."""
        self._domain(instance).managedSave(0)

    def resume(self, instance):
        self.host_api.start(self._domain(instance), CONF.libvirt.boot_timeout)

    def soft_delete(self, instance):
        self.power_off(instance)

    def restore(self, instance):
        self.power_on(instance)

    def reimage(self, context, instance, power_on=True):
        """A new root disk from the server's (new) image; its other disks
        stay."""
        domain = self.host_api.lookup(instance.uuid)
        if domain is not None and domain.isActive():
            domain.destroy()
        self._create_disks(context, instance, root_only=True)
        self._define_and_start(instance, start=power_on)

    def rebuild(self, context, instance, power_on=True):
        """The destination of an evacuation: the server anew from its
        image (its disk stayed on the lost host)."""
        try:
            self._create_disks(context, instance)
            self._define_and_start(instance, start=power_on)
        except Exception:
            self.destroy(instance)
            raise

    def shelve(self, context, instance, image_id):
        """Shut the guest down, then upload its disk as the shelved
        image."""
        self.power_off(instance)
        if image_id:
            self._upload_disk(context, instance, image_id,
                              image_client.upload_if_queued)

    def snapshot(self, context, instance, image_id):
        """As Nova's cold snapshot: a running or paused guest's memory is
        saved to disk (QEMU exits, its disk whole), the disk is copied
        whole (its base image folded in) as a qcow2 and the guest
        restored; then the copy is uploaded."""
        self._upload_disk(context, instance, image_id, image_client.upload)

    def _upload_disk(self, context, instance, image_id, upload):
        domain = self._domain(instance)
        state = self.get_power_state(instance)
        copy = self._path(instance, 'snapshot-%s' % image_id)
        saved = state in (driver.RUNNING, driver.PAUSED)
        if saved:
            domain.managedSave(0)
        try:
            imagebackend.qemu_img('convert', '-O', 'qcow2',
                                  self._path(instance, 'disk'), copy)
        finally:
            if saved:
                self.host_api.start(domain, CONF.libvirt.boot_timeout)
                if state == driver.PAUSED and domain.state()[0] != 3:
                    domain.suspend()
        try:
            upload(context, image_id, copy)
        finally:
            os.unlink(copy)

    # --- moves: resizes and cold migrations ------------------------------
    # The disk travels through the image service, as Nova's cross-cell
    # resize sends it: no shared storage and no shell between hosts. The
    # source keeps its copy in <uuid>_resize until the move is confirmed
    # (deleted) or reverted (started again).

    @staticmethod
    def transfer_image_id(migration):
        """The id of the image a move's disk travels as: both hosts
        know it from the migration alone."""
        return str(uuid_lib.uuid5(uuid_lib.NAMESPACE_URL,
                                  'scheduler-split:migration:%s'
                                  % migration.uuid))

    def _resize_dir(self, instance):
        return self.instance_dir(instance) + '_resize'

    def check_can_take(self, instance):
        """Destination: any host with libvirt takes it; the claim made
        sure of its room."""

    def migrate_disk_and_power_off(self, context, instance, migration):
        self.power_off(instance)
        directory, kept = self.instance_dir(instance), \
            self._resize_dir(instance)
        shutil.rmtree(kept, ignore_errors=True)
        os.rename(directory, kept)
        image_id = self.transfer_image_id(migration)
        image_client.create_image(
            context, 'migration-%s' % migration.uuid,
            properties={'migration_uuid': migration.uuid,
                        'instance_uuid': instance.uuid},
            queued=True, image_id=image_id, over_api=True)
        copy = os.path.join(kept, 'disk.transfer')
        try:
            imagebackend.qemu_img('convert', '-O', 'qcow2',
                                  os.path.join(kept, 'disk'), copy)
            image_client.upload(context, image_id, copy)
        except Exception:
            self._delete_transfer(context, migration)
            raise
        finally:
            if os.path.exists(copy):
                os.unlink(copy)

    def finish_migration(self, context, instance, migration, power_on):
        flavor = migration.new_flavor
        try:
            self._create_disks(
                context, instance, flavor=flavor,
                root_from=lambda path: image_client.download(
                    context, self.transfer_image_id(migration), path))
            self._define_and_start(instance, start=power_on, flavor=flavor)
        except Exception:
            self.destroy(instance)
            raise

    def confirm_migration(self, context, instance, migration):
        shutil.rmtree(self._resize_dir(instance), ignore_errors=True)
        if migration.dest_compute != self.host:
            # Its domain, unless the destination's took its place.
            self.host_api.undefine(instance.uuid)
        self._delete_transfer(context, migration)

    def finish_revert_migration(self, context, instance, migration,
                                power_on):
        kept = self._resize_dir(instance)
        if os.path.exists(kept):
            shutil.rmtree(self.instance_dir(instance), ignore_errors=True)
            os.rename(kept, self.instance_dir(instance))
        flavor = migration.old_flavor or instance.flavor
        self._define_and_start(instance, start=False, flavor=flavor)
        if power_on:
            self.host_api.start(self._domain(instance),
                                CONF.libvirt.boot_timeout)
        self._delete_transfer(context, migration)

    def _delete_transfer(self, context, migration):
        try:
            image_client.delete_image(context,
                                      self.transfer_image_id(migration),
                                      over_api=True)
        except exception.ImageNotFound:
            pass
        except Exception as exc:
            LOG.warning('Could not delete the image of migration %s: %s',
                        migration.uuid, exc)

    # --- what a server shows of itself ------------------------------------

    def get_console_output(self, instance):
        """The guest's serial console, its last MAX_CONSOLE_BYTES."""
        path = self._path(instance, 'console.log')
        try:
            with open(path, 'rb') as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - MAX_CONSOLE_BYTES))
                data = f.read()
        except FileNotFoundError:
            if self.host_api.lookup(instance.uuid) is None:
                raise exception.InstanceNotFound(instance_id=instance.uuid)
            return ''
        return data.decode('utf-8', 'replace').replace('\r\n', '\n')

    def get_diagnostics(self, instance):
        """Nova's diagnostics of 2.48, read from libvirt."""
        domain = self._domain(instance)
        state, max_kib, _mem_kib, vcpus, _cpu_time = domain.info()
        power = self.host_api.power_state(instance.uuid)
        states = {driver.RUNNING: 'running', driver.PAUSED: 'paused',
                  driver.SHUTDOWN: 'shutdown', driver.CRASHED: 'crashed',
                  driver.SUSPENDED: 'suspended'}
        active = domain.isActive()
        cpu_details = []
        if active:
            for number, _state, cpu_time, _host_cpu in domain.vcpus()[0]:
                cpu_details.append({'id': number, 'time': cpu_time,
                                    'utilisation': None})
        memory = {'maximum': max_kib // 1024, 'used': 0}
        if active:
            stats = domain.memoryStats()
            used = stats.get('rss') or stats.get('actual') or 0
            memory['used'] = int(used) // 1024
        spec = self._guest_spec(instance)
        disk_details = []
        for disk in spec.disks:
            read_requests = read_bytes = write_requests = write_bytes = 0
            errors = 0
            if active:
                (read_requests, read_bytes, write_requests, write_bytes,
                 errors) = domain.blockStats(disk.target)
            disk_details.append({
                'read_bytes': read_bytes, 'read_requests': read_requests,
                'write_bytes': write_bytes, 'write_requests': write_requests,
                'errors_count': max(errors, 0)})
        started = self.host_api.started_at(domain)
        return {
            'state': states.get(power, 'pending'), 'driver': 'libvirt',
            'hypervisor': CONF.libvirt.virt_type,
            'hypervisor_os': 'linux',
            'uptime': int(time.time() - started) if started else None,
            'config_drive': False, 'num_cpus': vcpus, 'num_nics': 0,
            'num_disks': len(disk_details), 'memory_details': memory,
            'cpu_details': cpu_details, 'nic_details': [],
            'disk_details': disk_details}
