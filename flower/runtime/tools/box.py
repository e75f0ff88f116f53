"""ToolBox: the engine's single entry point to the built-in tools.

``run`` never raises for anything the model sends: an unknown tool, a tool outside
``allowed``, a malformed or invalid input, a path outside the workspace and any failure
of the tool itself all come back as a :class:`ToolOutcome` the model can read.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.runtime.tools import bash, files, search
from flower.runtime.tools.base import (
    ToolConfigError,
    ToolContext,
    ToolDenied,
    ToolFailure,
    ToolOutcome,
    UnknownToolError,
)
from flower.runtime.tools.inputs import INPUTS, parse_input
from flower.runtime.tools.schemas import DEFINITIONS

if TYPE_CHECKING:
    from flower.core.config import EngineConfig

log = logging.getLogger(__name__)

# Any: each tool takes its own input Struct (ReadInput, BashInput, ...), one table for all
Runner = Callable[[Any, ToolContext], Awaitable[ToolOutcome]]


def _in_thread(fn: Callable[[Any, ToolContext], ToolOutcome]) -> Runner:
    async def run(args: Any, ctx: ToolContext) -> ToolOutcome:
        return await asyncio.to_thread(fn, args, ctx)

    return run


RUNNERS: dict[str, Runner] = {
    "Read": _in_thread(files.read),
    "Write": _in_thread(files.write),
    "Edit": _in_thread(files.edit),
    "Glob": _in_thread(search.glob),
    "Grep": _in_thread(search.grep),
    "Bash": bash.bash,
}
TOOL_NAMES: tuple[str, ...] = tuple(RUNNERS)


class ToolBox:
    """The built-in tools for one agent in one workspace.

    ``allowed`` lists the tools the agent may run; an empty list means no tool at all
    (every call is denied). A name that is no built-in tool is a configuration mistake
    and raises :class:`UnknownToolError` here, before any run starts.
    """

    def __init__(
        self,
        workspace: Path,
        allowed: list[str],
        *,
        bash_timeout: float = 120.0,
        max_output: int = 30_000,
        confine: bool = True,
        readable: tuple[Path, ...] = (),
        ledger: Path | None = None,
        ledger_text: bool = True,
        snapshots: Path | None = None,
    ) -> None:
        unknown = [name for name in allowed if name not in RUNNERS]
        if unknown:
            raise UnknownToolError(
                f"allowed_tools names unknown tool(s) {', '.join(map(repr, unknown))}; "
                f"the built-in tools are {', '.join(TOOL_NAMES)} (names are case-sensitive)"
            )
        if not bash_timeout > 0:
            raise ToolConfigError(f"bash_timeout must be positive, got {bash_timeout!r}")
        if max_output < 100:
            raise ToolConfigError(f"max_output must be at least 100 characters, got {max_output}")
        real = Path(os.path.realpath(Path(workspace).expanduser()))
        self.allowed: tuple[str, ...] = tuple(dict.fromkeys(allowed))
        self.context = ToolContext(
            workspace=real,
            confine=confine,
            max_output=max_output,
            bash_timeout=bash_timeout,
            readable=tuple(Path(os.path.realpath(Path(r).expanduser())) for r in readable),
            ledger=ledger,
            ledger_text=ledger_text,
            snapshots=snapshots,
        )

    @classmethod
    def from_config(cls, workspace: Path, allowed: list[str], engine: EngineConfig) -> ToolBox:
        """From ``[tool.flower.engine]``: bash_timeout, max_tool_output, confine_to_workspace."""
        return cls(
            workspace,
            allowed,
            bash_timeout=engine.bash_timeout,
            max_output=engine.max_tool_output,
            confine=engine.confine_to_workspace,
        )

    @property
    def workspace(self) -> Path:
        return self.context.workspace

    def definitions(self) -> list[dict[str, Any]]:
        """Messages API tool definitions for every built-in tool, allowed or not."""
        return copy.deepcopy(DEFINITIONS)

    def denial_reason(self, name: str) -> str:
        allowed = ", ".join(self.allowed) if self.allowed else "none"
        return f"the tool {name} is not in allowed_tools for this agent (allowed: {allowed})."

    async def run(self, name: str, tool_input: dict[str, Any] | str) -> ToolOutcome:
        """Run one tool call; every problem becomes an error outcome, never an exception."""
        runner = RUNNERS.get(name)
        if runner is None:
            return ToolOutcome.error(
                str(name),
                f"Error: no such tool {name!r}; the available tools are {', '.join(TOOL_NAMES)}.",
            )
        if name not in self.allowed:
            return ToolOutcome.denial(name, self.denial_reason(name))
        try:
            args = parse_input(name, tool_input, INPUTS[name])
            return await runner(args, self.context)
        except ToolDenied as exc:
            return ToolOutcome.denial(name, str(exc))
        except ToolFailure as exc:
            return ToolOutcome.error(name, f"Error: {exc}")
        except OSError as exc:
            return ToolOutcome.error(name, f"Error: {name} failed: {_os_error(exc)}")
        except Exception as exc:  # a bug in a tool must not end the run
            log.exception("tool %s failed unexpectedly", name)
            return ToolOutcome.error(
                name, f"Error: {name} failed unexpectedly: {type(exc).__name__}: {exc}"
            )


def _os_error(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"
