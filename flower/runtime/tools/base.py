"""What every tool shares: the outcome type, the failures a tool raises, the context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower.core.errors import FlowerError

DENIAL_PREFIX = "Permission denied:"


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's answer, ready for a ``tool_result`` block and its transcript entry."""

    content: str
    """What goes into the tool_result block's ``content``."""
    is_error: bool
    result: dict[str, Any]
    """The structured result stored as the entry's ``toolUseResult`` (JSON-safe)."""
    denied: bool = False

    @classmethod
    def error(cls, tool: str, message: str) -> ToolOutcome:
        return cls(content=message, is_error=True, result={"error": message, "tool": tool})

    @classmethod
    def denial(cls, tool: str, reason: str) -> ToolOutcome:
        """The shape docs/entries.md fixes for a call that was refused and never ran."""
        return cls(
            content=f"{DENIAL_PREFIX} {reason}",
            is_error=True,
            result={"denied": True, "tool": tool, "reason": reason},
            denied=True,
        )


class ToolFailure(FlowerError):
    """A tool could not do what it was asked; the message goes back to the model."""


class ToolInputError(ToolFailure, ValueError):
    """The tool input is malformed: not JSON, not an object, a missing or wrong field."""


class ToolDenied(ToolFailure):
    """The call is refused before it does anything (a path outside the workspace)."""


class ToolConfigError(FlowerError, ValueError):
    """The ToolBox was built with bad settings; raised before any tool runs."""


class UnknownToolError(ToolConfigError):
    """``allowed`` names a tool that does not exist."""


@dataclass(frozen=True)
class ToolContext:
    """The settings every tool reads; ``workspace`` is already a real, absolute path."""

    workspace: Path
    confine: bool = True
    max_output: int = 30_000
    bash_timeout: float = 120.0
    readable: tuple[Path, ...] = ()
    """Real folders outside the workspace the Read tool may read (never write): where
    trim keeps the full text of results it moved out of the context."""
    ledger: Path | None = None
    """Where Bash records the commands it runs, so that a run after a ``kill -9`` can
    kill what they left running (see :mod:`flower.runtime.tools.orphans`)."""
    ledger_text: bool = True
    """Whether a ledger record holds the command's text (off with encryption on: the
    record names the process group, not what the model had it run)."""
    snapshots: Path | None = None
    """Where Write and Edit keep what a file held before they change it, for a rewind
    (see :mod:`flower.core.snapshots`); ``None`` keeps nothing."""


def cap_head(text: str, limit: int, hint: str = "") -> tuple[str, int]:
    """Keep the first ``limit`` characters; return the text (with a note) and how much was cut."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    note = f"\n[... output truncated: {cut:,} more characters not shown{hint}]"
    return text[:limit] + note, cut
