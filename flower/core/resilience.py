"""Wait out outages, stop at once on fatal errors, resume instead of restarting.

The seed page's "Resiliencia" section is the contract: ``classify`` checks fatal
before transient (401 texts often say "connection"), the backoff is
``min(base_delay * 2**(attempt-1), max_delay)`` times a +-25 % jitter, and while the
endpoint is unreachable :class:`Resilience` waits, probing every ``probe_interval``
seconds, up to ``max_offline_wait``. A retry after a session id exists resumes that
session with :data:`RESUME_PROMPT`, which deliberately carries no detail of the error.

Nothing here imports ``anthropic`` at module level: SDK exceptions are recognised by
their attributes (``status_code``, ``body``, ``type``) and class names.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import os
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from flower.core.config import ResilienceConfig, Settings
from flower.core.errors import ConfigError, FlowerError, PluginError
from flower.core.i18n import N_, _
from flower.core.protocols import CallGate, Prober
from flower.core.telemetry import Attributes, Tracing, default_tracing

Kind = Literal["transient", "fatal", "unknown"]
T = TypeVar("T")

KIND_WORDS: dict[str, str] = {
    "transient": N_("transient"),
    "fatal": N_("fatal"),
    "unknown": N_("unknown"),
}
"""Each kind by the English word it is shown by: the kind itself stays data
(``errors[].kind``, the transcript's error entries, traces)."""


def shown_kind(kind: str) -> str:
    """``kind`` as the retry and give-up lines show it, in the active language."""
    word = KIND_WORDS.get(kind)
    return _(word) if word is not None else kind


DEFAULT_BASE_URL = "https://api.anthropic.com"

RESUME_PROMPT = N_(
    "The previous round was interrupted midway and did not finish. Look at what is "
    "already written in the workbench, continue from where it stopped, and do not "
    "start over."
)

# ---------------------------------------------------------------------------
# classify
# ---------------------------------------------------------------------------

_FATAL_TYPES = frozenset(
    {
        "authentication_error",
        "permission_error",
        "billing_error",
        "invalid_request_error",
        "not_found_error",
        "request_too_large",
    }
)
_TRANSIENT_TYPES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error", "conflict_error"}
)
_FATAL_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 413, 415, 422, 431, 501, 505})
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})

_FATAL_TEXT = re.compile(
    "|".join(
        [
            r"authentication_error",
            r"permission_error",
            r"billing_error",
            r"invalid_request_error",
            r"not_found_error",
            r"request_too_large",
            r"spend_limit_reached",
            r"\bspend(?:ing)? limit",
            r"reached your specified api usage limits",
            r"credit balance is too low",
            r"invalid (?:x-)?api[ -]?key",
            r"invalid bearer token",
            r"api key (?:has been |was )?(?:revoked|disabled|expired|invalid)",
            r"oauth token (?:has expired|has been revoked|revoked|expired)",
            r"please run /login",
            r"\bunauthori[sz]ed\b",
            r"\bforbidden\b",
            r"prompt is too long",
            r"request (?:entity )?too large",
            r"exceeds? (?:the )?context (?:limit|window)",
            r"maximum context length",
        ]
    ),
    re.IGNORECASE,
)
_TRANSIENT_TEXT = re.compile(
    "|".join(
        [
            r"connection (?:refused|reset|closed|aborted|error|lost|timed out)",
            r"econnrefused|econnreset|econnaborted|etimedout|epipe|enotfound|eai_again",
            r"broken pipe",
            r"getaddrinfo",
            r"name or service not known",
            r"temporary failure in name resolution",
            r"nodename nor servname",
            r"no address associated with hostname",
            r"network is (?:unreachable|down)",
            r"no route to host",
            r"can(?:'|no)t reach",
            r"unable to connect",
            r"failed to connect",
            r"socket hang up",
            r"server disconnected",
            r"remote end closed",
            r"peer closed connection",
            r"incomplete (?:chunked )?read",
            r"timed out|\btimeout\b",
            r"overloaded",
            r"api_error",
            r"rate_limit_error|rate limit",
            r"internal server error",
            r"bad gateway",
            r"service unavailable",
            r"gateway time-?out",
        ]
    ),
    re.IGNORECASE,
)
# "API Error: 401", "Error code: 529 - {...}", "HTTP 503", "status 429"
_STATUS_IN_TEXT = re.compile(
    r"(?:(?:api error|error code|status(?: code)?)\W{0,3}|\bhttp(?:/\d(?:\.\d)?)?\s+)"
    r"([1-5]\d\d)\b",
    re.IGNORECASE,
)
# Exception classes (matched by name along the MRO, so no import is needed).
_TRANSIENT_CLASSES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "TransportError",  # httpx / httpx2: ConnectError, ReadTimeout, RemoteProtocolError...
        "TimeoutException",
        "ConnectionError",  # ConnectionRefusedError, ConnectionResetError, BrokenPipeError
        "TimeoutError",
        "gaierror",
        "herror",
    }
)
_FATAL_CLASSES = frozenset({"FatalAPIError", "AuthenticationError", "PermissionDeniedError"})


def _status_kind(status: int) -> Kind:
    if status in _FATAL_STATUSES:
        return "fatal"
    if status in _TRANSIENT_STATUSES or 500 <= status <= 599:
        return "transient"
    return "unknown"


def _classify_text(text: str) -> Kind:
    """Fatal first: a 401 text often also says "connection"."""
    statuses = [int(m) for m in _STATUS_IN_TEXT.findall(text)]
    if any(_status_kind(s) == "fatal" for s in statuses) or _FATAL_TEXT.search(text):
        return "fatal"
    if any(_status_kind(s) == "transient" for s in statuses) or _TRANSIENT_TEXT.search(text):
        return "transient"
    return "unknown"


def _dig(body: object, *path: str) -> object:
    for key in path:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def _error_fields(error: BaseException) -> tuple[int | None, str | None, str | None, str]:
    """(HTTP status, ``error.type``, ``error.details.error_code``, ``error.message``)."""
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    err_type = getattr(error, "type", None) if not isinstance(error, type) else None
    if not isinstance(err_type, str):
        err_type = _dig(body, "error", "type")
    code = getattr(error, "error_code", None)
    if not isinstance(code, str):
        code = _dig(body, "error", "details", "error_code")
    message = getattr(error, "api_message", None) or _dig(body, "error", "message") or ""
    return (
        status if isinstance(status, int) else None,
        err_type if isinstance(err_type, str) else None,
        code if isinstance(code, str) else None,
        message if isinstance(message, str) else "",
    )


def _classify_structured(error: BaseException) -> Kind:
    """Classify one exception by its fields and class, fatal conditions first."""
    declared = getattr(error, "resilience_kind", None)
    if declared in ("transient", "fatal", "unknown"):
        return declared
    status, err_type, code, message = _error_fields(error)
    names = {cls.__name__ for cls in type(error).__mro__}
    if code and code.endswith("spend_limit_reached"):
        return "fatal"
    if err_type in _FATAL_TYPES or (message and _FATAL_TEXT.search(message)):
        return "fatal"
    # The HTTP status decides before the body's type: a gateway answering 401 with
    # ``api_error`` is still a bad key. An SSE ``error`` event mid-stream arrives with
    # status 200, so there the type decides.
    http_status = status if status is not None and status != 200 else None
    if http_status is not None and _status_kind(http_status) == "fatal":
        return "fatal"
    if err_type in _TRANSIENT_TYPES:
        return "transient"
    if http_status is not None and _status_kind(http_status) == "transient":
        return "transient"
    if names & _FATAL_CLASSES:
        return "fatal"
    if names & _TRANSIENT_CLASSES:
        return "transient"
    # flower's own errors are deliberate diagnoses (bad config, unknown session...):
    # waiting does not fix them.
    if isinstance(error, FlowerError):
        return "fatal"
    return "unknown"


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error, then its causes (explicit, or implicit unless suppressed)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None


def classify(error: BaseException | str) -> Kind:
    """``"fatal"`` (stop now), ``"transient"`` (wait and retry) or ``"unknown"``.

    Works on plain texts (Claude Code's ``API Error: ...`` lines, log lines) and on
    exceptions, including the anthropic SDK's and whatever they were raised from.
    An exception may declare its kind with a ``resilience_kind`` attribute; a
    :class:`FlowerError` nothing else recognises is fatal.
    """
    if isinstance(error, str):
        return _classify_text(error)
    kinds = [_classify_structured(e) for e in _chain(error)]
    if "fatal" in kinds:
        return "fatal"
    if "transient" in kinds:
        return "transient"
    return _classify_text(" | ".join(_one_line(e) for e in _chain(error)))


def error_kind(kind: str, status: int | None, text: str) -> str:
    """The ``error`` field of a failed call's synthetic transcript entry (Claude Code's
    names), from what :func:`classify` and :func:`status_of` said of it and its text."""
    lowered = text.lower()
    if status in (401, 403) or "authentication" in lowered:
        return "authentication_failed"
    if status == 429 or "rate_limit" in lowered:
        return "rate_limit"
    if status == 529 or "overloaded" in lowered:
        return "overloaded"
    if status is not None and status >= 500:
        return "server_error"
    if status is None and kind == "transient":
        return "connection"
    return "unknown"


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.split())


def describe(error: BaseException | str, limit: int = 500) -> str:
    """One line for logs and the manifest: the message plus its root cause."""
    if isinstance(error, str):
        text = " ".join(error.split())
    else:
        parts = [_one_line(e) for e in _chain(error)]
        text = parts[0]
        if len(parts) > 1 and parts[-1] not in text:
            text = f"{text} ({parts[-1]})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_of(error: BaseException | str) -> int | None:
    """The HTTP status an error carries, if any (200 for a mid-stream SSE error)."""
    if isinstance(error, str):
        match = _STATUS_IN_TEXT.search(error)
        return int(match.group(1)) if match else None
    for e in _chain(error):
        status = getattr(e, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def retry_after(error: BaseException) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms`` or ``retry-after``)."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        return max(float(email.utils.mktime_tz(parsed)) - time.time(), 0.0)


_RESET_KINDS = ("requests", "tokens", "input-tokens", "output-tokens")


def reset_after(error: BaseException) -> float | None:
    """Seconds until the limit a 429 ran out of comes back, by the API's
    ``anthropic-ratelimit-<kind>-remaining: 0`` and ``-reset`` (RFC 3339) headers."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    found: list[float] = []
    for kind in _RESET_KINDS:
        prefix = f"anthropic-ratelimit-{kind}"
        reset = headers.get(f"{prefix}-reset")
        if headers.get(f"{prefix}-remaining") != "0" or not reset:
            continue
        try:
            when = datetime.fromisoformat(str(reset).replace("Z", "+00:00"))
        except ValueError:
            continue
        if when.tzinfo is not None:
            found.append(max(when.timestamp() - time.time(), 0.0))
    return max(found) if found else None


_RESET_WORDS = re.compile(
    r"\b(?:resets?|reset at|try again|retry|regain|available again|until)\b", re.IGNORECASE
)
_RESET_EPOCH = re.compile(r"limit reached\|(\d{9,13})\b", re.IGNORECASE)
_RESET_ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[T ]| at )(\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)"
    r"\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)
_RESET_CLOCK = re.compile(
    r"\bresets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?"
    r"(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?",
    re.IGNORECASE,
)


def reset_in_text(error: BaseException | str, now: float | None = None) -> float | None:
    """Seconds until the reset time a limit error names only in its words, with no
    ``retry-after`` header: Claude's ``... usage limit reached|<epoch>``, a date and time
    (``resets at 2026-12-05T03:00:00Z``, ``regain access on 2026-12-05 at 00:00 UTC``;
    without a zone, UTC), or a time of day (``resets 3pm (Europe/Berlin)``, ``resets at
    15:30``: the next such time, in the zone named, else local). None when it names none
    in the future."""
    text = error if isinstance(error, str) else " ".join(str(e) for e in _chain(error))
    now = time.time() if now is None else now
    when: float | None = None
    epoch = _RESET_EPOCH.search(text)
    if epoch:
        value = float(epoch.group(1))
        when = value / 1000 if value > 1e12 else value
    elif _RESET_WORDS.search(text):
        when = _iso_reset(text)
        if when is None:
            when = _clock_reset(text, now)
    if when is None or when <= now:
        return None
    return when - now


def _iso_reset(text: str) -> float | None:
    found = _RESET_ISO.search(text)
    if not found:
        return None
    day, clock, zone = found.groups()
    zone = (zone or "Z").upper()
    offset = "+00:00" if zone in ("Z", "UTC", "GMT") else zone
    try:
        return datetime.fromisoformat(f"{day}T{clock}{offset}").timestamp()
    except ValueError:
        return None


def _clock_reset(text: str, now: float) -> float | None:
    found = _RESET_CLOCK.search(text)
    if not found:
        return None
    hour_s, minute_s, half, zone_name = found.groups()
    if minute_s is None and half is None:
        return None  # "resets 5 hours ..." is no time of day
    hour, minute = int(hour_s), int(minute_s or 0)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.lower() == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    zone = None
    if zone_name:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            zone = ZoneInfo("UTC" if zone_name.upper() == "UTC" else zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            zone = None
    today = datetime.fromtimestamp(now, zone) if zone else datetime.fromtimestamp(now)
    at = today.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at.timestamp() <= now:
        at += timedelta(days=1)
    return at.timestamp()


# ---------------------------------------------------------------------------
# endpoint and backoff
# ---------------------------------------------------------------------------


def endpoint(base_url: str | None = None) -> tuple[str, int]:
    """``(host, port)`` to probe: ``base_url``, else ``ANTHROPIC_BASE_URL``, else the API.

    A gateway must be probed itself: api.anthropic.com answering says nothing about it.
    """
    source = "base_url"
    if base_url is None:
        base_url = os.environ.get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_BASE_URL
        source = "ANTHROPIC_BASE_URL"
    where = f"{source}={base_url!r}"
    try:
        parts = urlsplit(base_url.strip())
        port = parts.port
    except ValueError as exc:
        raise ConfigError(
            _("{where} is not a valid URL: {error}").format(where=where, error=exc)
        ) from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(
            _(
                "{where} is not a valid URL: it must start with http:// or https:// "
                "(for example https://api.anthropic.com)"
            ).format(where=where)
        )
    if not parts.hostname:
        raise ConfigError(_("{where} is not a valid URL: it has no host name").format(where=where))
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def backoff_delay(
    attempt: int, base_delay: float, max_delay: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait after failed ``attempt`` (1-based): exponential, capped, +-25 %."""
    if attempt < 1:
        raise ValueError(f"attempt is counted from 1, got {attempt}")
    # The exponent is clamped so a huge attempt number cannot overflow a float.
    exponential = base_delay * 2.0 ** min(attempt - 1, 64)
    return min(exponential, max_delay) * (rng or random).uniform(0.75, 1.25)


def format_duration(seconds: float) -> str:
    """``181`` -> ``"3m01s"``, ``42`` -> ``"42s"``, ``3725`` -> ``"1h02m05s"``."""
    total = max(round(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


# ---------------------------------------------------------------------------
# Resilience
# ---------------------------------------------------------------------------


@dataclass
class AttemptInfo:
    """What an attempt needs to know: its number and whether it resumes a session."""

    number: int
    resuming: bool


@dataclass
class AttemptError:
    """One failed attempt, as the manifest's ``errors[]`` records it."""

    attempt: int
    kind: Kind
    text: str
    status: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ResilienceError(FlowerError):
    """Retrying ended without a result; ``errors`` lists every failed attempt."""

    def __init__(self, message: str, errors: list[AttemptError]) -> None:
        super().__init__(message)
        self.errors = list(errors)

    @property
    def attempts(self) -> int:
        return len(self.errors)


class FatalAPIError(ResilienceError):
    """An error no wait can fix (bad key, no credit, spend limit, prompt too long...)."""


class GaveUpError(ResilienceError):
    """Transient errors outlasted ``max_attempts`` or the endpoint ``max_offline_wait``."""


def _probe_off_loop(prober: Prober, host: str, port: int, timeout: float) -> Awaitable[bool]:
    """Run a blocking probe in a daemon thread.

    Not ``asyncio.to_thread``: on Ctrl-C, ``asyncio.run`` joins the default executor,
    which would hold the exit for up to a whole probe timeout.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bool] = loop.create_future()

    def settle(value: bool) -> None:
        if not future.done():
            future.set_result(value)

    def work() -> None:
        try:
            value = bool(prober.reachable(host, port, timeout))
        except Exception:  # a prober must never raise; treat it as unreachable
            value = False
        with contextlib.suppress(RuntimeError):  # the loop closed while we probed
            loop.call_soon_threadsafe(settle, value)

    threading.Thread(target=work, name="flower-probe", daemon=True).start()
    return future


class Resilience:
    """Run one API call with the seed's retry policy.

    ``clock`` (seconds, monotonic) and ``sleep`` are injectable so tests simulate
    hours of outage in milliseconds; ``now`` gives the wall time shown to the user.
    """

    @property
    def resume_prompt(self) -> str:
        """:data:`RESUME_PROMPT` in the language of this wake."""
        return _(RESUME_PROMPT)

    def __init__(
        self,
        config: ResilienceConfig | None = None,
        *,
        prober: Prober | None = None,
        base_url: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_status: Callable[[str], None] | None = None,
        rng: random.Random | None = None,
        now: Callable[[], datetime] = datetime.now,
        tracing: Tracing | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.gate = gate
        """Asked before every model call (:meth:`admit`); None: calls go at once."""
        self._parked_said: float | None = None
        self.config = config or ResilienceConfig()
        self.tracing = tracing if tracing is not None else default_tracing()
        _check_config(self.config)
        if prober is None:  # the default strategy (tcp), through the plugin registry
            prober = make_prober(Settings())
        self.prober = prober
        self.host, self.port = endpoint(base_url)
        self.clock = clock
        self.sleep = sleep
        self.on_status = on_status or (lambda _line: None)
        self.rng = rng or random.Random()
        self.now = now

    @classmethod
    def from_settings(cls, settings: Settings, **kw: Any) -> Resilience:
        """Config from ``[tool.flower.resilience]``, prober from ``[tool.flower.probe]``."""
        if "prober" not in kw:
            kw["prober"] = make_prober(settings)
        return cls(settings.resilience, **kw)

    async def run(
        self,
        attempt_fn: Callable[[AttemptInfo], Awaitable[T]],
        *,
        has_session: Callable[[], bool] = lambda: False,
        on_error: Callable[[AttemptError], None] | None = None,
    ) -> tuple[T, list[AttemptError]]:
        """Call ``attempt_fn`` until it returns; the result and every failed attempt.

        A rate or usage limit (429) whose wait (``retry-after``, the reset headers, or a
        reset time its words name) is longer than ``max_delay`` is waited out as asked,
        through the gate's park when there is one (all such waits together bounded by
        ``max_park_wait``; one longer than it stops at once), and that attempt is not
        counted against ``max_attempts``.
        """
        conf = self.config
        errors: list[AttemptError] = []
        number = 1  # every call, as errors[] numbers them
        counted = 0  # the calls that count against max_attempts
        long_waited = 0.0
        info = AttemptInfo(1, False)
        while True:
            try:
                return await attempt_fn(info), errors
            except Exception as exc:
                failure = AttemptError(number, classify(exc), describe(exc), status_of(exc))
                errors.append(failure)
                if on_error is not None:
                    on_error(failure)
                if failure.kind == "fatal" or (
                    failure.kind == "unknown" and not conf.retry_unknown
                ):
                    raise FatalAPIError(
                        _("{kind} API error on attempt {number}, not retried: {error}").format(
                            kind=shown_kind(failure.kind), number=number, error=failure.text
                        ),
                        errors,
                    ) from exc
                asked_wait = self._asked_wait(failure, exc)
                # a rate or usage limit's wait says when the quota is back: it parks
                limit_wait = asked_wait if failure.status == 429 else None
                if limit_wait is not None and limit_wait > conf.max_park_wait:
                    raise GaveUpError(
                        _(
                            "the API asks to wait {asked} (until {until}), longer than "
                            "max_park_wait={limit:g} s: not waiting; set [tool.flower.resilience] "
                            "max_park_wait to wait that long; last error: {error}"
                        ).format(
                            asked=format_duration(limit_wait),
                            until=f"{self.now() + timedelta(seconds=limit_wait):%Y-%m-%d %H:%M}",
                            limit=conf.max_park_wait,
                            error=failure.text,
                        ),
                        errors,
                    ) from exc
                long_wait = self._long_rate_limit_wait(failure, asked_wait)
                if limit_wait is not None and self.gate is not None and self.gate.park(limit_wait):
                    # every caller of the gate waits it out before its next call (admit):
                    # not an attempt, not an offline wait, and the step resumes its session
                    pass
                elif long_wait is not None:
                    asked = _wait_attributes(failure, long_wait)
                    with self.tracing.span("flower.rate_limit_wait", asked):
                        long_waited = await self._wait_as_asked(long_wait, long_waited, errors, exc)
                else:
                    counted += 1
                    if counted >= conf.max_attempts:
                        raise GaveUpError(
                            _("gave up after {n} attempts; last error ({kind}): {error}").format(
                                n=counted, kind=shown_kind(failure.kind), error=failure.text
                            ),
                            errors,
                        ) from exc
                    with self.tracing.span("flower.retry_wait", _wait_attributes(failure)) as span:
                        await self._wait_until_reachable(errors, exc)
                        delay = self._delay(counted, asked_wait)
                        span.set({"flower.retry.delay_s": delay})
                        self.on_status(
                            _(
                                "API error ({kind}): {error}; attempt {attempt} of {attempts} "
                                "in {delay:.1f} s"
                            ).format(
                                kind=shown_kind(failure.kind),
                                error=failure.text,
                                attempt=counted + 1,
                                attempts=conf.max_attempts,
                                delay=delay,
                            )
                        )
                        await self.sleep(delay)
            number += 1
            info = AttemptInfo(number, has_session())

    async def admit(self, input_tokens: int, output_tokens: int) -> object:
        """Wait until the gate lets one model call of about these many tokens go; its
        ticket (None without a gate). One status line per wait, one per park."""
        gate = self.gate
        if gate is None:
            return None
        said_budget = False
        while True:
            answer = gate.reserve(input_tokens, output_tokens)
            if answer.ticket is not None:
                return answer.ticket
            if answer.parked_until is not None:
                if self._parked_said != answer.parked_until:
                    self._parked_said = answer.parked_until
                    until = datetime.fromtimestamp(answer.parked_until)
                    self.on_status(
                        _(
                            "parked until {until}: the API asked every caller to wait "
                            "(not counted as an attempt)"
                        ).format(until=f"{until:%H:%M:%S}")
                    )
            elif not said_budget:
                said_budget = True
                self.on_status(
                    _("waiting for the shared budget (about {wait:.1f} s)").format(wait=answer.wait)
                )
            await self.sleep(max(min(answer.wait, 1.0), 0.01))

    def settle(
        self, ticket: object, usage: dict[str, Any], limits: dict[str, str], cost: float | None
    ) -> None:
        """Tell the gate what the call ``ticket`` really used."""
        if self.gate is not None and ticket is not None:
            self.gate.settle(ticket, usage, limits, cost)

    def _delay(self, attempt: int, asked: float | None) -> float:
        conf = self.config
        delay = backoff_delay(attempt, conf.base_delay, conf.max_delay, self.rng)
        if asked is not None:
            delay = max(delay, min(asked, conf.max_delay))
        return delay

    @staticmethod
    def _asked_wait(failure: AttemptError, error: BaseException) -> float | None:
        """Seconds the server asked to wait: ``retry-after`` (any status), and for a
        rate or usage limit (429) without it the reset time its headers or its words
        name."""
        asked = retry_after(error)
        if asked is None and failure.status == 429:
            asked = reset_after(error)
            if asked is None:
                asked = reset_in_text(error)
        return asked

    def _long_rate_limit_wait(self, failure: AttemptError, asked: float | None) -> float | None:
        """Seconds a 429 asks for when that is longer than ``max_delay``, else ``None``.

        Only a rate limit: its wait says when the quota comes back, while an
        overloaded server's ``retry-after`` is a hint, capped at ``max_delay`` like any
        backoff.
        """
        if failure.status != 429 or asked is None or asked <= self.config.max_delay:
            return None
        return asked

    async def _wait_as_asked(
        self, asked: float, waited: float, errors: list[AttemptError], cause: BaseException
    ) -> float:
        """Sleep what a rate limit asks, within what is left of ``max_park_wait`` (a
        park, not an offline wait)."""
        budget = self.config.max_park_wait - waited
        if budget <= 0:
            raise GaveUpError(
                _(
                    "rate limited for {waited} (max_park_wait={limit:g} s); last error: {error}"
                ).format(
                    waited=format_duration(waited),
                    limit=self.config.max_park_wait,
                    error=errors[-1].text,
                ),
                errors,
            ) from cause
        wait = min(asked, budget)
        resumes = self.now() + timedelta(seconds=wait)
        self.on_status(
            _(
                "rate limited: the API asks to wait {asked}; waiting until {resumes} "
                "(not counted as an attempt)"
            ).format(asked=format_duration(asked), resumes=f"{resumes:%H:%M:%S}")
        )
        await self.sleep(wait)
        return waited + wait

    async def probe(self) -> bool:
        return await _probe_off_loop(self.prober, self.host, self.port, self.config.probe_timeout)

    async def _wait_until_reachable(self, errors: list[AttemptError], cause: BaseException) -> None:
        """Hang on while the endpoint is unreachable, one status line each way.

        Probes keep a fixed cadence from the start of the outage (every
        ``probe_interval`` seconds, however long each probe took) until
        ``max_offline_wait`` has passed.
        """
        conf = self.config
        started, since = self.clock(), self.now()
        if await self.probe():
            return
        self.on_status(
            _("offline since {since}, probing {host}:{port} every {interval:g} s").format(
                since=f"{since:%H:%M:%S}",
                host=self.host,
                port=self.port,
                interval=conf.probe_interval,
            )
        )
        where: Attributes = {"server.address": self.host, "server.port": self.port}
        with self.tracing.span("flower.offline_wait", where) as span:
            await self._probe_until_back(errors, cause, started)
            span.set({"flower.offline.waited_s": self.clock() - started})

    async def _probe_until_back(
        self, errors: list[AttemptError], cause: BaseException, started: float
    ) -> None:
        conf = self.config
        deadline = started + conf.max_offline_wait
        tick = 0
        while True:
            now = self.clock()
            if now >= deadline:
                raise GaveUpError(
                    _(
                        "{host}:{port} unreachable for {waited} (max_offline_wait={limit:g} s); "
                        "last error: {error}"
                    ).format(
                        host=self.host,
                        port=self.port,
                        waited=format_duration(now - started),
                        limit=conf.max_offline_wait,
                        error=errors[-1].text,
                    ),
                    errors,
                ) from cause
            tick = max(tick + 1, math.floor((now - started) / conf.probe_interval) + 1)
            next_probe = min(started + tick * conf.probe_interval, deadline)
            if next_probe > now:
                await self.sleep(next_probe - now)
            if await self.probe():
                self.on_status(
                    _("back online after {waited}").format(
                        waited=format_duration(self.clock() - started)
                    )
                )
                return


def _wait_attributes(failure: AttemptError, delay: float | None = None) -> dict[str, Any]:
    return {
        "flower.retry.delay_s": delay,
        "flower.retry.attempt": failure.attempt,
        "error.type": failure.kind,
        "http.response.status_code": failure.status,
    }


def _check_config(conf: ResilienceConfig) -> None:
    problems = []
    if conf.max_attempts < 1:
        problems.append(
            _("{name} must be at least 1, got {value}").format(
                name="max_attempts", value=conf.max_attempts
            )
        )
    for name in ("base_delay", "max_delay", "max_offline_wait"):
        if getattr(conf, name) < 0:
            problems.append(
                _("{name} must not be negative, got {value}").format(
                    name=name, value=getattr(conf, name)
                )
            )
    for name in ("probe_timeout", "probe_interval"):
        if getattr(conf, name) <= 0:
            problems.append(
                _("{name} must be positive, got {value}").format(
                    name=name, value=getattr(conf, name)
                )
            )
    if problems:
        raise ConfigError("[tool.flower.resilience] " + "; ".join(problems))


def make_prober(settings: Settings) -> Prober:
    """The prober ``[tool.flower.probe] strategy`` names, through the plugin registry."""
    from flower.core.plugins import get_registry

    strategy = settings.probe.strategy
    try:
        registration = get_registry().get("probers", strategy)
    except PluginError as exc:
        raise ConfigError(f"[tool.flower.probe] strategy: {exc}", key="probe.strategy") from None
    return registration.factory(settings)


__all__ = [
    "KIND_WORDS",
    "RESUME_PROMPT",
    "AttemptError",
    "AttemptInfo",
    "FatalAPIError",
    "GaveUpError",
    "Kind",
    "Resilience",
    "ResilienceError",
    "backoff_delay",
    "classify",
    "describe",
    "endpoint",
    "error_kind",
    "format_duration",
    "make_prober",
    "reset_after",
    "reset_in_text",
    "retry_after",
    "shown_kind",
    "status_of",
]
