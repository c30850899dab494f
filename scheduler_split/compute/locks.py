"""Locks a compute takes per instance."""

import contextlib
import threading


class InstanceLocks:
    """One lock per instance uuid, so a delete waits for a running build.

    A lock lives only while someone holds or waits for it.
    """

    def __init__(self):
        self._locks = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def __call__(self, uuid):
        with self._guard:
            lock, users = self._locks.get(uuid, (None, 0))
            if lock is None:
                lock = threading.Lock()
            self._locks[uuid] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[uuid]
                if users == 1:
                    del self._locks[uuid]
                else:
                    self._locks[uuid] = (lock, users - 1)
