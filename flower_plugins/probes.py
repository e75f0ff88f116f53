"""Built-in probe strategies: is the API endpoint reachable right now?

``tcp`` (the default): ``getaddrinfo`` plus a TCP handshake; no HTTP, no credentials,
no cost. ``http``: for gateways that accept TCP while their upstream is down, a HEAD
(then a GET) without credentials; any HTTP answer, even a 503, counts as reachable.
``none``: always reachable, for air-gapped tests.

A prober never raises: any failure means unreachable.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flower.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.plugin import RegisterFactory

DEFAULT_TIMEOUT = 5.0


class TcpProber:
    """DNS resolution and a TCP handshake against every address until one answers."""

    name = "tcp"

    def reachable(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> bool:
        import socket  # imported on use: registering the prober stays free

        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except Exception:
            return False
        for family, socktype, proto, _canon, address in infos:
            try:
                with socket.socket(family, socktype, proto) as sock:
                    sock.settimeout(timeout)
                    sock.connect(address)
                    return True
            except Exception:
                continue
        return False


class HttpProber:
    """One HEAD (then one GET if the HEAD got no answer) to the base URL, no credentials.

    The scheme and path come from ``base_url`` (default ``ANTHROPIC_BASE_URL``); host
    and port come from the caller, as for every prober.
    """

    name = "http"

    def __init__(self, base_url: str | None = None) -> None:
        self.base_url = base_url

    def _scheme_and_path(self, port: int) -> tuple[str, str]:
        url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip()
        if url:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https"):
                return parts.scheme, parts.path or "/"
        return ("http" if port == 80 else "https"), "/"

    def reachable(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> bool:
        try:
            scheme, path = self._scheme_and_path(port)
        except Exception:
            return False
        for method in ("HEAD", "GET"):
            if self._answers(scheme, host, port, path, method, timeout):
                return True
        return False

    @staticmethod
    def _answers(scheme: str, host: str, port: int, path: str, method: str, timeout: float) -> bool:
        import http.client  # with ssl ~10 ms: imported on use, not at registration
        import ssl

        conn: http.client.HTTPConnection
        try:
            if scheme == "https":
                conn = http.client.HTTPSConnection(
                    host, port, timeout=timeout, context=ssl.create_default_context()
                )
            else:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                conn.request(method, path, headers={"User-Agent": "flower-probe"})
                conn.getresponse().close()
                return True
            finally:
                conn.close()
        except Exception:
            return False


class NoProber:
    """Always reachable: never waits for the network (air-gapped tests)."""

    name = "none"

    def reachable(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> bool:
        return True


def _tcp(settings: Settings) -> TcpProber:
    return TcpProber()


def _http(settings: Settings) -> HttpProber:
    return HttpProber()


def _none(settings: Settings) -> NoProber:
    return NoProber()


@hookimpl
def register_probers(register: RegisterFactory) -> None:
    register("tcp", _tcp)
    register("http", _http)
    register("none", _none)
