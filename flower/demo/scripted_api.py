"""A scripted Messages API on loopback: the model of ``flower demo``, and of the tests.

``FakeMessagesAPI`` is a real HTTP server on ``127.0.0.1`` (a free port, a background
thread) that speaks ``POST /v1/messages`` both as plain JSON and as server-sent events,
so the real ``anthropic`` SDK can be pointed at it with ``ANTHROPIC_BASE_URL`` and
nothing in the code under test knows it is a fake. Each request takes the next item of
a script (a :class:`Reply`, a :class:`Fault` or a plain string) or asks a callable.
Every request is recorded, parsed, so a test can assert exactly what the model was sent.

Tests import it as :mod:`flower.testing.fake_api`; see docs/testing-with-the-fake-api.md.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

DEFAULT_API_KEY = "sk-ant-fake-0000"
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- script


@dataclass
class Reply:
    """One model response. ``content`` holds API content blocks (see :func:`tool_use`).

    Stream faults, counted in SSE events already sent (``message_start`` is event 0):
    ``drop_after`` cuts the connection, ``error_after`` sends an SSE ``error`` event of
    ``error_type``, ``stall_after`` pauses ``stall_seconds`` before going on,
    ``garble_after`` sends that event with its JSON cut in half (a broken proxy), then
    goes on, ``end_after`` ends the stream there, cleanly but without ``message_stop``.
    """

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    """Defaults to ``tool_use`` when a block is a tool_use, else ``end_turn``."""
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    """Defaults to the model the request named."""
    id: str | None = None
    delay: float = 0.0
    """Seconds to wait before the response starts."""
    drop_after: int | None = None
    error_after: int | None = None
    error_type: str = "overloaded_error"
    stall_after: int | None = None
    stall_seconds: float = 30.0
    garble_after: int | None = None
    end_after: int | None = None
    chunk: int = 24
    """Characters per ``text_delta`` / ``input_json_delta``."""

    def resolved_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        if any(block.get("type") == "tool_use" for block in self.content):
            return "tool_use"
        return "end_turn"

    def resolved_usage(self) -> dict[str, Any]:
        usage = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        usage.update(self.usage)
        return usage


FaultKind = Literal["status", "close", "stall", "refuse"]


@dataclass
class Fault:
    """A request that fails: an HTTP error status, a closed connection, a stall, or
    (``refuse``) the listening socket closed for ``seconds`` so connections are refused.
    """

    kind: FaultKind
    status: int = 500
    error_type: str = "api_error"
    message: str = "Internal server error"
    headers: dict[str, str] = field(default_factory=dict)
    error_code: str | None = None
    seconds: float = 0.0


ScriptItem = Reply | Fault | str
Handler = Callable[["RecordedRequest"], ScriptItem]


def tool_use(
    name: str,
    tool_input: dict[str, Any] | None = None,
    *,
    id: str | None = None,
    raw_input: str | None = None,
) -> dict[str, Any]:
    """A tool_use block. ``raw_input`` streams that exact text as the input JSON
    (malformed on purpose, for instance); plain JSON replies then carry ``{}``."""
    block: dict[str, Any] = {
        "type": "tool_use",
        "id": id or f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": tool_input or {},
    }
    if raw_input is not None:
        block["raw_input"] = raw_input
    return block


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def reply(*blocks: dict[str, Any] | str, **options: Any) -> Reply:
    """A :class:`Reply` from blocks; plain strings become text blocks."""
    content = [text_block(b) if isinstance(b, str) else b for b in blocks]
    return Reply(content=content, **options)


def text(value: str, **options: Any) -> Reply:
    return reply(value, **options)


def api_error(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    retry_after: float | None = None,
    error_code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Fault:
    """An HTTP error response shaped like the API's ``{"type": "error", "error": ...}``."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = f"{retry_after:g}"
    return Fault(
        "status",
        status=status,
        error_type=error_type or _ERROR_TYPES.get(status, "api_error"),
        message=message,
        headers=all_headers,
        error_code=error_code,
    )


def unauthorized() -> Fault:
    return api_error(401, "invalid x-api-key")


def model_not_found(model: str = "unknown-model") -> Fault:
    return api_error(404, f"model: {model}")


def rate_limited(retry_after: float | None = None) -> Fault:
    return api_error(
        429, "Number of request tokens has exceeded your rate limit.", retry_after=retry_after
    )


def spend_limit() -> Fault:
    return api_error(
        429,
        "You have reached your specified workspace API usage limits.",
        error_code="workspace_spend_limit_reached",
    )


def server_error() -> Fault:
    return api_error(500, "Internal server error")


def overloaded() -> Fault:
    return api_error(529, "Overloaded")


def accept_and_close() -> Fault:
    """Read the request, then close the connection without a byte of response."""
    return Fault("close")


def stall(seconds: float) -> Fault:
    """Read the request, then say nothing for ``seconds`` (the client should time out)."""
    return Fault("stall", seconds=seconds)


def refuse(seconds: float = 0.3) -> Fault:
    """Close the listening socket for ``seconds``: connections are refused meanwhile.

    Placed in a script, it takes effect as soon as the request before it is answered
    (or at start when it comes first), and takes no request itself.
    """
    return Fault("refuse", seconds=seconds)


def dropped(item: Reply | str, after: int = 3) -> Reply:
    """``item`` with its stream cut after ``after`` events."""
    base = text(item) if isinstance(item, str) else item
    base.drop_after = after
    return base


def ended_early(item: Reply | str, after: int = 3) -> Reply:
    """``item`` with its stream ended after ``after`` events: the HTTP response is whole,
    the message is not (no ``message_stop``)."""
    base = text(item) if isinstance(item, str) else item
    base.end_after = after
    return base


def sse_error(after: int = 2, error_type: str = "overloaded_error") -> Reply:
    """A stream that sends an SSE ``error`` event after ``after`` events."""
    return Reply(
        content=[text_block("partial answer that never finishes")],
        error_after=after,
        error_type=error_type,
    )


# ------------------------------------------------------------------------- requests


@dataclass
class RecordedRequest:
    """One request as the fake received it: ``headers`` keys are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def api_key(self) -> str | None:
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def texts(self) -> list[str]:
        """Every text the request carries (system, messages, tool results), in order."""
        found: list[str] = []
        system = self.body.get("system")
        found.extend(_texts_of(system))
        for message in self.messages:
            found.extend(_texts_of(message.get("content")))
        return found


def _texts_of(content: object) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                yield block["text"]
            if block.get("type") == "tool_result":
                yield from _texts_of(block.get("content"))


def conversation_problems(messages: object) -> list[str]:
    """What the real API would reject in ``messages`` (the checks that matter here), in
    its words. Not :func:`flower.core.transcript.conversation_problems`, flower's stricter
    rule for a conversation it resumes (roles alternate, tool results come first and
    once, the last tool_use is answered; an empty list passes): the API merges
    consecutive turns of one role, and refuses no messages at all, an empty text block,
    and content that is neither a string nor a list of blocks."""
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    problems: list[str] = []
    if messages[0].get("role") != "user":
        problems.append("messages.0: the first message must use the user role")
    pending: list[str] = []
    previous_role = None
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages.{i}.role: must be user or assistant")
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            problems.append(f"messages.{i}.content: must be a string or a list of blocks")
            continue
        if pending and role == "user":
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            missing = [tid for tid in pending if tid not in results]
            if missing:
                problems.append(
                    f"messages.{i}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {', '.join(missing)}"
                )
        elif pending:
            problems.append(f"messages.{i}: tool_use blocks of messages.{i - 1} got no tool_result")
        if role == "user":
            known = pending if previous_role == "assistant" else []
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
                    problems.append(
                        f"messages.{i}: unexpected tool_use_id {block.get('tool_use_id')!r} "
                        "in tool_result blocks"
                    )
        for block in blocks:
            if block.get("type") == "text" and not block.get("text"):
                problems.append(f"messages.{i}: text content blocks must be non-empty")
        pending = (
            [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if role == "assistant"
            else []
        )
        previous_role = role
    return problems


# ---------------------------------------------------------------------------- server


class _Connection(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeMessagesAPI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.close_connection = True
        self.fake._serve(self)

    def do_GET(self) -> None:
        self.close_connection = True
        self.fake._send_json(self, 404, _error_body("not_found_error", "Not found"))


def _error_body(error_type: str, message: str, error_code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": error_type, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error, "request_id": f"req_{uuid.uuid4().hex[:24]}"}


class _Dropped(Exception):
    """The script asked for the connection to be cut here."""


class FakeMessagesAPI:
    """A scripted ``POST /v1/messages`` on ``127.0.0.1``; a context manager.

    ``script`` is a list of :class:`Reply` / :class:`Fault` / ``str`` consumed one per
    request, or a callable ``(RecordedRequest) -> item``. ``api_key`` is the key it
    accepts (``x-api-key`` or ``Authorization: Bearer``; ``None`` accepts any key but
    still needs one). ``models`` restricts the model ids it knows (others get 404).
    ``validate`` rejects, with a 400 like the API's, conversations the API would reject.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] | Handler | None = None,
        *,
        api_key: str | None = DEFAULT_API_KEY,
        models: Collection[str] | None = None,
        validate: bool = True,
    ) -> None:
        self.api_key = api_key
        self.models = set(models) if models is not None else None
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self.rejections: list[tuple[RecordedRequest, str]] = []
        self._handler: Handler | None = None
        self._script: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._online_timer: threading.Timer | None = None
        self.port = 0
        self._connection_class = type("_Bound", (_Connection,), {"fake": self})
        self.set_script(script)

    # -- lifecycle

    def start(self) -> FakeMessagesAPI:
        if self._accept_thread is not None:
            return self
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="fake-messages-api", daemon=True
        )
        self._accept_thread.start()
        self._apply_pending_refusal()
        return self

    def close(self) -> None:
        self._stopping.set()
        if self._online_timer is not None:
            self._online_timer.cancel()
        self._close_listener()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=2)
            self._accept_thread = None

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The variables that point the ``anthropic`` SDK (and flower) at this fake."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self.api_key or "sk-any"}

    # -- script

    def set_script(self, script: Iterable[ScriptItem] | Handler | None) -> None:
        """Replace what the fake answers from now on."""
        with self._lock:
            if callable(script):
                self._handler, self._script = script, deque()
            else:
                self._handler, self._script = None, deque(script or ())

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script."""
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        """Script items not consumed yet."""
        return len(self._script)

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    # -- going offline

    def go_offline(self) -> None:
        """Close the listening socket: new connections are refused until :meth:`go_online`."""
        self._close_listener()

    def go_online(self) -> None:
        with self._lock:
            if self._listener is None and not self._stopping.is_set():
                self._listener = self._listen(self.port)

    @property
    def online(self) -> bool:
        return self._listener is not None

    def _listen(self, port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        return sock

    def _close_listener(self) -> None:
        sock, self._listener = self._listener, None
        if sock is not None:
            # shutdown first: the accept thread's select() holds the socket open until it
            # returns, and a plain close() would keep listening (and accept) meanwhile.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _apply_pending_refusal(self) -> None:
        with self._lock:
            if not self._script or not _is_refusal(self._script[0]):
                return
            fault = self._script.popleft()
        assert isinstance(fault, Fault)
        self.go_offline()
        self._online_timer = threading.Timer(fault.seconds, self._back_online)
        self._online_timer.daemon = True
        self._online_timer.start()

    def _back_online(self) -> None:
        self.go_online()
        self._apply_pending_refusal()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            sock = self._listener
            if sock is None:
                self._stopping.wait(0.02)
                continue
            try:
                ready, _, _ = select.select([sock], [], [], 0.05)
                if not ready:
                    continue
                conn, addr = sock.accept()
            except (OSError, ValueError):
                continue
            threading.Thread(target=self._connection, args=(conn, addr), daemon=True).start()

    def _connection(self, conn: socket.socket, addr: object) -> None:
        try:
            self._connection_class(conn, addr, None)
        except (_Dropped, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    # -- one request

    def _serve(self, h: _Connection) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        if len(raw) < length:  # the client went away mid-request: nothing to answer
            raise _Dropped
        headers = {k.lower(): v for k, v in h.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        request = RecordedRequest(h.command, h.path, headers, body)
        with self._lock:
            self.requests.append(request)
        problem = self._precheck(request)
        if problem is not None:
            status, error_type, message = problem
            if status == 400:
                self.rejections.append((request, message))
            self._send_json(h, status, _error_body(error_type, message))
            return
        item = self._next_item(request)
        self._apply_pending_refusal()
        if isinstance(item, str):
            item = text(item)
        if isinstance(item, Fault):
            self._send_fault(h, item)
        elif request.stream:
            self._send_stream(h, item, request)
        else:
            self._send_message(h, item, request)

    def _precheck(self, request: RecordedRequest) -> tuple[int, str, str] | None:
        if request.path.split("?", 1)[0] != "/v1/messages":
            return 404, "not_found_error", f"Not found: {request.path}"
        key = request.api_key
        if not key or (self.api_key is not None and key != self.api_key):
            return 401, "authentication_error", "invalid x-api-key"
        body = request.body
        if "_unparsed" in body:
            return 400, "invalid_request_error", "request body is not valid JSON"
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return 400, "invalid_request_error", "model: Field required"
        if self.models is not None and model not in self.models:
            return 404, "not_found_error", f"model: {model}"
        if not isinstance(body.get("max_tokens"), int):
            return 400, "invalid_request_error", "max_tokens: Field required"
        if self.validate:
            problems = conversation_problems(body.get("messages"))
            if problems:
                return 400, "invalid_request_error", "; ".join(problems)
        return None

    def _next_item(self, request: RecordedRequest) -> ScriptItem:
        with self._lock:
            if self._handler is not None:
                handler = self._handler
            elif self._script:
                return self._script.popleft()
            else:
                message = "FakeMessagesAPI: the script has no reply left for this request"
                self.rejections.append((request, message))
                return api_error(400, message)
        return handler(request)

    # -- writing

    def _send_json(
        self,
        h: _Connection,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        h.send_header("connection", "close")
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)

    def _send_fault(self, h: _Connection, fault: Fault) -> None:
        if fault.kind == "close":
            raise _Dropped
        if fault.kind == "stall":
            self._stopping.wait(fault.seconds)
            raise _Dropped
        if fault.kind == "refuse":  # a refusal the callable returned: apply it now
            self.go_offline()
            self._online_timer = threading.Timer(fault.seconds, self.go_online)
            self._online_timer.daemon = True
            self._online_timer.start()
            raise _Dropped
        body = _error_body(fault.error_type, fault.message, fault.error_code)
        self._send_json(h, fault.status, body, fault.headers)

    def _message(self, item: Reply, request: RecordedRequest) -> dict[str, Any]:
        content = [{k: v for k, v in b.items() if k != "raw_input"} for b in item.content]
        return {
            "id": item.id or f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": item.model or request.body.get("model"),
            "content": content,
            "stop_reason": item.resolved_stop_reason(),
            "stop_sequence": None,
            "usage": item.resolved_usage(),
        }

    def _send_message(self, h: _Connection, item: Reply, request: RecordedRequest) -> None:
        self._wait(item.delay)
        message = self._message(item, request)
        if item.drop_after is not None:
            data = json.dumps(message).encode()
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])
            raise _Dropped
        self._send_json(h, 200, message)

    def _send_stream(self, h: _Connection, item: Reply, request: RecordedRequest) -> None:
        self._wait(item.delay)
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("transfer-encoding", "chunked")
        h.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        h.send_header("connection", "close")
        h.end_headers()
        for number, (event, data) in enumerate(_stream_events(self._message(item, request), item)):
            if number == item.drop_after:
                raise _Dropped
            if number == item.end_after:
                break
            if number == item.error_after:
                error = _error_body(item.error_type, "Overloaded")
                _write_chunk(h, _sse("error", error))
                break
            if number == item.stall_after:
                self._wait(item.stall_seconds)
            if number == item.garble_after:
                _write_chunk(h, _sse_garbled(event, data))
                continue
            _write_chunk(h, _sse(event, data))
        h.wfile.write(b"0\r\n\r\n")

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


def _is_refusal(item: ScriptItem) -> bool:
    return isinstance(item, Fault) and item.kind == "refuse"


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _sse_garbled(event: str, data: dict[str, Any]) -> bytes:
    """An event whose data is JSON cut in half: what a broken proxy may send."""
    body = json.dumps(data)
    return f"event: {event}\ndata: {body[: len(body) // 2]}\n\n".encode()


def _write_chunk(h: _Connection, payload: bytes) -> None:
    h.wfile.write(b"%X\r\n%s\r\n" % (len(payload), payload))


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _stream_events(message: dict[str, Any], item: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = message["usage"]
    start = dict(
        message,
        content=[],
        stop_reason=None,
        usage=dict(usage, output_tokens=min(1, usage.get("output_tokens", 0))),
    )
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(item.content):
        kind = block.get("type")
        if kind == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(block.get("text", ""), item.chunk):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            raw = block.get("raw_input")
            raw = json.dumps(block.get("input", {})) if raw is None else raw
            for piece in _pieces(raw, item.chunk):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        elif kind == "thinking":
            yield from _thinking_events(index, block, item.chunk)
        else:
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {k: v for k, v in usage.items() if k != "server_tool_use"},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _thinking_events(
    index: int, block: dict[str, Any], chunk: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A thinking block as the API streams it: empty, then its text, then its signature."""
    opening = {"type": "thinking", "thinking": "", "signature": ""}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": opening},
    )
    for piece in _pieces(block.get("thinking", ""), chunk):
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece},
            },
        )
    yield (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": block.get("signature", "")},
        },
    )


__all__ = [
    "DEFAULT_API_KEY",
    "FakeMessagesAPI",
    "Fault",
    "FaultKind",
    "Handler",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "accept_and_close",
    "api_error",
    "conversation_problems",
    "dropped",
    "ended_early",
    "model_not_found",
    "overloaded",
    "rate_limited",
    "refuse",
    "reply",
    "server_error",
    "spend_limit",
    "sse_error",
    "stall",
    "text",
    "text_block",
    "tool_use",
    "unauthorized",
]
