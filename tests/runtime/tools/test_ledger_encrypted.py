"""With encryption on, the running-command ledger under the run directory holds no
command text (issue 29 item 7): a killed run's record names the process group only."""

from __future__ import annotations

from pathlib import Path

from tool_helpers import run_tool

from flower.runtime.tools import ToolBox

MARK = "xyzzy-secret-42"


def _ledger_seen(tmp_path: Path, ledger_text: bool) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    ledger = tmp_path / "runs" / "running"
    box = ToolBox(ws, ["Bash"], ledger=ledger, ledger_text=ledger_text, confine=False)
    # the command prints its own ledger record while it runs
    command = f"sleep 0.5; cat {ledger}/[0-9]*.json; echo; : {MARK}"
    outcome = run_tool(box, "Bash", {"command": command})
    return outcome.content


def test_the_ledger_keeps_no_command_text_when_told(tmp_path: Path) -> None:
    seen = _ledger_seen(tmp_path, ledger_text=False)
    assert '"command":""' in seen.replace(" ", "") and MARK not in seen


def test_the_ledger_keeps_the_command_by_default(tmp_path: Path) -> None:
    assert MARK in _ledger_seen(tmp_path, ledger_text=True)
