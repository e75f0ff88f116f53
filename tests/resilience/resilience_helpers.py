"""Helpers for the resilience tests: a fake clock, real SDK errors, loopback servers."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import anthropic
import httpx2

MESSAGES_URL = "https://api.anthropic.com/v1/messages"


def _request() -> httpx2.Request:
    return httpx2.Request("POST", MESSAGES_URL)


def _raised_by_the_sdk(
    response: httpx2.Response, *, stream: bool = False
) -> anthropic.APIStatusError:
    """The error the SDK itself raises when the API answers ``response``.

    The SDK is called through its public surface with a mock transport (no network), so
    the exception class and fields are whatever this version of the SDK builds.
    """
    client = anthropic.Anthropic(
        api_key="sk-test",
        base_url="http://api.flower.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(lambda request: response)),
    )
    params: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    }
    try:
        if stream:
            with client.messages.stream(**params) as events:
                for _ in events:
                    pass
        else:
            client.messages.create(**params)
    except anthropic.APIStatusError as exc:
        return exc
    finally:
        client.close()
    raise AssertionError(f"the SDK raised nothing for {response}")


def status_error(
    status: int,
    error_type: str | None,
    message: str,
    *,
    error_code: str | None = None,
    headers: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> anthropic.APIStatusError:
    """The exception the SDK raises for an HTTP error answer, raised by the SDK."""
    if raw_body is not None:
        return _raised_by_the_sdk(httpx2.Response(status, headers=headers, text=raw_body))
    error: dict[str, Any] = {"type": error_type, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    body = {"type": "error", "error": error}
    return _raised_by_the_sdk(httpx2.Response(status, headers=headers, json=body))


def sse_error(error_type: str, message: str) -> anthropic.APIStatusError:
    """What the SDK raises for an ``event: error`` mid-stream: status 200, typed body."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    events = f"event: error\ndata: {json.dumps(body)}\n\n"
    response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, text=events)
    return _raised_by_the_sdk(response, stream=True)


def connection_error(cause: Exception) -> anthropic.APIConnectionError:
    """``APIConnectionError`` raised from a transport error, as the SDK does."""
    try:
        raise anthropic.APIConnectionError(request=_request()) from cause
    except anthropic.APIConnectionError as exc:
        return exc


def timeout_error() -> anthropic.APITimeoutError:
    try:
        raise anthropic.APITimeoutError(request=_request()) from httpx2.ReadTimeout(
            "The read operation timed out"
        )
    except anthropic.APITimeoutError as exc:
        return exc


@dataclass
class FakeClock:
    """Monotonic seconds plus a wall clock; ``sleep`` advances both instantly."""

    t: float = 0.0
    wall_start: datetime = datetime(2026, 9, 7, 1, 52, 40)
    sleeps: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.t

    def now(self) -> datetime:
        return self.wall_start + timedelta(seconds=self.t)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


@dataclass
class OutageProber:
    """Unreachable until the fake clock passes ``back_at``; records each probe."""

    clock: FakeClock
    back_at: float
    probes: list[tuple[str, int, float, float]] = field(default_factory=list)

    def reachable(self, host: str, port: int, timeout: float) -> bool:
        self.probes.append((host, port, timeout, self.clock.t))
        return self.clock.t >= self.back_at


# --- loopback servers for the probers ------------------------------------------------


class LoopbackServer:
    """A TCP server on 127.0.0.1 in a thread, with one behaviour per connection."""

    def __init__(self, behaviour: str, *, status: int = 503) -> None:
        self.behaviour = behaviour
        self.status = status
        self.requests: list[bytes] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port: int = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            if self.behaviour == "close":
                conn.close()
            elif self.behaviour == "stall":
                self._held.append(conn)  # never answer, never close
            elif self.behaviour == "http":
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        with conn:
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
            except OSError:
                return
            self.requests.append(data)
            payload = json.dumps({"type": "error", "error": {"type": "overloaded_error"}})
            head = (
                f"HTTP/1.1 {self.status} Whatever\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            )
            method = data.split(b" ", 1)[0]
            conn.sendall(head.encode() + (b"" if method == b"HEAD" else payload.encode()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self._held:
            conn.close()
        self.sock.close()
