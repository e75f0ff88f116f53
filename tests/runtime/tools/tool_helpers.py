"""Shared by the tool tests (a uniquely named module: ``conftest`` is ambiguous on sys.path)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from flower.core.entries import check_entry
from flower.runtime.tools import ToolBox, ToolOutcome

Call = Callable[..., ToolOutcome]


def run_tool(box: ToolBox, name: str, tool_input: Any) -> ToolOutcome:
    """Run one call the way the engine does and check the outcome can be stored."""
    outcome = asyncio.run(box.run(name, tool_input))
    assert isinstance(outcome.content, str)
    check_entry({"type": "user", "toolUseResult": outcome.result})
    if outcome.denied:
        assert outcome.is_error
    return outcome
