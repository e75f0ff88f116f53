"""Submit, list, cancel and resume fleet tasks, from any process (DBOS's client: no
worker runs here). The Python face of ``flower fleet submit|status|cancel|resume``."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower.core.i18n import _
from flower.fleet import engine
from flower.fleet.board import Board
from flower.fleet.places import (
    FleetError,
    FleetPlace,
    UnknownTaskError,
    check_workflow,
    said_of,
    seal_said,
    workspace_settings,
)
from flower.fleet.worker import task_log

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowStatus

DEFAULT_PRIORITY = 1000
"""A task's place in the queue without ``--priority``: lower goes first, ties by age."""
MAX_PRIORITY = 2**31 - 1
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class Fleet:
    """The fleet in ``place``'s database (created on first use)."""

    def __init__(self, place: FleetPlace) -> None:
        self.place = place
        engine.migrate(place.database)
        self.client = engine.client(place.database)
        self.client.register_queue(
            engine.QUEUE,
            worker_concurrency=place.concurrency,
            polling_interval_sec=engine.QUEUE_POLL,
            on_conflict="never_update",
            application_name=engine.APP_NAME,
        )
        self._board: Board | None = None

    def close(self) -> None:
        self.client.destroy()
        if self._board is not None:
            self._board.close()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def board(self) -> Board:
        if self._board is None:
            self._board = Board(self.place.database)
        return self._board

    # -- submit --------------------------------------------------------------------

    def submit(
        self,
        workspace: str | Path,
        said: str | None = None,
        *,
        task_id: str | None = None,
        workflow: str | None = None,
        priority: int | None = None,
    ) -> tuple[str, bool]:
        """Queue one wake of ``workspace``; ``(task id, whether it existed already)``.
        The same id twice is one task: the second submit returns the first."""
        path = self.place.workspace(workspace)
        if task_id is not None and not TASK_ID.match(task_id):
            raise FleetError(
                _("task id {id}: use letters, digits, '.', '_' and '-' (at most 128)").format(
                    id=repr(task_id)
                )
            )
        settings = workspace_settings(path)
        if settings.sessions.backend == "jsonfs":
            raise FleetError(
                _(
                    "{path} keeps its sessions in the jsonfs store, which cannot guarantee one "
                    "writer per session: the fleet needs sqlite (one machine) or postgres"
                ).format(path=path)
            )
        if priority is not None and not 1 <= priority <= MAX_PRIORITY:
            raise FleetError(
                _("--priority takes 1 (first) to {most}, not {value}").format(
                    most=MAX_PRIORITY, value=priority
                )
            )
        if workflow is not None:
            check_workflow(workflow, path)
        task_id = task_id or f"task-{uuid.uuid4().hex[:12]}"
        if self._find(task_id) is not None:
            return task_id, True
        # DBOS keeps the task (its workflow input) in its database: the words go sealed
        # when the workspace's sessions are encrypted
        task = {
            "workspace": str(path),
            "said": seal_said(said, task_id, settings),
            "workflow": workflow,
            "at": time.time(),
        }
        self.client.enqueue(
            {
                "queue_name": engine.QUEUE,
                "workflow_name": engine.WORKFLOW,
                "workflow_id": task_id,
                "app_version": engine.APP_VERSION,
                # DBOS takes a queue's tasks by priority (lowest first), then by age
                "priority": DEFAULT_PRIORITY if priority is None else priority,
            },
            task,
        )
        return task_id, False

    # -- read ----------------------------------------------------------------------

    def _find(self, task_id: str) -> WorkflowStatus | None:
        found = self.client.list_workflows(workflow_ids=[task_id], load_output=False)
        return found[0] if found else None

    def get(self, task_id: str) -> WorkflowStatus:
        found = self._find(task_id)
        if found is None:
            raise UnknownTaskError(_("no fleet task {id}").format(id=task_id))
        return found

    def status(self) -> list[dict[str, Any]]:
        """Every task, oldest first: its state and what is known about it."""
        return task_rows(self.client, self.board)

    # -- control -------------------------------------------------------------------

    def cancel(self, task_id: str) -> None:
        self.get(task_id)
        self.client.cancel_workflow(task_id)

    def resume(self, task_id: str) -> None:
        """Queue a cancelled (or stuck) task again; a finished one stays finished."""
        found = self.get(task_id)
        if found.status in ("SUCCESS", "ERROR"):
            raise FleetError(
                _(
                    "task {id} has finished: submit the workspace again (with a new id) to "
                    "wake it once more"
                ).format(id=task_id)
            )
        self.client.resume_workflow(task_id)


def task_rows(client: DBOSClient, board: Board) -> list[dict[str, Any]]:
    """Every task in the fleet ``client`` reads, oldest first, its host from ``board``."""
    hosts = {row.executor_id: row for row in board.rows()}
    rows = []
    for wf in client.list_workflows(name=engine.WORKFLOW):
        row = _row(wf, hosts)
        if row["state"] == "running":
            row.update(_step_of(client, wf.workflow_id))
        rows.append(row)
    return rows


def _step_of(client: DBOSClient, task_id: str) -> dict[str, Any]:
    """The step a running task is in and its wake (what its worker set last)."""
    try:
        found = client.get_event(task_id, engine.STEP_EVENT, timeout_seconds=0)
    except Exception:  # an event unreadable now: the rest of the row still shows
        found = None
    if not isinstance(found, dict):
        return {}
    return {"step": found.get("step"), "wake": found.get("wake")}


def _said_shown(task: dict[str, Any], task_id: str) -> str | None:
    """The task's words, opened when they are sealed and this process holds the key
    (else None: status never fails on a task it cannot open)."""
    workspace = task.get("workspace")
    if isinstance(task.get("said"), str) or not workspace:
        return task.get("said")
    try:
        return said_of(task, task_id, workspace_settings(Path(workspace)))
    except Exception:
        return None


def enqueued_task(wf: WorkflowStatus) -> dict[str, Any]:
    """The task ``wf`` was enqueued with (its workflow's first argument); {} when its
    input holds none."""
    args = wf.input.get("args") if wf.input else None
    return args[0] if args and isinstance(args[0], dict) else {}


def _row(wf: WorkflowStatus, hosts: dict[str, Any]) -> dict[str, Any]:
    task = enqueued_task(wf)
    output = wf.output if isinstance(wf.output, dict) else {}
    state = {
        "ENQUEUED": "queued",
        "PENDING": "running",
        "SUCCESS": "done" if output.get("ok") else "failed",
        "ERROR": "failed",
        "CANCELLED": "cancelled",
    }.get(str(wf.status), str(wf.status).lower())
    worker = hosts.get(wf.executor_id or "")
    why = output.get("why") if state == "failed" else None
    if str(wf.status) == "ERROR" and wf.error is not None:
        why = str(wf.error)
    workspace = task.get("workspace")
    activity = None
    if workspace and state == "running":
        log = task_log(Path(workspace), "runs", wf.workflow_id)
        if log.exists():
            activity = log.stat().st_mtime
    return {
        "id": wf.workflow_id,
        "state": state,
        "workspace": workspace,
        "said": _said_shown(task, wf.workflow_id),
        "workflow": task.get("workflow"),
        "host": worker.host if worker else None,
        "worker": wf.executor_id if state == "running" else None,
        "step": None,
        "wake": None,
        "woke": output.get("woke"),
        "cost_usd": output.get("cost_usd"),
        "sessions": output.get("sessions") or {},
        "why": why,
        "created_ms": wf.created_at,
        "updated_ms": wf.updated_at,
        "last_activity": activity,
    }


__all__ = ["DEFAULT_PRIORITY", "MAX_PRIORITY", "TASK_ID", "Fleet", "enqueued_task", "task_rows"]
