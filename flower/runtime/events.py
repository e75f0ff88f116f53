"""Typed events a run reports while it happens, for live output (``Runtime(on_event=...)``).

Events are plain frozen dataclasses; a consumer matches on the class. They carry what
a terminal needs to show progress, never anything a run depends on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SessionStarted:
    """A session id exists (new, or the one being resumed)."""

    session_id: str
    resumed: bool


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text as it streams in."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asked for a tool; ``tool_input`` is the raw string when it was not JSON."""

    tool_use_id: str
    name: str
    tool_input: dict[str, Any] | str


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    name: str
    content: str
    is_error: bool
    denied: bool


@dataclass(frozen=True)
class Waiting:
    """A status line while the API is failing or unreachable (retry in N s, offline...)."""

    line: str


@dataclass(frozen=True)
class TurnEnd:
    """One API response finished: its stop reason, usage and cost (None: unknown model)."""

    stop_reason: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float | None = None


@dataclass(frozen=True)
class StepDone:
    """The run is over; ``result`` is the :class:`~flower.runtime.spec.StepResult`."""

    result: Any


Event = SessionStarted | TextDelta | ToolCall | ToolResult | Waiting | TurnEnd | StepDone
EventSink = Callable[[Event], None]
