"""Taking an old place back: point this directory's lineage at another one's sessions.

A directory copied to a container or another disk, a ``lineage.json`` set aside by a
fresh start, a lineage archived by ``--new``: :func:`adopt` finds that record, checks
that every session it names is in the session store (copying those kept under the old
directory's project key to this one's), and writes it as this workspace's lineage with
its ``woke`` and steps, so the next ``flower`` here carries on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from flower.core.errors import FlowerError
from flower.core.i18n import _
from flower.core.lineage import Lineage, parse_lineage, set_aside_dir, workspace_identity
from flower.core.records import LineageRecord, SessionKey
from flower.stores.lineage import load_lineage
from flower.stores.transcripts import transcripts

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase


class AdoptError(FlowerError):
    """Nothing to adopt, or the sessions it names are not in the store."""


class Adopted(msgspec.Struct, frozen=True):
    """What :func:`adopt` did."""

    source: str
    """Where the record came from (a lineage file, or the lineage store)."""
    moved_from: str
    """The workspace the record was written for."""
    woke: int
    steps: dict[str, str]
    copied: list[str]
    """Sessions copied from the old directory's project key to this one's."""
    set_aside: str | None
    """Where this directory's own record went before it was replaced (None: it had none)."""


def find_source(workspace: Path, lineage: Lineage, source: str | None) -> tuple[str, LineageRecord]:
    """The record to adopt and where it came from.

    ``source`` may be a lineage file, a folder holding ``lineage.json`` (an archive), or
    the path of the old workspace (its record in the lineage store here, or in the
    newest archive written for it). Without ``source``: a record in place that names
    another directory, else the newest archive under ``notes/archive/``.
    """
    if source is not None:
        given = Path(source).expanduser()
        for candidate in (given / "lineage.json", given):
            if candidate.is_file():
                return str(candidate), _read(candidate)
        old = os.path.realpath(given)
        found = _stored(lineage, old) or _stored(lineage, str(source))
        if found is not None:
            return found
        for archived in _archives(workspace):
            record = parse_lineage(archived.read_bytes())
            if record is not None and record.workspace in (old, str(source)):
                return str(archived), record
        raise AdoptError(
            _(
                "no lineage for {source!r}: give a lineage file, an archive folder "
                "(notes/archive/<stamp>) or the path of the directory this one was copied from"
            ).format(source=source)
        )
    mismatch = lineage.mismatch
    if mismatch is not None and mismatch.reason == "moved" and mismatch.raw:
        record = parse_lineage(mismatch.raw)
        if record is not None:
            return lineage.store_name, record
    for archived in _archives(workspace):
        record = parse_lineage(archived.read_bytes())
        if record is not None:
            return str(archived), record
    raise AdoptError(
        _(
            "nothing to adopt here: no lineage of another directory in the lineage store and "
            "no archive under notes/archive/; give the lineage file or archive to take back"
        )
    )


def _read(path: Path) -> LineageRecord:
    record = parse_lineage(path.read_bytes())
    if record is None:
        raise AdoptError(
            _("{path} is not a lineage record (the seed's lineage.json shape)").format(path=path)
        )
    return record


def _stored(lineage: Lineage, old: str) -> tuple[str, LineageRecord] | None:
    if old == lineage.workspace:
        return None
    try:
        record = lineage.store.load(old)
    except Exception:
        return None
    return (lineage.store_name, record) if record is not None and record.steps else None


def _archives(workspace: Path) -> list[Path]:
    """``notes/archive/*/lineage.json``, newest folder first."""
    root = workspace / "notes" / "archive"
    if not root.is_dir():
        return []
    return sorted(root.glob("*/lineage.json"), key=lambda p: p.parent.name, reverse=True)


def adopt(
    workspace: str | os.PathLike[str],
    source: str | None,
    *,
    settings: Settings,
    store: SessionStoreBase,
) -> Adopted:
    """Make the record ``source`` names this workspace's lineage (see the module doc).

    ``store`` is the session store. Nothing is written unless every session the record
    names is found, under this workspace's project key or the old one's.
    """
    from flower.core.keys import project_key

    here = Path(workspace).resolve()
    lineage = load_lineage(here, settings=settings)
    if not lineage.durable:
        raise AdoptError(_("the lineage store cannot be opened: nothing to write the old place to"))
    origin, record = find_source(here, lineage, source)
    if not record.steps:
        raise AdoptError(
            _("the lineage in {origin} names no sessions: nothing to take back").format(
                origin=origin
            )
        )
    new_key = project_key(here)
    old_key = project_key(record.workspace)
    missing: list[str] = []
    to_copy: list[str] = []
    for step, sid in record.steps.items():
        if store.exists(SessionKey(new_key, sid)):
            continue
        if old_key != new_key and store.exists(SessionKey(old_key, sid)):
            to_copy.append(sid)
        else:
            missing.append(f"{step} ({sid})")
    if missing:
        raise AdoptError(
            _(
                "the lineage in {origin} names sessions the session store does not hold: "
                "{missing}; nothing changed (restore the store, then adopt again)"
            ).format(origin=origin, missing=", ".join(missing))
        )
    for sid in to_copy:
        _copy_session(store, SessionKey(old_key, sid), SessionKey(new_key, sid))
    set_aside = lineage.set_aside(set_aside_dir(here)) if lineage.holds_anything else None
    ident = workspace_identity(here, settings)
    adopted = LineageRecord(
        workspace=ident, woke=record.woke, steps=dict(record.steps), extra=dict(record.extra)
    )
    if not lineage.replace(adopted):
        if set_aside:
            raise AdoptError(
                _(
                    "the lineage could not be written (this directory's own lineage is in "
                    "{set_aside}); see the warning above"
                ).format(set_aside=set_aside)
            )
        raise AdoptError(_("the lineage could not be written; see the warning above"))
    return Adopted(
        source=origin,
        moved_from=record.workspace,
        woke=record.woke,
        steps=dict(record.steps),
        copied=to_copy,
        set_aside=None if set_aside is None else str(set_aside),
    )


def _copy_session(store: SessionStoreBase, old: SessionKey, new: SessionKey) -> None:
    """Every entry of ``old`` (and its subpaths) under ``new``; the old ones stay."""
    for source in transcripts(store, old):
        target = new if source.subpath is None else new.child(source.subpath)
        batch: list[dict[str, Any]] = []
        for entry in store.iter_entries(source):
            batch.append(entry)
            if len(batch) >= 500:
                store.append(target, batch)
                batch = []
        if batch:
            store.append(target, batch)


def adopt_here(workspace: Path, source: str | None, settings: Settings) -> Adopted:
    """:func:`adopt` as ``flower adopt`` does it: the configured plugins checked and the
    run directory writable first, then, under its lock, into the configured store."""
    from flower.core.i18n import N_
    from flower.core.run_lock import require_writable, run_lock
    from flower.stores.open import open_session_store
    from flower.stores.resolve import check_configured_plugins

    check_configured_plugins(settings)
    require_writable(settings.run_path, N_("the run directory"))
    with run_lock(settings.run_path), open_session_store(settings=settings) as store:
        return adopt(workspace.resolve(), source, settings=settings, store=store)


__all__ = ["AdoptError", "Adopted", "adopt", "adopt_here", "find_source"]
