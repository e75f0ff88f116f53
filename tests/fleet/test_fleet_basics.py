"""flower fleet on one machine and on Postgres: submit, run, status, cancel, bad input.

Real DBOS, real worker processes (distinct executor ids), the real ``flower`` wake
against the scripted Messages API on loopback.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import BOTH, HoldingModel, Workers, fleet_of, fleet_status, run, wait_for

from flower.fleet.places import FleetError, UnknownTaskError


def _status(root: Path, env: dict[str, str], cli: bool = False) -> dict[str, dict[str, Any]]:
    """Every task by id: from ``flower fleet status --json``, or (to poll) in process."""
    if cli:
        done = run(root, env, "fleet", "status", "--json")
        assert done.returncode == 0, done.stderr
        return {row["id"]: row for row in json.loads(done.stdout)["tasks"]}
    return {row["id"]: row for row in fleet_status(root)}


def _workspace(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir()
    return path


@BOTH
def test_tasks_run_once_each_on_the_workers(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    spaces = [_workspace(root, f"ws{i}") for i in range(3)]
    for i, ws in enumerate(spaces):
        done = run(root, env, "fleet", "submit", str(ws), model.script.request, "--id", f"t{i}")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"t{i}"
    again = run(root, env, "fleet", "submit", str(spaces[0]), "something else", "--id", "t0")
    assert again.returncode == 0 and again.stdout.strip() == "t0"
    assert _status(root, env, cli=True)["t0"]["state"] == "queued"
    workers.start_together("a", "b")
    rows = wait_for(
        lambda: (s := _status(root, env)) and all(r["state"] == "done" for r in s.values()) and s,
        90,
        "the tasks never finished",
    )
    assert sorted(rows) == ["t0", "t1", "t2"]
    for i, ws in enumerate(spaces):
        row = rows[f"t{i}"]
        assert row["woke"] == 1
        lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
        assert row["sessions"] == lineage["steps"]
    # t0 ran once, with the first text: each task's work step started once
    assert model.worker_requests().count(0) == 3


def test_submit_refuses_what_no_worker_could_run(
    root: Path, env: dict[str, str], english: None
) -> None:
    outside = root.parent / "elsewhere"
    outside.mkdir()
    done = run(root, env, "fleet", "submit", str(outside), "x")
    assert done.returncode == 2
    assert str(outside) in done.stderr and "[tool.flower.fleet] workspaces" in done.stderr
    done = run(root, env, "fleet", "cancel", "nope")
    assert done.returncode == 2 and "no fleet task nope" in done.stderr
    ws = _workspace(root, "ws")
    (ws / "flows.py").write_text("def make():\n    return None\n", encoding="utf-8")
    with fleet_of(root) as fleet:
        for target in ("no_such_module:make", "flows:absent", "flows"):
            with pytest.raises(FleetError) as refused:
                fleet.submit(ws, workflow=target)
            assert target in str(refused.value) and refused.value.exit_code == 2
        with pytest.raises(FleetError, match="task id"):
            fleet.submit(ws, "x", task_id="../etc")
        with pytest.raises(UnknownTaskError):
            fleet.resume("nope")
        assert fleet.submit(ws, workflow="flows:make", task_id="w") == ("w", False)
        assert [row["id"] for row in fleet.status()] == ["w"]
    (ws / "pyproject.toml").write_text('[tool.flower.sessions]\nbackend = "jsonfs"\n')
    with fleet_of(root) as fleet, pytest.raises(FleetError, match="jsonfs"):
        fleet.submit(ws, "x")


def test_a_cancelled_task_never_runs_and_resume_queues_it(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    ws = _workspace(root, "ws")
    assert run(root, env, "fleet", "submit", str(ws), "hi", "--id", "c").returncode == 0
    assert run(root, env, "fleet", "cancel", "c").returncode == 0
    workers.start("a")
    assert _status(root, env)["c"]["state"] == "cancelled"
    assert run(root, env, "fleet", "resume", "c").returncode == 0
    wait_for(lambda: _status(root, env)["c"]["state"] == "done", 60, "never resumed")


@BOTH
def test_the_same_id_from_two_processes_at_once_is_one_task(
    root: Path, env: dict[str, str]
) -> None:
    ws = _workspace(root, "ws")
    assert run(root, env, "fleet", "status").returncode == 0  # the database exists
    results: list[str] = []

    def submit() -> None:
        done = run(root, env, "fleet", "submit", str(ws), "hi", "--id", "same")
        results.append(done.stdout.strip() if done.returncode == 0 else done.stderr)

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["same", "same"]
    assert list(_status(root, env)) == ["same"]


FLOWS = """
from flower import AgentSpec, Step, Workflow

terse = AgentSpec(name="terse", instructions="Answer in one line, flows-7c2e.", max_turns=2)


def nightly(said):
    return Workflow([Step("report", terse, "Report on: " + (said or "nothing"))])
"""


def test_a_users_own_workflow_runs_on_a_worker(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    """``--workflow module:function``: the worker imports it from the workspace, gives
    it what the task says, and runs it there with lineage like any wake."""
    ws = _workspace(root, "ws")
    (ws / "flows.py").write_text(FLOWS, encoding="utf-8")
    said = "the nightly numbers"
    done = run(
        root, env, "fleet", "submit", str(ws), said, "--workflow", "flows:nightly", "--id", "u"
    )
    assert done.returncode == 0, done.stderr
    workers.start("a")
    rows = wait_for(
        lambda: (s := _status(root, env)) and s["u"]["state"] in ("done", "failed") and s,
        90,
        "the task never ended",
    )
    row = rows["u"]
    assert row["state"] == "done", row["why"]
    assert row["workflow"] == "flows:nightly" and row["woke"] == 1
    lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
    assert lineage["woke"] == 1 and row["sessions"] == lineage["steps"] == {
        "report": row["sessions"]["report"]
    }
    asked = [
        r
        for r in model.seen
        if "flows-7c2e" in json.dumps(r.body.get("system"), ensure_ascii=False)
    ]
    assert len(asked) == 1  # its one step, once, with the words the task said
    assert "Report on: the nightly numbers" in json.dumps(asked[0].messages, ensure_ascii=False)
