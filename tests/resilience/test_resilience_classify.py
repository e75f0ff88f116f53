"""classify(): every case of the seed and the issue, with real SDK exceptions and texts."""

from __future__ import annotations

import socket
from collections.abc import Callable

import anthropic
import httpx2
import pytest
from resilience_helpers import connection_error, sse_error, status_error, timeout_error

from flower.core.errors import FlowerError, UnknownSessionError
from flower.core.resilience import classify, describe, retry_after, status_of

ErrorCase = tuple[str, Callable[[], BaseException | str], str]

FATAL: list[ErrorCase] = [
    (
        "401 invalid key",
        lambda: status_error(401, "authentication_error", "invalid x-api-key"),
        "fatal",
    ),
    (
        "401 revoked key",
        lambda: status_error(401, "authentication_error", "This API key has been revoked."),
        "fatal",
    ),
    (
        "403 permission",
        lambda: status_error(
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        "fatal",
    ),
    (
        "400 credit balance",
        lambda: status_error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to "
            "Plans & Billing to upgrade or purchase credits.",
        ),
        "fatal",
    ),
    (
        "402 billing",
        lambda: status_error(402, "billing_error", "Payment required."),
        "fatal",
    ),
    (
        "429 enforced spend limit",
        lambda: status_error(
            429,
            "rate_limit_error",
            "You have reached your specified workspace API usage limits.",
            error_code="enforced_spend_limit_reached",
        ),
        "fatal",
    ),
    (
        "429 contract spend limit",
        lambda: status_error(
            429, "rate_limit_error", "Limit reached.", error_code="contract_spend_limit_reached"
        ),
        "fatal",
    ),
    (
        "413 request too large",
        lambda: status_error(
            413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
        ),
        "fatal",
    ),
    (
        "400 prompt too long",
        lambda: status_error(
            400, "invalid_request_error", "prompt is too long: 215012 tokens > 200000 maximum"
        ),
        "fatal",
    ),
    (
        "400 invalid request",
        lambda: status_error(
            400,
            "invalid_request_error",
            "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks",
        ),
        "fatal",
    ),
    (
        "404 unknown model",
        lambda: status_error(404, "not_found_error", "model: claude-nonexistent-9"),
        "fatal",
    ),
    (
        "SSE invalid request mid-stream",
        lambda: sse_error("invalid_request_error", "bad"),
        "fatal",
    ),
    (
        "Claude Code 401 mentioning connection",
        lambda: (
            'API Error: 401 {"type":"error","error":{"type":"authentication_error",'
            '"message":"OAuth token has expired"}} · check your connection and run /login'
        ),
        "fatal",
    ),
    ("Claude Code invalid key", lambda: "Invalid API key · Please run /login", "fatal"),
    ("Claude Code credit", lambda: "Credit balance is too low", "fatal"),
    ("Claude Code prompt too long", lambda: "Prompt is too long", "fatal"),
    (
        "Claude Code 429 spend code",
        lambda: (
            'API Error: 429 {"type":"error","error":{"type":"rate_limit_error",'
            '"message":"limit","details":{"error_code":"enforced_spend_limit_reached"}}}'
        ),
        "fatal",
    ),
    ("SDK text 403", lambda: "Error code: 403 - {'type': 'error'}", "fatal"),
    # A gateway's body type does not outrank the HTTP status: no wait fixes these.
    ("401 gateway api_error", lambda: status_error(401, "api_error", "upstream error"), "fatal"),
    (
        "401 gateway overloaded",
        lambda: status_error(401, "overloaded_error", "Overloaded"),
        "fatal",
    ),
    ("403 gateway api_error", lambda: status_error(403, "api_error", "denied"), "fatal"),
    ("400 gateway overloaded", lambda: status_error(400, "overloaded_error", "x"), "fatal"),
    ("404 gateway api_error", lambda: status_error(404, "api_error", "no route"), "fatal"),
    ("413 gateway api_error", lambda: status_error(413, "api_error", "too big"), "fatal"),
]

TRANSIENT: list[ErrorCase] = [
    (
        "connection refused",
        lambda: connection_error(httpx2.ConnectError("[Errno 111] Connection refused")),
        "transient",
    ),
    (
        "connection reset",
        lambda: connection_error(httpx2.ReadError("[Errno 104] Connection reset by peer")),
        "transient",
    ),
    (
        "server closed",
        lambda: connection_error(
            httpx2.RemoteProtocolError("Server disconnected without sending a response.")
        ),
        "transient",
    ),
    (
        "DNS failure",
        lambda: connection_error(
            httpx2.ConnectError("[Errno -3] Temporary failure in name resolution")
        ),
        "transient",
    ),
    ("SDK timeout", timeout_error, "transient"),
    ("408", lambda: status_error(408, "timeout_error", "Request timed out"), "transient"),
    ("409", lambda: status_error(409, "conflict_error", "Conflict"), "transient"),
    (
        "429 rate limit",
        lambda: status_error(
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 "
            "requests per minute.",
        ),
        "transient",
    ),
    (
        "429 ramp limit (no spend code)",
        lambda: status_error(
            429, "rate_limit_error", "Ramping up.", error_code="ramp_limit_exceeded"
        ),
        "transient",
    ),
    ("500", lambda: status_error(500, "api_error", "Internal server error"), "transient"),
    (
        "502 html body",
        lambda: status_error(502, None, "", raw_body="<html>502 Bad Gateway</html>"),
        "transient",
    ),
    ("503", lambda: status_error(503, "api_error", "Service Unavailable"), "transient"),
    ("504", lambda: status_error(504, "api_error", "Gateway Timeout"), "transient"),
    ("529", lambda: status_error(529, "overloaded_error", "Overloaded"), "transient"),
    ("SSE overloaded", lambda: sse_error("overloaded_error", "Overloaded"), "transient"),
    ("SSE api_error", lambda: sse_error("api_error", "Internal server error"), "transient"),
    (
        "ConnectionRefusedError",
        lambda: ConnectionRefusedError(111, "Connection refused"),
        "transient",
    ),
    ("BrokenPipeError", lambda: BrokenPipeError(32, "Broken pipe"), "transient"),
    ("gaierror", lambda: socket.gaierror(-2, "Name or service not known"), "transient"),
    ("TimeoutError", lambda: TimeoutError("timed out"), "transient"),
    ("httpx2 ReadTimeout", lambda: httpx2.ReadTimeout("The read operation timed out"), "transient"),
    ("Claude Code offline", lambda: "API Error: Can't reach the API server", "transient"),
    ("Claude Code connection", lambda: "API Error: Connection error.", "transient"),
    ("Claude Code timeout", lambda: "API Error: Request timed out.", "transient"),
    (
        "Claude Code 529",
        lambda: (
            'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
            '"message":"Overloaded"}}'
        ),
        "transient",
    ),
    (
        "Claude Code 500",
        lambda: (
            'API Error: 500 {"type":"error","error":{"type":"api_error",'
            '"message":"Internal server error"}}'
        ),
        "transient",
    ),
    ("node ENOTFOUND", lambda: "getaddrinfo ENOTFOUND api.anthropic.com", "transient"),
    ("node ECONNREFUSED", lambda: "connect ECONNREFUSED 127.0.0.1:443", "transient"),
    ("node ECONNRESET", lambda: "read ECONNRESET", "transient"),
    ("glibc DNS", lambda: "[Errno -2] Name or service not known", "transient"),
    ("HTTP status line", lambda: "HTTP/1.1 503 Service Unavailable", "transient"),
]

UNKNOWN: list[ErrorCase] = [
    ("plain KeyError", lambda: KeyError("content"), "unknown"),
    ("odd text", lambda: "the tool printed something odd", "unknown"),
    ("URL with digits is no status", lambda: "see http://127.0.0.1:404/x", "unknown"),
    ("empty text", lambda: "", "unknown"),
]


@pytest.mark.parametrize(
    ("make", "expected"),
    [pytest.param(make, kind, id=name) for name, make, kind in FATAL + TRANSIENT + UNKNOWN],
)
def test_classify(make: Callable[[], BaseException | str], expected: str) -> None:
    assert classify(make()) == expected


def test_sdk_builds_the_classes_the_table_assumes() -> None:
    # Guards the table against an SDK that stops building errors the way we think.
    assert isinstance(status_error(529, "overloaded_error", "x"), anthropic.OverloadedError)
    spend = status_error(429, "rate_limit_error", "x", error_code="enforced_spend_limit_reached")
    assert isinstance(spend, anthropic.RateLimitError)  # a RateLimitError that is fatal
    sse = sse_error("overloaded_error", "Overloaded")
    assert type(sse) is anthropic.APIStatusError
    assert sse.status_code == 200 and sse.type == "overloaded_error"


def test_fatal_is_checked_before_transient_through_a_cause_chain() -> None:
    try:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError as inner:
            raise status_error(401, "authentication_error", "invalid x-api-key") from inner
    except anthropic.APIStatusError as exc:
        assert classify(exc) == "fatal"


def test_a_wrapper_is_classified_by_what_it_wraps() -> None:
    class EngineError(Exception):
        pass

    try:
        raise EngineError("step failed") from status_error(529, "overloaded_error", "Overloaded")
    except EngineError as exc:
        assert classify(exc) == "transient"


def test_describe_names_the_root_cause_on_one_line() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            raise RuntimeError("could not send") from inner
    except RuntimeError as error:
        assert describe(error) == "could not send ([Errno 111] Connection refused)"
    sdk_error = connection_error(httpx2.ConnectError("[Errno 111] Connection refused"))
    assert "[Errno 111] Connection refused" in describe(sdk_error)  # the root cause, kept
    assert "\n" not in describe("line one\nline two")
    assert len(describe("x" * 2000)) == 500


@pytest.mark.parametrize("wording", ["Connection error.", "Connection to 127.0.0.1:9 failed", ""])
def test_the_sdk_errors_are_classified_by_type_not_wording(wording: str) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    assert classify(anthropic.APIConnectionError(message=wording, request=request)) == "transient"
    assert classify(anthropic.APITimeoutError(request=request)) == "transient"
    overloaded = status_error(529, "overloaded_error", wording)
    assert classify(overloaded) == "transient"
    assert classify(status_error(401, "authentication_error", wording)) == "fatal"


def test_status_of() -> None:
    assert status_of(status_error(529, "overloaded_error", "Overloaded")) == 529
    assert status_of(sse_error("overloaded_error", "Overloaded")) == 200
    assert status_of(connection_error(httpx2.ConnectError("refused"))) is None
    assert status_of("API Error: 401 nope") == 401
    assert status_of("no status here") is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "2500"}, 2.5),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "nonsense", "retry-after": "3"}, 3.0),
        ({"retry-after": "not a date"}, None),
        ({}, None),
    ],
)
def test_retry_after_from_response_headers(headers: dict[str, str], expected: float | None) -> None:
    error = status_error(429, "rate_limit_error", "slow down", headers=headers)
    assert retry_after(error) == expected


def test_retry_after_http_date_in_the_past_is_zero() -> None:
    error = status_error(
        503, "api_error", "x", headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}
    )
    assert retry_after(error) == 0.0
    assert retry_after(ConnectionRefusedError()) is None


def test_an_exception_may_declare_its_kind() -> None:
    class StoreBroke(Exception):
        resilience_kind = "fatal"

    class Flaky(Exception):
        resilience_kind = "transient"

    assert classify(StoreBroke("disk full")) == "fatal"
    assert classify(Flaky("try again later, maybe")) == "transient"
    try:
        raise StoreBroke("wrapper") from ConnectionResetError("reset")
    except StoreBroke as exc:
        assert classify(exc) == "fatal"  # fatal anywhere in the chain wins


def test_flower_errors_are_fatal_unless_they_are_connection_errors() -> None:
    class DroppedStream(FlowerError, ConnectionError):
        pass

    assert classify(UnknownSessionError("no session 'x'")) == "fatal"
    assert classify(DroppedStream("the stream ended before message_stop")) == "transient"


@pytest.mark.parametrize(
    ("kind", "status", "text", "field"),
    [
        ("fatal", 401, "Error code: 401", "authentication_failed"),
        ("fatal", None, "authentication_error: invalid x-api-key", "authentication_failed"),
        ("transient", 429, "Error code: 429", "rate_limit"),
        ("transient", 529, "Error code: 529", "overloaded"),
        ("transient", 503, "Error code: 503", "server_error"),
        ("transient", None, "connection refused", "connection"),
        ("unknown", None, "something else", "unknown"),
    ],
)
def test_the_error_field_of_a_failed_call_is_named_beside_its_kind(
    kind: str, status: int | None, text: str, field: str
) -> None:
    """One place classifies a failure: the synthetic entry's ``error`` comes from
    resilience, next to classify (it was a copy of the rule in runtime/persist)."""
    from flower.core.resilience import error_kind

    assert error_kind(kind, status, text) == field
