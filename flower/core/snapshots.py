"""Content-addressed copies of the files flower's Write and Edit tools changed.

Before Write or Edit replaces a file, its previous content is kept under
``<run_dir>/snapshots/<sha256>`` (``0600``, in ``0700`` folders; the same content is
kept once), and the tool's ``toolUseResult`` names it: ``"snapshot": {"before": <sha256
or null when the file did not exist>, "after": <sha256 of what the tool wrote>}``. A
rewind reads those records from the transcript to put files back (see
:mod:`flower.core.rewind`); ``sessions gc`` removes the copies no kept session names.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from flower.core.fileperms import private_dir, replaced_atomically

SNAPSHOT_DIR = "snapshots"
"""The folder under the run directory that holds the copies."""

_HEX = frozenset("0123456789abcdef")


def digest(data: bytes) -> str:
    """The name a content is kept under: its SHA-256, in hex."""
    return hashlib.sha256(data).hexdigest()


def is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


class FileChange(msgspec.Struct, frozen=True):
    """One file change a Write or Edit made, as its tool result records it."""

    path: str
    before: str | None
    """The digest of the content before (``None``: the file did not exist)."""
    after: str
    """The digest of the content the tool wrote."""
    entry_uuid: str | None = None
    """The transcript entry holding the tool result."""


class Snapshots:
    """The snapshot folder of one run directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def of_run_dir(cls, run_dir: str | os.PathLike[str]) -> Snapshots:
        return cls(Path(run_dir) / SNAPSHOT_DIR)

    def path(self, sha: str) -> Path:
        if not is_digest(sha):
            raise ValueError(f"not a snapshot digest: {sha!r}")
        return self.root / sha[:2] / sha

    def keep(self, data: bytes) -> str:
        """Keep ``data`` (once per content) and return its digest; durable on return."""
        sha = digest(data)
        target = self.path(sha)
        if self.read(sha) is None:  # absent, or damaged: written again
            private_dir(target.parent, durable=True)
            with replaced_atomically(target, durable=True) as f:
                f.write(data)
        return sha

    def read(self, sha: str) -> bytes | None:
        """The content kept as ``sha``; ``None`` when missing or not what was kept."""
        try:
            data = self.path(sha).read_bytes()
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return None
        return data if digest(data) == sha else None

    def kept(self) -> set[str]:
        """The digests of every copy in the folder."""
        if not self.root.is_dir():
            return set()
        return {
            p.name
            for sub in self.root.iterdir()
            if sub.is_dir()
            for p in sub.iterdir()
            if is_digest(p.name)
        }

    def remove(self, sha: str) -> None:
        self.path(sha).unlink(missing_ok=True)


def _results(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = entry.get("toolUseResult")
    if isinstance(found, dict):
        return [found]
    if isinstance(found, list):
        return [r for r in found if isinstance(r, dict)]
    return []


def file_changes(entries: Sequence[Mapping[str, Any]]) -> list[FileChange]:
    """The file changes recorded in ``entries``' tool results, in order."""
    changes: list[FileChange] = []
    for entry in entries:
        if entry.get("type") != "user":
            continue
        for result in _results(entry):
            snap = result.get("snapshot")
            path = result.get("filePath")
            if not isinstance(snap, dict) or not isinstance(path, str):
                continue
            before, after = snap.get("before"), snap.get("after")
            if not isinstance(after, str) or not is_digest(after):
                continue
            if before is None or is_digest(before):
                uid = entry.get("uuid")
                changes.append(
                    FileChange(path, before, after, uid if isinstance(uid, str) else None)
                )
    return changes


def referenced(entries: Iterable[Mapping[str, Any]]) -> set[str]:
    """The snapshot digests a transcript names (the ``before`` of its file changes)."""
    return {c.before for c in file_changes(list(entries)) if c.before is not None}


SWEEP_GRACE_SECONDS = 3600
"""A copy younger than this is never swept: its tool result may not be stored yet."""


def unreferenced(
    snapshots: Snapshots, keep: set[str], now: float, grace: float = SWEEP_GRACE_SECONDS
) -> list[str]:
    """The copies no kept transcript names (``keep``), older than ``grace`` seconds."""
    found = []
    for sha in sorted(snapshots.kept() - keep):
        try:
            age = now - snapshots.path(sha).stat().st_mtime
        except FileNotFoundError:
            continue
        if age >= grace:
            found.append(sha)
    return found
