"""The workflow context: typed fields for flower's own state, read the way the product
page's example reads them (``ctx["_woke"]``, ``ctx["_sessions"]``), and the caller's own
keys kept as on a dict."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest
from workflow_helpers import user_prompts

from flower import AgentSpec, Step, Workflow, WorkflowContext
from flower.testing.fake_api import FakeMessagesAPI, text
from flower.workflow.context import RelayMove

AGENT = AgentSpec(name="a", instructions="x", max_turns=2)


def test_underscore_keys_read_and_assign_the_typed_fields() -> None:
    ctx = WorkflowContext(workspace="/w")
    assert ctx["_woke"] == 1 and ctx["_ok"] is True
    ctx.sessions["取词"] = "s-1"
    assert ctx["_sessions"] is ctx.sessions
    assert ctx["_sessions"] == {"取词": "s-1"}
    ctx["_woke"] = 3
    assert ctx.woke == 3
    # flower's keys are always there; "nothing failed" is None, not a missing key
    assert "_failed" in ctx and ctx["_failed"] is None and ctx.get("_failed") is None
    assert ctx["_relays"] == [] and ctx["_workspace"] == "/w"


def test_other_keys_are_the_callers_own() -> None:
    ctx = WorkflowContext(workspace="/w")
    ctx["task"] = "写个脚本"
    ctx["_mine"] = 1  # an underscore name flower does not use is the caller's too
    assert ctx["task"] == "写个脚本" and ctx.values == {"task": "写个脚本", "_mine": 1}
    assert "task" in ctx and "missing" not in ctx and ctx.get("missing", 0) == 0
    with pytest.raises(KeyError):
        ctx["missing"]
    ctx["_values"] = "kept"  # the field that holds them is not reachable as a key
    assert ctx.values["_values"] == "kept"


def test_a_relay_move_reads_by_its_old_keys() -> None:
    move = RelayMove(step="干活", from_session="s-1", to="s-2", doc="/w/h.md", turns=2)
    assert (move["step"], move["from"], move["to"], move["doc"], move["turns"]) == (
        "干活",
        "s-1",
        "s-2",
        "/w/h.md",
        2,
    )
    assert move.get("nope") is None
    with pytest.raises(KeyError):
        move["nope"]
    assert msgspec.to_builtins(move)["from"] == "s-1"


def test_prompts_and_hooks_share_keys_and_fields_across_a_run(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    from flower.runtime.engine import Runtime

    fake.set_script(lambda req: text("好了"))

    def on_start(ctx: WorkflowContext) -> None:
        ctx["task"] = f"第 {ctx['_woke']} 次"

    def prompt(ctx: WorkflowContext) -> str:
        return f"{ctx['task']}:{ctx.get('一', '')}"

    wf = Workflow([Step("一", AGENT, "go"), Step("二", AGENT, prompt)], on_start=on_start)
    rt = Runtime(workspace=".", run_dir="runs")
    try:
        first = asyncio.run(wf.run(rt))
        second = asyncio.run(wf.run(rt, resume_from=first))
    finally:
        rt.close()
    assert first["_woke"] == 1 and first["task"] == "第 1 次" and first["二"] == "好了"
    assert user_prompts(fake.requests[1])[-1] == "第 1 次:好了"  # the prompt read both keys
    assert first["_sessions"] == first.sessions and set(first.sessions) == {"一", "二"}
    # a previous context given back as resume_from resumes its sessions
    assert second.woke == 2 and second.sessions == first.sessions
    assert second.known == first.sessions and second.resumed == {"一": True, "二": True}
    assert second.ok and second.failed is None and [r.step for r in second.results] == ["一", "二"]
