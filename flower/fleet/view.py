"""What ``flower ui``'s fleet page reads: the tasks and the shared budget, read through
the fleet's own API (:func:`flower.fleet.tasks.task_rows`, :class:`Board`,
:class:`~flower.fleet.budget.Budget`), never written; and how ``flower fleet status``
says them (:func:`task_said`, :func:`budget_said`).

Unlike :class:`~flower.fleet.tasks.Fleet` it migrates nothing and registers no queue:
a fleet database that does not exist yet is said (:class:`NoFleetError`), not created,
and one that cannot be reached is an error at once rather than a wait (a page must
answer). Without the ``fleet`` extra it says the one command that installs it.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path
from typing import Any

from flower.core.config import Settings, sqlite_file
from flower.core.errors import FlowerError
from flower.core.i18n import N_, _
from flower.core.keys import project_key
from flower.core.redact import redact_text

NO_EXTRA = N_("the fleet page needs the fleet extra: pip install 'flower[fleet]'")
NO_DATABASE = N_(
    "no fleet here yet: {database} does not exist (flower fleet submit or flower fleet "
    "worker in this directory creates it)"
)
NO_TABLES = N_("no fleet here yet: {database} holds no fleet tasks")
UNREACHABLE = N_("the fleet's database {database} cannot be read: {error}")
STATES = ("running", "queued", "failed", "done", "cancelled")
"""The order the page shows the tasks in, by state."""


class NoFleetError(FlowerError):
    """There is no fleet to show (no extra, no database yet): not a fault of the viewer.
    ``message`` is the English msgid, ``fields`` what fills it (the page translates)."""

    def __init__(self, message: str, **fields: str) -> None:
        super().__init__(message.format(**fields))
        self.message = message
        self.fields = fields


class FleetReadError(NoFleetError):
    """The fleet's database is there but cannot be read now (down, refused)."""


class FleetView:
    """The fleet of ``settings`` (``[tool.flower.fleet]``, resolved against ``cwd``),
    read-only; opened on first :meth:`report`, again after a failure."""

    def __init__(self, settings: Settings, cwd: Path | None = None) -> None:
        self.settings = settings
        self.cwd = (cwd or Path.cwd()).resolve()
        self.lock = threading.Lock()
        self._client: Any = None
        self._board: Any = None
        self.database = self._database()

    def _database(self) -> str:
        """The fleet's database URL as :class:`FleetPlace` resolves it (no folder made)."""
        conf = self.settings.fleet
        database = conf.database or f"sqlite:///{self.settings.run_path / 'fleet.sqlite'}"
        file = sqlite_file(database)
        if file is not None:
            file = file if file.is_absolute() else self.cwd / file
            database = f"sqlite:///{file}"
        return database

    @property
    def shown_database(self) -> str:
        return redact_text(self.database)

    def _open(self) -> None:
        if self._client is not None:
            return
        if importlib.util.find_spec("dbos") is None:
            raise NoFleetError(NO_EXTRA)
        file = sqlite_file(self.database)
        if file is not None and not file.exists():
            raise NoFleetError(NO_DATABASE, database=str(file))
        from dbos import DBOSClient

        from flower.fleet import engine
        from flower.fleet.board import Board

        try:
            client = DBOSClient(
                system_database_url=self.database,
                application_name=engine.APP_NAME,
                retry_connection_errors=False,  # a page answers: no waiting for the database
            )
        except Exception as exc:
            raise self._unreachable(exc) from None
        try:
            board = Board(self.database)
        except Exception as exc:
            client.destroy()
            raise self._unreachable(exc) from None
        self._client, self._board = client, board

    def _unreachable(self, exc: BaseException) -> FleetReadError:
        from flower.core.resilience import describe

        return FleetReadError(UNREACHABLE, database=self.shown_database, error=describe(exc))

    def close(self) -> None:
        with self.lock:
            self._drop()

    def _drop(self) -> None:
        if self._client is not None:
            self._client.destroy()
        if self._board is not None:
            self._board.close()
        self._client = self._board = None

    def report(self) -> dict[str, Any]:
        """``flower fleet status --json``'s report (tasks, totals, budget), each task
        with its ``step`` and ``sessions`` from its workspace's lineage and its session
        store's ``project``, and ``per_minute``: the budget's use over the last minute."""
        import sqlalchemy as sa

        from flower.fleet.budget import Budget, fleet_report
        from flower.fleet.tasks import task_rows

        with self.lock:
            self._open()
            try:
                rows = task_rows(self._client, self._board)
                report = fleet_report(self.database, rows)
                budget = Budget(self.database, "status")
                try:
                    report["per_minute"] = budget.per_minute()
                finally:
                    budget.close()
            except (sa.exc.OperationalError, sa.exc.ProgrammingError) as exc:
                self._drop()  # opened again on the next report
                if _no_tables(exc):
                    raise NoFleetError(NO_TABLES, database=self.shown_database) from None
                raise self._unreachable(exc) from None
            except Exception as exc:
                self._drop()
                raise self._unreachable(exc) from None
        return with_progress(report)


def _no_tables(exc: BaseException) -> bool:
    """A query that met no table: Postgres says so by SQLSTATE 42P01 (undefined_table);
    SQLite has no codes for it, only its words."""
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if sqlstate:
        return bool(sqlstate == "42P01")
    return "no such table" in str(exc).lower()


def task_progress(row: dict[str, Any]) -> dict[str, Any]:
    """A task's step (what its worker said, else the last its workspace's lineage
    recorded: the one a running task is on) and its sessions by step, read-only;
    nothing more when the workspace is unreadable."""
    workspace = row.get("workspace")
    sessions: dict[str, str] = dict(row.get("sessions") or {})
    found: dict[str, Any] = {"step": row.get("step"), "sessions": sessions, "project": None}
    if not workspace:
        return found
    found["project"] = project_key(Path(workspace))
    if row.get("state") == "queued" or (sessions and row.get("state") != "running"):
        return found  # nothing yet, or what the finished wake reported
    from flower.fleet.places import workspace_settings
    from flower.stores.lineage import load_lineage

    path = Path(workspace)
    try:
        lineage = load_lineage(path, settings=workspace_settings(path))
    except (FlowerError, OSError, ValueError):
        return found
    steps = dict(lineage.steps) if lineage.found else {}
    if steps:
        found["step"] = found["step"] or list(steps)[-1]  # the worker's word first
        found["sessions"] = {**steps, **sessions}
    return found


def with_progress(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a :func:`~flower.fleet.budget.fleet_report`) with each task's
    :func:`task_progress` added to its row: its sessions (and step) from its lineage too."""
    for row in report["tasks"]:
        row.update(task_progress(row))
    return report


def task_said(row: dict[str, Any], now: float) -> str:
    """One task of a :func:`with_progress` report as ``flower fleet status`` says it, in
    the active language: its id, its state (running: where, its step and wake, a park,
    what it has spent, how long ago it was last active at ``now``) and its workspace."""
    state = row["state"]
    if state == "running":
        where = row["host"] or row["worker"] or "?"
        text = _("running on {host}").format(host=where)
        if row.get("step"):
            from flower.core.labels import shown_label

            text += " · " + _("step {step}, wake {wake}").format(
                step=shown_label(row["step"]), wake=row.get("wake") or "?"
            )
        if row.get("parked_until"):
            until = time.strftime("%H:%M:%S", time.localtime(row["parked_until"]))
            text += " · " + _("parked until {until}").format(until=until)
        if row.get("requests"):
            text += " · " + _("{n} tokens, ${cost:.4f} so far").format(
                n=row["input_tokens"] + row["output_tokens"], cost=row["cost_so_far_usd"]
            )
        if row["last_activity"]:
            ago = max(0, int(now - row["last_activity"]))
            text += " · " + _("last activity {n} s ago").format(n=ago)
    elif state == "queued":
        text = _("queued")
    elif state == "done":
        text = _("done (wake {woke}, ${cost:.4f})").format(
            woke=row["woke"], cost=row["cost_usd"] or 0
        )
    elif state == "failed":
        text = _("failed: {why}").format(why=row["why"] or "?")
    elif state == "cancelled":
        text = _("cancelled")
    else:
        text = state
    return f"{row['id']}  {text}  {row['workspace']}"


def budget_said(report: dict[str, Any]) -> list[str]:
    """The lines under ``flower fleet status``'s tasks, in the active language: the
    report's totals (when a request was made), the budget's last minute against its
    limits, and the park a 429 set, if any."""
    totals, budget = report["totals"], report["budget"]
    lines = []
    if totals["requests"]:
        lines.append(
            _(
                "total: {requests} requests, {input} input and {output} output tokens, ${cost:.4f}"
            ).format(
                requests=totals["requests"],
                input=totals["input_tokens"],
                output=totals["output_tokens"],
                cost=totals["cost_usd"],
            )
        )
    used, limits = budget["used_last_minute"], budget["effective"]
    parts = []
    for kind, word in (
        ("requests", _("requests")),
        ("input_tokens", _("input tokens")),
        ("output_tokens", _("output tokens")),
    ):
        limit = limits[kind]
        shown = f"{used[kind]}/{limit}" if limit else f"{used[kind]}"
        parts.append(f"{shown} {word}")
    lines.append(_("budget, last minute: {use}").format(use=", ".join(parts)))
    if budget["parked_until"]:
        until = time.strftime("%H:%M:%S", time.localtime(budget["parked_until"]))
        lines.append(_("parked until {until}: the API answered 429").format(until=until))
    return lines


def task_workspace(report: dict[str, Any], workspace: str) -> Path | None:
    """``workspace`` when it is a task's of ``report`` (the fleet page links to those)."""
    for row in report["tasks"]:
        if row.get("workspace") == workspace:
            return Path(workspace)
    return None


__all__ = [
    "NO_DATABASE",
    "NO_EXTRA",
    "NO_TABLES",
    "STATES",
    "FleetReadError",
    "FleetView",
    "NoFleetError",
    "budget_said",
    "task_progress",
    "task_said",
    "task_workspace",
    "with_progress",
]
