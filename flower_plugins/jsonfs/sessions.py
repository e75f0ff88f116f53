"""The ``jsonfs`` session store: Claude Code's own transcript layout on disk.

``<root>/<project_key>/<session_id>.jsonl`` holds a main transcript and
``<root>/<project_key>/<session_id>/<subpath>.jsonl`` its subkeys, one JSON entry per
line. Every append takes an exclusive ``flock`` on the file for its read-check-write,
so several processes may append to one session at once without losing or doubling an
entry, and is fsynced before it returns. Every line of an append but the last ends with
a tab, so readers can tell an append a crash cut short and count none of it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from flower.core.entries import decode_entry, encode_entries, reported_usage
from flower.core.errors import InvalidKeyError, StoreUnavailableError
from flower.core.fileperms import (
    check_private,
    fsync_dir,
    local_fault,
    private_dir,
    read_only_reason,
)
from flower.core.i18n import _, ngettext
from flower.core.protocols import SessionStoreBase
from flower.core.records import (
    Entry,
    Leftover,
    SessionInfo,
    SessionKey,
    check_name,
    check_subpath,
    newest_first,
)
from flower_plugins.jsonfs._fs import iter_lines, resolve_under, write_all

log = logging.getLogger("flower.jsonfs")

SUFFIX = ".jsonl"
NAME_MAX = 255
_BACKWARD_CHUNK = 1 << 16
_MORE = b"\t"
FINGERPRINT_BYTES = 64
"""Ends every line of a batch but its last, before the newline: "the batch goes on".
JSON allows the whitespace, so each line still parses as the same entry anywhere; a
flower reader counts a batch only once it has met the unmarked line that ends it."""
_CLOSE_TORN = b"\x18\n"
"""Written after a torn last line before the next append: CAN (cancel) and a newline.
A raw control character is invalid anywhere in JSON, so the torn bytes plus this are
never valid JSON, whatever the torn bytes were: that line stays a skipped ``corrupt-line``."""
_CLOSE_BATCH = b"\n"
"""Written after an unfinished batch (cut at a line end) before the next append: an empty
line, which is no entry, so nothing can ever end that batch."""

_TEMP_NAME = re.compile(r"^\..+\.jsonl\.\d+-[0-9a-f]{8}\.tmp$")
"""A first batch's temporary file (``.<session>.jsonl.<pid>-<random>.tmp``, see
``JsonfsSessionStore._create``): a kill before it is linked into place leaves it behind."""

ProblemKind = Literal["torn-tail", "corrupt-line", "not-an-object", "incomplete-batch"]


@dataclass(frozen=True)
class LoadProblem:
    """A line that a load skipped instead of failing; see :meth:`JsonfsSessionStore.problems`."""

    path: str
    line: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's first byte."""
    kind: ProblemKind
    """``torn-tail``: an unterminated last line (a crash mid-write), never an entry even
    if its bytes parse; ``corrupt-line``: a terminated line that is not JSON (usually an
    older torn tail); ``not-an-object``: valid JSON that is not an entry;
    ``incomplete-batch``: the complete lines of an append of several entries that did
    not finish (its last line is missing), reported once, at the batch's first line."""
    detail: str
    """What was wrong, in the language active when the file was read (only shown, in
    the load's warning); ``kind`` is the identifier to compare."""


class _UuidOnly(msgspec.Struct):
    uuid: Any = None


_uuid_decoder = msgspec.json.Decoder(_UuidOnly)
_decode = msgspec.json.Decoder().decode


@dataclass
class _UuidIndex:
    """The uuids of one file's committed lines, extended incrementally (files only grow).

    ``scanned_to`` stops before a torn tail or an unfinished batch: their entries are not
    committed (yet), so the next look reads them again.
    """

    inode: int
    scanned_to: int = 0
    uuids: set[str] = field(default_factory=set)
    seen: bytes = b""
    """The last bytes up to ``scanned_to``, as they were when indexed."""

    def still_describes(self, fd: int, st: os.stat_result) -> bool:
        """Whether the file at ``fd`` is the one indexed, grown at most. Its inode alone
        does not say: ext4 hands a deleted file's inode to the next file created, and
        another handle may have deleted the transcript and written a new one. The bytes
        just before ``scanned_to`` (a line's uuid and time, mostly) tell them apart."""
        return (
            st.st_ino == self.inode and self.scanned_to <= st.st_size and self._end(fd) == self.seen
        )

    def remember_end(self, fd: int) -> None:
        self.seen = self._end(fd)

    def note_written(self, fd: int, at: int, payload: bytes) -> None:
        """``payload`` was appended at offset ``at``: the index now reaches its end."""
        follows = at == self.scanned_to
        self.scanned_to = at + len(payload)
        if len(payload) >= FINGERPRINT_BYTES or follows:
            self.seen = (self.seen + payload)[-FINGERPRINT_BYTES:]
        else:  # a torn tail lies between what was read and what was written
            self.remember_end(fd)

    def _end(self, fd: int) -> bytes:
        span = min(FINGERPRINT_BYTES, self.scanned_to)
        return os.pread(fd, span, self.scanned_to - span)

    def catch_up(self, fd: int, size: int) -> None:
        batch: set[str] = set()  # the uuids of a batch whose last line is still to come
        in_batch = False
        for offset, read, complete in iter_lines(fd, self.scanned_to, size):
            if not complete:
                break
            line = _without_bom(read) if offset == 0 else read
            if line.endswith(_MORE) and not line.isspace():
                in_batch = True
                _add_uuid(batch, line)
                continue
            self.scanned_to = offset + len(read) + 1
            if in_batch:
                if _is_object(line):  # the batch's last line: it finished
                    self.uuids |= batch
                batch.clear()
                in_batch = False
            _add_uuid(self.uuids, line)


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """A write this user may not make (a read-only folder or mount) is one clear error."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise StoreUnavailableError(
            _("cannot write {path}: {reason}").format(path=path, reason=read_only_reason(path))
        ) from exc


class JsonfsSessionStore(SessionStoreBase):
    """Transcripts as ``.jsonl`` files in Claude Code's ``~/.claude/projects`` layout."""

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        root_path = Path(root).expanduser().absolute()
        if root_path.exists() and not root_path.is_dir():
            raise StoreUnavailableError(
                _("jsonfs root {path} exists but is not a folder").format(path=repr(str(root_path)))
            )
        self.root = root_path.resolve()
        self.fsync = fsync
        self._indexes: dict[str, _UuidIndex] = {}
        self._problems: dict[str, list[LoadProblem]] = {}
        self._warned_outside: set[str] = set()

    @property
    def url(self) -> str:
        """A URL that :func:`flower.open_session_store` opens to this same store."""
        return f"jsonfs://{self.root}"

    def __repr__(self) -> str:
        return f"JsonfsSessionStore({str(self.root)!r}, fsync={self.fsync})"

    # -- paths -------------------------------------------------------------------

    def _path(self, key: SessionKey) -> Path:
        # SessionKey validates itself; checking again catches keys forged around it.
        check_name("project_key", key.project_key)
        check_name("session_id", key.session_id)
        base = self.root / key.project_key
        if key.subpath is None:
            candidate = base / f"{key.session_id}{SUFFIX}"
        else:
            check_subpath(key.subpath)
            candidate = base / key.session_id / f"{key.subpath}{SUFFIX}"
        for part in candidate.relative_to(self.root).parts:
            _check_length(part)
        for name in (key.session_id, *(key.subpath or "").split("/")):
            _check_suffix(name)
        return resolve_under(self.root, candidate)

    def _project_dir(self, project_key: str) -> Path:
        check_name("project_key", project_key)
        _check_length(project_key)
        return resolve_under(self.root, self.root / project_key)

    # -- writing -----------------------------------------------------------------

    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        lines = encode_entries(entries)
        if not lines:
            return
        path = self._path(key)
        try:
            self._append(path, entries, lines)
        except OSError as exc:  # a full disk: one line naming the file, never a retry
            fault = local_fault(exc, path)
            if fault is None:
                raise
            raise fault from exc

    def _append(self, path: Path, entries: Sequence[Entry], lines: list[bytes]) -> None:
        with _writing(path):
            private_dir(path.parent, durable=self.fsync)
            if not path.exists() and self._create(path, entries, lines):
                return
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        check_private(path, fd=fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._append_locked(fd, str(path), entries, lines)
        finally:
            os.close(fd)  # also releases the lock

    def _create(self, path: Path, entries: Sequence[Entry], lines: list[bytes]) -> bool:
        """Write a new session's first batch to a temporary file, then link it in place:
        a crash leaves no transcript or the whole batch, never an empty or half one.
        False when another writer created ``path`` first (append to it instead).

        The temporary file is locked until it is gone, so ``sessions gc`` (see
        :meth:`leftovers`) never takes one a writer is still at work on."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                self._append_locked(fd, str(tmp), entries, lines)
            finally:
                self._indexes.pop(str(tmp), None)
            try:
                os.link(tmp, path)  # unlike rename, never replaces what is there
            except FileExistsError:
                return False
        finally:
            tmp.unlink(missing_ok=True)
            os.close(fd)  # also releases the lock
        if self.fsync:
            fsync_dir(path.parent)
        return True

    def _append_locked(
        self, fd: int, path: str, entries: Sequence[Entry], lines: list[bytes]
    ) -> None:
        st = os.fstat(fd)
        index = self._indexes.get(path)
        if index is None or not index.still_describes(fd, st):
            index = _UuidIndex(st.st_ino)
        read_to = index.scanned_to
        index.catch_up(fd, st.st_size)
        if index.scanned_to != read_to:
            index.remember_end(fd)
        self._indexes[path] = index

        fresh: set[str] = set()
        out: list[bytes] = []
        for entry, line in zip(entries, lines, strict=True):
            uid = entry.get("uuid")
            if uid is not None:
                if uid in index.uuids or uid in fresh:
                    continue
                fresh.add(uid)
            out.append(line)
        if not out:
            return
        # What a crash left after the last committed line (a torn line, a batch cut short)
        # stays as written, but must never count: nothing the index skipped may turn into
        # an entry, nor may our lines finish someone else's batch.
        close = b""
        if st.st_size > index.scanned_to:
            torn = os.pread(fd, 1, st.st_size - 1) != b"\n"
            close = _CLOSE_TORN if torn else _CLOSE_BATCH
        payload = close + (_MORE + b"\n").join(out) + b"\n"
        try:
            write_all(fd, payload)
            if self.fsync:
                os.fdatasync(fd)
        except OSError:
            # Under the lock nobody else wrote: take back what of this batch reached
            # the file (a full disk cut it), so the file ends where the last
            # acknowledged append left it and a retry later starts clean.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, st.st_size)
            raise
        index.uuids |= fresh
        index.note_written(fd, st.st_size, payload)

    # -- reading -----------------------------------------------------------------

    def _open_snapshot(self, key: SessionKey) -> tuple[int, int, str] | None:
        """Open ``key``'s file and note its size while no append is half-written."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            size = os.fstat(fd).st_size
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        return fd, size, str(path)

    def load(self, key: SessionKey) -> list[Entry] | None:
        """The transcript, each line decoded as it is read (in chunks: no copy of the
        whole file is held beside the entries)."""
        opened = self._open_snapshot(key)
        if opened is None:
            return None
        fd, size, path = opened
        problems: list[LoadProblem] = []
        try:
            entries = list(_committed(path, iter_lines(fd, 0, size), problems))
        finally:
            os.close(fd)
        self._record_problems(path, problems)
        return entries

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        opened = self._open_snapshot(key)
        if opened is None:
            return
        fd, size, path = opened
        problems: list[LoadProblem] = []
        try:
            yield from _committed(path, iter_lines(fd, 0, size), problems)
        finally:
            os.close(fd)
        self._record_problems(path, problems)

    def problems(self, key: SessionKey) -> list[LoadProblem]:
        """Lines the last load (or full iteration) of ``key`` skipped; empty if none."""
        return list(self._problems.get(str(self._path(key)), []))

    def _record_problems(self, path: str, problems: list[LoadProblem]) -> None:
        if problems:
            self._problems[path] = problems
            for problem in problems:
                log.warning(
                    _("%s line %d (byte %d): skipped %s: %s"),
                    problem.path,
                    problem.line,
                    problem.offset,
                    problem.kind,
                    problem.detail,
                )
        else:
            self._problems.pop(path, None)

    def exists(self, key: SessionKey) -> bool:
        return self._path(key).is_file()

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        """Read backwards from the end of the file until an assistant entry has usage."""
        opened = self._open_snapshot(key)
        if opened is None:
            return None
        fd, size, _ = opened
        try:
            for line in _committed_backwards(fd, size):
                if b'"assistant"' not in line:
                    continue
                try:
                    entry = decode_entry(line)
                except msgspec.DecodeError:
                    continue
                usage = reported_usage(entry)
                if usage:
                    return usage
        finally:
            os.close(fd)
        return None

    # -- listing -----------------------------------------------------------------

    def _outside(self, project: str) -> bool:
        """Whether the project folder ``project`` is a symlink that leads out of the
        store: listings skip it, saying so once per store, and never read through it."""
        path = self.root / project
        if not path.is_symlink():
            return False
        try:
            resolve_under(self.root, path)
        except InvalidKeyError:
            if project not in self._warned_outside:
                self._warned_outside.add(project)
                log.warning(
                    _("%s is a symlink to %s, outside the store at %s; its sessions are skipped"),
                    path,
                    os.path.realpath(path),
                    self.root,
                )
            return True
        return False

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        check_name("project_key", project_key)
        if self._outside(project_key):
            return []
        folder = self._project_dir(project_key)
        infos: list[SessionInfo] = []
        try:
            scan = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for item in scan:
            session_id = item.name[: -len(SUFFIX)]
            if not item.name.endswith(SUFFIX) or not _valid_name(session_id):
                continue
            if session_id.endswith(SUFFIX):
                continue
            try:
                if not item.is_file():
                    continue
                mtime_ns = item.stat().st_mtime_ns
            except FileNotFoundError:
                continue  # deleted while we listed
            infos.append(SessionInfo(session_id, mtime_ns // 1_000_000))
        return newest_first(infos)

    def list_projects(self) -> list[str]:
        try:
            scan = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        return sorted(
            item.name
            for item in scan
            if _valid_name(item.name)
            and item.is_dir()
            and not (item.is_symlink() and self._outside(item.name))
            and _holds_transcripts(item.path)
        )

    def list_subkeys(self, key: SessionKey) -> list[str]:
        main = key.main
        folder = resolve_under(self.root, self.root / main.project_key / main.session_id)
        if not folder.is_dir():
            return []
        found: list[str] = []
        for path in folder.rglob(f"*{SUFFIX}"):
            relative = path.relative_to(folder).as_posix()[: -len(SUFFIX)]
            parts = relative.split("/")
            if (
                path.is_file()
                and _valid_subpath(relative)
                and not any(part.endswith(SUFFIX) for part in parts)
            ):
                found.append(relative)
        return sorted(found)

    def find_session(self, session_id: str) -> SessionKey | None:
        """The main key of ``session_id``; in several projects, the newest one."""
        check_name("session_id", session_id)
        newest: tuple[int, str] | None = None
        for project in self.list_projects():
            try:
                st = (self.root / project / f"{session_id}{SUFFIX}").stat()
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISREG(st.st_mode) and (newest is None or st.st_mtime_ns > newest[0]):
                newest = (st.st_mtime_ns, project)
        return None if newest is None else SessionKey(newest[1], session_id)

    # -- deleting ----------------------------------------------------------------

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        path = self._path(key.main)
        with contextlib.suppress(FileNotFoundError):  # nothing stored: nothing to date
            os.utime(path, ns=(time.time_ns(), int(mtime_ms) * 1_000_000))

    def delete(self, key: SessionKey) -> None:
        path = self._path(key)
        doomed = [path]
        if key.subpath is None:
            folder = resolve_under(self.root, self.root / key.project_key / key.session_id)
            if folder.is_dir():
                doomed.extend(folder.rglob(f"*{SUFFIX}"))
                with _writing(folder):
                    shutil.rmtree(folder)
        with _writing(path):
            path.unlink(missing_ok=True)
        for gone in doomed:
            self._indexes.pop(str(gone), None)
            self._problems.pop(str(gone), None)
        if self.fsync and path.parent.is_dir():
            fsync_dir(path.parent)

    # -- what a killed writer left ------------------------------------------------

    def leftovers(self, older_than: float, now: float) -> list[Leftover]:
        """The first batches' temporary files a kill left (never a transcript), last
        written more than ``older_than`` seconds before ``now`` and locked by no writer."""
        cutoff_ns = int((now - older_than) * 1e9)
        found: list[Leftover] = []
        for folder, _dirs, files in os.walk(self.root):  # into no symlinked folder
            for name in files:
                if not _TEMP_NAME.match(name):
                    continue
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    continue  # its writer finished while we looked
                if not stat.S_ISREG(st.st_mode) or st.st_mtime_ns >= cutoff_ns:
                    continue
                if _held_by_a_writer(path):
                    continue
                found.append(Leftover(path, st.st_size, st.st_mtime_ns // 1_000_000))
        return sorted(found, key=lambda leftover: leftover.path)

    def remove_leftover(self, leftover: Leftover) -> bool:
        path = resolve_under(self.root, Path(leftover.path))
        if not _TEMP_NAME.match(path.name):
            raise InvalidKeyError(
                _("{path} is no temporary file of this store").format(path=repr(leftover.path))
            )
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False  # gone, or not ours to open
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # a writer is at work on it
            held = os.fstat(fd)
            try:
                there = os.lstat(path)
            except FileNotFoundError:
                return False
            if (held.st_dev, held.st_ino) != (there.st_dev, there.st_ino) or (
                held.st_size,
                held.st_mtime_ns // 1_000_000,
            ) != (leftover.size, leftover.mtime_ms):
                return False  # not the file that was listed
            with _writing(path):
                os.unlink(path)
        finally:
            os.close(fd)
        return True

    def close(self) -> None:
        self._indexes.clear()
        self._problems.clear()


_BOM = b"\xef\xbb\xbf"


def _without_bom(first_line: bytes) -> bytes:
    """A file's first line without the UTF-8 byte order mark an editor may have put
    there (Windows Notepad does); the entry after it is no less an entry."""
    return first_line[len(_BOM) :] if first_line.startswith(_BOM) else first_line


def _committed(
    path: str, lines: Iterable[tuple[int, bytes, bool]], problems: list[LoadProblem]
) -> Iterator[Entry]:
    """The entries of ``(offset, line, complete)`` lines, but none of an unfinished batch.

    A batch's lines but the last end with ``_MORE``; its entries count once the line that
    ends it (complete, unmarked, an object) comes. Anything else there (an empty, corrupt
    or torn line, the end of the file) means the append did not finish: they are dropped.
    """
    batch: list[Entry] = []
    start: tuple[int, int] | None = None  # line number and offset of an unfinished batch
    for number, (offset, line, complete) in enumerate(lines, start=1):
        reported = len(problems)
        entry = _parse_line(path, number, offset, line, complete, problems)
        if complete and line.endswith(_MORE) and not line.isspace():
            if start is None:
                start = (number, offset)
            if entry is not None:
                batch.append(entry)
            continue
        if start is not None:
            if entry is not None:
                yield from batch
            else:
                problems.insert(reported, _unfinished(path, start, batch))
            batch.clear()
            start = None
        if entry is not None:
            yield entry
    if start is not None:
        problems.append(_unfinished(path, start, batch))


def _unfinished(path: str, start: tuple[int, int], batch: list[Entry]) -> LoadProblem:
    detail = _("an append that did not finish (its last line is missing); left out: {count}")
    detail = detail.format(count=len(batch))
    return LoadProblem(path, start[0], start[1], "incomplete-batch", detail)


def _parse_line(
    path: str,
    number: int,
    offset: int,
    line: bytes,
    complete: bool,
    problems: list[LoadProblem],
) -> Entry | None:
    if offset == 0:
        line = _without_bom(line)
    if not line or line.isspace():  # no copy, unlike strip(), of a batch line's tab
        return None
    if not complete:
        # Never an entry, even when the bytes happen to parse: the append that wrote them
        # did not finish (its newline is missing), and the uuid index does not count it.
        torn = ngettext("{size} byte, no newline", "{size} bytes, no newline", len(line))
        problems.append(LoadProblem(path, number, offset, "torn-tail", torn.format(size=len(line))))
        return None
    try:
        entry = decode_entry(line)
    except msgspec.DecodeError as exc:
        corrupt = ngettext("{size} byte: {error}", "{size} bytes: {error}", len(line))
        detail = corrupt.format(size=len(line), error=exc)
        problems.append(LoadProblem(path, number, offset, "corrupt-line", detail))
        return None
    if not isinstance(entry, dict):
        # TRANSLATORS: {type} is a Python type name: list, str, int...
        detail = _("a {type}").format(type=type(entry).__name__)
        problems.append(LoadProblem(path, number, offset, "not-an-object", detail))
        return None
    return entry


def _lines_backwards(fd: int, size: int) -> Iterator[bytes]:
    """The file's lines from the last to the first; reads grow so a huge line costs O(n).

    The first one is what follows the last newline: empty, or a torn tail.
    """
    pos = size
    tail = b""
    step = _BACKWARD_CHUNK
    while pos > 0:
        step = min(max(step, len(tail)), pos)
        pos -= step
        buf = os.pread(fd, step, pos) + tail
        lines = buf.split(b"\n")
        tail = lines[0]
        yield from reversed(lines[1:])
    if tail:
        yield tail


def _committed_backwards(fd: int, size: int) -> Iterator[bytes]:
    """The lines ``_committed`` keeps, from the last to the first, undecoded.

    Only the line that ends a batch is decoded, to learn whether it does (an object).
    """
    lines = _lines_backwards(fd, size)
    next(lines, None)  # what follows the last newline: nothing, or a torn tail
    ends: bytes | None = None  # the unmarked line after this one, not checked yet
    finished = False  # whether a marked line here would belong to a finished batch
    for line in lines:
        if not line or line.isspace():
            ends, finished = None, False
        elif line.endswith(_MORE):
            if ends is not None:
                finished = _is_object(ends)
                ends = None
            if finished:
                yield line
        else:
            ends = line
            yield line


def _is_object(line: bytes) -> bool:
    try:
        _uuid_decoder.decode(line)
    except msgspec.DecodeError:
        return _lenient(line) is not None
    return True


def _add_uuid(uuids: set[str], line: bytes) -> None:
    if b'"uuid"' not in line:
        return
    try:
        uid = _uuid_decoder.decode(line).uuid
    except msgspec.DecodeError:
        entry = _lenient(line)
        uid = entry.get("uuid") if entry is not None else None
    if isinstance(uid, str):
        uuids.add(uid)


def _lenient(line: bytes) -> dict[str, Any] | None:
    """The object on a line msgspec refused, when the JSON standard allows it (a lone
    surrogate escape); ``None`` for a line that is no JSON object."""
    try:
        entry = decode_entry(line)
    except msgspec.DecodeError:
        return None
    return entry if isinstance(entry, dict) else None


def _held_by_a_writer(path: str) -> bool:
    """Whether a writer holds ``path``'s lock (or it cannot be told: then it is left)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _holds_transcripts(project_dir: str) -> bool:
    """Whether a project folder holds a transcript, main or subkey: a folder whose sessions
    were all deleted holds none, nor does another program's hidden folder."""
    try:
        items = list(os.scandir(project_dir))
    except (FileNotFoundError, NotADirectoryError):
        return False  # deleted while we listed
    with contextlib.suppress(FileNotFoundError):
        if any(item.name.endswith(SUFFIX) and item.is_file() for item in items):
            return True
        return any(
            path.is_file()
            for item in items
            if item.is_dir(follow_symlinks=False)
            for path in Path(item.path).rglob(f"*{SUFFIX}")
        )
    return False


def _check_length(part: str) -> None:
    if len(os.fsencode(part)) > NAME_MAX:
        raise InvalidKeyError(
            _("{part}... is too long for a file name ({limit} bytes at most)").format(
                part=repr(part[:40]), limit=NAME_MAX
            )
        )


def _check_suffix(name: str) -> None:
    """A session id or subpath part ending in ``.jsonl`` would be the name of another
    key's transcript file: ``s.jsonl``'s subkeys' folder is ``s``'s main transcript."""
    if name.endswith(SUFFIX):
        raise InvalidKeyError(
            _(
                "{name} ends in {suffix}: in a jsonfs store it would collide with the file "
                "of another session's transcript"
            ).format(name=repr(name), suffix=repr(SUFFIX))
        )


def _valid_name(name: str) -> bool:
    try:
        check_name("name", name)
    except InvalidKeyError:
        return False
    return True


def _valid_subpath(subpath: str) -> bool:
    try:
        check_subpath(subpath)
    except InvalidKeyError:
        return False
    return True
