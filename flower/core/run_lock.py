"""The run directory a workflow writes: writable (:func:`require_writable`; with the
workspace, :func:`require_run_dirs`), and held by one ``flower`` at a time
(:func:`run_lock`)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from flower.core.errors import FlowerError
from flower.core.i18n import N_, _

LOCK_FILE = "flower.lock"

_held: dict[tuple[int, str], int] = {}
"""(pid, lock file) -> how many holds this process has on it: nested holds pass."""
_held_guard = threading.Lock()


class BusyError(FlowerError):
    """Another ``flower`` is working in this run directory."""


@contextlib.contextmanager
def run_lock(run_path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``<run_dir>/flower.lock`` while flower works there: two of them in one
    directory would resume the same sessions and fork their transcripts. The kernel
    lets go of it when the process ends, however it ends (SIGKILL included). A process
    that holds it already (the CLI around a workflow run or a rewind) holds it again."""
    import fcntl

    from flower.core.fileperms import open_private, private_dir

    path = Path(run_path)
    private_dir(path)
    held = (os.getpid(), os.path.realpath(path / LOCK_FILE))  # a forked child holds nothing
    with _held_guard:
        if _held.get(held):
            _held[held] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_guard:
                _held[held] -= 1
        return
    fd = open_private(path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise BusyError(
                _(
                    "another flower (pid {pid}) is running here, in {path}: wait for it "
                    "to end, or give this one its own run directory (-r DIR)"
                ).format(pid=holder, path=path)
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        with _held_guard:
            _held[held] = 1
        try:
            yield
        finally:
            with _held_guard:
                del _held[held]
    finally:
        os.close(fd)  # closing the descriptor releases the lock


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


def require_run_dirs(workspace: Path, run_path: Path) -> None:
    """The workspace and the run directory can be written (or created), as a run needs;
    a :class:`RunDirError` names the first that cannot (:func:`require_writable`)."""
    require_writable(workspace, N_("the workspace"))
    require_writable(run_path, N_("the run directory"))
