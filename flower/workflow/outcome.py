"""How a run of the built-in workflow ends: its exit code and the session it names.

``flower "..."`` exits 1 when a step failed, :data:`GOALS_NOT_MET_EXIT` when every step
ran but the judge's last verdict left goals unmet or gave none (:func:`unjudged`), else
0 (:func:`run_code`); the fleet records the same code for a task's wake. Its closing
``flower sessions show`` line (:func:`transcript_hint`) names :func:`closing_session`, a
run whose goals are not met says so (:func:`goals_said`, from :func:`goals_tally`), and
``--json`` prints :func:`outcome_json`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flower.core.i18n import _, ngettext

if TYPE_CHECKING:
    from flower.core.config import Settings
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


def transcript_hint(settings: Settings, session_id: str | None) -> str:
    """Where a run's transcript is, as its closing summary says it: the session store
    (redacted) and, given ``session_id``, the command that shows it."""
    from flower.core.config import store_name
    from flower.core.redact import redact_text

    where = redact_text(store_name(settings))
    return f"{where} · flower sessions show {session_id}" if session_id else where


def goals_tally(ctx: WorkflowContext) -> tuple[int, int] | None:
    """``(met, total)`` goals of the judge's last verdict; None when it gave none."""
    verdict = next((v for v in reversed(ctx.verdicts.values()) if v is not None), None)
    if verdict is None:
        return None
    return sum(1 for m in verdict.met if m), len(verdict.goals)


def goals_said(ctx: WorkflowContext) -> str | None:
    """A run's last line when its judge left goals unmet (how many were met) or gave no
    verdict; None when every goal was met or a step failed."""
    if ctx.goal_met is False:
        tally = goals_tally(ctx)
        if tally is None:
            return _("   the judge found goals not met yet: `flower` here goes on")
        met, total = tally
        return ngettext(
            "   {met} of {total} goal met: `flower` here goes on with the rest",
            "   {met} of {total} goals met: `flower` here goes on with the rest",
            total,
        ).format(met=met, total=total)
    if ctx.ok and unjudged(ctx):
        return _("   the judge gave no verdict: `flower` here goes on")
    return None


def outcome_json(ctx: WorkflowContext) -> dict[str, Any]:
    """What ``flower "..." --json`` prints: ``ok``, ``woke``, ``goal_met``, ``sessions``
    and ``results`` (each StepResult's manifest row)."""
    from flower.core.manifest import result_line

    return {
        "ok": ctx.ok,
        "woke": ctx.woke,
        "goal_met": ctx.goal_met,
        "sessions": ctx.sessions,
        "results": [result_line(r) for r in ctx.results],
    }


__all__ = [
    "GOALS_NOT_MET_EXIT",
    "closing_session",
    "goals_said",
    "goals_tally",
    "outcome_json",
    "run_code",
    "transcript_hint",
    "unjudged",
]
