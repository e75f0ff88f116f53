"""What ``flower sessions gc`` and ``archive`` may take: old sessions lineage no longer needs.

Nothing is deleted automatically, ever; these functions choose and delete only what a
caller asks. A session that lineage still points at (the configured lineage store, every
``lineage.json`` under the run directory, and the ones ``flower --new`` archived) is
never chosen; a session written to after it was listed is never deleted.

::

    import time
    from pathlib import Path
    from flower import load_settings, open_session_store
    from flower.stores.retention import delete_unchanged, lineage_session_ids, select_old

    settings = load_settings().settings
    with open_session_store(settings=settings) as store:
        protected = lineage_session_ids(settings, Path.cwd())
        chosen, kept = select_old(store, 30 * 86400, protected, time.time())
        delete_unchanged(store, chosen)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.errors import FlowerError, UsageError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey

if TYPE_CHECKING:
    from flower.core.config import Settings

KEY_CHECK_PROJECT = "flower-encryption"  # flower.stores.encrypt.CHECK_KEY's project

LEFTOVER_AGE = 3600.0
"""How long ago a temporary file must have been last written for ``gc`` to take it. A
writer at work holds its lock, so none is ever taken from one; the hour covers the
instant before it takes the lock, and a filesystem where locks do not hold."""


def lineage_session_ids(settings: Settings, workspace: Path) -> set[str]:
    """Every session id lineage points at: the configured store for ``workspace`` (for
    every workspace, when the store can list them: a SQL lineage store), each
    lineage.json found under the run directory, and the ones ``flower --new`` archived
    under ``<workspace>/notes/archive/``. One that cannot be read is a
    :class:`~flower.core.errors.FlowerError`: what it protects is unknown."""
    from flower.core.lineage import workspace_identity
    from flower.stores.open import open_lineage_store
    from flower_plugins.jsonfs.lineage import parse_lineage

    ids: set[str] = set()
    # The configured store could not be opened: refusing is safer than deleting blind.
    store = open_lineage_store(settings=settings)
    try:
        record = store.load(workspace_identity(workspace, settings))
        every_session_id = getattr(store, "every_session_id", None)
        if callable(every_session_id):  # a store shared by workspaces protects them all
            try:
                ids.update(every_session_id())
            except ValueError as exc:
                raise FlowerError(
                    _("{error}, so the sessions it points at are unknown").format(error=exc)
                ) from None
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()
    if record is not None:
        ids.update(record.steps.values())
    run_dir = (
        settings.run_path if settings.run_path.is_absolute() else Path.cwd() / settings.run_dir
    )
    files = list(run_dir.rglob("lineage.json")) if run_dir.is_dir() else []
    archives = workspace / "notes" / "archive"  # where `flower --new` moves lineage.json
    files += list(archives.glob("*/lineage.json")) if archives.is_dir() else []
    for path in files:
        try:
            found = parse_lineage(path.read_bytes())
        except OSError as exc:
            found, why = None, exc.strerror or str(exc)
        else:
            why = _("not a lineage record")
        if found is None:
            # what it protects is unknown: refusing is safer than deleting blind
            raise FlowerError(
                _(
                    "{path} cannot be read ({why}), so the sessions it points at are unknown; "
                    "repair or remove it, then run again"
                ).format(path=path, why=why)
            )
        ids.update(found.steps.values())
    return {i for i in ids if isinstance(i, str)}


def parse_age(text: str) -> float:
    """``--older-than``'s ``30d`` in seconds (:func:`flower.core.durations.duration_seconds`);
    anything else is a :class:`~flower.core.errors.UsageError` saying what was expected."""
    from flower.core.durations import duration_seconds

    seconds = duration_seconds(text)
    if seconds is None:
        raise UsageError(
            _(
                "--older-than {text!r}: expected a number and a unit (s, m, h, d, w), e.g. 30d"
            ).format(text=text)
        )
    return seconds


@dataclass(frozen=True)
class Candidate:
    """A session chosen for retention, as it was when listed."""

    key: SessionKey
    mtime_ms: int


def select_old(
    store: SessionStoreBase, older_than: float | None, protected: set[str], now: float
) -> tuple[list[Candidate], list[Candidate]]:
    """(sessions to act on, oldest first; old sessions kept because lineage points at
    them). ``older_than`` is in seconds (``None``: every session)."""
    cutoff_ms = (now - older_than) * 1000 if older_than is not None else float("inf")
    chosen: list[Candidate] = []
    kept: list[Candidate] = []
    try:
        projects = store.list_projects()
    except NotImplementedError:
        raise FlowerError(_("this store cannot list its sessions")) from None
    for project in projects:
        if project == KEY_CHECK_PROJECT:  # the encryption's own record, never a session
            continue
        for info in store.list_sessions(project):
            if info.mtime_ms >= cutoff_ms:
                continue
            candidate = Candidate(SessionKey(project, info.session_id), info.mtime_ms)
            (kept if info.session_id in protected else chosen).append(candidate)
    chosen.sort(key=lambda c: c.mtime_ms)
    return chosen, kept


def delete_unchanged(
    store: SessionStoreBase,
    chosen: list[Candidate],
    on_kept: Callable[[Candidate], None] | None = None,
) -> int:
    """Delete the sessions still as they were listed; the number deleted. One written to
    since (while a question was on screen, say) is kept, and given to ``on_kept``: it is
    no longer what was shown, or archived."""
    now: dict[str, dict[str, int]] = {}
    deleted = 0
    for c in chosen:
        project = c.key.project_key
        if project not in now:
            now[project] = {i.session_id: i.mtime_ms for i in store.list_sessions(project)}
        if now[project].get(c.key.session_id) != c.mtime_ms:
            if on_kept is not None:
                on_kept(c)
            continue
        store.delete(c.key)
        deleted += 1
    return deleted


def sweep_snapshots(store: SessionStoreBase, run_path: Path, now: float) -> int:
    """Remove the file snapshots (for rewind) under ``run_path`` that no session left in
    the store names, nor a rewind under way; a fresh one is kept (its tool result may be
    on its way). The number removed; none when the store cannot list every session."""
    from flower.core.rewind import pending
    from flower.core.snapshots import Snapshots, referenced, unreferenced

    snapshots = Snapshots.of_run_dir(run_path)
    if not snapshots.kept():
        return 0
    keep: set[str] = set()
    plan = pending(run_path)
    if plan is not None:
        keep.update(item.before for item in plan.restore if item.before is not None)
    try:
        projects = store.list_projects()
    except NotImplementedError:
        return 0  # cannot see every session: cannot know a copy is unused
    for project in projects:
        for info in store.list_sessions(project):
            keep |= referenced(store.iter_entries(SessionKey(project, info.session_id)))
    gone = unreferenced(snapshots, keep, now)
    for sha in gone:
        snapshots.remove(sha)
    return len(gone)


def selection(
    store: SessionStoreBase,
    settings: Settings,
    workspace: Path,
    older_than: str | None,
    now: float,
) -> tuple[list[Candidate], list[Candidate]]:
    """What ``flower sessions gc`` and ``archive`` select: :func:`select_old` with
    ``older_than`` as ``--older-than`` takes it (``30d``; ``None``: every session), the
    sessions lineage points at for ``workspace`` (:func:`lineage_session_ids`) kept apart."""
    age = parse_age(older_than) if older_than is not None else None
    return select_old(store, age, lineage_session_ids(settings, workspace), now)


__all__ = [
    "KEY_CHECK_PROJECT",
    "LEFTOVER_AGE",
    "Candidate",
    "delete_unchanged",
    "lineage_session_ids",
    "parse_age",
    "select_old",
    "selection",
    "sweep_snapshots",
]
