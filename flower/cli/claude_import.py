"""``flower sessions import --claude-code [DIR]``: Claude Code's transcripts into a store.

Claude Code keeps ``~/.claude/projects/<project key>/<session>.jsonl`` and its
subagents in ``<session>/subagents/agent-<id>.jsonl``: the jsonfs layout, so folder
names become project keys and ``subagents/agent-<id>`` subpaths. Lines that are torn
or not JSON (a crash mid-write, a hand edit) are imported around: each is reported
with its file and line number and everything else still comes in. Re-running adds
nothing (entries are matched by ``uuid``, the rest by content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flower.cli.output import n_entries, n_transcripts
from flower.core.errors import FlowerError, InvalidEntryError
from flower.core.i18n import _, ngettext
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey

if TYPE_CHECKING:
    from flower.stores.copy import CopyReport, Progress

ProgressFactory = Callable[[int], AbstractContextManager["Progress | None"]]
"""Given the number of sessions, a context yielding a per-batch callback (or ``None``)."""

DEFAULT_DIR = Path("~/.claude/projects")
SUFFIX = ".jsonl"


@dataclass(frozen=True)
class SkippedLine:
    """One line of a Claude Code file that could not be imported, and why."""

    path: Path
    line: int
    """1-based line number."""
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


class ClaudeCodeSource(SessionStoreBase):
    """A read-only view of a Claude Code projects folder that reads around bad lines.

    Listing is the jsonfs store's (same layout); reading is line by line here, so a
    bad line costs only itself and is recorded in :attr:`skipped`.
    """

    def __init__(self, root: Path) -> None:
        from flower_plugins.jsonfs import JsonfsSessionStore

        self.root = root.expanduser().resolve()
        if not self.root.is_dir():
            raise FlowerError(_("no Claude Code projects folder at {path}").format(path=self.root))
        self._layout = JsonfsSessionStore(self.root, fsync=False)
        self.skipped: list[SkippedLine] = []

    def _file(self, key: SessionKey) -> Path:
        folder = self.root / key.project_key
        if key.subpath is None:
            return folder / f"{key.session_id}{SUFFIX}"
        return folder / key.session_id / f"{key.subpath}{SUFFIX}"

    def append(self, key: SessionKey, entries: list[Entry]) -> None:  # type: ignore[override]
        raise FlowerError(_("a Claude Code folder is only read by flower, never written"))

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        path = self._file(key)
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                entry = self._parse(path, number, line)
                if entry is not None:
                    yield entry

    def _parse(self, path: Path, number: int, line: bytes) -> Entry | None:
        from flower.core.entries import check_entry, decode_entry

        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]  # a byte order mark an editor put there
        try:
            entry = decode_entry(line)
        except Exception as exc:
            torn = not line.endswith(b"\n")
            what = _("torn last line ({size} bytes)") if torn else _("not JSON ({size} bytes)")
            reason = f"{what.format(size=len(line))}: {exc}"
            self.skipped.append(SkippedLine(path, number, reason))
            return None
        try:
            return check_entry(entry, number)
        except InvalidEntryError as exc:
            reason = _("not an entry: {reason}").format(reason=exc)
            self.skipped.append(SkippedLine(path, number, reason))
            return None

    def load(self, key: SessionKey) -> list[Entry] | None:
        if not self._file(key).is_file():
            return None
        return list(self.iter_entries(key))

    def exists(self, key: SessionKey) -> bool:
        return self._file(key).is_file()

    def list_projects(self) -> list[str]:
        return self._layout.list_projects()

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return self._layout.list_sessions(project_key)

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return self._layout.list_subkeys(key)

    def find_session(self, session_id: str) -> SessionKey | None:
        return self._layout.find_session(session_id)


@dataclass
class ClaudeImport:
    """What an import did: the copy's counts plus every line it read around."""

    source: Path
    report: CopyReport
    skipped: list[SkippedLine] = field(default_factory=list)


def import_claude_code(
    root: Path,
    target: SessionStoreBase,
    *,
    progress_factory: ProgressFactory | None = None,
) -> ClaudeImport:
    """Copy every Claude Code session under ``root`` (with subagents) into ``target``."""
    from flower.stores.copy import copy_sessions, select_sessions

    source = ClaudeCodeSource(root)
    keys = select_sessions(source)
    bar = progress_factory(len(keys)) if progress_factory else nullcontext(None)
    with bar as on_progress:
        report = copy_sessions(source, target, keys, progress=on_progress)
    return ClaudeImport(source.root, report, list(source.skipped))


def default_dir() -> Path:
    return DEFAULT_DIR.expanduser()


def run_claude_import(
    folder: Path | None,
    target: SessionStoreBase,
    where: str,
    progress_factory: ProgressFactory | None = None,
) -> ClaudeImport:
    """The CLI's part: import, then one line per skipped line and a final count."""
    import typer

    done = import_claude_code(folder or default_dir(), target, progress_factory=progress_factory)
    for skipped in done.skipped:
        typer.echo(_("skipped {line}").format(line=skipped), err=True)
    conflict = _("conflict: {transcript} already holds a different entry {uuid} (kept)")
    for found in done.report.conflicts[:20]:
        typer.echo(conflict.format(transcript=found.key.session_id, uuid=found.uuid), err=True)
    report = done.report
    imported = ngettext(
        "imported {sessions} ({transcripts}) from {source} into {store}: {entries} read, "
        "{new} new, {present} already there, {count} line skipped",
        "imported {sessions} ({transcripts}) from {source} into {store}: {entries} read, "
        "{new} new, {present} already there, {count} lines skipped",
        len(done.skipped),
    )
    sessions = ngettext(
        "{count} Claude Code session", "{count} Claude Code sessions", report.sessions
    ).format(count=report.sessions)
    typer.echo(
        imported.format(
            sessions=sessions,
            transcripts=n_transcripts(report.transcripts),
            source=done.source,
            store=where,
            entries=n_entries(report.entries_read),
            new=report.entries_written,
            present=report.entries_present,
            count=len(done.skipped),
        )
    )
    if report.conflicts:
        raise typer.Exit(1)
    return done
