"""OpenTelemetry spans for a run, or nothing at all: the one module that touches OTel.

flower traces only when asked: when the host process already uses OpenTelemetry (it
imported ``opentelemetry.trace``, so a provider it set up is honoured), or when the
standard ``OTEL_*`` variables ask for traces and ``flower[otel]`` (the SDK) is installed;
then flower builds the SDK's provider from those variables once per process.
``OTEL_SDK_DISABLED=true`` or ``[tool.flower.telemetry] enabled = false`` turns it off.
When no tracer is wanted nothing of OpenTelemetry is imported and :meth:`Tracing.span`
yields a span that does nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from flower.core.errors import ConfigError
from flower.core.i18n import _

if TYPE_CHECKING:
    from types import ModuleType

    from opentelemetry import trace as otel_trace

    from flower.core.config import Settings

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]
Attributes = Mapping[str, AttributeValue | None]
SpanKindName = Literal["internal", "client"]

SCOPE = "flower"
DEFAULT_SERVICE_NAME = "flower"
_ASKING_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)
_EXPORTER_GROUP = "opentelemetry_traces_exporter"


class Span:
    """The span a ``with tracing.span(...)`` block holds; a no-op unless it wraps one of
    OpenTelemetry's. ``None`` attribute values are left out (OTel rejects them)."""

    def __init__(self, otel_span: otel_trace.Span | None = None) -> None:
        self._span = otel_span

    @property
    def recording(self) -> bool:
        return self._span is not None and bool(self._span.is_recording())

    def set(self, attributes: Attributes) -> None:
        if self._span is None:
            return
        for name, value in attributes.items():
            if value is not None:
                self._span.set_attribute(name, value)

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        if self._span is not None:
            self._span.add_event(name, _clean(attributes or {}))

    def fail(self, description: str, error_type: str | None = None) -> None:
        """Mark the span as failed without an exception (a tool error, a failed step)."""
        if self._span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        if error_type:
            self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description))


NO_SPAN = Span()


class Tracing:
    """Opens spans on ``tracer`` (an OpenTelemetry tracer), or does nothing without one.

    ``capture_content`` says whether prompts, replies and tool inputs/outputs may go
    into spans (``[tool.flower.telemetry] capture_content``, off by default).
    """

    def __init__(
        self, tracer: otel_trace.Tracer | None = None, *, capture_content: bool = False
    ) -> None:
        self.tracer = tracer
        self.capture_content = capture_content

    @property
    def on(self) -> bool:
        return self.tracer is not None

    @contextlib.contextmanager
    def span(
        self, name: str, attributes: Attributes | None = None, *, kind: SpanKindName = "internal"
    ) -> Iterator[Span]:
        """A span around the block, child of the current one; an exception leaving the
        block is recorded on it and marks it failed, and so does an interruption (Ctrl-C,
        a cancelled task), which OpenTelemetry itself leaves unmarked."""
        if self.tracer is None:
            yield NO_SPAN
            return
        import asyncio

        from opentelemetry.trace import SpanKind

        otel_kind = SpanKind.CLIENT if kind == "client" else SpanKind.INTERNAL
        with self.tracer.start_as_current_span(
            name, kind=otel_kind, attributes=_clean(attributes or {})
        ) as otel_span:
            span = Span(otel_span)
            try:
                yield span
            except (KeyboardInterrupt, asyncio.CancelledError) as exc:
                span.fail(f"interrupted ({type(exc).__name__})", "interrupted")
                raise


OFF = Tracing()


def tracing_for(settings: Settings) -> Tracing:
    """The :class:`Tracing` for ``settings`` (a :class:`~flower.core.config.Settings`)."""
    conf = settings.telemetry
    if not conf.enabled:
        return OFF
    tracer = process_tracer()
    return Tracing(tracer, capture_content=conf.capture_content) if tracer is not None else OFF


def tracing_of(holder: object) -> Tracing:
    """The :class:`Tracing` an object carries as ``.tracing`` (a ``Runtime``), else off."""
    found = getattr(holder, "tracing", None)
    return found if isinstance(found, Tracing) else OFF


def default_tracing() -> Tracing:
    """Tracing without settings at hand (no content, ever): for the resilience waits."""
    tracer = process_tracer()
    return Tracing(tracer) if tracer is not None else OFF


def process_tracer() -> otel_trace.Tracer | None:
    """This process's tracer for flower's spans, or ``None`` when nothing is traced."""
    if _env_true("OTEL_SDK_DISABLED"):
        return None
    if "opentelemetry.trace" not in sys.modules and not _environment_asks():
        return None
    if not _sdk_installed() and "opentelemetry.trace" not in sys.modules:
        return None  # OTEL_* set, but flower[otel] is not installed: trace nothing
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    if _environment_asks() and not _host_has_provider(trace):
        with _SETUP_LOCK:
            if not _host_has_provider(trace):
                provider = _provider_from_environment()
                if provider is None:
                    return None
                trace.set_tracer_provider(provider)
    return trace.get_tracer(SCOPE, _version())


_SETUP_LOCK = threading.Lock()


def describe(settings: Settings) -> tuple[bool, str]:
    """Whether tracing is set up right, and one line on what a run would trace (for
    ``flower doctor``); imports the SDK only when the variables ask for traces."""
    conf = settings.telemetry
    if not conf.enabled:
        return True, _("off ({setting})").format(setting="[tool.flower.telemetry] enabled = false")
    if _env_true("OTEL_SDK_DISABLED"):
        return True, _("off ({setting})").format(setting="OTEL_SDK_DISABLED=true")
    if not _environment_asks():
        return True, _("off (no OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT set)")
    if not _sdk_installed():
        return True, _("off: OTEL_* variables are set but flower[otel] is not installed")
    try:
        for name in _exporter_names():
            _load_exporter(name)
    except ConfigError as exc:
        return False, str(exc)
    except ImportError as exc:
        return False, _("the traces exporter cannot be imported: {error}").format(error=exc)
    endpoint = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or _("the exporter's default endpoint")
    )
    service = os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    exporters = ", ".join(_exporter_names()) or _("none")
    content = _("with content") if conf.capture_content else _("no content")
    if any(n.startswith("otlp") for n in _exporter_names()):
        line = _("on: {exporters} to {endpoint}, service {service}, {content}")
    else:
        line = _("on: {exporters}, service {service}, {content}")
    return True, line.format(
        exporters=exporters, endpoint=endpoint, service=service, content=content
    )


def _host_has_provider(trace: ModuleType) -> bool:
    """Whether a real tracer provider is set (the API's default is a proxy)."""
    provider = trace.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


def _environment_asks() -> bool:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return any(os.environ.get(name, "").strip() for name in _ASKING_VARIABLES)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() == "true"


def _sdk_installed() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.distribution("opentelemetry-sdk")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("flower")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _provider_from_environment() -> Any:
    """The SDK's provider with the exporters ``OTEL_TRACES_EXPORTER`` names (``otlp``
    when unset; ``console`` prints on stderr, never on the command's stdout),
    ``OTEL_SERVICE_NAME`` (``flower`` when unset) and the rest of the
    standard variables, which the SDK and the exporters read themselves."""
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        return None
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    resource = Resource.create(attributes)
    provider = TracerProvider(resource=resource)  # flushed and shut down at exit
    for name in _exporter_names():
        if name == "console":
            # stdout is the command's (``--json`` promises JSON there and nothing else)
            exporter = _load_exporter(name)(out=sys.stderr)
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            provider.add_span_processor(BatchSpanProcessor(_load_exporter(name)()))
    return provider


def _exporter_names() -> list[str]:
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "").strip() or "otlp"
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if protocol.startswith("http"):
        names = ["otlp_proto_http" if name == "otlp" else name for name in names]
    return [name for name in names if name != "none"]


def _load_exporter(name: str) -> Any:
    import importlib.metadata

    found = importlib.metadata.entry_points(group=_EXPORTER_GROUP)
    for entry in found:
        if entry.name == name:
            return entry.load()
    known = ", ".join(sorted({entry.name for entry in found})) or _("none installed")
    raise ConfigError(
        _(
            "environment variable OTEL_TRACES_EXPORTER: unknown traces exporter {name} "
            "(installed: {known}; `pip install 'flower[otel]'` brings otlp and console)"
        ).format(name=repr(name), known=known)
    )


def _clean(attributes: Attributes) -> dict[str, AttributeValue]:
    return {name: value for name, value in attributes.items() if value is not None}


__all__ = [
    "NO_SPAN",
    "OFF",
    "Span",
    "Tracing",
    "default_tracing",
    "describe",
    "process_tracer",
    "tracing_for",
    "tracing_of",
]
