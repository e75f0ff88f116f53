"""DBOS Transact as the fleet's engine: its configuration, the task workflow, the client.

The application version is pinned (:data:`APP_VERSION`), not DBOS's hash of the code:
a flower or dbos upgrade then neither strands in-flight tasks nor lets a worker pick
up a task whose shape it does not know (the version changes only with that shape).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple

from dbos import DBOS, DBOSClient, DBOSConfig

APP_NAME = "flower-fleet"
APP_VERSION = "flower-fleet-3"
"""Bumped only when a task's input or result changes shape (see docs/fleet.md). 3: the
:data:`START` step keeps a token for the task's words too; 2: each flower step is a DBOS
step (1 had one step, the whole wake)."""
QUEUE = "flower-fleet"
WORKFLOW = "flower.fleet.task"
START = "start"
"""The task's first DBOS step: which worker first ran it (a later execution is a
takeover) and the token its words are said under (:func:`start`)."""
STEP_EVENT = "flower.step"
"""The DBOS event a running task sets before each step: ``{"step", "wake"}``."""
QUEUE_POLL = 0.2
"""Seconds between a worker's looks at the queue (DBOS's ``polling_interval_sec``,
default 1): a slot a task frees waits about half of it for the next task. A look costs
an idle worker about 2.5 ms of CPU (two reads of the fleet's database)."""

_registered: dict[str, Any] = {}


def migrate(url: str) -> None:
    """Create or upgrade DBOS's tables in the fleet's database (under its own lock). A
    SQLite file is put in WAL mode first, as DBOS's own tests do: under the default
    rollback journal every write blocks every reader of the file."""
    if url.startswith("sqlite:///"):
        import sqlite3

        connection = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
        finally:
            connection.close()
    DBOS.migrate(url)


def client(url: str) -> DBOSClient:
    return DBOSClient(system_database_url=url, application_name=APP_NAME)


def register(run_task: Callable[[str, dict[str, Any]], dict[str, Any]], active: set[str]) -> None:
    """Declare the task workflow. ``run_task(task id, task)`` runs the wake in this
    process, each flower step a DBOS step (:func:`step`), and returns the task's small
    result (never the transcript). ``active`` holds the ids of the tasks whose workflow
    function is running in this process."""

    def task(task: dict[str, Any]) -> dict[str, Any]:
        task_id = DBOS.workflow_id
        assert task_id is not None
        active.add(task_id)
        try:
            return run_task(task_id, task)
        finally:
            active.discard(task_id)

    _registered["workflow"] = DBOS.workflow(name=WORKFLOW)(task)


class Start(NamedTuple):
    """What the task's first step kept: the worker that first ran it, whether that is
    this execution, and the token of the task's words in the said journal."""

    executor: str
    first_run: bool
    said_token: str


def start(executor_id: str) -> Start:
    """The task's first step (kept, so every execution of the task reads the same): the
    worker that first ran it and a token for the task's words. Each execution passes the
    words on under that token; the said journal and lineage recognise it, so they land
    once even when the first run was killed before the journal held them."""
    ran: list[bool] = []

    def first() -> dict[str, str]:
        ran.append(True)
        return {"executor": executor_id, "said_token": f"fleet-{uuid.uuid4().hex}"}

    kept = DBOS.run_step({"name": START}, first)
    return Start(str(kept["executor"]), bool(ran), str(kept["said_token"]))


async def step(
    name: str, live: Callable[[], Coroutine[Any, Any, dict[str, Any]]], woke: int | None
) -> dict[str, Any]:
    """One flower step as a DBOS step named after it: ``live()`` runs it and its small
    outcome is kept; a step kept by an earlier execution of the task returns what it
    kept without running. The step and the wake are set as the task's
    :data:`STEP_EVENT` first, for ``flower fleet status``."""
    await DBOS.set_event_async(STEP_EVENT, {"step": name, "wake": woke})
    result: dict[str, Any] = await DBOS.run_step_async({"name": name}, live)
    return result


def launch(url: str, executor_id: str, concurrency: int) -> None:
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": url,
        "application_version": APP_VERSION,
        "executor_id": executor_id,
        "log_level": "WARNING",
        "enable_otlp": False,
    }
    DBOS(config=config)
    DBOS.launch()
    DBOS.register_queue(
        QUEUE,
        worker_concurrency=concurrency,
        polling_interval_sec=QUEUE_POLL,
        on_conflict="always_update",
    )


def pending_of(executor_id: str) -> list[str]:
    """The ids of the PENDING tasks DBOS has on ``executor_id``."""
    found = DBOS.list_workflows(
        status="PENDING",
        executor_id=executor_id,
        name=WORKFLOW,
        load_input=False,
        load_output=False,
    )
    return [w.workflow_id for w in found]


def hand_back(task_ids: list[str]) -> None:
    """Put tasks of a dead worker back on the fleet's queue (DBOS's public resume: the
    next worker re-runs the unfinished step; finished steps keep their results)."""
    for task_id in task_ids:
        DBOS.resume_workflow(task_id, queue_name=QUEUE)


def status_of(task_id: str) -> str | None:
    found = DBOS.get_workflow_status(task_id)
    return None if found is None else str(found.status)


__all__ = [
    "APP_NAME",
    "APP_VERSION",
    "QUEUE",
    "START",
    "STEP_EVENT",
    "WORKFLOW",
    "Start",
    "client",
    "hand_back",
    "launch",
    "migrate",
    "pending_of",
    "register",
    "start",
    "status_of",
    "step",
]
