"""The session store a worker takes a task's lease in, called from Python."""

from __future__ import annotations

from pathlib import Path

from flower.fleet.places import FleetPlace
from flower.fleet.worker import Worker


def test_a_worker_refuses_a_workspace_whose_session_store_holds_no_leases(
    in_tmp: Path, english: None
) -> None:
    """A workspace switched to jsonfs after its task was submitted: the task ends, said
    why, and nothing of it runs."""
    ws = in_tmp / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[tool.flower.sessions]\nbackend = "jsonfs"\n')
    place = FleetPlace(f"sqlite:///{in_tmp / 'fleet.sqlite'}", in_tmp, 30.0, 0.1, 1)
    said: list[str] = []
    result = Worker(place, "w1", say=said.append).run_task("t1", {"workspace": str(ws)})
    assert result["ok"] is False
    assert "the jsonfs session store cannot guarantee one writer per session" in result["why"]
    assert said == [f"task t1: {result['why']}"]
    assert not (ws / "runs").exists()
