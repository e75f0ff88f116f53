"""How ``flower fleet status`` says its report, called from Python (no workers, no database)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower.core.keys import project_key
from flower.fleet.view import budget_said, task_said, with_progress


def _row(state: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "t1",
        "state": state,
        "workspace": "/w/a",
        "host": "h1",
        "worker": "h1-7",
        "last_activity": None,
        "woke": None,
        "cost_usd": None,
        "why": None,
    }
    return {**row, **fields}


def test_a_task_is_said_by_its_state(english: None) -> None:
    running = _row(
        "running",
        step="work",
        wake=2,
        requests=3,
        input_tokens=1000,
        output_tokens=200,
        cost_so_far_usd=0.0125,
        last_activity=90.0,
    )
    assert task_said(running, now=100.0) == (
        "t1  running on h1 · step work, wake 2 · 1200 tokens, $0.0125 so far · "
        "last activity 10 s ago  /w/a"
    )
    assert task_said(_row("running", host=None), now=0) == "t1  running on h1-7  /w/a"
    assert task_said(_row("queued"), now=0) == "t1  queued  /w/a"
    assert task_said(_row("done", woke=4, cost_usd=0.5), now=0) == (
        "t1  done (wake 4, $0.5000)  /w/a"
    )
    assert task_said(_row("failed", why="boom"), now=0) == "t1  failed: boom  /w/a"
    assert task_said(_row("cancelled"), now=0) == "t1  cancelled  /w/a"


def test_the_budget_lines_give_use_against_limits_and_totals_once_spent(english: None) -> None:
    budget = {
        "used_last_minute": {"requests": 2, "input_tokens": 50, "output_tokens": 7},
        "effective": {"requests": 10, "input_tokens": None, "output_tokens": 0},
        "parked_until": None,
    }
    nothing = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    assert budget_said({"totals": nothing, "budget": budget}) == [
        "budget, last minute: 2/10 requests, 50 input tokens, 7 output tokens"
    ]
    spent = {"requests": 2, "input_tokens": 50, "output_tokens": 7, "cost_usd": 0.001}
    lines = budget_said({"totals": spent, "budget": budget})
    assert lines[0] == "total: 2 requests, 50 input and 7 output tokens, $0.0010"
    assert len(lines) == 2


def test_with_progress_adds_each_tasks_project_and_sessions(tmp_path: Path) -> None:
    queued = _row("queued", workspace=str(tmp_path), sessions={"work": "s1"})
    report = with_progress({"tasks": [queued, _row("queued", workspace=None)]})
    first, second = report["tasks"]
    assert first["project"] == project_key(tmp_path) and first["sessions"] == {"work": "s1"}
    assert second["project"] is None and second["sessions"] == {}
