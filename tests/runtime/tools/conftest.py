from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flower.core.entries import check_entry
from flower.runtime.tools import TOOL_NAMES, ToolBox, ToolOutcome

Call = Callable[..., ToolOutcome]


def run_tool(box: ToolBox, name: str, tool_input: Any) -> ToolOutcome:
    """Run one call the way the engine does and check the outcome can be stored."""
    outcome = asyncio.run(box.run(name, tool_input))
    assert isinstance(outcome.content, str)
    check_entry({"type": "user", "toolUseResult": outcome.result})
    if outcome.denied:
        assert outcome.is_error
    return outcome


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workspace; a sibling ``outside`` folder holds what tools must never reach."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP-SECRET\n")
    return folder


@pytest.fixture
def box(ws: Path) -> ToolBox:
    return ToolBox(ws, list(TOOL_NAMES), bash_timeout=5.0, max_output=2000)


@pytest.fixture
def call(box: ToolBox) -> Call:
    def _call(name: str, tool_input: Any, toolbox: ToolBox | None = None) -> ToolOutcome:
        return run_tool(toolbox or box, name, tool_input)

    return _call
