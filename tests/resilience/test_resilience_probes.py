"""The probers against real sockets on loopback: listening, refused, closing, stalling."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from resilience_helpers import LoopbackServer

from flower.core.plugins import get_registry
from flower_plugins.probes import HttpProber, NoProber, TcpProber

Start = Callable[..., LoopbackServer]


def test_tcp_reachable_when_something_listens(loopback: Start) -> None:
    server = loopback("close")
    assert TcpProber().reachable("127.0.0.1", server.port, 1.0) is True


def test_tcp_refused(closed_port: int) -> None:
    assert TcpProber().reachable("127.0.0.1", closed_port, 1.0) is False


def test_tcp_accept_then_close_still_counts_as_reachable(loopback: Start) -> None:
    # The handshake is all the tcp strategy asks for.
    server = loopback("close")
    assert TcpProber().reachable("localhost", server.port, 1.0) is True


def test_tcp_handshake_that_stalls_times_out(full_backlog: int) -> None:
    started = time.perf_counter()
    assert TcpProber().reachable("127.0.0.1", full_backlog, 0.2) is False
    assert time.perf_counter() - started < 2.0


def test_tcp_dns_failure_is_unreachable() -> None:
    assert TcpProber().reachable("no-such-host.invalid", 443, 1.0) is False


@pytest.mark.parametrize("port", [0, -1, 70000])
def test_tcp_never_raises(port: int) -> None:
    assert TcpProber().reachable("127.0.0.1", port, 0.5) is False


def test_http_any_answer_counts_even_503(loopback: Start) -> None:
    server = loopback("http", status=503)
    prober = HttpProber(f"http://127.0.0.1:{server.port}/v1")
    assert prober.reachable("127.0.0.1", server.port, 1.0) is True
    request = server.requests[0].decode()
    assert request.startswith("HEAD /v1 HTTP/1.1")
    lowered = request.lower()
    assert "authorization" not in lowered and "x-api-key" not in lowered


def test_http_falls_back_to_get_when_head_gets_no_answer(loopback: Start) -> None:
    class HeadDropper(LoopbackServer):
        def _answer(self, conn):  # type: ignore[no-untyped-def]
            peek = conn.recv(4, 0x2)  # MSG_PEEK: look without consuming
            if peek.startswith(b"HEAD"):
                conn.close()
                return
            super()._answer(conn)

    server = HeadDropper("http", status=401)
    try:
        prober = HttpProber(f"http://127.0.0.1:{server.port}")
        assert prober.reachable("127.0.0.1", server.port, 1.0) is True
        assert server.requests[0].startswith(b"GET / HTTP/1.1")
    finally:
        server.close()


def test_http_refused(closed_port: int) -> None:
    prober = HttpProber(f"http://127.0.0.1:{closed_port}")
    assert prober.reachable("127.0.0.1", closed_port, 1.0) is False


def test_http_accept_then_close_is_unreachable(loopback: Start) -> None:
    # A gateway that takes TCP but cannot answer: exactly what the http strategy is for.
    server = loopback("close")
    prober = HttpProber(f"http://127.0.0.1:{server.port}")
    assert prober.reachable("127.0.0.1", server.port, 1.0) is False


def test_http_stall_times_out(loopback: Start) -> None:
    server = loopback("stall")
    prober = HttpProber(f"http://127.0.0.1:{server.port}")
    started = time.perf_counter()
    assert prober.reachable("127.0.0.1", server.port, 0.2) is False
    assert time.perf_counter() - started < 2.0  # HEAD and GET, 0.2 s each


def test_http_scheme_follows_anthropic_base_url(
    loopback: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = loopback("http", status=200)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.port}")
    assert HttpProber().reachable("127.0.0.1", server.port, 1.0) is True
    # https against a plain-HTTP server: the TLS handshake fails, so no HTTP answer.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"https://127.0.0.1:{server.port}")
    assert HttpProber().reachable("127.0.0.1", server.port, 0.2) is False


def test_none_is_always_reachable(closed_port: int) -> None:
    assert NoProber().reachable("127.0.0.1", closed_port, 0.1) is True


def test_probers_are_registered_as_plugins() -> None:
    registry = get_registry()
    assert {"tcp", "http", "none"} <= set(registry.names("probers"))
    assert registry.get("probers", "tcp").plugin == "probes"
    prober = registry.get("probers", "http").factory(None)
    assert isinstance(prober, HttpProber)
