"""The spans of a workflow wake: the wake, its steps, a relay between two sessions, and
the runs under them (the real Runtime and Workflow on the fake Messages API)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec
from telemetry_helpers import Recorder

from flower import AgentSpec, Step, Workflow
from flower.core.config import RelayConfig, Settings
from flower.core.i18n import _
from flower.runtime.engine import Runtime
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, reply, text, tool_use
from flower.workflow import prompts

WORKER = AgentSpec("worker", "You work.", allowed_tools=["Read"], max_turns=20)
CHECKER = AgentSpec("checker", "You check.", allowed_tools=[], max_turns=2)


def last_user_text(req: RecordedRequest) -> str:
    content = req.messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


class Reader:
    """Reads seed.txt ``reads`` times; every message weighs 1,000 tokens of context."""

    def __init__(self, reads: int) -> None:
        self.reads = reads
        self.done = 0

    def __call__(self, req: RecordedRequest) -> Any:
        context = 1000 * len(req.messages)
        usage = {"input_tokens": 3, "cache_read_input_tokens": context - 3}
        if last_user_text(req) == _(prompts.HANDOFF_PROMPT):
            return text(f"## Progress\nread {self.done} times", usage=usage)
        if req.body.get("system", [{}])[0].get("text") == CHECKER.instructions:
            return text("fine", usage=usage)
        if self.done >= self.reads:
            return text("all read", usage=usage)
        self.done += 1
        return reply(f"read {self.done}", tool_use("Read", {"file_path": "seed.txt"}), usage=usage)


def wake(settings: Settings, recorder: Recorder, steps: list[Step]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        rt = Runtime(workspace=".", run_dir="runs", settings=settings, tracing=recorder.tracing())
        try:
            return await Workflow(steps).run(rt)
        finally:
            rt.close()

    return asyncio.run(go())


def test_a_wake_holds_its_steps_and_each_step_its_run(
    in_tmp: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    (in_tmp / "seed.txt").write_text("tulip\n", encoding="utf-8")
    fake_api.set_script(Reader(reads=1))
    steps = [Step("work", WORKER, "read seed.txt"), Step("check", CHECKER, "check it")]
    ctx = wake(Settings(), recorder, steps)
    assert ctx["_ok"]

    wake_span = recorder.one("flower.wake")
    assert wake_span.parent is None
    assert wake_span.attributes["flower.wake"] == 1
    assert tuple(wake_span.attributes["flower.workflow.steps"]) == ("work", "check")
    assert wake_span.attributes["flower.ok"] is True
    work, check = recorder.children(wake_span)
    assert [work.name, check.name] == ["step work", "step check"]
    assert work.attributes["flower.step.name"] == "work"
    assert work.attributes["flower.session.id"] == ctx["_sessions"]["work"]
    [agent] = recorder.children(work)
    assert agent.name == "invoke_agent worker"
    assert agent.attributes["gen_ai.conversation.id"] == ctx["_sessions"]["work"]
    assert [s.name for s in recorder.children(check)] == ["invoke_agent checker"]

    # a second wake resumes the same sessions, and says so
    recorder.exporter.clear()
    again = wake(Settings(), recorder, steps)
    second = recorder.one("flower.wake")
    assert second.attributes["flower.wake"] == 2
    work = recorder.one("step work")
    assert work.attributes["flower.resumed"] is True
    assert work.attributes["flower.session.id"] == ctx["_sessions"]["work"]
    assert again["_sessions"]["work"] == ctx["_sessions"]["work"]


def test_a_relay_is_a_span_over_the_handoff_and_the_new_session(
    in_tmp: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    (in_tmp / "seed.txt").write_text("tulip\n", encoding="utf-8")
    fake_api.set_script(Reader(reads=3))
    settings = msgspec.structs.replace(Settings(), relay=RelayConfig(threshold_tokens=5_000))
    ctx = wake(settings, recorder, [Step("work", WORKER, "read seed.txt three times")])
    assert ctx["_ok"]
    [move] = ctx["_relays"]

    step = recorder.one("step work")
    first, relay = recorder.children(step)
    assert first.name == "invoke_agent worker"
    assert first.attributes["flower.stop"] == "context_limit"
    assert first.attributes["flower.session.id"] == move["from"]
    assert relay.name == "flower.relay"
    assert relay.attributes["flower.relay.from_session"] == move["from"]
    assert relay.attributes["flower.relay.to_session"] == move["to"]
    handoff, fresh = recorder.children(relay)
    assert handoff.attributes["flower.session.id"] == move["from"]
    assert fresh.attributes["flower.session.id"] == move["to"]
    assert fresh.attributes["flower.ok"] is True
    assert step.attributes["flower.session.id"] == move["to"]
    assert tuple(step.attributes["flower.retired_sessions"]) == (move["from"],)
