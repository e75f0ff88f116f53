"""Pieces of the workflow that need no model: verdicts, briefs, goals, handoff paths,
plus failure handling (retries) against the fake API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flower import AgentSpec, Step, Workflow
from flower.core.config import ResilienceConfig, Settings
from flower.core.manifest import read_manifest
from flower.testing.fake_api import (
    FakeMessagesAPI,
    api_error,
    server_error,
    text,
    unauthorized,
)
from flower.workflow.clarify import (
    append_to_brief,
    extract_brief,
    is_complete_brief,
    parse_goals,
    render_goals,
)
from flower.workflow.goal import parse_verdict
from flower.workflow.relay import handoff_path, needs_relay

GOALS = ["a", "b", "c"]
FULL = "## 背景\nx\n## 要做什么\ny\n## 不做什么\nz\n## 怎样算完成\nw\n"


def test_verdict_per_goal_and_missing_is_unmet() -> None:
    v = parse_verdict("思考过程……\n1. 达成 — 有\n2. 未达成 — 缺测试\n", GOALS)
    assert v.met == [True, False, False]
    assert v.notes[1] == "缺测试"
    assert not v.all_met
    assert [n for n, _, _ in v.unmet()] == [2, 3]
    assert "2. b —— 缺测试" in v.findings()


def test_verdict_last_line_wins_and_other_spellings() -> None:
    reply = "1. 未达成\n1. 达成\n- G2: ✅ fine\n目标3、PASS"
    assert parse_verdict(reply, GOALS).all_met
    assert parse_verdict("1. unmet\n2. met\n3. met", GOALS).met == [False, True, True]
    assert parse_verdict("4. 达成", GOALS).met == [False, False, False]


def test_brief_completeness() -> None:
    assert is_complete_brief(FULL)
    assert not is_complete_brief(FULL.replace("z\n", ""))
    assert not is_complete_brief(FULL.replace("## 不做什么", "## 别的"))
    assert extract_brief("好的:\n\n```markdown\n" + FULL + "```\n") == FULL
    assert extract_brief("还有问题:格式?") is None


def test_append_to_brief_keeps_it_complete(tmp_path: Path) -> None:
    path = tmp_path / "需求.md"
    path.write_text(FULL, encoding="utf-8")
    append_to_brief(path, "顺便高亮", "2026-09-07 10:00")
    append_to_brief(path, "再加个目录", "2026-09-07 11:00")
    text_ = path.read_text(encoding="utf-8")
    assert text_.count("## 补充") == 1
    assert text_.index("顺便高亮") < text_.index("再加个目录")
    assert is_complete_brief(text_)


def test_goals_round_trip() -> None:
    assert parse_goals(render_goals(["x", "y"])) == ["x", "y"]
    assert parse_goals("intro\n1) one\n2、two\n- not numbered\n") == ["one", "two"]


def test_handoff_path_never_overwrites(tmp_path: Path) -> None:
    first = handoff_path(tmp_path, "干/活", now=0)
    first.parent.mkdir(parents=True)
    first.write_text("x")
    second = handoff_path(tmp_path, "干/活", now=0)
    assert first.name.endswith("-干-活.md") and second != first


def test_needs_relay_tolerates_a_broken_runtime() -> None:
    class Broken:
        def context_size(self, sid: str) -> int:
            raise RuntimeError("store down")

    from flower.core.config import Settings

    assert needs_relay(Broken(), "s", Settings()) is False


def test_step_and_workflow_reject_bad_input() -> None:
    agent = AgentSpec(name="a", instructions="x")
    with pytest.raises(ValueError, match="non-empty name"):
        Step("  ", agent, "p")
    with pytest.raises(ValueError, match="unique"):
        Workflow([Step("x", agent, "p"), Step("x", agent, "q")])


def test_a_fatal_api_error_is_not_retried(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    from flower.runtime.engine import Runtime

    agent = AgentSpec(name="a", instructions="x", max_turns=2)
    fake.set_script([unauthorized(), text("never sent")])
    rt = Runtime(workspace=".", run_dir="runs")
    try:
        wf = Workflow([Step("一", agent, "go")], retries=2)
        ctx = asyncio.run(wf.run(rt))
    finally:
        rt.close()
    assert ctx["_ok"] is False and ctx["_failed"] == "一"
    assert [r["step"] for r in read_manifest("runs")] == ["一"]  # no 一#retry1
    assert len(fake.requests) == 1


def test_failed_step_is_retried_then_stops_the_workflow(
    in_tmp: Path, fake: FakeMessagesAPI
) -> None:
    from flower.runtime.engine import Runtime

    agent = AgentSpec(name="a", instructions="x", max_turns=2)
    # resilience gives up at once on the 500 (one attempt), so the step fails and is re-run
    settings = Settings(resilience=ResilienceConfig(max_attempts=1))
    fake.set_script([server_error(), text("好了"), text("第二步")])
    rt = Runtime(workspace=".", run_dir="runs", settings=settings)
    try:
        wf = Workflow([Step("一", agent, "go"), Step("二", agent, "go")], retries=1)
        ctx = asyncio.run(wf.run(rt))
    finally:
        rt.close()
    assert [r["step"] for r in read_manifest("runs")] == ["一", "一#retry1", "二"]
    assert ctx["_ok"] and ctx["一"] == "好了"

    fake.set_script([api_error(400, "bad request")])
    rt = Runtime(workspace=".", run_dir="runs")
    try:
        ctx = asyncio.run(
            Workflow([Step("一", agent, "go"), Step("二", agent, "go")], continuous=False).run(rt)
        )
    finally:
        rt.close()
    assert ctx["_ok"] is False and ctx["_failed"] == "一" and "二" not in ctx


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: AgentSpec("a", "x", allowed_tools="Read"), "allowed_tools is a list"),
        (lambda: AgentSpec("a", "x", max_turns=0), "max_turns must be a whole number >= 1"),
        (lambda: AgentSpec("", "x"), "an agent needs a non-empty name"),
        (lambda: Step("_sessions", AgentSpec("a", "x"), "hi"), "the context's own keys"),
        (lambda: Step("s", None, "hi"), "agent must be an AgentSpec"),  # type: ignore[arg-type]
        (lambda: Workflow(Step("s", AgentSpec("a", "x"), "hi")), "a list of Steps"),  # type: ignore[arg-type]
        (lambda: Workflow([], retries="2"), "retries must be a whole number"),  # type: ignore[arg-type]
    ],
)
def test_misuse_is_a_clear_error_at_construction(make: Any, says: str) -> None:
    with pytest.raises((TypeError, ValueError), match=says):
        make()


@pytest.mark.usefixtures("english")  # the refusal is read in English
def test_an_empty_prompt_is_refused_before_a_session_exists(in_tmp: Path) -> None:
    import asyncio

    from flower.runtime.engine import InvalidRunOptionError, Runtime

    rt = Runtime(".", "runs")
    try:
        for prompt in ("", "   ", None, 42):
            with pytest.raises(InvalidRunOptionError, match="the prompt must be non-empty text"):
                asyncio.run(rt.run(AgentSpec("a", "x"), prompt))  # type: ignore[arg-type]
    finally:
        rt.close()
    assert not (in_tmp / "runs" / "sessions.db").exists()


def test_a_step_kept_by_through_is_not_run_again(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    """``Workflow.run(through=...)``: each step's outcome goes through the caller (the
    fleet keeps it as a DBOS step); a later run given those outcomes replays the steps
    that finished into the context and runs only the rest."""
    from flower.runtime.engine import Runtime

    agent = AgentSpec(name="a", instructions="x", max_turns=2)
    kept: dict[str, dict[str, Any]] = {}

    async def keeping(name: str, live: Any) -> dict[str, Any]:
        if name in kept:
            return kept[name]
        outcome: dict[str, Any] = await live()
        if name == "一":  # the run is cut off after the first step
            kept[name] = outcome
        return outcome

    def wake() -> Any:
        rt = Runtime(workspace=".", run_dir="runs")
        try:
            steps = [Step("一", agent, "one", resume_prompt="again"), Step("二", agent, "two")]
            return asyncio.run(Workflow(steps).run(rt, through=keeping))
        finally:
            rt.close()

    fake.set_script([text("第一步"), text("第二步")])
    first = wake()
    assert first["_ok"] and first["一"] == "第一步" and first["二"] == "第二步"
    fake.set_script([text("第二步又来")])
    again = wake()
    assert len(fake.requests) == 3  # the second run sent the second step only
    assert again["_ok"] and again["一"] == "第一步" and again["二"] == "第二步又来"
    assert again.sessions["一"] == first.sessions["一"]
    assert [r.step for r in again.results] == ["一", "二"]
