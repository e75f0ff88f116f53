"""Save what is readable of a damaged SQLite session store, and set the damaged file aside.

``flower sessions repair``: every transcript the damaged file still gives (read past its
indexes, each one up to the first entry that cannot be read) is copied with
:func:`flower.stores.copy.salvage_sessions` into a new database beside it; then the
damaged file (with its WAL) is renamed ``<name>.damaged-<stamp>`` and the new one takes
its name. Entries are copied as stored: sealed entries stay sealed under their keys.

The swap keeps a database at the path at every moment but one rename, and never puts the
new database beside the old one's WAL (SQLite would replay it into the new file).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from flower.core.config import Settings, sqlite_file
from flower.core.errors import DAMAGE_MARKER_SUFFIX, FlowerError, StoreUnavailableError
from flower.core.fileperms import fsync_dir
from flower.core.i18n import _
from flower.core.records import SessionKey
from flower.stores.copy import SalvageReport, salvage_sessions, select_sessions
from flower.stores.open import open_session_store

_SIDE_FILES = ("-wal", "-shm")


@dataclass
class Repaired:
    path: Path
    why: str | None
    """What was wrong (None: the file was sound and nothing was done)."""
    aside: Path | None = None
    report: SalvageReport | None = None


def _keys(source: object) -> list[SessionKey]:
    readable = getattr(source, "readable_keys", None)
    if readable is not None:
        keys: list[SessionKey] = readable()
    else:  # pragma: no cover - every SQLite store has it
        keys = select_sessions(source)  # type: ignore[arg-type]
    return sorted(keys, key=lambda k: (k.project_key, k.session_id, k.subpath or ""))


def repair_sqlite(url: str, *, force: bool = False) -> Repaired:
    """Repair the SQLite database of ``url`` (see the module); a sound one is left as
    it is unless ``force``."""
    path = sqlite_file(url)
    if path is None:
        raise FlowerError(
            _(
                "repair works on a SQLite database file, and {store} is not one; "
                "copy what it holds with flower sessions copy"
            ).format(store=url)
        )
    if not path.is_file():
        raise FlowerError(_("no SQLite database at {path}").format(path=path))
    plain = Settings()  # entries as stored: no encryption wrapper on either side
    source = open_session_store(f"sqlite:///{path}", settings=plain, read_only=True)
    try:
        damage = getattr(source, "damage", None)
        why = damage() if damage is not None else None
        if why is None and not force:
            return Repaired(path, None)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        new = path.with_name(f"{path.name}.repairing-{stamp}")
        target = open_session_store(f"sqlite:///{new}", settings=plain)
        try:
            report = salvage_sessions(source, target, _keys(source))
            _keep_ages(source, target, report)
            copy_lineage = getattr(source, "copy_lineage_into", None)
            if copy_lineage is not None:  # a SQL lineage store kept in the same file
                copy_lineage(target)
        finally:
            target.close()
    finally:
        source.close()
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    _swap(path, new, aside)
    return Repaired(path, why or _("repaired on request"), aside, report)


def repair_configured(settings: Settings, *, force: bool = False) -> Repaired:
    """:func:`repair_sqlite` of the store ``settings`` configure, under the run
    directory's lock: no run there writes while the file is swapped."""
    from flower.core.config import default_store_url
    from flower.core.run_lock import run_lock

    url = settings.sessions.url or default_store_url(settings) or ""
    with run_lock(settings.run_path):
        return repair_sqlite(url, force=force)


def _keep_ages(source: object, target: object, report: SalvageReport) -> None:
    """Each saved session keeps its modification time, where the source still says it."""
    from flower.stores.copy import SessionAges

    ages = SessionAges(source, target)  # type: ignore[arg-type]
    for saved in report.transcripts:
        if saved.key.subpath is None:
            with contextlib.suppress(StoreUnavailableError):
                ages.keep(saved.key, None)


def _checkpointed(new: Path) -> None:
    """Everything of ``new`` in its main file: it moves alone, without a WAL."""
    import sqlite3

    if any(Path(f"{new}{side}").exists() for side in _SIDE_FILES):
        with contextlib.closing(sqlite3.connect(new)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=DELETE")
        with contextlib.closing(sqlite3.connect(new)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
    for side in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{new}{side}")


def _swap(path: Path, new: Path, aside: Path) -> None:
    _checkpointed(new)
    os.link(path, aside)
    for side in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{side}", f"{aside}{side}")
    os.replace(new, path)
    with contextlib.suppress(FileNotFoundError):
        os.replace(f"{path}{DAMAGE_MARKER_SUFFIX}", f"{aside}{DAMAGE_MARKER_SUFFIX}")
    fsync_dir(path.parent)


__all__ = ["Repaired", "repair_configured", "repair_sqlite"]
