"""DBOS Transact as the fleet's engine: its configuration, the task workflow, the client.

The application version is pinned (:data:`APP_VERSION`), not DBOS's hash of the code:
a flower or dbos upgrade then neither strands in-flight tasks nor lets a worker pick
up a task whose shape it does not know (the version changes only with that shape).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig

APP_NAME = "flower-fleet"
APP_VERSION = "flower-fleet-1"
"""Bumped only when a task's input or result changes shape (see docs/fleet.md)."""
QUEUE = "flower-fleet"
WORKFLOW = "flower.fleet.task"
STEP = "wake"
QUEUE_POLL = 0.5
"""Seconds between a worker's looks at the queue (DBOS's default is 1)."""

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


def register(run_step: Callable[[str, dict[str, Any]], dict[str, Any]], active: set[str]) -> None:
    """Declare the task workflow: one DBOS step, the wake, whose small result (never
    the transcript) DBOS keeps; a finished wake is never run again. ``active`` holds
    the ids of the tasks whose workflow function is running in this process."""

    def wake(task: dict[str, Any]) -> dict[str, Any]:
        task_id = DBOS.workflow_id
        assert task_id is not None
        return run_step(task_id, task)

    step = DBOS.step(name=STEP)(wake)

    def task(task: dict[str, Any]) -> dict[str, Any]:
        task_id = DBOS.workflow_id
        assert task_id is not None
        active.add(task_id)
        try:
            return step(task)
        finally:
            active.discard(task_id)

    _registered["workflow"] = DBOS.workflow(name=WORKFLOW)(task)


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
    "WORKFLOW",
    "client",
    "hand_back",
    "launch",
    "migrate",
    "pending_of",
    "register",
    "status_of",
]
