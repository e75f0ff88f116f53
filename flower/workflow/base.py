"""Steps and workflows that carry on their own conversations across processes.

``Workflow.continuous`` is True by default: ``resume_from=None`` does NOT mean a new
session; each step resumes the session lineage recorded for it, when that session is
still in the store. See docs/continuity.md and docs/workflows.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.i18n import _
from flower.core.labels import retry_label
from flower.core.lineage import Lineage
from flower.core.manifest import Manifest
from flower.core.telemetry import tracing_of
from flower.runtime.spec import STOP_CONTEXT_LIMIT, AgentSpec, StepResult
from flower.workflow.context import WorkflowContext
from flower.workflow.plan import WakePlan, plan_wake, wake_state
from flower.workflow.relay import relay_turn, relay_while_full, threshold

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.workflow.protocols import StepRuntime

log = logging.getLogger(__name__)

Context = WorkflowContext
"""What a workflow run produced (a :class:`~flower.workflow.context.WorkflowContext`):
each step's final text by step name (``ctx["<step>"]``), plus flower's own fields, read
as ``ctx.woke`` or ``ctx["_woke"]``: ``_woke``, ``_sessions`` ({step: session id}),
``_results`` (every StepResult in order), ``_fresh`` (a
:class:`~flower.core.lineage.FreshStart` when lineage was set aside), ``_resumed``
({step: bool}), ``_skipped``, ``_ok`` and ``_failed`` (the step that failed, or None)."""

PromptLike = str | Callable[[Context], str]
StepBody = Callable[["StepRun"], Awaitable[StepResult]]
StepThrough = Callable[[str, Callable[[], Awaitable[dict[str, Any]]]], Awaitable[dict[str, Any]]]
"""How a caller runs each step of a wake: ``through(step name, live)`` awaits ``live()``
(which runs the step, ``skip_if`` and ``after`` included, and returns its
:class:`StepOutcome` as builtins) and returns what it gave; or, for a step the caller
finished in an earlier process, returns the outcome it kept then without calling
``live`` (a durable engine's step: the fleet's DBOS step, see flower/fleet/wake.py).
``live()`` may be awaited again after it raised (the fleet does once the session store
it could not reach is back): the step runs again and resumes the session its cut run
left, from its last stored turn."""


class StepOutcome(msgspec.Struct, kw_only=True):
    """What one step leaves for the rest of a wake: small (no transcript), so a durable
    engine can keep it and a later process can carry on without running the step."""

    ok: bool = True
    skipped: bool = False
    resumed: bool = False
    session_id: str | None = None
    text: str | None = None
    """The step's final text (None when sessions are encrypted: it stays in the
    transcript)."""
    results: list[StepResult] = msgspec.field(default_factory=list)
    goal_met: bool | None = None
    """``ctx.goal_met`` once the step ended."""

    def replay(self, ctx: Context, name: str) -> None:
        """Put what the step left into ``ctx``, as if it had just run."""
        if self.skipped:
            ctx.skipped.append(name)
        else:
            ctx.resumed[name] = self.resumed
        if self.session_id:
            ctx.sessions[name] = self.session_id
        ctx.results.extend(self.results)
        ctx.values[name] = self.text or ""
        ctx.goal_met = self.goal_met


def resume_prompt() -> str:
    """The msgid sent when a failed step is retried in its session: the engine's resume
    prompt after an interruption (imported here, not at the top: it brings asyncio)."""
    from flower.core.resilience import RESUME_PROMPT

    return RESUME_PROMPT


def render(prompt: PromptLike, ctx: Context) -> str:
    return prompt(ctx) if callable(prompt) else prompt


@dataclass
class Step:
    """One step: an agent, what to tell it the first time and what to tell it on resume.

    ``resume_prompt`` is sent instead of ``prompt`` when the step resumes a session
    (the other side already has the brief); ``None`` re-sends ``prompt``.
    ``skip_if(ctx)`` returning True skips the step (frozen steps); it may load what
    the step would have produced into ``ctx``. ``body`` replaces the default "one
    turn" behaviour (the clarify loop, the goal gate); it receives a :class:`StepRun`.
    """

    name: str
    agent: AgentSpec
    prompt: PromptLike
    resume_prompt: PromptLike | None = None
    skip_if: Callable[[Context], bool] | None = None
    body: StepBody | None = None
    after: Callable[[Context, StepResult], StepResult | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a step needs a non-empty name, got {self.name!r}")
        if self.name.startswith("_"):
            raise ValueError(
                f"step name {self.name!r}: names starting with '_' are the context's own "
                "keys (_sessions, _ok, ...)"
            )
        if not isinstance(self.agent, AgentSpec):
            raise TypeError(f"step {self.name!r}: agent must be an AgentSpec, got {self.agent!r}")


class StepRun:
    """One step while it runs: its current session and the way to talk to it.

    Every :meth:`turn` mounts ``runtime.on_session`` around its own ``runtime.run``
    only, so the id lands in lineage the instant it exists; :meth:`judge` runs with
    no hook at all, so a judge's session can never be recorded as the step's.
    """

    def __init__(
        self,
        workflow: Workflow,
        step: Step,
        ctx: Context,
        runtime: StepRuntime,
        lineage: Lineage | None,
        manifest: Manifest | None,
        session_id: str | None,
    ) -> None:
        self.workflow = workflow
        self.step = step
        self.ctx = ctx
        self.runtime = runtime
        self.lineage = lineage
        self.manifest = manifest
        self.session_id = session_id
        self.resumed = session_id is not None
        self.results: list[StepResult] = []

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def settings(self) -> Settings:
        return self.workflow.settings_for(self.runtime)

    @property
    def workspace(self) -> Path:
        return Path(getattr(self.runtime, "workspace", ".") or ".")

    def first_prompt(self) -> str:
        """``resume_prompt`` when resuming a session (falling back to ``prompt``)."""
        if self.session_id and self.step.resume_prompt is not None:
            return render(self.step.resume_prompt, self.ctx)
        return render(self.step.prompt, self.ctx)

    def _on_session(self, sid: str) -> None:
        self.session_id = sid
        self.ctx.sessions[self.name] = sid
        if self.lineage is not None:
            self.lineage.record_session(self.name, sid)

    @property
    def context_limit(self) -> int | None:
        """The relay threshold every run of this step stops short of (None: relay off)."""
        return threshold(self.settings)

    async def raw_turn(
        self,
        prompt: str,
        *,
        resume: str | None,
        label: str,
        relay_from: str | None = None,
        limited: bool = True,
    ) -> StepResult:
        """One ``runtime.run`` of the step's agent, with the lineage hook mounted.

        ``limited`` passes the relay threshold as ``context_limit`` (when relay is on),
        so the run stops between turns before its context would pass it.
        """
        rt = self.runtime
        options: dict[str, Any] = {}
        limit = self.context_limit if limited else None
        if limit is not None:
            options["context_limit"] = limit
        if relay_from is not None:
            options["relay_from"] = relay_from
        previous = getattr(rt, "on_session", None)
        rt.on_session = self._on_session
        try:
            result = await rt.run(self.step.agent, prompt, resume=resume, step=label, **options)
        finally:
            rt.on_session = previous
        if result.session_id:
            self._on_session(result.session_id)
        return result

    async def turn(self, prompt: str, *, label: str | None = None) -> StepResult:
        """Send ``prompt`` to the step's session (relaying whenever it gets too big:
        :func:`~flower.workflow.relay.relay_turn` chooses how), retrying a failed run
        up to ``workflow.retries`` times (``<step>#retry<N>``)."""
        label = label or self.name
        result = await relay_turn(self, prompt, label=label)
        retries = 0
        while (
            not result.ok
            and result.stop != STOP_CONTEXT_LIMIT
            and not _fatal(result)
            and retries < self.workflow.retries
        ):
            retries += 1
            self.record(result)
            again = _(resume_prompt()) if self.session_id else prompt
            retried = retry_label(self.name, retries)
            result = await self.raw_turn(again, resume=self.session_id, label=retried)
            result = await relay_while_full(self, result, prompt, label=retried)
        self.record(result)
        return result

    async def judge(
        self,
        agent: AgentSpec,
        prompt: str,
        *,
        label: str,
        noted: Callable[[StepResult], dict[str, Any] | None] | None = None,
    ) -> StepResult:
        """A fresh session every time: never resumed, never written to lineage.
        ``noted(result)`` gives keys its manifest row adds (the verdict)."""
        rt = self.runtime
        previous = getattr(rt, "on_session", None)
        rt.on_session = None
        try:
            result = await rt.run(agent, prompt, resume=None, step=label)
        finally:
            rt.on_session = previous
        self.record(result, noted(result) if noted is not None else None)
        return result

    def record(self, result: StepResult, extra: dict[str, Any] | None = None) -> None:
        """Keep ``result`` and write it to the manifest (with ``extra``'s keys)."""
        self.results.append(result)
        self.ctx.results.append(result)
        if self.manifest is not None:
            self.manifest.record(result, extra)


async def one_turn(run: StepRun) -> StepResult:
    """The default body: send the step's (resume) prompt once."""
    return await run.turn(run.first_prompt())


class Workflow:
    """Steps run in order; with ``continuous=True`` each resumes its own session.

    ``continuous=False`` starts every step fresh in every process and leaves lineage
    alone. ``retries`` re-runs a failed step up to that many times (``<step>#retry<N>``).
    ``on_start(ctx)`` runs after lineage is loaded and before the first step, and
    before the wake (``ctx.woke``, already set) is written to lineage. ``lineage``: this
    workspace's lineage, read already for the next wake (``builtin_workflow`` reads it
    to name its steps): the next run plans with it instead of reading it again, later
    runs read it afresh.
    """

    def __init__(
        self,
        steps: list[Step],
        continuous: bool = True,
        *,
        retries: int = 0,
        manifest: bool = True,
        on_start: Callable[[Context], Any] | None = None,
        lineage: Lineage | None = None,
    ) -> None:
        if isinstance(steps, Step) or not all(isinstance(s, Step) for s in steps):
            raise TypeError(f"a workflow takes a list of Steps, got {steps!r}")
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise ValueError(f"step names must be unique, got {names}")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"retries must be a whole number >= 0, got {retries!r}")
        self.steps = list(steps)
        self.continuous = continuous
        self.retries = retries
        self.manifest = manifest
        self.on_start = on_start
        self._lineage = lineage

    @staticmethod
    def settings_for(runtime: StepRuntime) -> Settings:
        """The runtime's settings, loaded when it has none (one rule: lineage.settings_for)."""
        from flower.core.lineage import settings_for

        return settings_for(getattr(runtime, "settings", None), None)

    async def run(
        self,
        rt: StepRuntime,
        resume_from: Mapping[str, Any] | WorkflowContext | None = None,
        *,
        through: StepThrough | None = None,
        plan: WakePlan | None = None,
    ) -> Context:
        """Run every step; returns the context (see :data:`Context`).

        ``resume_from`` ({step: session id}, or a previous context) takes precedence
        over lineage; a session missing from the store is ignored either way.
        ``through`` runs each step (see :data:`StepThrough`); None: each runs here.
        ``plan`` is what :func:`~flower.workflow.plan.plan_wake` read for this wake (the
        CLI passes the one its banner showed); without it the run plans its own, looking
        in the runtime's store.
        """
        steps = [step.name for step in self.steps]
        with tracing_of(rt).span("flower.wake", {"flower.workflow.steps": steps}) as span:
            ctx = await self._run(rt, resume_from, through, plan)
            span.set({"flower.wake": ctx.woke, "flower.ok": ctx.ok})
            span.set({"flower.failed_step": ctx.failed})
        return ctx

    async def _run(
        self,
        rt: StepRuntime,
        resume_from: Mapping[str, Any] | WorkflowContext | None,
        through: StepThrough | None = None,
        plan: WakePlan | None = None,
    ) -> Context:
        workspace = str(getattr(rt, "workspace", ".") or ".")
        run_dir = getattr(rt, "run_dir", None) or "runs"
        settings = self.settings_for(rt)
        ctx = WorkflowContext(workspace=os.path.realpath(workspace))
        lineage: Lineage | None = None
        known: dict[str, str] = {}
        if self.continuous:
            if plan is None:
                read, self._lineage = self._lineage, None  # for this wake only
                # a rewind a crash cut short points lineage at its fork first
                plan = plan_wake(
                    workspace,
                    run_dir,
                    settings=settings,
                    store=rt.store,
                    finish_rewind=True,
                    lineage=read,
                )
            # before the wake is counted: a store that cannot be read stops the run here
            plan.check_store()
            lineage = plan.lineage
            known = plan.known
        if resume_from:
            explicit = (
                resume_from.sessions
                if isinstance(resume_from, WorkflowContext)
                else resume_from.get("_sessions", resume_from)
            )
            for name, sid in dict(explicit).items():
                if isinstance(sid, str) and not name.startswith("_") and rt.has_session(sid):
                    known[name] = sid
        if plan is not None and lineage is not None:
            # an old mapping this wake cannot use is set aside, never overwritten
            ctx.fresh = plan.start_fresh([s.name for s in self.steps], known=known)
            ctx.woke = lineage.woke + 1  # written after on_start (see below)
        ctx.lineage = lineage
        ctx.known = dict(known)
        # with encryption on, a step's final text stays only in its (sealed) transcript
        encrypted = bool(getattr(getattr(settings, "sessions", None), "encrypt", False))
        manifest = Manifest(run_dir, keep_text=not encrypted) if self.manifest else None
        if self.on_start is not None:
            await _maybe_await(self.on_start(ctx))
        if lineage is not None:
            # counted once on_start has kept what it must (what was said on this wake):
            # a wake on disk never lost its words to a kill right after it was counted
            lineage.bump_woke()

        for step in self.steps:
            if through is None:
                ok = (await self._step(step, ctx, rt, lineage, manifest, known)).ok
            else:
                ok = await self._step_through(through, step, ctx, rt, lineage, manifest, known)
            if not ok:
                ctx.ok = False
                ctx.failed = step.name
                break
        return ctx

    async def _step_through(
        self,
        through: StepThrough,
        step: Step,
        ctx: Context,
        rt: StepRuntime,
        lineage: Lineage | None,
        manifest: Manifest | None,
        known: dict[str, str],
    ) -> bool:
        """``step`` run by ``through``; a step it finished earlier is replayed into ``ctx``."""
        ran = False
        settings = self.settings_for(rt)
        encrypted = bool(getattr(getattr(settings, "sessions", None), "encrypt", False))

        async def live() -> dict[str, Any]:
            nonlocal ran
            sessions = known
            if ran and step.name in ctx.sessions:
                # run again by ``through`` (its run was cut: its store went away): it
                # resumes the session its cut run left, as a later process would
                sessions = {**known, step.name: ctx.sessions[step.name]}
            ran = True
            outcome = await self._step(step, ctx, rt, lineage, manifest, sessions)
            if encrypted:  # the texts stay in the (sealed) transcripts only
                outcome.text = None
                outcome.results = [dataclasses.replace(r, text="") for r in outcome.results]
            return msgspec.to_builtins(outcome)

        kept = msgspec.convert(await through(step.name, live), StepOutcome)
        if not ran:
            kept.replay(ctx, step.name)
        return kept.ok

    async def _step(
        self,
        step: Step,
        ctx: Context,
        rt: StepRuntime,
        lineage: Lineage | None,
        manifest: Manifest | None,
        known: dict[str, str],
    ) -> StepOutcome:
        """Run (or skip) one step, leaving what it did in ``ctx``."""
        if step.skip_if is not None and step.skip_if(ctx):
            ctx.skipped.append(step.name)
            if step.name in known:
                ctx.sessions[step.name] = known[step.name]
            text = ctx.values.get(step.name)
            return StepOutcome(
                skipped=True,
                session_id=known.get(step.name),
                text=text if isinstance(text, str) else None,
                goal_met=ctx.goal_met,
            )
        run = StepRun(self, step, ctx, rt, lineage, manifest, known.get(step.name))
        ctx.resumed[step.name] = run.resumed
        with tracing_of(rt).span(f"step {step.name}", _step_attributes(run)) as span:
            result = await (step.body or one_turn)(run)
            span.set(_step_result_attributes(result))
        if step.after is not None:
            result = step.after(ctx, result) or result
        ctx.values[step.name] = result.text
        return StepOutcome(
            ok=result.ok,
            resumed=run.resumed,
            session_id=ctx.sessions.get(step.name),
            text=result.text,
            results=list(run.results),
            goal_met=ctx.goal_met,
        )


def _step_attributes(run: StepRun) -> dict[str, Any]:
    return {"flower.step.name": run.name, "flower.resumed": run.resumed}


def _step_result_attributes(result: StepResult) -> dict[str, Any]:
    return {
        "flower.session.id": result.session_id,
        "flower.ok": result.ok,
        "flower.cost_usd": result.cost_usd,
        "flower.retired_sessions": list(result.retired) or None,
    }


def _fatal(result: StepResult) -> bool:
    """Whether the run ended on an API error that no retry can help (bad credentials,
    a bad request): resilience stopped at once, so the step does not go again."""
    return bool(result.errors) and result.errors[-1].get("kind") == "fatal"


async def _maybe_await(value: object) -> object:
    if inspect.isawaitable(value):
        return await value
    return value


def replace_step(step: Step, **changes: Any) -> Step:
    """A copy of ``step`` with ``changes`` (how gates wrap a step)."""
    return dataclasses.replace(step, **changes)


__all__ = [
    "Context",
    "Step",
    "StepOutcome",
    "StepRun",
    "StepThrough",
    "Workflow",
    "WorkflowContext",
    "one_turn",
    "render",
    "replace_step",
    "wake_state",
]
