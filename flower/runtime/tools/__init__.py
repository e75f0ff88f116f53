"""The built-in tools (Read, Write, Edit, Glob, Grep, Bash) the engine runs for the model."""

from flower.runtime.tools.base import (
    DENIAL_PREFIX,
    ToolConfigError,
    ToolDenied,
    ToolFailure,
    ToolInputError,
    ToolOutcome,
    UnknownToolError,
)
from flower.runtime.tools.box import TOOL_NAMES, ToolBox

__all__ = [
    "DENIAL_PREFIX",
    "TOOL_NAMES",
    "ToolBox",
    "ToolConfigError",
    "ToolDenied",
    "ToolFailure",
    "ToolInputError",
    "ToolOutcome",
    "UnknownToolError",
]
