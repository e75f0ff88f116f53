"""Owner-only files and folders.

Everything flower creates (stores, lineage, manifest, trim files, relay notes,
archives) is readable by its owner only: files ``0600``, folders ``0700``. An
existing file that group or others can read is left alone but warned about, once
per file per process, through :mod:`warnings` and the ``flower.fileperms`` logger.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from flower.core.errors import LocalFaultError
from flower.core.i18n import _

FILE_MODE = 0o600
DIR_MODE = 0o700
DOCUMENT_MODE = 0o644
"""The brief and the goals: documents the user reads and edits beside their own files."""
_OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO

_checked: set[str] = set()
_lock = threading.Lock()


class PermissionWarning(UserWarning):
    """A file or folder flower uses is readable (or writable) by group or others."""


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a directory's entries (a new, renamed or removed file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def replaced_atomically(
    path: str | os.PathLike[str], *, durable: bool = True, mode: int = FILE_MODE
) -> Iterator[BinaryIO]:
    """A binary file that takes the place of ``path`` only if the block ends cleanly.

    It is written to a new sibling temporary file (created with ``mode``), flushed,
    fsynced when ``durable``, then renamed over ``path``. On any error the temporary
    file is removed and ``path`` is left as it was: a reader sees the old file or the
    new one, never half of one.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except OSError as exc:
        fault = local_fault(exc, target)
        if fault is None:
            raise
        raise fault from exc
    try:
        handle = os.fdopen(fd, "wb")
        try:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        finally:
            with contextlib.suppress(OSError):  # a failed flush is raised once, not twice
                handle.close()
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        fault = local_fault(exc, target)  # a full disk: one line naming the file
        if fault is None:
            raise
        raise fault from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive ``fcntl`` lock on ``<path>.lock`` (a ``0600`` file) for the block:
    how several processes read, merge and replace one file without losing each other's
    work. The kernel lets go of it when the process ends, however it ends."""
    target = Path(path)
    lock_path = target.with_name(target.name + ".lock")
    fd = open_private(lock_path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def document_mode(current: int) -> int:
    """The mode a rewritten document keeps: its own, less any write bit for group or
    others (a file flower writes is never ``0666``)."""
    return stat.S_IMODE(current) & ~(stat.S_IWGRP | stat.S_IWOTH)


def private_dir(path: str | os.PathLike[str], *, durable: bool = False) -> Path:
    """``mkdir -p path`` where every folder created is ``0700``; an existing one is checked.

    ``durable`` fsyncs each parent that gained an entry, so the new folders survive a
    power loss, not just a killed process.
    """
    path = Path(path)
    missing: list[Path] = []
    here = path
    while not here.is_dir() and here != here.parent:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        if durable:
            fsync_dir(folder.parent)
    if not missing:
        check_private(path)
    return path


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create an empty ``0600`` file unless it exists; True when this call created it.

    An existing file is checked instead (see :func:`check_private`).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        check_private(path)
        return False
    os.close(fd)
    return True


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` that creates ``0600`` files; an existing file is checked."""
    fd = os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
    check_private(path, fd=fd)
    return fd


def check_private(path: str | os.PathLike[str], *, fd: int | None = None) -> bool:
    """True when ``path`` is owner-only (or missing); else warn once and return False."""
    key = os.fspath(path)
    if key in _checked:
        return True
    try:
        mode = os.fstat(fd).st_mode if fd is not None else os.stat(key).st_mode
    except OSError:
        return True
    with _lock:
        if key in _checked:
            return True
        _checked.add(key)
    if not mode & _OPEN_TO_OTHERS:
        return True
    if stat.S_ISDIR(mode):
        wanted = DIR_MODE
        message = _(
            "folder {path} is accessible by group or others (mode {mode}); "
            "flower keeps transcripts private: chmod {wanted} {path}"
        )
    else:
        wanted = FILE_MODE
        message = _(
            "file {path} is accessible by group or others (mode {mode}); "
            "flower keeps transcripts private: chmod {wanted} {path}"
        )
    message = message.format(path=key, mode=f"{stat.S_IMODE(mode):04o}", wanted=f"{wanted:o}")
    # a warning, not also a log record: a library caller would see the message twice
    warnings.warn(message, PermissionWarning, stacklevel=2)
    return False


def forget_checks() -> None:
    """Check every file again (tests, or after fixing permissions in-process)."""
    with _lock:
        _checked.clear()


__all__ = [
    "DIR_MODE",
    "DOCUMENT_MODE",
    "FILE_MODE",
    "PermissionWarning",
    "check_private",
    "create_private",
    "document_mode",
    "forget_checks",
    "locked",
    "open_private",
    "private_dir",
    "replaced_atomically",
]


def read_only_reason(path: str | os.PathLike[str] | None) -> str:
    """Why ``path`` (a store's file) cannot be written, for its error message: its
    folder or the file is read-only for this user, or the file system is."""
    if not path:
        return "the store is read-only"
    folder = Path(path).parent
    if not os.access(folder, os.W_OK):
        return f"the folder {folder} is read-only for this user (only reading works)"
    if Path(path).exists() and not os.access(path, os.W_OK):
        return "the file is read-only for this user (only reading works)"
    return "the store is read-only (a read-only file system or mount?)"


LOCAL_FAULT_ERRNOS = ("ENOSPC", "EDQUOT", "EROFS")
"""A full disk, a spent quota, a read-only file system: the machine's, not the API's."""


def _is_local_errno(error: BaseException) -> bool:
    codes = {getattr(errno, name) for name in LOCAL_FAULT_ERRNOS if hasattr(errno, name)}
    return isinstance(error, OSError) and error.errno in codes


def local_fault(
    error: BaseException, path: str | os.PathLike[str] | None = None
) -> LocalFaultError | None:
    """The :class:`LocalFaultError` ``error`` is or was raised from (its causes walked),
    naming ``path`` (else the file the ``OSError`` names); None for any other error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, LocalFaultError):
            return current
        if _is_local_errno(current):
            return local_fault_error(current, path)  # type: ignore[arg-type]
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return None


def local_fault_error(
    error: OSError, path: str | os.PathLike[str] | None = None
) -> LocalFaultError:
    """One line for a local fault: the file, what the machine said, that nothing stored
    was lost, what to do."""
    where = os.fspath(path) if path is not None else (error.filename or "?")
    if error.errno == errno.EROFS:
        text = _(
            "cannot write {path}: the file system is read-only. Nothing stored was lost; "
            "make it writable and run flower again to carry on"
        )
    elif error.errno == getattr(errno, "EDQUOT", None):
        text = _(
            "cannot write {path}: the disk quota is used up. Nothing stored was lost; "
            "free some space and run flower again to carry on"
        )
    else:
        text = _(
            "cannot write {path}: no space left on the device. Nothing stored was lost; "
            "free some space and run flower again to carry on"
        )
    return LocalFaultError(text.format(path=where), str(where))
