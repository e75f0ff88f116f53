"""Listening for the viewer: the socket bound up front (a port in use is said before
anything starts) and uvicorn serving the app on it."""

from __future__ import annotations

import errno
import socket
import threading
from typing import TYPE_CHECKING

from flower.core.errors import FlowerError
from flower.core.i18n import _

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

LOOPBACK = "127.0.0.1"


class PortInUseError(FlowerError):
    """The port asked for is taken."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: a free one)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise FlowerError(f"--host {host}: {exc.strerror or exc}") from None  # the OS's words
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(
                _(
                    "port {port} on {host} is in use: pick another with --port N "
                    "(--port 0 takes a free one)"
                ).format(port=port, host=host)
            ) from None
        raise FlowerError(
            _("cannot listen on {host}:{port}: {error}").format(
                host=host, port=port, error=exc.strerror or exc
            )
        ) from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str | None = None) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def server(app: ASGIApp) -> uvicorn.Server:
    """A uvicorn server for ``app``, quiet but for errors; ``.run(sockets=[...])``."""
    import uvicorn

    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1, access_log=False
    )
    return uvicorn.Server(config)


class Background:
    """The app served on ``sock`` from a thread (tests, screenshots); ``stop()`` ends it."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self.sock = sock
        self.url = url_of(sock)
        self._server = server(app)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )

    def start(self) -> Background:
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.sock.close()
