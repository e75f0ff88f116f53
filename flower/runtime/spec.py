"""What an agent is (``AgentSpec``) and what one run of it produced (``StepResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

DEFAULT_MAX_TOKENS = 16_000
STOP_CONTEXT_LIMIT = "context_limit"
"""``StepResult.stop`` of a run that ended itself before its context passed the limit."""
STOP_MAX_TURNS = "max_turns"
"""``StepResult.stop`` of a run that reached ``AgentSpec.max_turns``."""
STOP_MAX_TOKENS = "max_tokens"
"""``StepResult.stop`` of a run whose reply was cut at ``AgentSpec.max_tokens`` twice."""


@dataclass(frozen=True)
class AgentSpec:
    """An agent: its system prompt, the tools it may use and how long it may go on.

    ``model=None`` takes ``[tool.flower.engine] model``.
    """

    name: str
    instructions: str
    allowed_tools: list[str] = field(default_factory=list)
    max_turns: int = 20
    model: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"an agent needs a non-empty name, got {self.name!r}")
        if isinstance(self.allowed_tools, str) or not all(
            isinstance(tool, str) for tool in self.allowed_tools
        ):
            raise TypeError(
                f"allowed_tools is a list of tool names (['Read', 'Bash']), "
                f"got {self.allowed_tools!r}"
            )
        for field_name in ("max_turns", "max_tokens"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field_name} must be a whole number >= 1, got {value!r}")


@dataclass
class StepResult:
    """One step's run, as it is written to ``manifest.json`` (seed field list)."""

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float | None = None
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: str = ""
    ended_at: str = ""
    attempts: int = 1
    errors: list[dict[str, Any]] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int | None = None
    """Input tokens of the last round (the context size the banner shows)."""
    stop: str | None = None
    """Why the run ended before the agent finished, when it did so on its own:
    ``"context_limit"`` (:data:`STOP_CONTEXT_LIMIT`: the next rounds would have passed
    ``Runtime.run(context_limit=...)``; the session is at a safe point, every tool_use
    answered, ready to relay or resume) or ``"max_turns"``. ``ok`` is False for both:
    the work is not done. ``None`` otherwise (finished, or failed: see ``error``)."""

    @property
    def duration_s(self) -> float:
        """Seconds between ``started_at`` and ``ended_at`` (0.0 until both are set)."""
        if not self.started_at or not self.ended_at:
            return 0.0
        start = datetime.fromisoformat(self.started_at)
        end = datetime.fromisoformat(self.ended_at)
        return round((end - start).total_seconds(), 3)
