"""A server's disks on its host: qcow2 overlays on cached base images.

As Nova's image backend: an image a server boots from is fetched once
from the image service into ``<instances_path>/_base`` (named by the
SHA-1 of its id) and shared, read-only, by the overlays of every server
that boots from it; each server writes only to its own overlay in its
own directory. Formats are read from the data with ``qemu-img info``,
never taken from the image's metadata.
"""

import hashlib
import json
import logging
import os
import subprocess
import threading

from scheduler_split import exception
from scheduler_split.image import client as image_client

LOG = logging.getLogger(__name__)

# Seconds a qemu-img command may take (a copy of a large disk aside).
QEMU_IMG_TIMEOUT = 120
GiB = 1024 ** 3


class DiskError(exception.SchedulerSplitException):
    msg_fmt = 'disk operation failed: %(reason)s'
    code = 500


def qemu_img(*args, timeout=QEMU_IMG_TIMEOUT):
    """Run ``qemu-img ARGS``; its output, or ``DiskError`` saying why."""
    command = ('qemu-img',) + tuple(str(a) for a in args)
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        raise DiskError(reason='qemu-img is missing: install Debian\'s '
                               'qemu-utils')
    except subprocess.TimeoutExpired:
        raise DiskError(reason='%s took over %d s' % (' '.join(command),
                                                      timeout))
    if done.returncode:
        raise DiskError(reason='%s: %s' % (' '.join(command),
                                           done.stderr.strip()))
    return done.stdout


def info(path):
    """``qemu-img info`` of ``path``: its ``format`` and
    ``virtual-size`` (bytes), among others."""
    return json.loads(qemu_img('info', '--output=json', '-U', path))


class ImageCache:
    """The images this host's servers boot from, fetched once each."""

    def __init__(self, base_dir):
        self.base_dir = base_dir
        self._locks = {}
        self._guard = threading.Lock()

    def _lock(self, name):
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def path(self, image_id):
        return os.path.join(self.base_dir, hashlib.sha1(
            image_id.encode('utf-8')).hexdigest())

    def fetch(self, ctx, image_id):
        """The cached copy of image ``image_id``, fetched from the image
        service (as ``ctx``'s user) unless it is here already."""
        path = self.path(image_id)
        with self._lock(path):
            if os.path.exists(path):
                # Its use keeps it: a cache cleaner ages out the others.
                os.utime(path)
                return path
            os.makedirs(self.base_dir, exist_ok=True)
            LOG.info('Fetching image %s into %s', image_id, path)
            image_client.download(ctx, image_id, path)
            # Several servers read it at once; none may write it.
            os.chmod(path, 0o444)
            return path


def create_overlay(base, path, size_bytes=0):
    """A qcow2 at ``path`` over ``base``, of ``size_bytes`` or, if
    larger, the base's own virtual size."""
    base_info = info(base)
    size = max(size_bytes, base_info['virtual-size'])
    qemu_img('create', '-f', 'qcow2', '-F', base_info['format'], '-b',
             base, path, size)
    return size


def create_blank(path, size_bytes):
    """An empty qcow2 (an ephemeral or a swap disk)."""
    qemu_img('create', '-f', 'qcow2', path, size_bytes)


def grow(path, size_bytes):
    """Grow the disk at ``path`` to ``size_bytes`` (never shrinks)."""
    if info(path)['virtual-size'] < size_bytes:
        qemu_img('resize', path, size_bytes)
