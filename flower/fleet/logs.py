"""``flower fleet logs ID``: a task's banner and step lines, as its worker's wake printed
them (``runs/fleet/<id>.log`` in the task's workspace, every wake of it appended)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flower.fleet.places import workspace_settings
from flower.fleet.tasks import enqueued_task
from flower.fleet.worker import task_log

if TYPE_CHECKING:
    from flower.fleet.tasks import Fleet


def log_of(fleet: Fleet, task_id: str) -> Path | None:
    """Where task ``task_id``'s wake writes (None before it first ran); unknown ids
    raise :class:`~flower.fleet.places.UnknownTaskError`."""
    task = enqueued_task(fleet.get(task_id))
    workspace = task.get("workspace")
    if not workspace:
        return None
    path = Path(workspace)
    log = task_log(path, workspace_settings(path).run_dir, task_id)
    return log if log.exists() else None


__all__ = ["log_of"]
