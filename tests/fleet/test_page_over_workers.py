"""``flower ui``'s fleet page over a real fleet (issue 31): a worker process runs a task
on the scripted API, and the page's JSON and HTML show it running on its host at its
step with its session, then done with its cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import HoldingModel, Workers, run, wait_for

from flower.core.config import load_settings
from flower.core.keys import project_key

pytest.importorskip("starlette")  # the ui extra: installed with the dev extras


def _client(root: Path) -> Any:
    from starlette.testclient import TestClient

    from flower.ui.app import Viewer, build_app

    settings = load_settings(cwd=root, environ={}).settings
    viewer = Viewer(settings, lambda: None, "sessions", workspace=root)
    return TestClient(build_app(viewer, language="en"))


def test_the_fleet_page_shows_a_running_task_and_then_its_end(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    model.quick = False
    model.hold_worker = True  # the work step waits at its second request
    ws = root / "ws"
    ws.mkdir()
    done = run(root, env, "fleet", "submit", str(ws), model.script.request, "--id", "k0")
    assert done.returncode == 0, done.stderr
    client = _client(root)
    queued = client.get("/fleet.json").json()
    assert [(t["id"], t["state"]) for t in queued["tasks"]] == [("k0", "queued")]
    workers.start("a")
    wait_for(lambda: model.held >= 1, 90, "the wake never reached its work")
    report = client.get("/fleet.json").json()
    (task,) = report["tasks"]
    lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
    assert task["state"] == "running" and task["host"]
    assert task["step"] == "work"  # the step it is on: the last its lineage recorded
    assert task["sessions"]["work"] == lineage["steps"]["work"]
    assert task["project"] == project_key(ws)
    assert task["requests"] >= 3  # brief, goals and the work's first, drawn from the budget
    shown = run(root, env, "fleet", "status")
    assert f"k0  running on {task['host']} · step work, wake 1 · " in shown.stdout
    status = json.loads(run(root, env, "fleet", "status", "--json").stdout)
    assert status["tasks"][0]["step"] == "work"
    assert status["tasks"][0]["sessions"]["work"] == lineage["steps"]["work"]
    page = client.get("/fleet").text
    running = page[page.index('data-state="running"') :]
    assert 'data-task="k0"' in running and f'<td class="host">{task["host"]}</td>' in running
    session = lineage["steps"]["work"]
    assert f'href="/s/{task["project"]}/{session}"' in page
    model.release()
    wait_for(
        lambda: client.get("/fleet.json").json()["tasks"][0]["state"] == "done",
        120,
        "the task never finished",
    )
    (task,) = client.get("/fleet.json").json()["tasks"]
    assert task["woke"] == 1 and task["cost_usd"] is not None
    assert task["sessions"] == json.loads((ws / "runs" / "lineage.json").read_text())["steps"]
    page = client.get("/fleet").text
    assert 'data-state="done"' in page and 'data-state="running"' not in page
