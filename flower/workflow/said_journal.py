"""Words said to a run, kept on disk from the moment they are read until lineage holds them.

``flower "..."`` (or the wake prompt) reads the words, takes the run lock and prints
the banner; only then does the workflow load lineage and record them (``on_start`` in
:mod:`flower.workflow.builtin`). A run killed in between would lose them, so the CLI
writes them here first: ``<run_dir>/said.json``, replaced atomically, ``0600``.

``on_start`` records the words in lineage together with their tokens, in one save, then
empties the journal. A next run passes on what a killed one left, once: words whose
token lineage already holds were recorded before the kill.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.entries import json_bytes
from flower.core.fileperms import fsync_dir, private_dir, replaced_atomically
from flower.core.i18n import _
from flower.core.lease import fenced
from flower.stores.encrypt import FileSealer, file_sealer

if TYPE_CHECKING:
    from flower.core.config import Settings

JOURNAL_FILE = "said.json"
RECORDED_TOKENS = "said_tokens"
"""The lineage ``extra`` key listing the tokens of journal words lineage holds."""
KEEP_TOKENS = 32


class Said(msgspec.Struct, frozen=True):
    token: str
    text: str
    workspace: str = ""
    """The workspace the words were said in (a run dir may serve several)."""


class SaidJournalWarning(UserWarning):
    """The journal could not be read; it was set aside, not deleted."""


class SaidJournal:
    """The words of ``<run_path>/said.json``, oldest first; with encryption on
    (``settings`` that say so, or a ``sealer``) the file holds them sealed."""

    def __init__(
        self,
        run_path: str | os.PathLike[str],
        settings: Settings | None = None,
        *,
        sealer: FileSealer | None = None,
    ) -> None:
        self.path = Path(run_path) / JOURNAL_FILE
        self.sealer = sealer if sealer is not None else file_sealer(settings)

    def entries(self) -> list[Said]:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return []
        try:
            return _decode(raw, self.sealer)
        except msgspec.DecodeError as exc:
            aside = self.path.with_name(f"{JOURNAL_FILE}.unreadable-{int(time.time())}")
            os.replace(self.path, aside)
            warnings.warn(
                _("{path}: not a journal of words ({error}); set aside as {aside}").format(
                    path=self.path, error=exc, aside=aside.name
                ),
                SaidJournalWarning,
                stacklevel=2,
            )
            return []

    def add(self, text: str, workspace: str) -> str:
        """Keep ``text``, said in ``workspace``, (durably) until lineage holds it; its token."""
        said = Said(uuid.uuid4().hex, text, workspace)
        self._write([*self.entries(), said])
        return said.token

    def unrecorded(self, lineage_extra: dict[str, Any], workspace: str) -> list[Said]:
        """The words said in ``workspace`` that its lineage does not hold yet
        (``lineage_extra``: the extra of its lineage record)."""
        recorded = _tokens(lineage_extra)
        return [
            said
            for said in self.entries()
            if said.token not in recorded and said.workspace == workspace
        ]

    def move_to(self, folder: Path, workspace: str, keep: str | None = None) -> None:
        """Move the words said in ``workspace`` (but those of token ``keep``) into
        ``folder``/said.json (an archive)."""
        words = [s for s in self.entries() if s.workspace == workspace and s.token != keep]
        if words:
            SaidJournal(folder, sealer=self.sealer)._write(words)
            self.clear(workspace, keep)

    def clear(self, workspace: str, keep: str | None = None) -> None:
        """Forget the words said in ``workspace`` (its lineage holds them now), but those
        of token ``keep``."""
        entries = self.entries()
        others = [s for s in entries if s.workspace != workspace or s.token == keep]
        if len(others) == len(entries):
            return
        if others:
            self._write(others)
            return

        def remove() -> None:
            self.path.unlink(missing_ok=True)
            fsync_dir(self.path.parent)

        fenced(remove)  # a fleet wake that lost its lease writes nothing

    def _write(self, entries: list[Said]) -> None:
        private_dir(self.path.parent)
        value: Any = msgspec.to_builtins(entries)
        if self.sealer is not None:
            value = self.sealer.seal(value, JOURNAL_FILE)
        data = json_bytes(value)

        def write() -> None:
            with replaced_atomically(self.path) as handle:
                handle.write(data)
            fsync_dir(self.path.parent)

        fenced(write)  # a fleet wake that lost its lease writes nothing


def _decode(raw: bytes, sealer: FileSealer | None) -> list[Said]:
    """The journal's entries; a lone surrogate's escape (what :func:`json_bytes` writes
    for one) is read back as the surrogate. A sealed journal is opened with ``sealer``
    (without one, it is no journal this run can read)."""
    if raw.lstrip().startswith(b"{"):
        value = msgspec.json.decode(raw)
        if sealer is None or not sealer.is_sealed(value):
            raise msgspec.DecodeError(_("encrypted words, and encryption is off"))
        return msgspec.convert(sealer.open(value, JOURNAL_FILE), type=list[Said])
    try:
        return msgspec.json.decode(raw, type=list[Said])
    except msgspec.DecodeError:
        if b"\\u" not in raw:
            raise
        import json

        try:
            return msgspec.convert(json.loads(raw), type=list[Said])
        except ValueError as exc:
            raise msgspec.DecodeError(str(exc)) from None


def mark_recorded(lineage_extra: dict[str, Any], words: list[Said]) -> None:
    """Note in lineage's extra (saved by the caller, with the words) that ``words``
    are recorded; only the newest tokens are kept, enough for any one journal."""
    tokens = [*_tokens(lineage_extra), *(said.token for said in words)]
    lineage_extra[RECORDED_TOKENS] = tokens[-max(KEEP_TOKENS, len(words)) :]


def _tokens(lineage_extra: dict[str, Any]) -> list[str]:
    tokens = lineage_extra.get(RECORDED_TOKENS)
    if not isinstance(tokens, list):
        return []
    return [token for token in tokens if isinstance(token, str)]


__all__ = ["JOURNAL_FILE", "Said", "SaidJournal", "SaidJournalWarning", "mark_recorded"]
