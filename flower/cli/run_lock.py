"""The run directory a workflow writes: writable, and held by one ``flower`` at a time."""

from __future__ import annotations

import os
from pathlib import Path

from flower.core.errors import FlowerError
from flower.core.i18n import _
from flower.core.run_lock import BusyError, run_lock


class RunDirError(FlowerError):
    """The run directory (or the workspace) cannot be written."""

    exit_code = 1


def require_writable(path: Path, what: str) -> None:
    """``path`` exists as a writable directory, or can be created as one; ``what`` names
    it (an English msgid, ``N_("the run directory")``: shown translated)."""
    what = _(what)
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise RunDirError(
            _("{what} {path!r} cannot be created: {probe!r} is not a directory").format(
                what=what, path=str(path), probe=str(probe)
            )
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        why = (
            _("{probe!r} is on a read-only filesystem")
            if os.statvfs(probe).f_flag & os.ST_RDONLY
            else _("no write permission on {probe!r}")
        ).format(probe=str(probe))
        raise RunDirError(
            _("{what} {path!r} is not writable ({why})").format(what=what, path=str(path), why=why)
        )


__all__ = ["BusyError", "RunDirError", "require_writable", "run_lock"]
