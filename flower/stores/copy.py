"""Copy sessions from any session store to any other, streaming and idempotent.

Memory stays bounded by one batch plus a small digest per entry already in the
target session: the source is read with ``iter_entries`` and written in batches.
Re-running a copy adds nothing: an entry whose ``uuid`` the target already holds
with the same content is skipped; one the target holds with *different* content is
a conflict, reported and never overwritten. Entries without a ``uuid`` are matched
by content so they are not doubled either.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, NamedTuple

import msgspec

from flower.core.display import n_entries, n_sessions, n_transcripts
from flower.core.errors import StoreUnavailableError
from flower.core.i18n import N_, _, ngettext
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.stores.encrypt import CHECK_KEY, EncryptedSessionStore, is_sealed
from flower.stores.transcripts import transcripts

DEFAULT_BATCH = 500
_canonical = msgspec.json.Encoder(order="sorted")


def digest(entry: Entry) -> bytes:
    """A content digest independent of key order (backends may reorder JSON keys)."""
    return hashlib.blake2b(_canonical.encode(entry), digest_size=16).digest()


@dataclass(frozen=True)
class Conflict:
    key: SessionKey
    uuid: str


@dataclass(frozen=True)
class Mismatch:
    key: SessionKey
    index: int
    why: str
    """The English message (a msgid, ``{uuid}`` in it for the entry's uuid)."""
    uuid: str = ""

    @property
    def reason(self) -> str:
        """In English, as ``--json`` says it in every language."""
        return self.why.format(uuid=self.uuid)

    def shown(self) -> str:
        """In the active language, for people."""
        return _(self.why).format(uuid=self.uuid)


class CopySaid(NamedTuple):
    """What ``flower sessions copy`` says of a :class:`CopyReport`, in the active language."""

    summary: str
    """What was copied from where to where (stdout)."""
    conflicts: list[str]
    """The first 20 conflicts, one a line (stderr)."""
    verified: str | None
    """With ``--verify``: whether both sides are equal (stdout); None without it."""
    differences: list[str]
    """The first 20 transcripts that differ, and where (stderr)."""


@dataclass
class CopyReport:
    sessions: int = 0
    transcripts: int = 0
    """Main transcripts plus their subpaths."""
    entries_read: int = 0
    entries_written: int = 0
    entries_present: int = 0
    """Already in the target with the same content (a re-run)."""
    conflicts: list[Conflict] = field(default_factory=list)
    mismatches: list[Mismatch] | None = None
    """Set by verification; empty means both sides are equal entry by entry."""

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.mismatches

    def said(self, source: str, target: str) -> CopySaid:
        """The report in words, as ``flower sessions copy --from source --to target``
        prints it (the store names as given: redacted by the caller)."""
        copied = ngettext(
            "copied {sessions} ({transcripts}) from {source} to {target}: {entries} read, "
            "{written} written, {present} already there, {count} conflict",
            "copied {sessions} ({transcripts}) from {source} to {target}: {entries} read, "
            "{written} written, {present} already there, {count} conflicts",
            len(self.conflicts),
        ).format(
            sessions=n_sessions(self.sessions),
            transcripts=n_transcripts(self.transcripts),
            source=source,
            target=target,
            entries=n_entries(self.entries_read),
            written=self.entries_written,
            present=self.entries_present,
            count=len(self.conflicts),
        )
        conflict = _("conflict: {transcript} already holds a different entry {uuid} (kept)")
        conflicts = [
            conflict.format(
                transcript=c.key.session_id + (f"/{c.key.subpath}" if c.key.subpath else ""),
                uuid=c.uuid,
            )
            for c in self.conflicts[:20]
        ]
        mismatches = self.mismatches
        if mismatches is None:
            return CopySaid(copied, conflicts, None, [])
        differ = ngettext(
            "verify: {count} transcript differs",
            "verify: {count} transcripts differ",
            len(mismatches),
        )
        verified = (
            differ.format(count=len(mismatches)) if mismatches else _("verify: both sides equal")
        )
        differs = _("differs: {session} at entry {index}: {reason}")
        differences = [
            differs.format(session=m.key.session_id, index=m.index, reason=m.shown())
            for m in mismatches[:20]
        ]
        return CopySaid(copied, conflicts, verified, differences)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (``flower sessions copy --json``): the figures, each
        conflict and mismatch by its key, ``verified`` None when not verified."""

        def where(key: SessionKey) -> dict[str, Any]:
            return {
                "project_key": key.project_key,
                "session_id": key.session_id,
                "subpath": key.subpath,
            }

        mismatches = None
        if self.mismatches is not None:
            mismatches = [
                {**where(m.key), "index": m.index, "reason": m.reason} for m in self.mismatches
            ]
        return {
            "sessions": self.sessions,
            "transcripts": self.transcripts,
            "entries_read": self.entries_read,
            "entries_written": self.entries_written,
            "entries_present": self.entries_present,
            "conflicts": [{**where(c.key), "uuid": c.uuid} for c in self.conflicts],
            "verified": mismatches == [] if mismatches is not None else None,
            "mismatches": mismatches,
        }


Progress = Callable[["CopyReport"], None]
"""Called with the running report after every batch and every finished session."""
PROGRESS_EVERY = 200


def select_sessions(source: SessionStoreBase, *, project: str | None = None) -> list[SessionKey]:
    """The main keys a copy covers: one project's, or everything's. One session is
    found as every command finds it: :func:`flower.stores.lookup.find_session_key`."""
    projects = [project] if project is not None else source.list_projects()
    return [
        SessionKey(proj, info.session_id)
        for proj in projects
        for info in source.list_sessions(proj)
    ]


def _as_loaded(target: SessionStoreBase) -> Callable[[Entry], Entry] | None:
    """How ``target`` loads back an entry copied into it, when not as it was given: an
    encrypted store keeps an entry that comes sealed and loads it decrypted, so source
    entries are compared with the target in that form."""
    return target.as_loaded if isinstance(target, EncryptedSessionStore) else None


def new_anonymous(target: SessionStoreBase, key: SessionKey) -> tuple[Callable[[Entry], bool], int]:
    """For appending entries into ``key`` again (an import run twice): whether an entry
    without a uuid is new, counting the ones the target already holds by content
    (entries with a uuid always pass: the store itself keeps those once); and how many
    entries it holds, from the same read."""
    by_uuid, held = _target_index(target, key)
    holds = len(by_uuid) + sum(held.values())

    def is_new(entry: Entry) -> bool:
        if isinstance(entry.get("uuid"), str):
            return True
        found = digest(entry)
        if held[found] > 0:
            held[found] -= 1
            return False
        return True

    return is_new, holds


def _target_index(
    target: SessionStoreBase, key: SessionKey
) -> tuple[dict[str, bytes], Counter[bytes]]:
    by_uuid: dict[str, bytes] = {}
    anonymous: Counter[bytes] = Counter()
    for entry in target.iter_entries(key):
        uid = entry.get("uuid")
        if isinstance(uid, str):
            by_uuid[uid] = digest(entry)
        else:
            anonymous[digest(entry)] += 1
    return by_uuid, anonymous


def copy_transcript(
    source: SessionStoreBase,
    target: SessionStoreBase,
    key: SessionKey,
    report: CopyReport,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Progress | None = None,
    entries: Iterable[Entry] | None = None,
) -> None:
    """Append to ``target`` every entry of ``key`` it does not hold yet, in order
    (``entries``: those instead of the source's)."""
    by_uuid, anonymous = _target_index(target, key)
    loaded = _as_loaded(target)
    batch: list[Entry] = []
    for entry in source.iter_entries(key) if entries is None else entries:
        report.entries_read += 1
        if progress is not None and report.entries_read % PROGRESS_EVERY == 0:
            progress(report)
        d = digest(entry if loaded is None else loaded(entry))
        uid = entry.get("uuid")
        if isinstance(uid, str):
            held = by_uuid.get(uid)
            if held is not None:
                if held == d:
                    report.entries_present += 1
                else:
                    report.conflicts.append(Conflict(key, uid))
                continue
            by_uuid[uid] = d
        elif anonymous[d] > 0:
            anonymous[d] -= 1
            report.entries_present += 1
            continue
        batch.append(entry)
        if len(batch) >= batch_size:
            target.append(key, batch)
            report.entries_written += len(batch)
            batch = []
    if batch:
        target.append(key, batch)
        report.entries_written += len(batch)
    report.transcripts += 1


def copy_sessions(
    source: SessionStoreBase,
    target: SessionStoreBase,
    keys: list[SessionKey],
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Progress | None = None,
    verify: bool = False,
) -> CopyReport:
    """Copy every session in ``keys`` (with its subpaths) from ``source`` to ``target``."""
    report = CopyReport()
    if isinstance(target, EncryptedSessionStore):
        # It keeps its own key-check record; a raw view of an encrypted source lists one.
        keys = [k for k in keys if k.project_key != CHECK_KEY.project_key]
    ages = SessionAges(source, target)
    for main in keys:
        before = ages.target(main)
        for key in transcripts(source, main):
            copy_transcript(source, target, key, report, batch_size=batch_size, progress=progress)
        ages.keep(main, before)
        report.sessions += 1
        if progress is not None:
            progress(report)
    if verify:
        report.mismatches = verify_sessions(source, target, keys)
    return report


class SessionAges:
    """Modification times, so a copied session keeps its age (``gc --older-than`` and
    ``archive`` select by it): the target gets the newer of its own and the source's."""

    def __init__(self, source: SessionStoreBase, target: SessionStoreBase) -> None:
        self.source = source
        self.target_store = target
        self._listed: dict[tuple[int, str], dict[str, int]] = {}

    def _mtimes(self, store: SessionStoreBase, project: str) -> dict[str, int]:
        cached = self._listed.get((id(store), project))
        if cached is None:
            try:
                infos = store.list_sessions(project)
            except NotImplementedError:
                infos = []
            cached = self._listed[(id(store), project)] = {
                info.session_id: info.mtime_ms for info in infos
            }
        return cached

    def target(self, key: SessionKey) -> int | None:
        """The target's time for ``key`` before the copy (None: it had no such session)."""
        return self._mtimes(self.target_store, key.project_key).get(key.session_id)

    def keep(self, key: SessionKey, before: int | None) -> None:
        age = self._mtimes(self.source, key.project_key).get(key.session_id)
        if age is None:
            return
        # a target that cannot date its sessions keeps its own times
        with contextlib.suppress(NotImplementedError):
            self.target_store.set_modified(key, max(age, before or 0))


def _compare(
    source: Iterator[Entry],
    target: Iterator[Entry],
    key: SessionKey,
    loaded: Callable[[Entry], Entry] | None,
) -> Mismatch | None:
    for index, (left, right) in enumerate(zip_longest(source, target)):
        if left is None:
            return Mismatch(key, index, N_("the target has more entries than the source"))
        if right is None:
            return Mismatch(key, index, N_("the target is missing entries from here on"))
        uid = str(left.get("uuid") or "(no uuid)")
        if loaded is not None:
            # An encrypted target decrypts what it loads: still sealed is sealed twice.
            if is_sealed(right):
                return Mismatch(key, index, N_("entry {uuid} is sealed twice"), uid)
            left = loaded(left)
        if digest(left) != digest(right):
            return Mismatch(key, index, N_("entry {uuid} differs"), uid)
    return None


def verify_sessions(
    source: SessionStoreBase, target: SessionStoreBase, keys: list[SessionKey]
) -> list[Mismatch]:
    """Compare both sides entry by entry, streaming; the first difference per transcript."""
    mismatches = []
    loaded = _as_loaded(target)
    for main in keys:
        for key in transcripts(source, main):
            found = _compare(source.iter_entries(key), target.iter_entries(key), key, loaded)
            if found is not None:
                mismatches.append(found)
    return mismatches


@dataclass(frozen=True)
class Salvaged:
    """One transcript of a damaged store: how many entries were saved, and whether
    damage cut it (its reading stopped, or entries its chain links to were lost)."""

    key: SessionKey
    entries: int
    cut: bool


@dataclass
class SalvageReport:
    copy: CopyReport = field(default_factory=CopyReport)
    transcripts: list[Salvaged] = field(default_factory=list)

    @property
    def cut(self) -> list[Salvaged]:
        return [t for t in self.transcripts if t.cut]


def _readable(entries: Iterator[Entry], stopped: list[bool]) -> Iterator[Entry]:
    """``entries`` up to the first one the store cannot read; a parent link to an entry
    that did not come (a lost page in the middle) is noted in ``stopped`` too."""
    seen: set[object] = set()
    try:
        for entry in entries:
            parent = entry.get("parentUuid")
            if isinstance(parent, str) and parent not in seen and not stopped:
                stopped.append(True)
            seen.add(entry.get("uuid"))
            yield entry
    except StoreUnavailableError:
        stopped.append(True)


def salvage_sessions(
    source: SessionStoreBase,
    target: SessionStoreBase,
    keys: list[SessionKey],
    *,
    progress: Progress | None = None,
) -> SalvageReport:
    """Copy what is readable of every transcript in ``keys`` (mains and subpaths, each
    given) from a damaged ``source`` into ``target``: each one up to the first entry
    that cannot be read. A copy as :func:`copy_sessions` makes one, but damage ends one
    transcript, not the whole copy."""
    report = SalvageReport()
    for key in keys:
        stopped: list[bool] = []
        before = report.copy.entries_read
        # a damaged store's own way to read what it still holds, when it has one
        reader = getattr(source, "salvage_entries", source.iter_entries)
        try:
            streamed = reader(key)
        except StoreUnavailableError:
            streamed = iter(())
            stopped.append(True)
        copy_transcript(
            source,
            target,
            key,
            report.copy,
            progress=progress,
            entries=_readable(streamed, stopped),
        )
        report.transcripts.append(Salvaged(key, report.copy.entries_read - before, bool(stopped)))
        if key.subpath is None:
            report.copy.sessions += 1
        if progress is not None:
            progress(report.copy)
    return report
