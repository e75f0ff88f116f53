"""A :class:`~flower.runtime.engine.Runtime` that tells a watcher what it runs, as it runs.

Each ``run`` is announced first (:meth:`RunWatcher.step_started`: its step label, the
session it resumes, the session a relay goes on from), then every event of it goes to
:meth:`RunWatcher.on_event`. ``flower``'s live output (:class:`flower.workflow.live.Live`) is
one such watcher; any object with the two methods is another::

    from flower.runtime.live import LiveRuntime

    class Printer:
        def step_started(self, label, *, resume, relay_from=None):
            print("step", label, "resuming" if resume else "new")

        def on_event(self, event):
            print(type(event).__name__)

    runtime = LiveRuntime(Printer(), workspace=".")
"""

from __future__ import annotations

from typing import Any, Protocol

from flower.runtime.engine import Runtime
from flower.runtime.events import Event
from flower.runtime.spec import AgentSpec, StepResult


class RunWatcher(Protocol):
    """What :class:`LiveRuntime` tells: each run's start, then its events."""

    def step_started(
        self, label: str, *, resume: str | None, relay_from: str | None = None
    ) -> None:
        """A run of step ``label`` is about to start, in session ``resume`` (``None``: a
        new one), or in a relay's new session going on from ``relay_from``."""

    def on_event(self, event: Event) -> None:
        """One event of the run (:mod:`flower.runtime.events`)."""


class LiveRuntime(Runtime):
    """A :class:`Runtime` that announces each run to ``live`` and gives it every event;
    the other arguments are :class:`Runtime`'s (``on_event`` is ``live.on_event``)."""

    def __init__(self, live: RunWatcher, **options: Any) -> None:
        super().__init__(on_event=live.on_event, **options)
        self.live = live

    async def run(
        self,
        agent: AgentSpec,
        prompt: str,
        resume: str | None = None,
        *,
        step: str | None = None,
        context_limit: int | None = None,
        relay_from: str | None = None,
        resume_at: str | None = None,
    ) -> StepResult:
        self.live.step_started(step or agent.name, resume=resume, relay_from=relay_from)
        return await super().run(
            agent,
            prompt,
            resume,
            step=step,
            context_limit=context_limit,
            relay_from=relay_from,
            resume_at=resume_at,
        )


__all__ = ["LiveRuntime", "RunWatcher"]
