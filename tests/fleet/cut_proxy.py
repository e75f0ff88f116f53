"""A TCP proxy in front of a database server that a test can cut and restore: a
partition between one worker and the database while the server itself stays up (the
other workers still reach it)."""

from __future__ import annotations

import contextlib
import socket
import threading


class CutProxy:
    """Listens on a free port of 127.0.0.1 and forwards each connection to ``target``.
    :meth:`cut` closes every connection through it and refuses new ones (nothing
    listens on its port); :meth:`restore` listens again on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listening: threading.Event | None = None
        self._acceptor: threading.Thread | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.1)
        listening = threading.Event()
        listening.set()
        self._listening = listening
        self._acceptor = threading.Thread(
            target=self._accept, args=(listener, listening), daemon=True
        )
        self._acceptor.start()

    def cut(self) -> None:
        if self._listening is not None:
            self._listening.clear()  # the accept loop closes the listener
            self._listening = None
        if self._acceptor is not None:
            self._acceptor.join(timeout=10)
            self._acceptor = None
        with self._lock:
            cut, self._sockets = self._sockets, set()
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket, listening: threading.Event) -> None:
        with listener:
            while listening.is_set():
                try:
                    client, _address = listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                try:
                    server = socket.create_connection(("127.0.0.1", self.target_port))
                except OSError:
                    client.close()
                    continue
                with self._lock:
                    if not listening.is_set():
                        client.close()
                        server.close()
                        continue
                    self._sockets.update((client, server))
                for source, sink in ((client, server), (server, client)):
                    threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
