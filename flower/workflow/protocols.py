"""What a workflow needs of the engine: :class:`StepRuntime`.

The workflow layer builds on the runtime layer (``cli -> workflow -> runtime``), so it
could name :class:`flower.runtime.engine.Runtime` itself; it names this Protocol
instead, the few members its steps, its relay and its wake actually use, so a step
body, a test or another engine can see the whole of what is asked. ``Runtime``
satisfies it structurally (mypy checks that, see the end of this module).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey
    from flower.runtime.spec import AgentSpec, StepResult


class StepRuntime(Protocol):
    """The engine a :class:`~flower.workflow.base.Workflow` runs its steps on.

    ``on_session`` is set by a step around each of its own runs, so a new session's id
    lands in lineage the instant it exists, and cleared around a judge's. A ``tracing``
    attribute (a :class:`~flower.core.telemetry.Tracing`) is used when there is one.
    """

    on_session: Callable[[str], None] | None

    @property
    def workspace(self) -> Path:
        """The directory the agents work in."""
        ...

    @property
    def run_dir(self) -> Path:
        """Where lineage, the manifest and the relay notes are kept."""
        ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> SessionStoreBase:
        """The raw session store: every transcript as written."""
        ...

    def key(self, session_id: str) -> SessionKey:
        """``session_id``'s key in :attr:`store` (this workspace's project)."""
        ...

    def has_session(self, session_id: str) -> bool: ...

    def context_size(self, session_id: str) -> int | None:
        """Tokens of the last round's context in ``session_id`` (``None``: not known)."""
        ...

    async def run(
        self,
        agent: AgentSpec,
        prompt: str,
        resume: str | None = None,
        *,
        step: str | None = None,
        context_limit: int | None = None,
        relay_from: str | None = None,
    ) -> StepResult:
        """Run ``agent`` on ``prompt`` to its end, in session ``resume`` when given."""
        ...


if TYPE_CHECKING:
    from flower.runtime.engine import Runtime

    def _a_runtime_is_a_step_runtime(runtime: Runtime) -> StepRuntime:
        return runtime  # mypy (tests/test_types.py) checks Runtime against the Protocol


__all__ = ["StepRuntime"]
