"""Running a wake of the built-in workflow, written once for ``flower`` and the fleet.

:func:`run_builtin_wake` is the one sequence: plan the wake
(:func:`flower.workflow.wake.begin`), name its steps as lineage does, build the live
runtime on the plan's session store, build and run the built-in workflow, then say how
it ended (the failure, the closing summary). ``flower`` (cli/run.py) and a fleet task
(:mod:`flower.fleet.wake`) call it and pass what differs: who is asked (a terminal, or
no one: :class:`LogWake`, :class:`LogGoals`), the budget's call gate and API client,
how the workflow's coroutine is driven, and ``through`` (the fleet keeps each step as a
DBOS step). ``flower once`` (one agent, no workflow) is :func:`run_once`, on the same
runtime. See docs/api.md.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.core.i18n import _

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from flower.core.config import Settings
    from flower.core.lineage import FreshStart
    from flower.core.protocols import CallGate, SessionStoreBase
    from flower.core.rewind import RewindPlan
    from flower.runtime.live import LiveRuntime
    from flower.runtime.spec import StepResult
    from flower.workflow.banner import BannerLine, Tone
    from flower.workflow.base import StepThrough
    from flower.workflow.clarify import Ask, GoalsFallback, GoalsOffer, RequestAsBrief
    from flower.workflow.context import WorkflowContext
    from flower.workflow.live import Live
    from flower.workflow.state import WakeState
    from flower.workflow.wake import WakeChoice


TONE_STYLE: dict[Tone, str] = {
    "banner": "bold green",
    "note": "dim",
    "warning": "yellow",
    "done": "green",
}
"""How the live output draws each :data:`~flower.workflow.banner.Tone` (rich styles)."""


def say(live: Live, line: BannerLine) -> None:
    """One line of the banner and its kin, in its tone's style."""
    live.line(line.text, TONE_STYLE[line.tone])


class LogWake:
    """The :class:`~flower.workflow.wake.WakeIO` of a wake with no one to ask (a fleet
    task): every line goes to ``live``; a prompt finds no one (the user left).
    ``flower``'s terminal (cli/run.py) asks instead."""

    def __init__(
        self, settings: Settings, workspace: Path, live: Live, preflight: Callable[[], None]
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.live = live
        self._preflight = preflight

    def preflight(self) -> None:
        self._preflight()

    def ask_new_task(self) -> str | None:
        return None

    def ask_wake(self) -> WakeChoice:
        from flower.workflow.wake import WakeChoice

        return WakeChoice("leave")

    def rewind_finished(self, plan: RewindPlan) -> None:
        from flower.workflow.rewind import finished_said

        self.live.line(finished_said(plan))

    def banner(self, state: WakeState | None) -> None:
        from flower.workflow.banner import wake_banner_lines

        banner = wake_banner_lines(state, self.workspace, self.settings)
        self.live.woke = banner.woke
        for line in banner.lines:
            say(self.live, line)

    def fresh_start(self, fresh: FreshStart) -> None:
        from flower.workflow.banner import fresh_start_said

        say(self.live, fresh_start_said(fresh, self.workspace, self.settings))

    def passed_on(self, words: list[str]) -> None:
        from flower.workflow.banner import passed_on_said

        say(self.live, passed_on_said(words))

    def archived(self, into: Path) -> None:
        from flower.workflow.banner import archived_said

        say(self.live, archived_said(into, self.workspace))


class LogGoals:
    """The goals step's :class:`~flower.workflow.clarify.GoalsFallback` with no one to
    ask: the goals offered are used and one line on ``live`` says so."""

    def __init__(self, live: Live) -> None:
        self.live = live

    def choose(self, offer: GoalsOffer) -> list[str] | None:
        return self.chosen(offer, [])

    def chosen(self, offer: GoalsOffer, typed: list[str]) -> list[str]:
        """``typed`` (the goals a user typed), else the offer's; one line says which."""
        from flower.workflow.banner import goals_fallback_line

        goals = typed or offer.goals
        line = goals_fallback_line(offer.goals_file, len(goals), offer.kept, bool(typed))
        self.live.line(line, "green")
        return goals

    def edited(self, goals_file: str, count: int) -> None:
        from flower.workflow.banner import goals_edited_line

        self.live.line(goals_edited_line(goals_file, count), "green")


def log_request_as_brief(live: Live, settings: Settings, workspace: Path) -> Callable[[str], bool]:
    """The clarify step's ``request_as_brief`` with no one to ask: the request becomes
    the brief and one line says so."""

    def decide(request: str) -> bool:
        from flower.workflow.banner import brief_from_request_line
        from flower.workflow.documents import documents

        live.line(brief_from_request_line(documents(workspace, settings).brief.name), "green")
        return True

    return decide


@dataclass
class WakeAnswers:
    """Who answers the built-in workflow's questions this wake (None: no one is asked;
    see :func:`~flower.workflow.builtin.builtin_workflow`)."""

    ask: Ask | None = None
    request_as_brief: RequestAsBrief | None = None
    goals_fallback: GoalsFallback | None = None


Drive = Callable[[Coroutine[Any, Any, "WorkflowContext"]], "WorkflowContext"]
"""Runs the workflow's coroutine to its end (``flower``: stoppable with Ctrl-C; a fleet
task: on its wake's event loop)."""


@dataclass
class WakeRun:
    """How a wake ran: its workflow's context and the settings it ran with (the step
    names lineage uses)."""

    ctx: WorkflowContext
    settings: Settings


def live_runtime(
    live: Live,
    settings: Settings,
    workspace: Path,
    *,
    trim: bool = True,
    gate: CallGate | None = None,
    store: SessionStoreBase | None = None,
    client: AsyncAnthropic | None = None,
) -> LiveRuntime:
    """The runtime a wake (and ``flower once``) runs on: agents in ``workspace`` with
    ``settings`` and their run directory, watched by ``live``. ``gate`` is the shared
    budget, ``store`` a session store the caller opened (default: the configured one,
    opened when first used), ``client`` one API client (default: one per run)."""
    from flower.runtime.live import LiveRuntime

    return LiveRuntime(
        live,
        workspace=str(workspace),
        run_dir=settings.run_dir,
        trim=trim,
        settings=settings,
        store=store,
        client=client,
        gate=gate,
    )


def run_once(
    settings: Settings,
    said: str,
    *,
    live: Live,
    drive: Callable[[Coroutine[Any, Any, StepResult]], StepResult],
    resume: str | None = None,
    project: str | None = None,
    trim: bool = True,
    gate: CallGate | None = None,
) -> StepResult:
    """``flower once``: one worker agent told ``said`` in the working directory, no
    workflow, no lineage, watched by ``live``; with ``resume`` it carries on that session
    (a unique prefix of its id will do; ``project``: the project holding it). ``drive``
    runs the coroutine. Says the summary, and how to carry on by hand."""
    from flower.core.config import store_name
    from flower.core.keys import project_key
    from flower.core.redact import redact_text
    from flower.stores.lookup import resume_key
    from flower.workflow.builtin import worker_agent
    from flower.workflow.outcome import transcript_hint

    started = time.monotonic()
    rt = live_runtime(live, settings, Path("."), trim=trim, gate=gate)
    try:
        if resume is not None:
            where = redact_text(store_name(settings))
            key = resume_key(rt.store, resume, where, project, rt.workspace)
            rt.project_key, resume = key.project_key, key.session_id
        result = drive(rt.run(worker_agent(), said, resume, step="once"))
    finally:
        rt.close()
    hint = transcript_hint(settings, result.session_id)
    live.summary([result], time.monotonic() - started, hint)
    if result.session_id:
        elsewhere = rt.project_key != project_key(rt.workspace)
        also = f" --project {rt.project_key}" if elsewhere else ""
        by_hand = _('   carry on by hand: flower once --resume {session}{project} "..."')
        live.line(by_hand.format(session=result.session_id, project=also), "dim")
    return result


def run_builtin_wake(
    settings: Settings,
    workspace: Path,
    said: str | None,
    *,
    live: Live,
    io: LogWake,
    held: contextlib.ExitStack,
    answers: Callable[[Settings], WakeAnswers],
    drive: Drive,
    hint: Callable[[Settings, WorkflowContext], str],
    new: bool = False,
    interactive: bool = False,
    token: str | None = None,
    trim: bool = True,
    rounds: int | None = None,
    gate: CallGate | None = None,
    client: Callable[[Settings], contextlib.AbstractContextManager[AsyncAnthropic]] | None = None,
    through: StepThrough | None = None,
) -> WakeRun | None:
    """One wake of the built-in workflow in ``workspace``, ``said`` its words: plan it
    (:func:`~flower.workflow.wake.begin`, its lock held in ``held``; None when the user
    left at a prompt), name its steps as lineage does, run the workflow on a live
    runtime watched by ``live``, then print the failure and the summary (``hint``:
    where its transcript is).

    What differs between callers: ``io`` (the prompts and the banner), ``answers``
    (built once the step names are known), ``drive`` (how the coroutine runs),
    ``gate`` and ``client`` (the budget, one API client a wake: called with the
    settings, entered in ``held``), ``through`` (:meth:`Workflow.run`'s)."""
    from flower.workflow import wake
    from flower.workflow.builtin import builtin_workflow
    from flower.workflow.documents import workflow_names

    start = wake.begin(
        settings, workspace, said, new=new, interactive=interactive, io=io, held=held, token=token
    )
    if start is None:
        return None
    # the step keys this wake uses: lineage's (in whichever language), else its own
    settings = wake.with_step_names(settings, start.plan.lineage.steps)
    live.work_step = workflow_names(settings).work_step
    asked = answers(settings)
    started = time.monotonic()
    rt = live_runtime(
        live,
        settings,
        workspace,
        trim=trim,
        store=start.plan.store,  # the one the plan opened
        client=None if client is None else held.enter_context(client(settings)),
        gate=gate,
    )
    try:
        workflow = builtin_workflow(
            start.said,
            settings=rt.settings,
            ask=asked.ask,
            rounds=rounds,
            journal=start.journal,
            request_as_brief=asked.request_as_brief,
            goals_fallback=asked.goals_fallback,
        )
        ctx = drive(workflow.run(rt, plan=start.plan, through=through))
    finally:
        rt.close()
    failed = [r for r in ctx.results if not r.ok and r.step == ctx.failed]
    if failed:
        live.failure(failed[-1])
    live.summary(ctx.results, time.monotonic() - started, hint(settings, ctx))
    return WakeRun(ctx, settings)
