from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tool_helpers import Call, run_tool

from flower.runtime.tools import TOOL_NAMES, ToolBox, ToolOutcome


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
