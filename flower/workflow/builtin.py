"""The built-in workflow the ``flower`` command runs: confirm the brief, set the goals,
then work under the goal judge (trim and relay come from the Runtime and settings).

What the user says on a wake lands in three places (seed: if one is missing it fails
silently): it goes to the working step as its next message, it is appended to the
brief, and the goals file is re-derived so the judge checks what was added. Waking
with nothing to say adds nothing and re-derives nothing: it costs nothing extra.

A wake cut short on the way (killed while the goals were re-derived, say) must not
lose what was said: until the goals are re-derived and the working step has it,
lineage keeps it (:class:`WakeMemo`), and the next wake finishes the job. It is heard
once the working step's transcript holds it: a wake cut short after that (in the
judge's rounds, or before the reply) does not send it twice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from flower.core.i18n import _
from flower.core.lineage import Lineage
from flower.runtime.spec import AgentSpec, StepResult
from flower.workflow.base import Context, Step, StepRun, Workflow, one_turn, replace_step
from flower.workflow.clarify import Ask, GoalsFallback, RequestAsBrief, clarify_step, goals_step
from flower.workflow.documents import (
    append_to_brief,
    brief_is_complete,
    documents,
    read_goals,
    read_text,
    workflow_names,
)
from flower.workflow.goal import judge_agent, with_goal
from flower.workflow.memo import ClarifyMemo, WakeMemo
from flower.workflow.memo import forget_request as _forget_request
from flower.workflow.memo import remember_request as _remember_request
from flower.workflow.memo import request_with as _request_with
from flower.workflow.prompts import WORK_PROMPT, WORK_RESUME, WORK_SAID, WORKER_INSTRUCTIONS
from flower.workflow.said_journal import Said, SaidJournal, mark_recorded

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.workflow.protocols import StepRuntime


def worker_agent() -> AgentSpec:
    """The worker, its instructions in the language of this wake."""
    return AgentSpec(
        name="worker",
        instructions=_(WORKER_INSTRUCTIONS),
        allowed_tools=["Read", "Write", "Edit", "Glob", "Grep", "Bash"],
        max_turns=200,
    )


def _send_unheard(run: StepRun, memo: WakeMemo) -> None:
    """Before ``memo``'s words go to ``run``'s step: drop those a cut-short wake already
    stored in its transcript, and note where the transcript stands now."""
    if not memo.unheard:
        return
    entries = _transcript(run.runtime, run.session_id)
    memo.heard(memo.landed(run.session_id, entries))
    run.ctx.said = "\n\n".join(memo.unheard) or None
    if memo.unheard:
        memo.sending(run.session_id, len(entries))


def _hearing(
    memo_of: Callable[[Context], WakeMemo | None], body: Callable[[StepRun], Awaitable[StepResult]]
) -> Callable[[StepRun], Awaitable[StepResult]]:
    """``body``, first telling its session what a cut-short wake left unheard (the memo
    ``memo_of(ctx)``), which counts as heard once the step's transcript holds it,
    before a later round (the judge's) can be cut short."""

    async def hearing(run: StepRun) -> StepResult:
        memo = memo_of(run.ctx)
        if memo is not None:
            _send_unheard(run, memo)
        result = await body(run)
        if memo is not None and result.session_id:
            memo.heard()
        return result

    return hearing


def _transcript(runtime: StepRuntime, session_id: str | None) -> list[dict[str, Any]]:
    if session_id is None:
        return []
    try:
        return list(runtime.store.load(runtime.key(session_id)) or [])
    except Exception:  # an unreadable transcript: nothing is known to have landed
        return []


def _step_names_on_disk(settings: Settings | None) -> Settings | None:
    """``settings`` with every unset step name fixed from the lineage on disk."""
    if settings is None:
        return None
    conf = settings.workflow
    if conf.clarify_step and conf.goals_step and conf.work_step:
        return settings
    from flower.stores.lineage import load_lineage
    from flower.workflow.wake import with_step_names

    recorded = load_lineage(".", settings=settings).steps
    return with_step_names(settings, recorded)


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
    """
    settings = _step_names_on_disk(settings)
    names = workflow_names(settings)
    said = (said or "").strip() or None

    def words_now(lineage: Lineage | None) -> tuple[list[str], list[Said]]:
        """What was said: the journal's words lineage lacks (a killed run's, then this
        run's), or just ``said``; and the journal entries among them."""
        if journal is None or lineage is None:
            return ([said] if said else []), []
        words = journal.unrecorded(lineage.record.extra, lineage.workspace)
        texts = [w.text for w in words if w.text.strip()]
        if said and said not in texts:
            texts.append(said)
        return texts, words

    def on_start(ctx: Context) -> None:
        lineage = ctx.lineage
        texts, journal_words = words_now(lineage)
        record(ctx, lineage, texts, journal_words)
        # cleared only once lineage surely holds them, tokens included (its writes never
        # raise: a failed one must not take the words with it)
        held = not journal_words or (lineage is not None and lineage.durable and lineage.save())
        if journal is not None and lineage is not None and held:
            journal.clear(lineage.workspace)

    def record(
        ctx: Context, lineage: Lineage | None, texts: list[str], journal_words: list[Said]
    ) -> None:
        brief = documents(ctx.workspace, settings).brief
        if not brief_is_complete(brief):
            # a first run: what was said is the request, for the clarifier; kept in
            # lineage until the brief is written, so a run cut short before that (even
            # with the clarifier's session there) still has it to fall back on
            if names.clarify_step in ctx.known:
                # what is said now is kept until the clarifier's transcript holds it
                clarify_memo = ctx.clarify_memo = ClarifyMemo(lineage)
                ctx.request = _request_with(lineage, texts)  # saved with the words
                if texts:
                    mark_recorded(clarify_memo.extra, journal_words)  # saved with the words
                    clarify_memo.said(*texts)
                ctx.said = "\n\n".join(clarify_memo.unheard) or None
                return
            request = _remember_request(lineage, texts[-1] if texts else None, journal_words)
            ctx.said = ctx.request = request
            return
        _forget_request(lineage)  # the brief holds it (a run killed before it said so)
        memo = ctx.wake_memo = WakeMemo(lineage)
        goals = documents(ctx.workspace, settings).goals
        if memo.goals_edited(goals):
            # the user edited the goals after what they said: their answer, used as is
            memo.goals_rederived()
            if goals_fallback is not None:
                goals_fallback.edited(goals.name, len(read_goals(goals) or []))
        if texts:
            mark_recorded(memo.extra, journal_words)  # saved with the words
            # in lineage before anything else can be cut short, with how the goals read
            memo.said(*texts, goals=goals)
        for text in memo.unheard:  # (a wake cut short may have missed the brief too)
            if text not in (read_text(brief) or ""):
                append_to_brief(brief, text, time.strftime("%Y-%m-%d %H:%M"))
        ctx.said = "\n\n".join(memo.unheard) or None
        ctx.rederive_goals = memo.goals_stale

    def clarify_after(ctx: Context, result: StepResult) -> None:
        if brief_is_complete(documents(ctx.workspace, settings).brief):
            _forget_request(ctx.lineage)  # the brief holds the request now

    clarify = clarify_step(said, ask=ask, settings=settings, request_as_brief=request_as_brief)
    clarify_inner = clarify.body
    assert clarify_inner is not None

    clarify_body = _hearing(lambda ctx: ctx.clarify_memo, clarify_inner)

    def goals_after(ctx: Context, result: StepResult) -> None:
        memo = ctx.wake_memo
        if memo is not None and result.ok:
            memo.goals_rederived()

    # words a cut-short wake stored but never got a reply to are not said twice: the
    # runtime sends a prompt that already waits in the session as it is
    work_body = _hearing(lambda ctx: ctx.wake_memo, one_turn)

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
            replace_step(clarify, body=clarify_body, after=clarify_after),
            replace_step(goals_step(settings=settings, fallback=goals_fallback), after=goals_after),
            with_goal(work, judge=judge or judge_agent(), rounds=rounds),
        ],
        continuous=continuous,
        retries=retries,
        on_start=on_start,
    )


__all__ = ["WakeMemo", "builtin_workflow", "worker_agent"]
