"""Fixtures for the resilience tests; the helpers themselves live in resilience_helpers."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from resilience_helpers import FakeClock, LoopbackServer


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def loopback() -> Iterator[Callable[..., LoopbackServer]]:
    """Start loopback servers (``"close"``, ``"stall"``, ``"http"``); all stop at the end."""
    servers: list[LoopbackServer] = []

    def start(behaviour: str, **kw: Any) -> LoopbackServer:
        server = LoopbackServer(behaviour, **kw)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A port whose accept queue is full: the TCP handshake itself stalls."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=1)
    yield port
    filler.close()
    listener.close()
