"""A dead worker's tasks are carried on by another, in the same sessions; a paused worker
that comes back after the takeover writes nothing (one writer per session)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fleet_helpers import (
    BOTH,
    HoldingModel,
    Workers,
    fleet_status,
    run,
    states,
    submit,
    transcript,
    wait_for,
    work_session,
    work_step,
)
from own_postgres import OwnPostgres

from flower.core.i18n import language
from flower.core.keys import project_key
from flower.core.lease import LEASE_VARIABLE, PROJECT_VARIABLE
from flower.core.records import SessionKey
from flower.fleet.places import workspace_settings
from flower.stores.open import open_session_store
from flower.workflow.clarify import clarifier, goal_setter


@BOTH
def test_a_killed_workers_tasks_finish_elsewhere_in_the_same_sessions(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    model.quick = False
    model.hold_worker = True
    spaces = {f"k{i}": root / f"ws{i}" for i in range(2)}
    workers.start("a")
    for task_id, ws in spaces.items():
        submit(root, env, ws, task_id, model.script.request)
    wait_for(lambda: model.held >= 2, 90, "the wakes never reached their work")
    sessions = {task_id: work_session(ws) for task_id, ws in spaces.items()}
    workers.start("b")
    workers.signal("a", signal.SIGKILL)
    model.release()
    wait_for(lambda: set(states(root).values()) == {"done"}, 90, "the tasks never finished")
    for task_id, ws in spaces.items():
        assert work_session(ws) == sessions[task_id]  # the same conversation, carried on
        log = (ws / "runs" / "fleet" / f"{task_id}.log").read_text(encoding="utf-8")
        assert "taken over from" in log
    assert "took over the tasks of a" in workers.output("b")
    # no stored answer was asked for again: the brief and the goals were not re-run,
    # and each work step's requests are its five, plus the one cut off by the kill
    with language("en"):
        assert model.requests_of(clarifier().instructions) == 2
        assert model.requests_of(goal_setter().instructions) == 2
    assert model.worker_requests() == [0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4]


@BOTH
def test_a_paused_worker_back_after_the_takeover_writes_nothing(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    model.quick = False
    model.hold_worker = True
    ws = root / "ws"
    workers.start("a")
    submit(root, env, ws, "z", model.script.request)
    wait_for(lambda: model.held >= 1, 90, "the wake never reached its work")
    sid = work_session(ws)
    workers.start("b")
    # the worker and its wake, frozen
    workers.freeze("a", [root / "runs" / "fleet.sqlite", ws / "runs" / "sessions.db"])
    frozen = _run_files(ws)
    model.hold_worker = False  # later requests pass; the zombie's stays held
    # the taker holds the lease now, and waits for the frozen wake's run lock
    wait_for(lambda: "waiting for it" in workers.output("b"), 60, "no takeover")
    workers.signal("a", signal.SIGCONT)
    model.release()  # the zombie's wake gets its answer and tries to store it
    assert workers.procs["a"].wait(timeout=60) == 75
    assert "this worker was taken over" in workers.output("a")
    log = (ws / "runs" / "fleet" / "z.log").read_text(encoding="utf-8")
    assert "lost the fleet lease" in log
    wait_for(lambda: states(root) == {"z": "done"}, 90, "the taken-over task never finished")
    chain = transcript(ws, sid, env)
    parents = [e.get("parentUuid") for e in chain if e.get("uuid")]
    assert len(parents) == len(set(parents))  # one chain: no entry of the zombie's beside it
    assert work_session(ws) == sid
    # nor did it write the run directory after it came back: its manifest rows are the
    # ones it wrote before it froze, and the taker's wake counted the second wake
    zombie_run = frozen["manifest"][0]["run"]
    after = _run_files(ws)
    assert [r for r in after["manifest"] if r["run"] == zombie_run] == frozen["manifest"]
    assert after["lineage"]["woke"] == 2


def _run_files(ws: Path) -> dict[str, Any]:
    from flower.core.manifest import read_manifest

    lineage = json.loads((ws / "runs" / "lineage.json").read_text(encoding="utf-8"))
    return {"manifest": read_manifest(ws / "runs"), "lineage": lineage}


@BOTH
def test_a_wake_whose_lease_was_taken_over_writes_nothing(
    root: Path, env: dict[str, str], model: HoldingModel
) -> None:
    """The first write of a wake that lost its lease is refused wherever it goes: here
    its lineage (the wake count) comes before any append, and lineage.json, the
    manifest, said.json and the sessions stay as they were."""
    ws = root / "ws"
    ws.mkdir()
    if "FLOWER_SESSIONS_URL" in env:  # many hosts: a new Postgres database
        assert run(ws, env, "db", "upgrade").returncode == 0
    first = run(ws, env, "run", model.script.request, "--yes")
    assert first.returncode == 0, first.stderr
    before = _snapshot(ws, env)
    settings = _settings(ws, env)
    store = open_session_store(settings=settings)
    try:  # a worker took the lease (token 1), then another took it over (token 2)
        project = project_key(ws)
        assert store.take_lease(project, "w1", 0.0) == (1, None)
        assert store.take_lease(project, "w2", 60.0) == (2, "w1")
    finally:
        store.close()
    stale = {**env, LEASE_VARIABLE: "1", PROJECT_VARIABLE: project}
    again = run(ws, stale, "run", "--yes")
    assert again.returncode == 75, again.stderr
    assert "lost the fleet lease" in again.stderr
    assert _snapshot(ws, env) == before


def _settings(ws: Path, env: dict[str, str]) -> Any:
    settings = workspace_settings(ws)
    if "FLOWER_SESSIONS_URL" in env:
        sessions = msgspec.structs.replace(settings.sessions, url=env["FLOWER_SESSIONS_URL"])
        settings = msgspec.structs.replace(settings, sessions=sessions)
    return settings


def _snapshot(ws: Path, env: dict[str, str]) -> dict[str, Any]:
    """The run directory's files (but the sessions database) and every stored entry."""
    files = {
        str(p.relative_to(ws)): p.read_bytes()
        for p in sorted((ws / "runs").rglob("*"))
        if p.is_file() and not p.name.startswith("sessions.db") and not p.name.endswith(".lock")
    }
    store = open_session_store(settings=_settings(ws, env))
    try:
        project = project_key(ws)
        entries = {
            info.session_id: store.load(SessionKey(project, info.session_id))
            for info in store.list_sessions(project)
        }
    finally:
        store.close()
    return {"files": files, "entries": entries}


def test_ctrl_c_on_a_worker_hands_its_wakes_to_the_others_at_once(
    root: Path, env: dict[str, str], workers: Workers, model: HoldingModel
) -> None:
    model.quick = False
    model.hold_worker = True
    ws = root / "ws"
    workers.start("a")
    submit(root, env, ws, "c", model.script.request)
    wait_for(lambda: model.held >= 1, 90, "the wake never reached its work")
    sid = work_session(ws)
    # flower fleet status: the step the running task is in, and its wake
    [row] = fleet_status(root)
    assert (row["state"], row["step"], row["wake"]) == ("running", work_step(ws), 1)
    shown = run(root, env, "fleet", "status")
    assert shown.returncode == 0 and ", wake 1" in shown.stdout
    workers.start("b")
    workers.signal("a", signal.SIGINT)  # Ctrl-C on its terminal: the worker and its wake
    assert workers.procs["a"].wait(timeout=60) == 0
    assert "its unfinished tasks (1) go on with the other workers" in workers.output("a")
    model.release()
    wait_for(lambda: states(root) == {"c": "done"}, 90, "the task never finished")
    assert work_session(ws) == sid
    assert "took over the tasks of a" in workers.output("b")


@pytest.mark.parametrize("sessions", ["workspace", "postgres"])
def test_a_postgres_restart_during_a_takeover_finishes_every_task(
    root: Path,
    env: dict[str, str],
    workers: Workers,
    model: HoldingModel,
    own_postgres: OwnPostgres,
    sessions: str,
) -> None:
    """DBOS #716: workflows left PENDING when Postgres restarts during recovery. The
    fleet's claim of a dead worker stays with the claimer, which hands its tasks back
    until none is left, a task left PENDING on a live worker that runs nowhere in it is
    queued again, and a step whose database is cut waits for it instead of failing:
    every task finishes."""
    config = root / "pyproject.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + f'database = "{own_postgres.url}"\n',
        encoding="utf-8",
    )
    if sessions == "postgres":  # many hosts: the conversations on the same server
        env["FLOWER_SESSIONS_URL"] = own_postgres.url
    model.quick = False
    model.hold_worker = True
    spaces = {f"r{i}": root / f"ws{i}" for i in range(2)}
    workers.start("a")
    for task_id, ws in spaces.items():
        submit(root, env, ws, task_id, model.script.request)
    wait_for(lambda: model.held >= 2, 90, "the wakes never reached their work")
    workers.start("b")
    workers.signal("a", signal.SIGKILL)
    model.release()
    # the takeover starts once a's heartbeat is TAKEOVER_AFTER old: restart right then
    wait_for(lambda: "took over" in workers.output("b"), 60, "no takeover began")
    own_postgres.restart()
    # every task is carried on to its end: a database cut under the worker's own calls,
    # or under a step's session store, is waited out, never kept by DBOS as the task's end
    ended = wait_for(
        lambda: (got := states(root)) and set(got.values()) <= {"done", "failed"} and got,
        120,
        "a task stayed pending",
    )
    assert set(ended.values()) == {"done"}, fleet_status(root)
