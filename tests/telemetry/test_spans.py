"""The span tree of real runs on the fake Messages API, read back from the SDK's
in-memory exporter: structure, GenAI attributes, tool calls, content, retries, waits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
import pytest
from telemetry_helpers import Recorder

from flower.core.config import ResilienceConfig, SessionsConfig, Settings, TelemetryConfig
from flower.core.errors import ConfigError
from flower.core.resilience import Resilience
from flower.core.telemetry import OFF, Tracing, process_tracer, tracing_for
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import (
    FakeMessagesAPI,
    accept_and_close,
    overloaded,
    rate_limited,
    reply,
    stall,
    text,
    tool_use,
)

MODEL = "claude-sonnet-4-6"
READER = AgentSpec("reader", "Be terse.", allowed_tools=["Read"], max_turns=6, model=MODEL)
PROMPT = "Which word is in seed.txt?"


class Probes:
    """A prober that answers from a list (then stays up), counting its calls."""

    def __init__(self, answers: list[bool]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def reachable(self, host: str, port: int, timeout: float) -> bool:
        self.calls += 1
        return self.answers.pop(0) if self.answers else True


async def no_sleep(seconds: float) -> None:
    return None


def settings_in(root: Path) -> Settings:
    url = f"sqlite:///{root / 'runs' / 'sessions.db'}"
    return msgspec.structs.replace(Settings(), sessions=SessionsConfig(backend="sqlite", url=url))


def run_reader(
    workspace: Path,
    api: FakeMessagesAPI,
    tracing: Tracing,
    probes: Probes | None = None,
) -> Any:
    resilience = Resilience(
        ResilienceConfig(base_delay=0.0, max_attempts=3),
        prober=probes or Probes([]),
        base_url=api.base_url,
        sleep=no_sleep,
        tracing=tracing,
    )
    root = workspace.parent
    rt = Runtime(
        workspace, root / "runs", settings=settings_in(root), resilience=resilience, tracing=tracing
    )
    try:
        return asyncio.run(rt.run(READER, PROMPT))
    finally:
        rt.close()


def test_a_run_with_a_tool_call_is_one_tree_with_genai_attributes(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    fake_api.add(
        reply("Reading.", tool_use("Read", {"file_path": "seed.txt"}, id="toolu_read1")),
        text("tulip", usage={"cache_read_input_tokens": 7, "cache_creation_input_tokens": 3}),
    )
    result = run_reader(workspace, fake_api, recorder.tracing())
    assert result.ok

    agent = recorder.one("invoke_agent reader")
    assert agent.parent is None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "reader"
    assert agent.attributes["gen_ai.conversation.id"] == result.session_id
    assert agent.attributes["flower.session.id"] == result.session_id
    assert agent.attributes["flower.attempts"] == 1
    [attempt] = recorder.children(agent)
    assert attempt.name == "flower.attempt"
    assert attempt.attributes["flower.attempt.number"] == 1
    assert attempt.attributes["flower.attempt.resuming"] is False

    first, tool, second = recorder.children(attempt)
    assert [first.name, tool.name, second.name] == [
        f"chat {MODEL}",
        "execute_tool Read",
        f"chat {MODEL}",
    ]
    from opentelemetry.trace import SpanKind, StatusCode

    assert first.kind == SpanKind.CLIENT
    chat = first.attributes
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "anthropic"
    assert chat["gen_ai.system"] == "anthropic"
    assert chat["gen_ai.request.model"] == MODEL
    assert chat["gen_ai.request.max_tokens"] == READER.max_tokens
    assert chat["gen_ai.conversation.id"] == result.session_id
    assert chat["gen_ai.response.model"] == MODEL
    assert str(chat["gen_ai.response.id"]).startswith("msg_")
    assert tuple(chat["gen_ai.response.finish_reasons"]) == ("tool_use",)
    assert chat["gen_ai.usage.input_tokens"] == 10
    assert chat["gen_ai.usage.output_tokens"] == 5
    assert str(chat["anthropic.request.id"]).startswith("req_")
    # cached tokens count in input_tokens and are given on their own too
    last = second.attributes
    assert tuple(last["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert last["gen_ai.usage.input_tokens"] == 10 + 7 + 3
    assert last["gen_ai.usage.cache_read.input_tokens"] == 7
    assert last["gen_ai.usage.cache_creation.input_tokens"] == 3

    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "Read"
    assert tool.attributes["gen_ai.tool.call.id"] == "toolu_read1"
    assert tool.attributes["gen_ai.conversation.id"] == result.session_id
    assert tool.status.status_code != StatusCode.ERROR
    # one trace
    assert {span.context.trace_id for span in recorder.spans} == {agent.context.trace_id}


def test_no_content_goes_into_spans_by_default(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    fake_api.add(
        reply("Reading it.", tool_use("Read", {"file_path": "seed.txt"})), text("the tulip")
    )
    run_reader(workspace, fake_api, recorder.tracing())
    values = recorder.all_values()
    for secret in ("tulip", "seed.txt", "Which word", "Be terse", "Reading it"):
        assert secret not in values
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    for span in recorder.spans:
        assert not content_keys & set(span.attributes)


def test_capture_content_puts_prompts_replies_and_tool_io_into_spans(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    fake_api.add(
        reply("Reading it.", tool_use("Read", {"file_path": "seed.txt"})), text("the tulip")
    )
    run_reader(workspace, fake_api, recorder.tracing(capture_content=True))
    first, second = recorder.named(f"chat {MODEL}")
    assert PROMPT in first.attributes["gen_ai.input.messages"]
    assert "Be terse." in first.attributes["gen_ai.system_instructions"]
    assert "Reading it." in first.attributes["gen_ai.output.messages"]
    assert '"tool_call"' in first.attributes["gen_ai.output.messages"]
    assert '"tool_call_response"' in second.attributes["gen_ai.input.messages"]
    assert "the tulip" in second.attributes["gen_ai.output.messages"]
    tool = recorder.one("execute_tool Read")
    assert "seed.txt" in tool.attributes["gen_ai.tool.call.arguments"]
    assert "tulip" in tool.attributes["gen_ai.tool.call.result"]


def test_a_denied_tool_call_is_a_failed_tool_span(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    from opentelemetry.trace import StatusCode

    fake_api.add(reply(tool_use("Bash", {"command": "ls"})), text("ok"))
    run_reader(workspace, fake_api, recorder.tracing())
    tool = recorder.one("execute_tool Bash")
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes["error.type"] == "denied"
    assert tool.attributes["flower.tool.denied"] is True


def test_a_retry_after_an_outage_shows_the_failed_attempt_and_the_waits(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    from opentelemetry.trace import StatusCode

    fake_api.add(overloaded(), text("tulip"))
    probes = Probes([False, False, True])  # down at the first two probes, then back
    result = run_reader(workspace, fake_api, recorder.tracing(), probes)
    assert result.ok and result.attempts == 2 and probes.calls == 3

    agent = recorder.one("invoke_agent reader")
    failed, wait, retried = recorder.children(agent)
    assert [failed.name, wait.name, retried.name] == [
        "flower.attempt",
        "flower.retry_wait",
        "flower.attempt",
    ]
    assert failed.status.status_code == StatusCode.ERROR
    assert any(event.name == "exception" for event in failed.events)
    [request] = recorder.children(failed)
    assert request.name == f"chat {MODEL}" and request.status.status_code == StatusCode.ERROR
    # the conventions' error.type: the code the API answered with
    assert request.attributes["error.type"] == "overloaded_error"
    assert request.attributes["http.response.status_code"] == 529
    assert wait.attributes["flower.retry.attempt"] == 1
    assert wait.attributes["error.type"] == "transient"
    assert wait.attributes["http.response.status_code"] == 529
    assert wait.attributes["flower.retry.delay_s"] >= 0
    [offline] = recorder.children(wait)
    assert offline.name == "flower.offline_wait"
    assert offline.attributes["server.address"] == "127.0.0.1"
    assert offline.attributes["server.port"] == fake_api.port
    assert offline.attributes["flower.offline.waited_s"] >= 0
    assert retried.attributes["flower.attempt.number"] == 2
    assert retried.attributes["flower.attempt.resuming"] is True
    assert retried.attributes["flower.session.id"] == result.session_id
    assert agent.attributes["flower.attempts"] == 2


def test_a_request_cut_off_is_a_failed_chat_span_naming_the_error_class(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    from opentelemetry.trace import StatusCode

    fake_api.add(accept_and_close(), text("tulip"))
    result = run_reader(workspace, fake_api, recorder.tracing())
    assert result.ok and result.attempts == 2
    failed, answered = recorder.named(f"chat {MODEL}")
    assert failed.status.status_code == StatusCode.ERROR
    # no code from the API: the exception's fully qualified class, as the span's
    # exception event names it
    [event] = [e for e in failed.events if e.name == "exception"]
    assert failed.attributes["error.type"] == event.attributes["exception.type"]
    assert "." in failed.attributes["error.type"]
    assert "http.response.status_code" not in failed.attributes
    assert "error.type" not in answered.attributes


def test_a_long_rate_limit_wait_is_a_span_of_its_own(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    fake_api.add(rate_limited(retry_after=300), text("tulip"))
    result = run_reader(workspace, fake_api, recorder.tracing())
    assert result.ok and result.attempts == 2
    agent = recorder.one("invoke_agent reader")
    names = [span.name for span in recorder.children(agent)]
    assert names == ["flower.attempt", "flower.rate_limit_wait", "flower.attempt"]
    wait = recorder.one("flower.rate_limit_wait")
    assert wait.attributes["http.response.status_code"] == 429
    assert wait.attributes["flower.retry.delay_s"] == 300
    assert recorder.named("flower.retry_wait") == []


def test_a_cancelled_run_leaves_failed_spans_saying_interrupted(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    from opentelemetry.trace import StatusCode

    fake_api.add(stall(30))
    resilience = Resilience(prober=Probes([]), base_url=fake_api.base_url, sleep=no_sleep)
    root = workspace.parent
    tracing = recorder.tracing()
    rt = Runtime(
        workspace, root / "runs", settings=settings_in(root), resilience=resilience, tracing=tracing
    )

    async def cut_short() -> None:
        task = asyncio.create_task(rt.run(READER, PROMPT))
        while not fake_api.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(cut_short())
    finally:
        rt.close()
    for name in ("invoke_agent reader", "flower.attempt", f"chat {MODEL}"):
        span = recorder.one(name)
        assert span.status.status_code == StatusCode.ERROR, name
        assert span.attributes["error.type"] == "interrupted"


def test_a_run_that_gives_up_is_a_failed_agent_span(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    from opentelemetry.trace import StatusCode

    fake_api.add(overloaded(), overloaded(), overloaded())
    result = run_reader(workspace, fake_api, recorder.tracing())
    assert not result.ok
    agent = recorder.one("invoke_agent reader")
    assert agent.status.status_code == StatusCode.ERROR
    assert agent.attributes["flower.ok"] is False
    assert len(recorder.named("flower.attempt")) == 3
    assert len(recorder.named("flower.retry_wait")) == 2


def test_tracing_follows_the_telemetry_settings(monkeypatch: Any) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    off = msgspec.structs.replace(Settings(), telemetry=TelemetryConfig(enabled=False))
    assert tracing_for(off) is OFF
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert tracing_for(Settings()) is OFF


def test_an_unknown_exporter_name_is_a_config_error_naming_the_variable(monkeypatch: Any) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "jaegerr")
    with pytest.raises(ConfigError) as caught:
        process_tracer()
    message = str(caught.value)
    assert "OTEL_TRACES_EXPORTER" in message and "'jaegerr'" in message
    assert "otlp" in message and "console" in message
