"""A TCP forwarder on 127.0.0.1 that a test can cut: what the clients
behind it meet when the link to their server goes (the connections they
had reset, new ones refused), while the server itself, and every client
not behind it, goes on."""

import socket
import struct
import threading

from tests.integration import backends


class Proxy:
    """Forwards every connection to its ``port`` on to ``target``
    (``(host, port)``)."""

    def __init__(self, target, port=None):
        self.target = target
        self.port = port or backends.free_port()
        self._lock = threading.Lock()
        self._listener = None
        self._open = set()

    def start(self):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(('127.0.0.1', self.port))
        sock.listen(64)
        with self._lock:
            self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True,
                         name='proxy-%d' % self.port).start()
        return self

    def cut(self):
        """Refuse new connections and reset those open."""
        with self._lock:
            listener, self._listener = self._listener, None
            open_now, self._open = self._open, set()
        if listener is not None:
            # Stops it listening at once: a close alone waits for the
            # accept under way.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for sock in open_now:
            _reset(sock)

    mend = start

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _reset(client)
                    _reset(server)
                    return
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink),
                                 daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            gone = [s for s in (source, sink) if s in self._open]
            self._open.difference_update(gone)
        for sock in gone:
            _reset(sock)


def _reset(sock):
    """Close ``sock`` with a reset, as a peer that is gone does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
