"""Where the fleet is: its database, its workspaces root, and a task's workspace.

No DBOS here: these are plain checks on settings and paths, shared by the commands
that only submit or read and by the worker.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from flower.core.config import FleetLimits, Settings, load_settings, sqlite_file
from flower.core.errors import FlowerError
from flower.core.i18n import _


class FleetError(FlowerError):
    """Bad input to a fleet command: the task is not submitted, nothing changes."""

    exit_code = 2


class FleetExtraMissingError(FlowerError):
    """The ``fleet`` extra (DBOS Transact) is not installed."""

    exit_code = 2


class UnknownTaskError(FleetError):
    """A task id the fleet does not hold."""


@dataclass(frozen=True)
class FleetPlace:
    """``[tool.flower.fleet]`` resolved against the directory the command runs in."""

    database: str
    workspaces: Path
    takeover_after: float
    heartbeat: float
    concurrency: int
    limits: FleetLimits = field(default_factory=FleetLimits)
    """The shared budget of model calls (flower.fleet.budget)."""

    @property
    def is_sqlite(self) -> bool:
        return self.database.startswith("sqlite")

    @classmethod
    def from_settings(cls, settings: Settings, cwd: Path | None = None) -> FleetPlace:
        here = (cwd or Path.cwd()).resolve()
        conf = settings.fleet
        database = conf.database or f"sqlite:///{settings.run_path / 'fleet.sqlite'}"
        file = sqlite_file(database)
        if file is not None:
            file = file if file.is_absolute() else here / file
            file.parent.mkdir(parents=True, exist_ok=True)
            database = f"sqlite:///{file}"
        root = Path(conf.workspaces).expanduser() if conf.workspaces else here
        root = (root if root.is_absolute() else here / root).resolve()
        return cls(
            database=database,
            workspaces=root,
            takeover_after=conf.takeover_after,
            heartbeat=min(conf.heartbeat, conf.takeover_after / 3),
            concurrency=conf.concurrency,
            limits=conf.limits,
        )

    def workspace(self, path: str | Path) -> Path:
        """``path`` as a task's workspace: an existing directory under the root."""
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_relative_to(self.workspaces):
            raise FleetError(
                _(
                    "{path} is outside the fleet's workspaces root {root}: every worker "
                    "must reach a task's workspace, so put it under the root or set "
                    "[tool.flower.fleet] workspaces"
                ).format(path=resolved, root=self.workspaces)
            )
        if not resolved.is_dir():
            raise FleetError(_("{path} is not a directory").format(path=resolved))
        return resolved


def fleet_place(settings: Settings, cwd: Path | None = None) -> FleetPlace:
    """The fleet of ``settings`` (:meth:`FleetPlace.from_settings`), once the ``fleet``
    extra is known to be there: without DBOS Transact a
    :class:`FleetExtraMissingError` says how to install it, before any file is made."""
    try:
        import dbos  # noqa: F401
    except ImportError:
        raise FleetExtraMissingError(
            _("flower fleet needs DBOS Transact: pip install 'flower[fleet]'")
        ) from None
    return FleetPlace.from_settings(settings, cwd)


def workspace_settings(workspace: Path) -> Settings:
    """The settings a wake in ``workspace`` runs with, its relative paths made absolute
    (a ``flower`` run there resolves them against the workspace), and ``language`` the
    one such a run speaks (the workspace's, else ``FLOWER_LANG`` or the locale)."""
    loaded = load_settings(cwd=workspace)
    settings = loaded.settings
    run_dir = Path(settings.run_dir)
    sessions = settings.sessions
    file = sqlite_file(settings.sessions_url())
    if file is not None and not file.is_absolute():
        sessions = msgspec.structs.replace(sessions, url=f"sqlite:///{workspace / file}")
    return msgspec.structs.replace(
        settings,
        language=loaded.language,
        run_dir=str(run_dir if run_dir.is_absolute() else workspace / run_dir),
        sessions=sessions,
    )


def check_workflow(target: str, workspace: Path) -> None:
    """``module:function`` names a callable the workers can import (the workspace is on
    the import path, as it is for the wake): a bad one fails the submit, not a worker."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise FleetError(
            _(
                "--workflow takes module:function (a function returning a Workflow), not {target}"
            ).format(target=target)
        )
    sys.path.insert(0, str(workspace))
    try:
        module = importlib.import_module(module_name)
        found = getattr(module, attribute)
    except Exception as exc:
        raise FleetError(
            _("--workflow {target} cannot be imported: {error}").format(
                target=target, error=f"{type(exc).__name__}: {exc}"
            )
        ) from None
    finally:
        sys.path.remove(str(workspace))
    if not callable(found) or inspect.isclass(found):
        raise FleetError(
            _("--workflow {target} is not a function returning a Workflow").format(target=target)
        )


def _said_purpose(task_id: str) -> str:
    # the sealed words are bound to their task: moved onto another task, they do not open
    return f"fleet task {task_id}"


def seal_said(said: str | None, task_id: str, settings: Settings) -> Any:
    """The words a task keeps in DBOS's database (its workflow input). With the
    workspace's session store encrypted they are sealed with its keyring, as lineage and
    the said journal are (a missing key fails the submit); otherwise the words."""
    if said is None:
        return None
    from flower.stores.encrypt import file_sealer

    sealer = file_sealer(settings)
    return said if sealer is None else sealer.seal(said, _said_purpose(task_id))


def said_of(task: Mapping[str, Any], task_id: str, settings: Settings) -> str | None:
    """The words ``task`` says, opened with the workspace's keyring when they are sealed
    (also when encryption was turned off since the submit: the key is still needed)."""
    value = task.get("said")
    from flower.stores.encrypt import FileSealer

    if not FileSealer.is_sealed(value):
        return value if isinstance(value, str) else None
    from flower.stores.keyring import load_keyring

    opened = FileSealer(load_keyring(settings)).open(value, _said_purpose(task_id))
    return opened if isinstance(opened, str) else None


__all__ = [
    "FleetError",
    "FleetExtraMissingError",
    "FleetPlace",
    "UnknownTaskError",
    "check_workflow",
    "fleet_place",
    "said_of",
    "seal_said",
    "workspace_settings",
]
