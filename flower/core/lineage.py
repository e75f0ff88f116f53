"""Lineage: which session each step of a workspace used, kept across processes.

Two invariants from the seed page (docs/continuity.md):

1. A session id is written the instant it exists (:meth:`Lineage.record_session`),
   not at a step boundary; a failed write (``OSError``) is swallowed, it never stops
   the run.
2. Several processes sharing one run directory keep every step: a save merges what
   this process changed since it last read the record into the record as it is now,
   under the store's lock (:meth:`Lineage.save`, ``LineageStore.update``).
3. Anything that does not match is a silent fresh start, never an error: a corrupt
   record, a record for another workspace path, a store that cannot be opened.
   Sessions missing from the session store are filtered by the workflow with
   ``runtime.has_session`` before use.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from flower.core.errors import FlowerError
from flower.core.fileperms import private_dir, replaced_atomically
from flower.core.i18n import _
from flower.core.lease import LeaseLostError, fenced
from flower.core.protocols import (
    FencingLineageStore,
    LineageStore,
    MergingLineageStore,
    MismatchLineageStore,
)
from flower.core.records import LineageMismatch, LineageRecord

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.rewind import RewindPlan

log = logging.getLogger(__name__)
T = TypeVar("T")


def workspace_identity(workspace: str | os.PathLike[str], settings: Settings | None = None) -> str:
    """What lineage records as ``workspace``: the configured id, else the real path."""
    configured = getattr(getattr(settings, "lineage", None), "workspace_id", None)
    if configured:
        return str(configured)
    return os.path.realpath(Path(workspace).expanduser())


def archive_dir(workspace: str | os.PathLike[str], now: float | None = None) -> Path:
    """``<workspace>/notes/archive/<YYYYmmdd-HHMMSS>/``, where ``--new`` archives to."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path(workspace) / "notes" / "archive" / stamp


def set_aside_dir(workspace: str | os.PathLike[str], now: float | None = None) -> Path:
    """A new folder under ``notes/archive/`` for a lineage set aside: the stamp of
    :func:`archive_dir`, with ``-2``, ``-3``... when that folder already holds one."""
    base = archive_dir(workspace, now)
    folder, n = base, 1
    while (folder / "lineage.json").exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


class FreshStart(msgspec.Struct, frozen=True):
    """Why a wake starts afresh although lineage was there, and where the old lineage went.

    ``reason``: ``"moved"`` (it was written for ``moved_from``), ``"unreadable"``, or
    ``"gone"`` (the sessions of ``steps`` are no longer in the session store).
    ``archived``: the folder now holding the old ``lineage.json`` (``flower adopt
    <archived>`` takes it back), or None when it could not be set aside.
    """

    reason: str
    moved_from: str | None = None
    steps: list[str] = msgspec.field(default_factory=list)
    archived: str | None = None


def settings_for(settings: Settings | None, run_dir: str | os.PathLike[str] | None) -> Settings:
    """``settings`` (loaded when None) with ``run_dir`` in place of its own, if given."""
    from flower.core.config import Settings, load_settings

    if settings is None:
        settings = load_settings().settings
    if run_dir is not None and isinstance(settings, Settings):
        settings = msgspec.structs.replace(settings, run_dir=str(run_dir))
    return settings


class NoLineageStore:
    """Stand-in when the configured lineage store cannot be opened: remembers nothing."""

    def load(self, workspace: str) -> LineageRecord | None:
        return None

    def save(self, record: LineageRecord) -> None:
        return None

    def archive(self, into: Path, extra: Sequence[Path] = ()) -> Path | None:
        moved = [p for p in extra if p.exists()]
        if not moved:
            return None
        private_dir(into)
        for path in moved:
            os.replace(path, into / path.name)
        return into


class Lineage:
    """The lineage record of one workspace, bound to the store that persists it."""

    def __init__(
        self,
        store: LineageStore,
        workspace: str,
        record: LineageRecord | None = None,
        *,
        folder: str | os.PathLike[str] | None = None,
    ) -> None:
        self.store = store
        self.workspace = workspace
        self.folder = Path(folder if folder is not None else workspace)
        """The workspace folder: an old lineage is set aside under its notes/archive/."""
        self.fresh: FreshStart | None = None
        """Where the record found in place of this workspace's went, once set aside."""
        self.mismatch: LineageMismatch | None = None
        """What the store holds in place of a record for this workspace, if anything."""
        self.found = record is not None
        """Whether a matching record was on disk when this lineage was loaded."""
        self.record = record if record is not None else LineageRecord(workspace=workspace)
        self._base = copy.deepcopy(self.record)
        """The record as this process last read or wrote it: what a save merges against."""

    @classmethod
    def load(
        cls,
        workspace: str | os.PathLike[str] = ".",
        *,
        store: LineageStore,
        settings: Settings | None = None,
        run_dir: str | os.PathLike[str] | None = None,
    ) -> Lineage:
        """The record for ``workspace`` in ``store``, or a fresh one; never raises.

        The caller opens the store: :func:`flower.stores.lineage.load_lineage` loads
        from the configured one."""
        try:
            settings = settings_for(settings, run_dir)
        except Exception as exc:
            log.warning(_("settings unavailable for lineage: %s"), exc)
            settings = None
        ident = workspace_identity(workspace, settings)
        record: LineageRecord | None
        try:
            record = store.load(ident)
        except Exception as exc:  # corrupt or unreadable: start fresh, silently
            log.debug("lineage unreadable, starting fresh: %s", exc)
            record = None
        if not _is_valid(record, ident):
            record = None
        lineage = cls(store, ident, record, folder=workspace)
        if record is None:
            lineage.mismatch = _mismatch(store, ident)
        return lineage

    # -- reading ---------------------------------------------------------------

    @property
    def woke(self) -> int:
        return self.record.woke

    @property
    def steps(self) -> dict[str, str]:
        """A copy of ``{step name: session id}``."""
        return dict(self.record.steps)

    def live_steps(self, has_session: Callable[[str], bool]) -> dict[str, str]:
        """Only the steps whose session is still in the session store. A store that
        cannot be read raises (its :class:`FlowerError`): those sessions are not gone,
        and a run could not write its own either."""
        live: dict[str, str] = {}
        for name, sid in self.record.steps.items():
            try:
                alive = bool(has_session(sid))
            except FlowerError:
                raise
            except Exception:
                alive = False
            if alive:
                live[name] = sid
        return live

    @property
    def holds_anything(self) -> bool:
        """A record of this workspace, or something else in its place, is in the store."""
        return self.found or self.mismatch is not None

    @property
    def store_name(self) -> str:
        return str(getattr(self.store, "url", None) or type(self.store).__name__)

    # -- writing ---------------------------------------------------------------

    @property
    def durable(self) -> bool:
        """Whether saving reaches a store (not the stand-in for one that can't be opened)."""
        return not isinstance(self.store, NoLineageStore)

    def save(self, *, by_field: Collection[str] = ()) -> bool:
        """Persist the record; ``False`` when the write failed (never raises OSError).

        A store with ``update`` (both built-in ones) merges under its lock: what this
        process changed since it last read the record (steps set or dropped, wakes
        counted, fields beside them) goes into the record as it is now, so another
        process's steps are kept. The fields of ``extra`` named in ``by_field`` (JSON
        objects) merge key by key too, so two processes changing different keys of one
        keep both. ``self.record`` becomes the merged record, changed in place (callers
        may hold its ``steps`` and ``extra``).

        What the store holds in place of this workspace's record (written for another
        folder, unreadable) is first set aside under ``notes/archive/``, as a wake does
        (:meth:`start_fresh`): no caller, the CLI or the Python API, writes over it.

        A fleet wake's write is fenced (:class:`~flower.core.lease.LeaseLostError`, raised,
        once another worker took the task over): by the store when it says it fences its
        writes (:class:`~flower.core.protocols.FencingLineageStore`), else here.
        """
        if self.mismatch is not None:
            self.start_fresh(self.folder)  # writes the record itself, or stops writing
            return self.durable
        store = self.store
        try:
            if isinstance(store, MergingLineageStore):
                merged = partial(self._merged, by_field=by_field)
                self._take(self._fenced(lambda: store.update(self.workspace, merged)))
            else:
                self._fenced(lambda: store.save(self.record))
        except LeaseLostError:
            raise  # a fleet wake taken over: it must stop, not carry on without lineage
        except OSError as exc:
            log.debug("lineage write failed (ignored): %s", exc)
            return False
        except Exception as exc:
            log.warning(_("lineage write failed (ignored): %s"), exc)
            return False
        self._base = copy.deepcopy(self.record)
        return True

    def _fenced(self, write: Callable[[], T]) -> T:
        """``write`` to the store, refused when a fleet wake lost its lease: checked by
        the store itself when it says it fences its writes, else inside :func:`fenced`."""
        return write() if isinstance(self.store, FencingLineageStore) else fenced(write)

    def _merged(
        self, current: LineageRecord | None, *, by_field: Collection[str] = ()
    ) -> LineageRecord:
        if current is None or not _is_valid(current, self.workspace):
            return copy.deepcopy(self.record)
        return merge_records(current, self._base, self.record, by_field=by_field)

    def _take(self, merged: LineageRecord) -> None:
        self.record.woke = merged.woke
        self.record.steps.clear()
        self.record.steps.update(merged.steps)
        self.record.extra.clear()
        self.record.extra.update(merged.extra)

    def record_session(self, step: str, session_id: str) -> None:
        """Point ``step`` at ``session_id`` and write it at once."""
        if self.record.steps.get(step) == session_id:
            return
        self.record.steps[step] = session_id
        self.save()

    def forget(self, step: str) -> None:
        """Drop ``step``'s session (its next run starts fresh)."""
        if self.record.steps.pop(step, None) is not None:
            self.save()

    def bump_woke(self) -> int:
        """Count one more wake and write it; returns the new count (1 on a first run)."""
        self.record.woke += 1
        self.save()
        return self.record.woke

    def rewind(
        self,
        step: str,
        turns: int = 1,
        *,
        store: SessionStoreBase,
        workspace: str | os.PathLike[str] = ".",
        settings: Settings | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        keep_files: bool = False,
        force: bool = False,
    ) -> RewindPlan:
        """Fork ``step``'s session in ``store`` (the session store) ``turns`` user turns
        back, put back the files flower's
        Write and Edit changed since (unless ``keep_files``; a file changed by someone
        else is left unless ``force``) and point ``step`` at the fork. The old session
        stays in the store. It holds the run directory's lock, as ``flower rewind``
        does (:class:`~flower.core.run_lock.BusyError` while another flower works there).
        Returns the :class:`~flower.core.rewind.RewindPlan` done; see docs/fork-and-rewind.md."""
        from flower.core.keys import project_key
        from flower.core.rewind import rewind

        settings = settings_for(settings, run_dir)
        return rewind(
            self,
            step,
            turns,
            store=store,
            project_key=project_key(workspace),
            run_dir=Path(settings.run_dir),
            keep_files=keep_files,
            force=force,
        )

    def replace(self, record: LineageRecord) -> bool:
        """Make ``record`` this workspace's lineage (``flower adopt``) and write it."""
        self.record.woke = record.woke
        self.record.steps.clear()
        self.record.steps.update(record.steps)
        self.record.extra.clear()
        self.record.extra.update(record.extra)
        return self.save()

    def set_aside(self, into: str | os.PathLike[str], *, only: Sequence[str] = ()) -> Path:
        """Copy what the store holds here (this workspace's record, or the foreign or
        unreadable one in its place) to ``into/lineage.json`` (``0600``), then write
        the record without it: without the steps ``only`` names when given, else a
        record that starts over (or, when the store held another folder's or an
        unreadable record, this one as this process set it). Raises when the copy
        cannot be written, before anything is replaced."""
        target = Path(into)
        mismatch = self.mismatch
        raw = mismatch.raw if mismatch is not None else lineage_document(self.record)
        private_dir(target)
        with replaced_atomically(target / "lineage.json") as out:
            out.write(raw)
        if only:
            for step in only:
                self.record.steps.pop(step, None)
        elif mismatch is None:
            self.record = LineageRecord(workspace=self.workspace)
            self._base = copy.deepcopy(self.record)
        # else this record never was the one stored: it keeps what this process set
        self.mismatch = None
        self.save()
        return target

    def start_fresh(
        self, workspace: str | os.PathLike[str], gone: Sequence[str] = ()
    ) -> FreshStart | None:
        """Set the old lineage aside when this wake cannot use it: written for another
        directory, unreadable, or naming sessions (steps ``gone``) the store lost.
        ``None`` when it can. If the old lineage cannot be set aside, this lineage
        stops writing (the old one is kept as it is) and ``archived`` is None."""
        if self.mismatch is not None:
            fresh = FreshStart(self.mismatch.reason, moved_from=self.mismatch.moved_from)
            only: Sequence[str] = ()
        elif gone and self.found:
            fresh, only = FreshStart("gone", steps=list(gone)), list(gone)
        else:
            return None
        try:
            folder = self.set_aside(set_aside_dir(workspace), only=only)
        except LeaseLostError:
            raise
        except Exception as exc:  # continuity is an extra: go on, but overwrite nothing
            log.warning(_("lineage could not be set aside, not written this run: %s"), exc)
            self.store = NoLineageStore()
            self.mismatch = None
            self.fresh = fresh
            return fresh
        self.fresh = msgspec.structs.replace(fresh, archived=str(folder))
        return self.fresh

    def archive(
        self, into: str | os.PathLike[str], extra: Sequence[str | os.PathLike[str]] = ()
    ) -> Path | None:
        """Move the record and ``extra`` files (brief, goals) together into ``into``.

        ``steps`` and ``woke`` are reset; the session store is never touched, every
        transcript stays readable.
        """
        target, store = Path(into), self.store
        result = self._fenced(lambda: store.archive(target, [Path(p) for p in extra]))
        self.record = LineageRecord(workspace=self.workspace)
        self._base = copy.deepcopy(self.record)
        self.found = False
        if self.mismatch is not None:  # the archive may have moved what stood in its place
            self.mismatch = _mismatch(self.store, self.workspace)
        return result


def _mismatch(store: LineageStore, ident: str) -> LineageMismatch | None:
    if not isinstance(store, MismatchLineageStore):
        return None
    try:
        found = store.mismatch(ident)
    except Exception as exc:
        log.debug("lineage mismatch not known: %s", exc)
        return None
    return found if isinstance(found, LineageMismatch) else None


class InvalidLineageError(FlowerError, ValueError):
    """A lineage record that cannot be written in the seed's shape."""


def check_record(record: LineageRecord) -> None:
    """Raise :class:`InvalidLineageError` for a record no store can write in the seed's
    shape (every store, and the sealing wrapper before it seals, checks with this)."""
    if not isinstance(record, LineageRecord):
        raise InvalidLineageError(f"expected a LineageRecord, got {type(record).__name__}")
    if not isinstance(record.workspace, str) or not record.workspace:
        raise InvalidLineageError(f"workspace must be a non-empty string, got {record.workspace!r}")
    if not isinstance(record.woke, int) or isinstance(record.woke, bool) or record.woke < 0:
        raise InvalidLineageError(f"woke must be a non-negative int, got {record.woke!r}")
    if not isinstance(record.steps, dict):
        raise InvalidLineageError(f"steps must be a dict, got {type(record.steps).__name__}")
    for step, session_id in record.steps.items():
        if not isinstance(step, str) or not isinstance(session_id, str):
            raise InvalidLineageError(
                f"steps must map step names to session ids (str -> str), got {step!r}: "
                f"{session_id!r}"
            )
    if not isinstance(record.extra, dict) or not all(isinstance(k, str) for k in record.extra):
        raise InvalidLineageError("extra must be a dict with string keys")
    try:
        json.dumps(record.extra, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidLineageError(f"extra fields are not JSON-safe: {exc}") from None


_CORE_FIELDS = ("workspace", "woke", "steps")


def parse_lineage(raw: bytes) -> LineageRecord | None:
    """A record from lineage.json's bytes, or ``None`` for anything not in its shape."""
    try:
        data = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict):
        return None
    workspace, woke, steps = data.get("workspace"), data.get("woke", 0), data.get("steps", {})
    if not isinstance(workspace, str) or not workspace:
        return None
    if not isinstance(woke, int) or isinstance(woke, bool) or woke < 0:
        return None
    if not isinstance(steps, dict) or not all(isinstance(v, str) for v in steps.values()):
        return None
    extra = {k: v for k, v in data.items() if k not in _CORE_FIELDS}
    return LineageRecord(workspace=workspace, woke=woke, steps=dict(steps), extra=extra)


def lineage_document(record: LineageRecord) -> bytes:
    """``lineage.json``'s bytes for ``record``: the seed's shape, unknown fields after
    the three known ones, readable CJK."""
    import json

    data: dict[str, Any] = {
        "workspace": record.workspace,
        "woke": record.woke,
        "steps": dict(record.steps),
    }
    data.update({k: v for k, v in record.extra.items() if k not in _CORE_FIELDS})
    return (json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode()


def merge_records(
    current: LineageRecord,
    base: LineageRecord,
    mine: LineageRecord,
    *,
    by_field: Collection[str] = (),
) -> LineageRecord:
    """``current`` (the record in the store now) with what changed from ``base`` to
    ``mine`` (this process's view) applied: keys set, changed or removed in ``steps``
    and ``extra`` (in the values of the ``extra`` keys ``by_field`` names, JSON objects,
    key by key), and the wakes counted since (``woke`` grows by the difference)."""
    extra = _merged_map(current.extra, base.extra, mine.extra)
    for key in by_field:
        if base.extra.get(key) == mine.extra.get(key):
            continue  # not changed here: as it is now
        fields = _merged_map(
            _object(current.extra, key), _object(base.extra, key), _object(mine.extra, key)
        )
        if fields:
            extra[key] = fields
        else:
            extra.pop(key, None)
    return LineageRecord(
        workspace=mine.workspace,
        woke=max(0, current.woke + mine.woke - base.woke),
        steps=_merged_map(current.steps, base.steps, mine.steps),
        extra=extra,
    )


def _object(extra: dict[str, Any], key: str) -> dict[str, Any]:
    value = extra.get(key)
    return value if isinstance(value, dict) else {}


def _merged_map(
    current: dict[str, Any], base: dict[str, Any], mine: dict[str, Any]
) -> dict[str, Any]:
    merged = copy.deepcopy(current)
    for key in [*mine, *(k for k in base if k not in mine)]:
        if key in mine and (key not in base or base[key] != mine[key]):
            merged[key] = copy.deepcopy(mine[key])
        elif key not in mine and key in base:
            merged.pop(key, None)
    return merged


def _is_valid(record: object, ident: str) -> bool:
    if not isinstance(record, LineageRecord):
        return False
    if record.workspace != ident:
        return False
    if not isinstance(record.woke, int) or record.woke < 0:
        return False
    steps = record.steps
    return isinstance(steps, dict) and all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in steps.items()
    )


__all__ = [
    "FreshStart",
    "Lineage",
    "archive_dir",
    "lineage_document",
    "merge_records",
    "parse_lineage",
    "set_aside_dir",
    "workspace_identity",
]
