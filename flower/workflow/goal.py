"""The goal gate: a judge checks the frozen goals after a step and may send it back.

The judge is NOT a Step. It comes straight from ``runtime.run`` inside the gate, with
no ``on_session`` hook and never a ``resume``: a fresh pair of eyes every round and
every wake, that does not know how hard the worker tried and so makes no excuses.
It reads only the frozen goals file and the workspace. Unmet goals send the step back
to work as ``<step>#round<N>`` with the judge's findings, up to ``rounds`` work rounds
per wake (a new wake is a new intention: the count starts again).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flower.core.i18n import _
from flower.core.labels import judge_label, round_label
from flower.runtime.spec import AgentSpec, StepResult
from flower.workflow.base import Step, StepRun, one_turn, replace_step
from flower.workflow.documents import documents, read_goals
from flower.workflow.prompts import JUDGE_INSTRUCTIONS, JUDGE_PROMPT, SEND_BACK
from flower.workflow.state import WakeVerdict
from flower.workflow.verdict import Verdict, manifest_fields, parse_verdict, record_verdict


def judge_agent() -> AgentSpec:
    """The judge, its instructions in the language of this wake."""
    return AgentSpec(
        name="judge",
        instructions=_(JUDGE_INSTRUCTIONS),
        allowed_tools=["Read", "Glob", "Grep", "Bash"],
        max_turns=30,
    )


def with_goal(
    step: Step,
    *,
    goals_file: str | None = None,
    judge: AgentSpec | None = None,
    rounds: int | None = None,
) -> Step:
    """``step`` followed by the judge gate (see the module docstring).

    ``goals_file`` (a name in the workspace) defaults to what
    :func:`~flower.workflow.documents.documents` finds, the goals file every reader uses.
    ``rounds`` defaults to ``[tool.flower.workflow] rounds``. Without a goals file,
    or with one that lists no goal, there is nothing to judge and the gate is open.
    ``ctx.verdicts[step]`` holds the last :class:`Verdict`; ``ctx.goal_met``
    is True, False, or None when the judge itself failed.
    """
    if rounds is not None and rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    inner = step.body or one_turn
    judge = judge or judge_agent()

    async def gated(run: StepRun) -> StepResult:
        workspace = Path(run.ctx.workspace)
        path = workspace / goals_file if goals_file else documents(workspace, run.settings).goals
        limit = rounds or int(getattr(getattr(run.settings, "workflow", None), "rounds", 3))
        result = await inner(run)
        for n in range(1, limit + 1):
            if not result.ok:
                return result
            goals = read_goals(path)
            if not goals:
                return result
            verdicts: list[Verdict] = []
            verdict_run = await run.judge(
                judge,
                _judge_prompt(path, goals),
                label=judge_label(run.name, n),
                noted=_noting(goals, verdicts),
            )
            if not verdict_run.ok or not verdicts:
                _set(run, step.name, None, None)
                _keep(run, step.name, len(goals), None)
                return result
            verdict = verdicts[-1]
            _set(run, step.name, verdict, verdict.all_met)
            _keep(run, step.name, len(goals), sum(1 for met in verdict.met if met))
            if verdict.all_met or n == limit:
                return result
            result = await run.turn(
                _(SEND_BACK).format(findings=verdict.findings()),
                label=round_label(run.name, n + 1),
            )
        return result

    return replace_step(step, body=gated)


def _noting(
    goals: list[str], verdicts: list[Verdict]
) -> Callable[[StepResult], dict[str, Any] | None]:
    """What a judge run's manifest row adds: its verdict (kept in ``verdicts`` too)."""

    def noted(judged: StepResult) -> dict[str, Any] | None:
        if not judged.ok:
            return None
        verdicts.append(parse_verdict(judged.text, goals))
        return manifest_fields(verdicts[-1])

    return noted


def _judge_prompt(path: Path, goals: list[str]) -> str:
    listed = "\n".join(f"{i}. {g}" for i, g in enumerate(goals, 1))
    return _(JUDGE_PROMPT).format(goals_file=path.name, goals=listed)


def _keep(run: StepRun, name: str, goals: int, met: int | None) -> None:
    """The verdict in lineage, for ``flower status`` (``met`` None: no verdict)."""
    record_verdict(run.lineage, WakeVerdict(step=name, goals=goals, met=met, woke=run.ctx.woke))


def _set(run: StepRun, name: str, verdict: Verdict | None, met: bool | None) -> None:
    run.ctx.verdicts[name] = verdict
    run.ctx.goal_met = met


__all__ = ["Verdict", "judge_agent", "parse_verdict", "with_goal"]
