"""A fleet task's wakes are one trace (issue 30 item 8): the first wake and the one that
carries the task on after a takeover (on another worker: another process) both join the
task's trace, whose id comes from the task id alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from telemetry_helpers import Recorder

from flower import AgentSpec, Step, Workflow
from flower.fleet.wake import task_trace, trace_id_of
from flower.runtime.engine import Runtime
from flower.testing.fake_api import FakeMessagesAPI, text

AGENT = AgentSpec("a", "You answer.", max_turns=2)


def _wake(recorder: Recorder, task_id: str) -> None:
    rt = Runtime(workspace=".", run_dir="runs", tracing=recorder.tracing())
    try:
        with task_trace(task_id):
            asyncio.run(Workflow([Step("s", AGENT, "go", resume_prompt="again")]).run(rt))
    finally:
        rt.close()


def test_every_wake_of_a_task_joins_its_trace(
    workspace: Path, fake_api: FakeMessagesAPI, recorder: Recorder
) -> None:
    fake_api.set_script([text("one"), text("two"), text("other")])
    _wake(recorder, "nightly-a")
    _wake(recorder, "nightly-a")  # the task carried on (a takeover)
    _wake(recorder, "nightly-b")
    wakes = recorder.named("flower.wake")
    assert len(wakes) == 3
    traces = [span.context.trace_id for span in wakes]
    assert traces == [trace_id_of("nightly-a")] * 2 + [trace_id_of("nightly-b")]
    assert trace_id_of("nightly-a") != trace_id_of("nightly-b")
    # everything under the two wakes of one task is in that task's trace
    ours = {span.context.span_id for span in wakes[:2]}
    under = [s for s in recorder.spans if s.parent is not None and s.parent.span_id in ours]
    assert under and all(s.context.trace_id == trace_id_of("nightly-a") for s in under)
