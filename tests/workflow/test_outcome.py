"""How a run of the built-in workflow ends, from Python: flower.workflow.outcome."""

from __future__ import annotations

from flower.runtime.spec import StepResult
from flower.workflow.context import WorkflowContext
from flower.workflow.outcome import (
    GOALS_NOT_MET_EXIT,
    closing_session,
    goals_tally,
    run_code,
    unjudged,
)
from flower.workflow.verdict import Verdict


def test_all_goals_met_exits_0_and_names_the_work_session() -> None:
    ctx = WorkflowContext(workspace="/w", sessions={"clarify": "s1", "work": "s2"})
    ctx.verdicts = {"work": Verdict(["a", "b"], [True, True])}
    ctx.goal_met = True
    assert run_code(ctx) == 0
    assert goals_tally(ctx) == (2, 2)
    assert closing_session(ctx, "work") == "s2"


def test_goals_not_met_or_not_judged_exit_4() -> None:
    ctx = WorkflowContext(workspace="/w", goal_met=False)
    ctx.verdicts = {"work": Verdict(["a", "b", "c"], [True, False, False])}
    assert run_code(ctx) == GOALS_NOT_MET_EXIT == 4
    assert goals_tally(ctx) == (1, 3)
    silent = WorkflowContext(workspace="/w", verdicts={"work": None})
    assert unjudged(silent) and run_code(silent) == 4 and goals_tally(silent) is None


def test_a_failed_step_exits_1_and_names_its_last_session() -> None:
    tried = [
        StepResult(step="work", session_id="w1", ok=True),
        StepResult(step="work·判定#1", session_id="j1"),
        StepResult(step="work#retry1", session_id="w2"),
    ]
    ctx = WorkflowContext(workspace="/w", ok=False, failed="work", results=tried)
    assert run_code(ctx) == 1
    assert closing_session(ctx, "work") == "w2"
    before_any = WorkflowContext(workspace="/w", ok=False, failed="goals", sessions={"work": "w"})
    assert closing_session(before_any, "work") is None


def test_goals_said_and_the_json_a_script_reads() -> None:
    from flower.core.i18n import language
    from flower.workflow.outcome import goals_said, outcome_json

    ctx = WorkflowContext(workspace="/w", goal_met=False, sessions={"work": "w1"})
    ctx.verdicts = {"work": Verdict(["a", "b", "c"], [True, False, False])}
    ctx.results = [StepResult(step="work", session_id="w1", ok=True)]
    with language("en"):
        assert goals_said(ctx) == "   1 of 3 goals met: `flower` here goes on with the rest"
        silent = WorkflowContext(workspace="/w", verdicts={"work": None})
        assert goals_said(silent) == "   the judge gave no verdict: `flower` here goes on"
    assert goals_said(WorkflowContext(workspace="/w", goal_met=True)) is None
    shown = outcome_json(ctx)
    assert {k: shown[k] for k in ("ok", "woke", "goal_met", "sessions")} == {
        "ok": True,
        "woke": 1,
        "goal_met": False,
        "sessions": {"work": "w1"},
    }
    assert [row["session_id"] for row in shown["results"]] == ["w1"]
