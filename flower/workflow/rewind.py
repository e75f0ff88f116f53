"""Finish a rewind a crash cut short, before a workflow loads its lineage."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.rewind import finish_pending, pending
from flower.stores.lineage import load_lineage

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.rewind import RewindPlan


def finish_rewind(
    workspace: str | os.PathLike[str],
    store: SessionStoreBase,
    *,
    settings: Settings,
    run_dir: str | os.PathLike[str],
) -> RewindPlan | None:
    """Carry out the plan of a rewind ``run_dir`` still holds (under its lock), so a
    wake resumes the fork the rewind chose; returns that plan, or None."""
    run_path = Path(run_dir)
    if pending(run_path) is None:
        return None
    lineage = load_lineage(workspace, settings=settings, run_dir=run_path)
    return finish_pending(lineage, store, run_path)


def finish_pending_rewind(
    settings: Settings, workspace: str | os.PathLike[str]
) -> RewindPlan | None:
    """:func:`finish_rewind` in ``settings``' run directory, opening its session store
    only when a plan is pending (before a wake of the built-in workflow)."""
    if pending(settings.run_path) is None:
        return None
    from flower.stores.open import open_session_store

    with open_session_store(settings=settings) as store:
        return finish_rewind(workspace, store, settings=settings, run_dir=settings.run_path)
