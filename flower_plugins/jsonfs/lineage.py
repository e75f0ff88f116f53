"""The ``json`` lineage store: ``runs/lineage.json`` in the seed's exact shape.

``{"workspace": ..., "woke": N, "steps": {step: session_id}}`` plus any field a newer
flower wrote, kept and written back. A file that is missing, corrupt, truncated, not
an object or for another workspace reads as ``None``: a silent fresh start (seed).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from flower.core.errors import FlowerError
from flower.core.fileperms import (
    check_private,
    fsync_dir,
    locked,
    private_dir,
    replaced_atomically,
)
from flower.core.i18n import _
from flower.core.lease import fenced
from flower.core.lineage import (
    check_record,
    lineage_document,
    parse_lineage,
)
from flower.core.records import LineageMismatch, LineageRecord

log = logging.getLogger("flower.jsonfs")

FILENAME = "lineage.json"
__all__ = ["JsonLineageStore", "parse_lineage", "render_lineage"]


class ArchiveConflictError(FlowerError):
    """``archive`` would overwrite a file already in the archive folder."""


class JsonLineageStore:
    """One workspace's lineage in one JSON file, replaced atomically on every save."""

    fences_writes: Literal[True] = True
    """A fleet wake's writes go through :func:`~flower.core.lease.fenced` here."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path).expanduser().absolute()
        self.fsync = fsync

    @property
    def url(self) -> str:
        return f"file://{self.path}"

    def __repr__(self) -> str:
        return f"JsonLineageStore({str(self.path)!r})"

    def load(self, workspace: str) -> LineageRecord | None:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        check_private(self.path)
        record = parse_lineage(raw)
        if record is None:
            log.info("%s is not a lineage record; starting fresh", self.path)
            return None
        if record.workspace != workspace:
            log.info(
                "%s belongs to workspace %r, not %r; starting fresh",
                self.path,
                record.workspace,
                workspace,
            )
            return None
        return record

    def mismatch(self, workspace: str) -> LineageMismatch | None:
        """Why :meth:`load` finds nothing for ``workspace`` in a file that is there."""
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        record = parse_lineage(raw)
        if record is None:
            return LineageMismatch("unreadable", raw)
        if record.workspace != workspace:
            return LineageMismatch("moved", raw, moved_from=record.workspace)
        return None

    def save(self, record: LineageRecord) -> None:
        data = render_lineage(record)
        private_dir(self.path.parent, durable=self.fsync)

        def write() -> None:
            with replaced_atomically(self.path, durable=self.fsync) as out:
                out.write(data)
            if self.fsync:
                fsync_dir(self.path.parent)

        fenced(write)  # a fleet wake that lost its lease writes nothing

    def update(
        self, workspace: str, change: Callable[[LineageRecord | None], LineageRecord]
    ) -> LineageRecord:
        """Save ``change(the record on disk now)`` under ``lineage.json.lock``: processes
        sharing the run directory merge their steps instead of replacing each other's."""
        private_dir(self.path.parent, durable=self.fsync)
        with locked(self.path):
            record = change(self.load(workspace))
            self.save(record)
        return record

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path:
        """Move lineage.json and each existing ``extra`` file into ``into``; return it.

        Every destination is checked first, so a name clash moves nothing.
        """
        into = Path(into)
        moves = [(src, into / src.name) for src in (self.path, *map(Path, extra)) if src.is_file()]
        for src, dest in moves:
            if dest.exists():
                raise ArchiveConflictError(
                    _("cannot archive {source}: {target} already exists; nothing moved").format(
                        source=repr(str(src)), target=repr(str(dest))
                    )
                )
        names = [dest.name for _, dest in moves]
        if len(set(names)) != len(names):
            raise ArchiveConflictError(
                _(
                    "cannot archive files sharing a name into {folder}: {names}; nothing moved"
                ).format(folder=repr(str(into)), names=names)
            )

        def move() -> None:
            private_dir(into, durable=self.fsync)
            for src, dest in moves:
                _move(src, dest)
            if self.fsync:
                for folder in {into, *(src.parent for src, _ in moves)}:
                    fsync_dir(folder)

        fenced(move)  # a fleet wake that lost its lease moves nothing
        return into


def _move(src: Path, dest: Path) -> None:
    try:
        os.replace(src, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(src, dest)


def render_lineage(record: LineageRecord) -> bytes:
    """The seed's shape, unknown fields after the three known ones; readable CJK."""
    check_record(record)
    return lineage_document(record)
