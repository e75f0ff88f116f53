"""What a wake of the built-in workflow does with the words said on it.

The words themselves, where they are kept until each has landed (said.json, then
lineage's :class:`~flower.workflow.said.SaidRecord`) and what is left unheard, are
:mod:`flower.workflow.said`; this module lands them during a wake: :class:`WakeWords`
records them in lineage on start, puts them into the request, the brief and the memo
of the step that has not heard them yet, and wraps a step's body so its session is
told (:meth:`WakeWords.hearing`). It builds on the steps (:mod:`flower.workflow.base`,
:mod:`flower.workflow.clarify`), which is why it is not part of ``said``: the
workflow's context and the plan of a wake sit below the steps and read ``said``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from flower.core.lineage import Lineage
from flower.workflow.documents import (
    WorkflowNames,
    append_to_brief,
    brief_is_complete,
    documents,
    read_goals,
    read_text,
)
from flower.workflow.said import (
    ClarifyMemo,
    Memo,
    Said,
    SaidJournal,
    SaidRecord,
    SaidWords,
    WakeMemo,
)

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.runtime.spec import StepResult
    from flower.workflow.base import StepRun
    from flower.workflow.clarify import GoalsFallback
    from flower.workflow.context import WorkflowContext


class WakeWords:
    """What one wake of the built-in workflow does with the words: ``said`` (typed this
    time; None: just carry on) and the ``journal``'s (a killed run's first).

    :meth:`on_start` records them in lineage, then empties the journal; before the
    brief exists they are the request (:attr:`WorkflowContext.request`) or go to the
    clarifier (:class:`ClarifyMemo`); after, they are appended to the brief, kept for the
    working step (:class:`WakeMemo`) and leave the goals to derive again. :meth:`hearing`
    wraps a step so its session is told what it has not heard yet."""

    def __init__(
        self,
        said: str | None,
        *,
        journal: SaidJournal | None,
        settings: Settings | None,
        names: WorkflowNames,
        goals_fallback: GoalsFallback | None = None,
    ) -> None:
        self.said = (said or "").strip() or None
        self.journal = journal
        self.settings = settings
        self.names = names
        self.goals_fallback = goals_fallback

    def now(self, lineage: Lineage | None, record: SaidRecord) -> tuple[list[str], list[Said]]:
        """What was said: the journal's words lineage lacks (a killed run's, then this
        run's), or just ``said``; and the journal entries among them."""
        said = self.said
        if self.journal is None or lineage is None:
            return ([said] if said else []), []
        words = self.journal.unrecorded(record, lineage.workspace)
        texts = [w.text for w in words if w.text.strip()]
        if said and said not in texts:
            texts.append(said)
        return texts, words

    def on_start(self, ctx: WorkflowContext) -> None:
        lineage = ctx.lineage
        words = SaidWords(lineage)
        texts, journal_words = self.now(lineage, words.record)
        self._record(ctx, words, texts, journal_words)
        # cleared only once lineage surely holds them, tokens included (its writes never
        # raise: a failed one must not take the words with it)
        held = not journal_words or (lineage is not None and lineage.durable and words.save())
        if self.journal is not None and lineage is not None and held:
            self.journal.clear(lineage.workspace)

    def _record(
        self, ctx: WorkflowContext, words: SaidWords, texts: list[str], journal_words: list[Said]
    ) -> None:
        files = documents(ctx.workspace, self.settings)
        ctx.said_words = words
        if not brief_is_complete(files.brief):
            # a first run: what was said is the request, for the clarifier; kept in
            # lineage until the brief is written, so a run cut short before that (even
            # with the clarifier's session there) still has it to fall back on
            if self.names.clarify_step in ctx.known:
                # what is said now is kept until the clarifier's transcript holds it
                clarifier = ctx.clarify_memo = ClarifyMemo(words)
                ctx.request = words.request_with(texts)  # saved with the words
                if texts:
                    words.record.mark_recorded(journal_words)  # saved with the words
                    clarifier.said(*texts)
                ctx.said = "\n\n".join(clarifier.unheard) or None
                return
            request = words.remember_request(texts[-1] if texts else None, journal_words)
            ctx.said = ctx.request = request
            return
        words.forget_request()  # the brief holds it (a run killed before it said so)
        memo = ctx.wake_memo = WakeMemo(words)
        if words.record.goals_edited(files.goals):
            # the user edited the goals after what they said: their answer, used as is
            words.goals_rederived()
            if self.goals_fallback is not None:
                count = len(read_goals(files.goals) or [])
                self.goals_fallback.edited(files.goals.name, count)
        if texts:
            words.record.mark_recorded(journal_words)  # saved with the words
            # in lineage before anything else can be cut short, with how the goals read
            memo.said(*texts, goals=files.goals)
        for text in memo.unheard:  # (a wake cut short may have missed the brief too)
            if text not in (read_text(files.brief) or ""):
                append_to_brief(files.brief, text, time.strftime("%Y-%m-%d %H:%M"))
        ctx.said = "\n\n".join(memo.unheard) or None
        ctx.rederive_goals = memo.goals_stale

    def clarify_after(self, ctx: WorkflowContext, result: StepResult) -> None:
        if ctx.said_words is not None and brief_is_complete(
            documents(ctx.workspace, self.settings).brief
        ):
            ctx.said_words.forget_request()  # the brief holds the request now

    def goals_after(self, ctx: WorkflowContext, result: StepResult) -> None:
        if ctx.wake_memo is not None and result.ok:
            ctx.wake_memo.words.goals_rederived()

    @staticmethod
    def hearing(
        memo_of: Callable[[WorkflowContext], Memo | None],
        body: Callable[[StepRun], Awaitable[StepResult]],
    ) -> Callable[[StepRun], Awaitable[StepResult]]:
        """``body``, first telling its session what a cut-short wake left unheard (the
        memo ``memo_of(ctx)``), which counts as heard once the step's transcript holds it,
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


def _send_unheard(run: StepRun, memo: Memo) -> None:
    """Before ``memo``'s words go to ``run``'s step: drop those a cut-short wake already
    stored in its transcript, and note where the transcript stands now."""
    if not memo.unheard:
        return
    entries = _transcript(run, run.session_id)
    memo.heard(memo.landed(run.session_id, entries))
    run.ctx.said = "\n\n".join(memo.unheard) or None
    if memo.unheard:
        memo.sending(run.session_id, len(entries))


def _transcript(run: StepRun, session_id: str | None) -> list[dict[str, Any]]:
    if session_id is None:
        return []
    try:
        return list(run.runtime.store.load(run.runtime.key(session_id)) or [])
    except Exception:  # an unreadable transcript: nothing is known to have landed
        return []


__all__ = ["WakeWords"]
