"""The built-in workflow the ``flower`` command runs: confirm the brief, set the goals,
then work under the goal judge (trim and relay come from the Runtime and settings).

What the user says on a wake lands in three places (seed: if one is missing it fails
silently): it goes to the working step as its next message, it is appended to the
brief, and the goals file is re-derived so the judge checks what was added. Waking
with nothing to say adds nothing and re-derives nothing: it costs nothing extra.

How, and what a wake cut short leaves to the next one, is :mod:`flower.workflow.said`
and :class:`~flower.workflow.wake_words.WakeWords`: this module assembles the steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.i18n import _
from flower.runtime.spec import AgentSpec
from flower.stores.lineage import load_lineage
from flower.workflow.base import Context, Step, Workflow, one_turn, replace_step
from flower.workflow.clarify import Ask, GoalsFallback, RequestAsBrief, clarify_step, goals_step
from flower.workflow.documents import documents, workflow_names
from flower.workflow.goal import judge_agent, with_goal
from flower.workflow.prompts import WORK_PROMPT, WORK_RESUME, WORK_SAID, WORKER_INSTRUCTIONS
from flower.workflow.said import ClarifyMemo, SaidJournal, WakeMemo
from flower.workflow.wake import with_step_names
from flower.workflow.wake_words import WakeWords

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.lineage import Lineage


def worker_agent() -> AgentSpec:
    """The worker, its instructions in the language of this wake."""
    return AgentSpec(
        name="worker",
        instructions=_(WORKER_INSTRUCTIONS),
        allowed_tools=["Read", "Write", "Edit", "Glob", "Grep", "Bash"],
        max_turns=200,
    )


def _step_names_on_disk(settings: Settings | None) -> tuple[Settings | None, Lineage | None]:
    """``settings`` with every unset step name fixed from the lineage on disk, and that
    lineage (None: not read, the names were set), which the wake then plans with."""
    if settings is None:
        return None, None
    conf = settings.workflow
    if conf.clarify_step and conf.goals_step and conf.work_step:
        return settings, None
    lineage = load_lineage(".", settings=settings)
    return with_step_names(settings, lineage.steps), lineage


def builtin_workflow(
    said: str | None = None,
    *,
    settings: Settings | None = None,
    ask: Ask | None = None,
    rounds: int | None = None,
    worker: AgentSpec | None = None,
    judge: AgentSpec | None = None,
    continuous: bool = True,
    retries: int = 1,
    journal: SaidJournal | None = None,
    request_as_brief: RequestAsBrief | None = None,
    goals_fallback: GoalsFallback | None = None,
) -> Workflow:
    """The workflow behind ``flower "..."``.

    ``said`` is what the user typed this time: on a fresh directory, the request; on
    a wake, the next sentence of the conversation (``None`` or blank: just continue).
    ``ask`` lets the clarifier put questions to the user. ``rounds`` (work rounds per
    wake) defaults to ``[tool.flower.workflow] rounds``. ``journal`` is where the
    caller kept ``said`` before anything could cut the run short: its words (a killed
    run's first) are recorded in lineage on start, then it is emptied.
    ``request_as_brief``: see :func:`~flower.workflow.clarify.clarify_step`;
    ``goals_fallback``: see :func:`~flower.workflow.clarify.goals_step` (it is also
    told when a goals file the user edited after what they said is used as it is).

    Step names the settings leave unset are the keys the lineage of the current
    directory holds, in whichever language, else this wake's language's (see
    :func:`~flower.workflow.documents.workflow_names`; the CLI fixes them per wake).
    The lineage read for them is the one the workflow's next run plans with: a wake
    reads lineage once.
    """
    settings, lineage = _step_names_on_disk(settings)
    names = workflow_names(settings)
    said = (said or "").strip() or None

    words = WakeWords(
        said, journal=journal, settings=settings, names=names, goals_fallback=goals_fallback
    )
    clarify = clarify_step(said, ask=ask, settings=settings, request_as_brief=request_as_brief)
    assert clarify.body is not None
    clarify_body = WakeWords.hearing(lambda ctx: ctx.clarify_memo, clarify.body)
    # words a cut-short wake stored but never got a reply to are not said twice: the
    # runtime sends a prompt that already waits in the session as it is
    work_body = WakeWords.hearing(lambda ctx: ctx.wake_memo, one_turn)

    def work_prompt(ctx: Context) -> str:
        files = documents(ctx.workspace, settings)
        return _(WORK_PROMPT).format(brief_file=files.brief.name, goals_file=files.goals.name)

    def work_resume(ctx: Context) -> str:
        if ctx.said:
            files = documents(ctx.workspace, settings)
            return _(WORK_SAID).format(
                said=ctx.said, brief_file=files.brief.name, goals_file=files.goals.name
            )
        return _(WORK_RESUME)

    work = Step(
        names.work_step,
        worker or worker_agent(),
        work_prompt,
        resume_prompt=work_resume,
        body=work_body,
    )
    return Workflow(
        [
            replace_step(clarify, body=clarify_body, after=words.clarify_after),
            replace_step(
                goals_step(settings=settings, fallback=goals_fallback), after=words.goals_after
            ),
            with_goal(work, judge=judge or judge_agent(), rounds=rounds),
        ],
        continuous=continuous,
        retries=retries,
        on_start=words.on_start,
        lineage=lineage,  # read once: the wake plans with it
    )


__all__ = ["ClarifyMemo", "WakeMemo", "builtin_workflow", "worker_agent"]
