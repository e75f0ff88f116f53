"""A fleet task's wake, run in its worker's process: each flower step a DBOS step.

The worker runs the wake where DBOS runs the task's workflow function (one of DBOS's
threads), on an event loop of the wake's own: what ``flower "..." --yes`` runs in the
workspace (:func:`flower.workflow.wake.begin`, then the built-in workflow), or the
user's ``Workflow`` named by ``module:function``. ``Workflow.run(through=...)`` hands
each step to :func:`flower.fleet.engine.step`, so a step that finished is a DBOS step
that finished: a later execution of the task (a takeover) replays its small outcome
and never runs it again; the step that was cut off resumes its session.

What a wake of its own process had, a wake here has too, per wake: its workspace
(every path is made absolute; nothing reads the working directory), its fencing token
(:func:`flower.core.lease.holding`, a context variable, not the environment), its
task's share of the budget, its output (the task's log, ``flower fleet logs``), and
one trace per task, and its language: its workspace's (:func:`flower.core.i18n.speaking`),
as a ``flower`` run there would speak. It shares the process's ``sys.path`` (see
docs/fleet.md). A wake that must stop without its step being kept (the worker leaves,
lost the task, or the task was cancelled) is cancelled like a Ctrl-C'd ``flower``:
:class:`Unrecorded` leaves DBOS's step unrecorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import inspect
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from flower.core.errors import FlowerError
from flower.core.i18n import SOURCE_LANGUAGE, _, speaking
from flower.core.lease import LeaseLostError, LeasingStore, holding
from flower.fleet.outage import unreachable

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from flower.core.config import Settings
    from flower.core.protocols import CallGate
    from flower.workflow.context import WorkflowContext


class Unrecorded(BaseException):
    """The wake stops and DBOS keeps nothing of the step it was in (a BaseException:
    DBOS records a step's ``Exception`` as its outcome, not this)."""


@dataclass
class Wake:
    """One task's wake while it runs in this worker."""

    task_id: str
    workspace: Path
    store: LeasingStore
    """The workspace's session store, raw: its lease is this wake's."""
    project: str
    token: int
    takeover_after: float
    lost_at: float | None = None
    """When the worker learnt another one holds the task now (monotonic)."""
    cancelled: bool = False
    leaving: bool = False
    """The worker stops: the step the wake is in stays unkept, for the next worker."""
    loop: asyncio.AbstractEventLoop | None = None
    main: asyncio.Task[Any] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    step: str | None = None
    say: Callable[[str], None] = print
    """The worker's output (its status lines)."""
    pause: float = 1.0
    """Seconds between looks at a session store that cannot be reached."""
    outage_said: bool = False
    """The step the wake is in said its store could not be reached (once a step)."""

    def stop(self) -> None:
        """Cancel the wake from any thread (it saves its place, as after Ctrl-C)."""
        loop, main = self.loop, self.main
        if loop is not None and main is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(main.cancel)

    def holds(self, *, renew: bool = False) -> bool:
        """Whether the wake still holds its task: not stopped, not lost; with ``renew``,
        its lease renewed now (for ``takeover_after`` more: no other worker can take the
        task over before the step's outcome is kept)."""
        if self.lost_at is not None or self.leaving or self.cancelled:
            return False
        if not renew:
            return True
        if self.store.renew_lease(self.project, self.token, self.takeover_after):
            return True
        self.lose()
        return False

    def lose(self) -> None:
        """Another worker holds the task now: the wake drops it (said once)."""
        if self.lost_at is None:
            self.lost_at = time.monotonic()
            self.say(
                _("task {task}: another worker took it over; dropping it here").format(
                    task=self.task_id
                )
            )

    def met_outage(self, error: BaseException) -> None:
        """The step met ``error``, its store that cannot be reached: one line a step."""
        if not self.outage_said:
            self.outage_said = True
            self.say(
                _("task {task}: a database cannot be reached ({error}); retrying").format(
                    task=self.task_id,
                    error=error if isinstance(error, FlowerError) else type(error).__name__,
                )
            )


Through = Callable[
    [str, Callable[[], Coroutine[Any, Any, dict[str, Any]]], int | None], Awaitable[Any]
]


def run_wake(
    wake: Wake,
    task: dict[str, Any],
    *,
    said: str | None,
    said_token: str | None = None,
    settings: Settings,
    database: str,
    log: TextIO,
    through: Through,
) -> dict[str, Any]:
    """Run ``task``'s wake in its workspace's language (``settings.language``): ``said``
    its words, passed on by every execution of the task, ``said_token`` theirs in the
    said journal, the same on every execution, so they land once. Its small result.
    Raises :class:`Unrecorded` when the wake was stopped before it ended."""
    with speaking(settings.language or SOURCE_LANGUAGE):
        return _run_wake(
            wake,
            task,
            said=said,
            said_token=said_token,
            settings=settings,
            database=database,
            log=log,
            through=through,
        )


def _run_wake(
    wake: Wake,
    task: dict[str, Any],
    *,
    said: str | None,
    said_token: str | None,
    settings: Settings,
    database: str,
    log: TextIO,
    through: Through,
) -> dict[str, Any]:
    from flower.fleet.budget import Budget

    gate = Budget(database, wake.task_id)
    try:
        with (
            holding(wake.token, wake.project, wake.store),
            task_trace(wake.task_id),
            asyncio.Runner() as runner,
        ):
            wake.loop = runner.get_loop()
            workflow = task.get("workflow")
            if workflow:
                return _user_wake(wake, runner, workflow, said, settings, gate, log, through)
            words = (said, said_token)
            return _builtin_wake(wake, runner, words, settings, gate, log, through)
    except BaseException as exc:
        if wake.lost_at is not None or isinstance(exc, LeaseLostError):
            # its writes are refused: it drops the task
            log.write(f"{LeaseLostError(wake.project, wake.token)}\n")
            log.flush()
        if isinstance(exc, (asyncio.CancelledError, Unrecorded, LeaseLostError)):
            raise Unrecorded from None
        raise
    finally:
        gate.close()
        wake.loop = wake.main = None


def _steps_through(wake: Wake, through: Through, woke: Callable[[], int | None]) -> Any:
    """``Workflow.run``'s ``through``: each step a DBOS step, kept only while the wake
    holds its task (a step the worker could not keep is left for the next one)."""

    async def run(name: str, live: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        async def guarded() -> dict[str, Any]:
            while True:
                try:
                    outcome = await live()
                except LeaseLostError:
                    wake.lose()
                    raise Unrecorded from None
                except Exception as exc:
                    if not unreachable(exc):
                        if not await _renewed(wake):
                            raise Unrecorded from None
                        raise  # kept as the step's error: the task fails, and says why
                    # its store went away: once it is back (and the task still this
                    # wake's), the step runs again here and resumes its session from
                    # its last stored turn, as a takeover would; DBOS keeps nothing of it
                    if not await _renewed(wake, exc):
                        raise Unrecorded from None
                    continue
                if not await _renewed(wake):
                    raise Unrecorded
                wake.outage_said = False
                return outcome

        if not wake.holds():
            raise Unrecorded
        wake.step = name
        result: dict[str, Any] = await through(name, guarded, woke())
        return result

    return run


async def _renewed(wake: Wake, outage: BaseException | None = None) -> bool:
    """``wake.holds(renew=True)``, once its session store can be reached: after
    ``outage`` (the store could not be reached) and while the renewal meets one, it
    waits (one line) and asks again. False: the task is not this wake's any more (taken
    over meanwhile, cancelled, or the worker leaves)."""
    while True:
        if outage is not None:
            wake.met_outage(outage)
            await asyncio.sleep(wake.pause)
        try:
            return await asyncio.to_thread(wake.holds, renew=True)
        except Exception as exc:
            if not unreachable(exc):
                raise
            outage = exc


async def _tracked(wake: Wake, main: Awaitable[Any]) -> Any:
    wake.main = asyncio.current_task()
    if wake.cancelled or wake.leaving:
        raise asyncio.CancelledError
    return await main


def _builtin_wake(
    wake: Wake,
    runner: asyncio.Runner,
    words: tuple[str | None, str | None],
    settings: Settings,
    gate: CallGate | None,
    log: TextIO,
    through: Through,
) -> dict[str, Any]:
    """What ``flower "..." --yes --json`` runs in the workspace, printing to ``log``."""
    from flower.runtime.credentials import require_api_key
    from flower.workflow.live import Live
    from flower.workflow.outcome import run_code
    from flower.workflow.run_wake import (
        LogGoals,
        LogWake,
        WakeAnswers,
        log_request_as_brief,
        run_builtin_wake,
    )

    workspace = wake.workspace
    live = Live(log, rich=False, rounds=settings.workflow.rounds)

    def answers(settings: Settings) -> WakeAnswers:
        return WakeAnswers(
            request_as_brief=log_request_as_brief(live, settings, workspace),
            goals_fallback=LogGoals(live),
        )

    def hint(settings: Settings, ctx: WorkflowContext) -> str:
        sid = ctx.sessions.get(live.work_step) or next(reversed(ctx.sessions.values()), None)
        return f"flower sessions show {sid}" if sid else ""

    def drive(main: Coroutine[Any, Any, WorkflowContext]) -> WorkflowContext:
        result: WorkflowContext = runner.run(_tracked(wake, main))
        return result

    said, token = words
    with contextlib.ExitStack() as held:
        done = run_builtin_wake(
            settings,
            workspace,
            said,
            live=live,
            io=LogWake(settings, workspace, live, require_api_key),
            held=held,
            answers=answers,
            drive=drive,
            hint=hint,
            token=token,
            gate=gate,
            client=lambda settings: wake_client(runner, settings),
            through=_steps_through(wake, through, lambda: live.woke),
        )
    assert done is not None  # None only when someone left at a prompt
    return small_result(done.ctx, run_code(done.ctx))


def _user_wake(
    wake: Wake,
    runner: asyncio.Runner,
    target: str,
    said: str | None,
    settings: Settings,
    gate: CallGate | None,
    log: TextIO,
    through: Through,
) -> dict[str, Any]:
    """A user's own ``Workflow`` (``module:function``) on a plain Runtime in the workspace."""
    from flower.core.run_lock import run_lock
    from flower.runtime.engine import Runtime
    from flower.stores.lineage import load_lineage

    workflow = _user_workflow(target, wake.workspace, said)
    woke = load_lineage(wake.workspace, settings=settings, run_dir=settings.run_dir).woke + 1
    with run_lock(settings.run_path), wake_client(runner, settings) as client:
        rt = Runtime(
            workspace=str(wake.workspace),
            run_dir=settings.run_dir,
            settings=settings,
            client=client,
            gate=gate,
        )
        try:
            steps = _steps_through(wake, through, lambda: woke)
            ctx = runner.run(_tracked(wake, workflow.run(rt, through=steps)))
        finally:
            rt.close()
    return small_result(ctx, 0 if ctx.ok else 1)


@contextlib.contextmanager
def wake_client(runner: asyncio.Runner, settings: Settings) -> Iterator[AsyncAnthropic]:
    """One API client for all the wake's steps, on the wake's event loop, closed there
    when the wake ends (a Runtime given none makes one per step, and in a worker that
    runs many wakes at once making it was the largest share of a step's CPU)."""
    from flower.runtime.engine import api_client

    client = api_client(settings)
    try:
        yield client
    finally:
        runner.run(client.close())


_IMPORTING = threading.Lock()


def _user_workflow(target: str, workspace: Path, said: str | None) -> Any:
    """``function`` of ``module:function``, imported from the workspace, called (with
    ``said`` when it takes an argument). The workspace is on ``sys.path`` while it is
    imported; a module is imported once per process (its name is the process's)."""
    module_name, _sep, attribute = target.partition(":")
    with _IMPORTING:
        sys.path.insert(0, str(workspace))
        try:
            module = importlib.import_module(module_name)
        finally:
            sys.path.remove(str(workspace))
    function = getattr(module, attribute)
    takes = len(inspect.signature(function).parameters)
    return function(said) if takes else function()


def small_result(ctx: WorkflowContext, code: int) -> dict[str, Any]:
    """The small result DBOS keeps: ok, the wake number, the sessions, the cost, why."""
    cost = sum(float(r.cost_usd or 0) for r in ctx.results)
    failed = [r for r in ctx.results if not r.ok]
    why = None
    if code != 0:
        why = (failed[-1].error if failed else None) or _("exit code {code}").format(code=code)
    return {
        "ok": code == 0,
        "exit": code,
        "woke": ctx.woke,
        "goal_met": ctx.goal_met,
        "sessions": dict(ctx.sessions),
        "cost_usd": round(cost, 6),
        "why": why,
    }


def trace_id_of(task_id: str) -> int:
    """The trace every wake of ``task_id`` joins (the same on every worker)."""
    return int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:16], "big") or 1


@contextlib.contextmanager
def task_trace(task_id: str) -> Iterator[None]:
    """The wake's spans as one trace per task: their root's parent is the task's trace
    (:func:`trace_id_of`), so a wake taken over on another worker joins the same trace."""
    if "opentelemetry.trace" not in sys.modules:
        from flower.core.telemetry import process_tracer

        if process_tracer() is None:
            yield
            return
    from opentelemetry import context, trace

    parent = trace.SpanContext(
        trace_id=trace_id_of(task_id),
        span_id=int.from_bytes(hashlib.sha256(b"span" + task_id.encode()).digest()[:8], "big") or 1,
        is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
    try:
        yield
    finally:
        context.detach(token)


__all__ = ["Unrecorded", "Wake", "run_wake", "small_result", "task_trace", "trace_id_of"]
