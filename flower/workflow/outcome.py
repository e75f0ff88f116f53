"""How a run of the built-in workflow ends: its exit code and the session it names.

``flower "..."`` exits 1 when a step failed, :data:`GOALS_NOT_MET_EXIT` when every step
ran but the judge's last verdict left goals unmet or gave none (:func:`unjudged`), else
0 (:func:`run_code`); the fleet records the same code for a task's wake. Its closing
``flower sessions show`` line names :func:`closing_session`, and a run whose goals are
not met says :func:`goals_tally` of them were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flower.workflow.context import WorkflowContext

GOALS_NOT_MET_EXIT = 4
"""``flower "..."`` exit code: every step ran, but the judge's last round found goals
not met, or gave no verdict (0: all met; 1: a step failed; ``flower`` here goes on)."""


def run_code(ctx: WorkflowContext) -> int:
    """How a run of the built-in workflow exits: 1 when a step failed, else
    :data:`GOALS_NOT_MET_EXIT` when the judge's last verdict left goals unmet (or its
    last round failed and gave none), else 0."""
    if not ctx.ok:
        return 1
    return GOALS_NOT_MET_EXIT if ctx.goal_met is False or unjudged(ctx) else 0


def unjudged(ctx: WorkflowContext) -> bool:
    """The judge's last round failed: the goals are not known to be met."""
    return ctx.goal_met is None and any(v is None for v in ctx.verdicts.values())


def closing_session(ctx: WorkflowContext, work_step: str) -> str | None:
    """The session a run's closing lines name: the failed step's (None when it failed
    before it had one), else the work step's, else the last step's."""
    if ctx.failed is not None:
        from flower.core.labels import parse_label

        tried = [
            r.session_id
            for r in ctx.results
            if parse_label(r.step).step == ctx.failed and not parse_label(r.step).judge
        ]
        return ctx.sessions.get(ctx.failed) or next(filter(None, reversed(tried)), None)
    return ctx.sessions.get(work_step) or next(reversed(ctx.sessions.values()), None)


def goals_tally(ctx: WorkflowContext) -> tuple[int, int] | None:
    """``(met, total)`` goals of the judge's last verdict; None when it gave none."""
    verdict = next((v for v in reversed(ctx.verdicts.values()) if v is not None), None)
    if verdict is None:
        return None
    return sum(1 for m in verdict.met if m), len(verdict.goals)


__all__ = ["GOALS_NOT_MET_EXIT", "closing_session", "goals_tally", "run_code", "unjudged"]
