"""The run directory a workflow writes: writable, and held by one ``flower`` at a time."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from flower.core.errors import FlowerError


class BusyError(FlowerError):
    """Another ``flower`` is running the built-in workflow in this run directory."""


@contextlib.contextmanager
def run_lock(run_path: Path) -> Iterator[None]:
    """Hold ``<run_dir>/flower.lock`` while the built-in workflow runs: two of them in
    one directory would resume the same sessions and fork their transcripts. The kernel
    lets go of it when the process ends, however it ends (SIGKILL included)."""
    import fcntl

    from flower.core.fileperms import open_private, private_dir

    private_dir(run_path)
    fd = open_private(run_path / "flower.lock", os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise BusyError(
                f"another flower (pid {holder}) is running here, in {run_path}: wait for it "
                "to end, or give this one its own run directory (-r DIR)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


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
