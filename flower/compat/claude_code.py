"""Claude Code's transcripts into any flower store: one JSONL file, or a projects folder.

Claude Code keeps ``~/.claude/projects/<project key>/<session>.jsonl`` and its
subagents in ``<session>/subagents/agent-<id>.jsonl``: the jsonfs layout, so folder
names become project keys and ``subagents/agent-<id>`` subpaths.
:func:`import_claude_code` takes a whole folder; lines that are torn or not JSON (a
crash mid-write, a hand edit) are imported around: each is reported with its file and
line number and everything else still comes in. :func:`import_jsonl` takes one file
(what ``flower sessions export`` writes with :func:`write_jsonl`), checking every line
before it writes any. Re-running either adds nothing (entries are matched by ``uuid``, the rest by
content)::

    from pathlib import Path
    from flower import open_session_store
    from flower.compat.claude_code import import_claude_code, import_jsonl

    with open_session_store() as store:
        done = import_claude_code(Path("~/.claude/projects"), store)
        one = import_jsonl(store, Path("session.jsonl"))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.errors import FlowerError, InvalidEntryError, UsageError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey

if TYPE_CHECKING:
    from flower.stores.copy import CopyReport, Progress

ProgressFactory = Callable[[int], AbstractContextManager["Progress | None"]]
"""Given the number of sessions, a context yielding a per-batch callback (or ``None``)."""

DEFAULT_DIR = Path("~/.claude/projects")
SUFFIX = ".jsonl"
IMPORT_BATCH = 500
"""Entries per append of :func:`import_jsonl`."""


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
    root: Path | ClaudeCodeSource,
    target: SessionStoreBase,
    *,
    progress_factory: ProgressFactory | None = None,
) -> ClaudeImport:
    """Copy every Claude Code session under ``root`` (with subagents) into ``target``.
    ``root`` may be a :class:`ClaudeCodeSource` opened beforehand: a folder that is not
    there is then said before ``target`` is opened (and created)."""
    from flower.stores.copy import copy_sessions, select_sessions

    source = root if isinstance(root, ClaudeCodeSource) else ClaudeCodeSource(root)
    keys = select_sessions(source)
    bar = progress_factory(len(keys)) if progress_factory else nullcontext(None)
    with bar as on_progress:
        report = copy_sessions(source, target, keys, progress=on_progress)
    return ClaudeImport(source.root, report, list(source.skipped))


def default_dir() -> Path:
    """``~/.claude/projects``, where Claude Code keeps its transcripts."""
    return DEFAULT_DIR.expanduser()


# ------------------------------------------------------------------ one JSONL file


def read_jsonl(path: Path, skipped: list[str] | None = None) -> Iterator[tuple[int, Entry]]:
    """(line number, entry) for every non-blank line; a bad line is an error naming it,
    except a torn last line (no newline: a crash mid-write), which is left out and said
    in ``skipped``, as :func:`import_claude_code` does."""
    from flower.core.entries import check_entry, decode_entry

    try:
        handle = path.open("rb")
    except OSError as exc:
        raise FlowerError(
            _("cannot read {path}: {reason}").format(path=path, reason=exc.strerror or exc)
        ) from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]  # a byte order mark an editor put there
            if not line.strip():
                continue
            try:
                entry = decode_entry(line)
            except Exception as exc:
                if not line.endswith(b"\n"):  # only the last line can lack one
                    if skipped is not None:
                        torn = _("torn last line ({size} bytes)").format(size=len(line))
                        skipped.append(f"{path}:{number}: {torn}")
                    return
                raise InvalidEntryError(
                    _("{where}: not valid JSON ({reason})").format(
                        where=f"{path}:{number}", reason=exc
                    )
                ) from None
            try:
                check_entry(entry, number)
            except InvalidEntryError as exc:
                raise InvalidEntryError(f"{path}:{number}: {exc}") from None
            yield number, entry


def write_jsonl(store: SessionStoreBase, key: SessionKey, output: Path) -> int:
    """Write the entries of ``key`` to ``output`` as JSON lines, atomically (created as
    any file the user writes, through the umask, as ``> file`` would be); the number
    written. What :func:`import_jsonl` reads back."""
    from flower.core.entries import encode_entry
    from flower.core.fileperms import replaced_atomically

    count = 0
    try:
        with replaced_atomically(output, mode=0o666) as handle:
            for entry in store.iter_entries(key):
                handle.write(encode_entry(entry) + b"\n")
                count += 1
    except OSError as exc:
        raise FlowerError(
            _("cannot write {path}: {reason}").format(path=output, reason=exc.strerror or exc)
        ) from None
    return count


@dataclass
class JsonlImport:
    """What :func:`import_jsonl` did."""

    key: SessionKey
    """The transcript written: a subagent's is its session's subkey."""
    read: int
    """Entries in the file."""
    new: int
    """Entries the transcript did not hold before."""
    skipped: list[str] = field(default_factory=list)
    """A torn last line, ``path:line: why``."""


def jsonl_target(
    path: Path, project: str | None = None, session: str | None = None
) -> tuple[SessionKey, int, list[str]]:
    """Check the whole file (nothing is written on a bad line) and find its key: (the
    key, entries read, lines skipped).

    The session is ``session``, else the entries' ``sessionId``; a file holding several
    sessions' entries (Claude Code resumes a session into a new file that starts with the
    old session's entries) is the session its name is, as :func:`import_claude_code`
    imports it. The project is ``project``, else the entries' ``cwd``'s key, else this
    directory's. A file under ``subagents/`` is that session's subagent transcript."""
    from flower.core.keys import project_key
    from flower.core.records import check_name

    skipped: list[str] = []
    session_ids: set[str] = set()
    cwd: str | None = None
    count = 0
    for _number, entry in read_jsonl(path, skipped):
        count += 1
        if isinstance(entry.get("sessionId"), str):
            session_ids.add(entry["sessionId"])
        if cwd is None and isinstance(entry.get("cwd"), str):
            cwd = entry["cwd"]
    if session is None:
        if len(session_ids) > 1 and path.stem not in session_ids:
            raise UsageError(
                _(
                    "{path} holds entries of {count} sessions and its name is none of them; "
                    "pass {option}"
                ).format(path=path, count=len(session_ids), option="--session ID")
            )
        if len(session_ids) > 1:
            session = path.stem
        else:
            session = session_ids.pop() if session_ids else path.stem
    if project is None:
        project = project_key(cwd) if cwd else project_key(Path.cwd())
    # Claude Code keeps a subagent's transcript at <session>/subagents/agent-x.jsonl: it
    # is that session's subkey, never part of its main transcript
    subpath = f"subagents/{path.stem}" if path.parent.name == "subagents" else None
    key = SessionKey(check_name("project key", project), check_name("session id", session))
    return (key if subpath is None else key.child(subpath)), count, skipped


def import_jsonl(
    store: SessionStoreBase,
    path: Path,
    key: SessionKey | None = None,
    *,
    project: str | None = None,
    session: str | None = None,
) -> JsonlImport:
    """Append one JSONL transcript into ``store``, at ``key`` or the one
    :func:`jsonl_target` finds; idempotent (entries without a uuid imported before are
    not appended again)."""
    from flower.stores.copy import new_anonymous

    skipped: list[str] = []
    if key is None:
        key, _count, skipped = jsonl_target(path, project, session)
    # uuid-less lines imported before are not again; one read of what is there
    is_new, before = new_anonymous(store, key)
    count = 0
    batch: list[Entry] = []
    for _number, entry in read_jsonl(path):
        count += 1
        if not is_new(entry):
            continue
        batch.append(entry)
        if len(batch) >= IMPORT_BATCH:
            store.append(key, batch)
            batch = []
    store.append(key, batch)
    after = sum(1 for _ in store.iter_entries(key))
    return JsonlImport(key, count, after - before, skipped)


__all__ = [
    "ClaudeCodeSource",
    "ClaudeImport",
    "JsonlImport",
    "SkippedLine",
    "default_dir",
    "import_claude_code",
    "import_jsonl",
    "jsonl_target",
    "read_jsonl",
    "write_jsonl",
]
