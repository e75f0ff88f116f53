"""The run directory's lock: one flower at a time works in a run directory."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from flower.core.errors import FlowerError
from flower.core.i18n import _

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
