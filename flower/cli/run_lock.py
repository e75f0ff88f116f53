"""The run directory a workflow writes: writable, and held by one ``flower`` at a time."""

from __future__ import annotations

import os
from pathlib import Path

from flower.core.errors import FlowerError
from flower.core.run_lock import BusyError, run_lock


class RunDirError(FlowerError):
    """The run directory (or the workspace) cannot be written."""

    exit_code = 1


def require_writable(path: Path, what: str) -> None:
    """``path`` exists as a writable directory, or can be created as one."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise RunDirError(
            f"{what} {str(path)!r} cannot be created: {str(probe)!r} is not a directory"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        why = (
            f"{str(probe)!r} is on a read-only filesystem"
            if os.statvfs(probe).f_flag & os.ST_RDONLY
            else f"no write permission on {str(probe)!r}"
        )
        raise RunDirError(f"{what} {str(path)!r} is not writable ({why})")


__all__ = ["BusyError", "RunDirError", "require_writable", "run_lock"]
