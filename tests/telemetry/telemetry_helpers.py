"""The trace tests' recorder: a private tracer provider with the SDK's in-memory exporter."""

from __future__ import annotations

from typing import Any

from flower.core.telemetry import Tracing


class Recorder:
    """Spans finished on a provider of its own (the process-wide one stays untouched)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("flower")

    def tracing(self, *, capture_content: bool = False) -> Tracing:
        return Tracing(self.tracer, capture_content=capture_content)

    @property
    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[Any]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> Any:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return [span.name for span in self.spans]

    def children(self, parent: Any) -> list[Any]:
        """The spans whose parent is ``parent``, in the order they started."""
        found = [
            span
            for span in self.spans
            if span.parent is not None and span.parent.span_id == parent.context.span_id
        ]
        return sorted(found, key=lambda span: span.start_time)

    def all_values(self) -> str:
        """Every attribute and event value of every span, as one text to search."""
        parts: list[str] = []
        for span in self.spans:
            parts += [str(value) for value in span.attributes.values()]
            for event in span.events:
                parts += [str(value) for value in event.attributes.values()]
        return "\n".join(parts)


class Collector:
    """An OTLP/HTTP trace receiver on 127.0.0.1 (``POST /v1/traces``), a context manager;
    ``spans`` lists ``(service.name, scope name, span name)`` of every span received."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.spans: list[tuple[str, str, str]] = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.paths.append(self.path)
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    service = next(
                        (
                            a.value.string_value
                            for a in resource_spans.resource.attributes
                            if a.key == "service.name"
                        ),
                        "",
                    )
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            collector.spans.append((service, scope_spans.scope.name, span.name))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
