"""``flower sessions gc`` and ``flower sessions archive``: retention that never surprises.

Nothing is deleted automatically, ever. ``gc`` lists the sessions older than a given
age, then deletes them only on confirmation; ``archive`` first exports them to a
gzip-compressed JSONL file (one ``{"key": ..., "entry": ...}`` per line), reads it
back, and only then deletes. A session that lineage still points at (the configured
lineage store, and every ``lineage.json`` under the run directory) is never selected.
``flower sessions import FILE.jsonl.gz`` puts an archive back.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from flower.cli.lazy import command_help
from flower.core.errors import FlowerError, InvalidEntryError
from flower.core.i18n import N_, _, ngettext

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import Entry, Leftover, SessionKey

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class RetentionUsageError(FlowerError):
    exit_code = 2


def parse_age(text: str) -> float:
    """``30d`` -> seconds. Units: s, m, h, d, w."""
    match = _DURATION.match(text)
    if not match:
        raise RetentionUsageError(
            _(
                "--older-than {text!r}: expected a number and a unit (s, m, h, d, w), e.g. 30d"
            ).format(text=text)
        )
    return int(match[1]) * _UNIT_SECONDS[match[2]]


def lineage_session_ids(settings: Settings, workspace: Path) -> set[str]:
    """Every session id lineage points at: the configured store for ``workspace`` (for
    every workspace, when the store can list them: a SQL lineage store), each
    lineage.json found under the run directory, and the ones ``flower --new`` archived
    under ``<workspace>/notes/archive/``. One that cannot be read stops the command."""
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


KEY_CHECK_PROJECT = "flower-encryption"  # flower.stores.encrypt.CHECK_KEY's project


@dataclass(frozen=True)
class Candidate:
    key: SessionKey
    mtime_ms: int


def select_old(
    store: SessionStoreBase, older_than: float | None, protected: set[str], now: float
) -> tuple[list[Candidate], list[Candidate]]:
    """(sessions to act on, old sessions kept because lineage points at them)."""
    from flower.core.records import SessionKey

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


def _show(chosen: list[Candidate], kept: list[Candidate], archiving: bool) -> None:
    from flower.cli.output import iso_time, print_table

    if chosen:
        print_table(
            [_("SESSION"), _("MODIFIED (UTC)"), _("PROJECT")],
            [(c.key.session_id, iso_time(c.mtime_ms), c.key.project_key) for c in chosen],
        )
    for c in kept:
        typer.echo(
            _("kept {session}: lineage still points at it").format(session=c.key.session_id),
            err=True,
        )
    n = len(chosen)
    if archiving:
        line = ngettext("{n} session to archive", "{n} sessions to archive", n)
    else:
        line = ngettext("{n} session to delete", "{n} sessions to delete", n)
    typer.echo(line.format(n=n), err=True)


def _delete_unchanged(store: SessionStoreBase, chosen: list[Candidate]) -> int:
    """Delete the sessions still as they were listed; one written to since (while the
    question was on screen, say) is kept: it is no longer what was shown, or archived."""
    now: dict[str, dict[str, int]] = {}
    deleted = 0
    for c in chosen:
        project = c.key.project_key
        if project not in now:
            now[project] = {i.session_id: i.mtime_ms for i in store.list_sessions(project)}
        if now[project].get(c.key.session_id) != c.mtime_ms:
            typer.echo(
                _("kept {session}: written to since it was listed").format(
                    session=c.key.session_id
                ),
                err=True,
            )
            continue
        store.delete(c.key)
        deleted += 1
    return deleted


def _can_ask() -> bool:
    from flower.cli.output import is_tty

    return is_tty(sys.stdin)


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not _can_ask():
        raise RetentionUsageError(_("not deleting anything without --yes (no terminal to ask)"))
    if not typer.confirm(question):
        typer.echo(_("nothing deleted"))
        raise typer.Exit(1)


def _selection(
    ctx: typer.Context, store: SessionStoreBase, older_than: str | None
) -> tuple[list[Candidate], list[Candidate]]:
    from flower.cli.context import get_settings

    age = parse_age(older_than) if older_than is not None else None
    protected = lineage_session_ids(get_settings(ctx), Path.cwd())
    return select_old(store, age, protected, time.time())


OlderThan = Annotated[
    str, typer.Option("--older-than", metavar="AGE", help=N_("e.g. 30d, 12h, 2w."))
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help=N_("Do not ask for confirmation."))]
DryRun = Annotated[bool, typer.Option("--dry-run", help=N_("Only list what would go."))]


@command_help(
    N_(
        "List sessions older than AGE, then delete them on confirmation.\n"
        "\n"
        "Never a session that lineage still points at; nothing is ever deleted "
        "automatically.\n"
        "Then the file snapshots kept for rewind that no remaining session names go too, and\n"
        "the temporary files killed writers left (last written over an hour ago)."
    )
)
def gc(
    ctx: typer.Context, older_than: OlderThan, dry_run: DryRun = False, yes: Yes = False
) -> None:
    from flower.cli.context import opened_store

    # a dry run only reads: it works where nothing may be written
    with opened_store(ctx, read_only=dry_run, create=False) as (store, where):
        chosen, kept = _selection(ctx, store, older_than)
        _show(chosen, kept, archiving=False)
        leftovers = _leftovers(store)
        if dry_run:
            return
        if chosen:
            n = len(chosen)
            question = ngettext(
                "Delete this {n} session from {store}?",
                "Delete these {n} sessions from {store}?",
                n,
            )
            _confirm(question.format(n=n, store=where), yes)
            deleted = _delete_unchanged(store, chosen)
            typer.echo(
                ngettext(
                    "deleted {n} session from {store}", "deleted {n} sessions from {store}", deleted
                ).format(n=deleted, store=where)
            )
        _sweep_snapshots(ctx, store)
        _remove_leftovers(store, leftovers)


LEFTOVER_AGE = 3600.0
"""How long ago a temporary file must have been last written for ``gc`` to take it. A
writer at work holds its lock, so none is ever taken from one; the hour covers the
instant before it takes the lock, and a filesystem where locks do not hold."""


def _leftovers(store: SessionStoreBase) -> list[Leftover]:
    """What a killed writer left in the store (a first batch's temporary file), listed."""
    from flower.cli.output import iso_time

    found = store.leftovers(LEFTOVER_AGE, time.time())
    for leftover in found:
        typer.echo(
            _("leftover {path}: {size} bytes a killed writer left, last written {time}").format(
                path=leftover.path, size=leftover.size, time=iso_time(leftover.mtime_ms)
            ),
            err=True,
        )
    if found:
        n = len(found)
        typer.echo(
            ngettext("{n} leftover file to remove", "{n} leftover files to remove", n).format(n=n),
            err=True,
        )
    return found


def _remove_leftovers(store: SessionStoreBase, leftovers: list[Leftover]) -> None:
    removed = sum(1 for leftover in leftovers if store.remove_leftover(leftover))
    if removed:
        typer.echo(
            ngettext(
                "removed {n} leftover file a killed writer left",
                "removed {n} leftover files a killed writer left",
                removed,
            ).format(n=removed),
            err=True,
        )
    if removed < len(leftovers):
        typer.echo(
            ngettext(
                "kept {n} leftover file: taken by a writer or changed since listed",
                "kept {n} leftover files: taken by a writer or changed since listed",
                len(leftovers) - removed,
            ).format(n=len(leftovers) - removed),
            err=True,
        )


def _sweep_snapshots(ctx: typer.Context, store: SessionStoreBase) -> None:
    """Remove the file snapshots (for rewind) that no session left in the store names,
    nor a rewind under way; a fresh one is kept (its tool result may be on its way)."""
    from flower.cli.context import get_settings
    from flower.core.records import SessionKey
    from flower.core.rewind import pending
    from flower.core.snapshots import Snapshots, referenced, unreferenced

    settings = get_settings(ctx)
    snapshots = Snapshots.of_run_dir(settings.run_path)
    if not snapshots.kept():
        return
    keep: set[str] = set()
    plan = pending(settings.run_path)
    if plan is not None:
        keep.update(item.before for item in plan.restore if item.before is not None)
    try:
        projects = store.list_projects()
    except NotImplementedError:
        return  # cannot see every session: cannot know a copy is unused
    for project in projects:
        for info in store.list_sessions(project):
            keep |= referenced(store.iter_entries(SessionKey(project, info.session_id)))
    gone = unreferenced(snapshots, keep, time.time())
    for sha in gone:
        snapshots.remove(sha)
    if gone:
        typer.echo(
            ngettext(
                "removed {n} file snapshot no session names",
                "removed {n} file snapshots no session names",
                len(gone),
            ).format(n=len(gone)),
            err=True,
        )


def _transcripts(store: SessionStoreBase, key: SessionKey) -> Iterator[SessionKey]:
    yield key
    try:
        subpaths = store.list_subkeys(key)
    except NotImplementedError:
        subpaths = []
    for sub in sorted(subpaths):
        yield key.child(sub)


def _key_dict(key: SessionKey) -> dict[str, Any]:
    return {"project_key": key.project_key, "session_id": key.session_id, "subpath": key.subpath}


def write_archive(
    store: SessionStoreBase,
    keys: list[SessionKey],
    output: Path,
    ages: Mapping[SessionKey, int] | None = None,
) -> int:
    """Export ``keys`` (with their subkeys) to ``output`` (gzip JSONL, 0600), atomically.
    A session's age in ``ages`` (ms) goes on each of its lines, for the import to keep."""
    from flower.core.entries import encode_entry
    from flower.core.fileperms import replaced_atomically

    count = 0
    try:
        # gzip closes (writes its trailer) before the file is fsynced and renamed
        with replaced_atomically(output) as raw, gzip.GzipFile(fileobj=raw, mode="wb") as out:
            for key in keys:
                age = (ages or {}).get(key)
                for transcript in _transcripts(store, key):
                    line: dict[str, Any] = {"key": _key_dict(transcript)}
                    if age is not None:
                        line["modified_ms"] = age
                    head = json.dumps(line)[:-1].encode()
                    for entry in store.iter_entries(transcript):
                        out.write(head + b', "entry": ' + encode_entry(entry) + b"}\n")
                        count += 1
    except OSError as exc:
        raise FlowerError(
            _("cannot write {path}: {error}").format(path=output, error=exc.strerror or exc)
        ) from None
    return count


class ArchiveLine(NamedTuple):
    key: SessionKey
    entry: Entry
    modified_ms: int | None  # the session's age when archived (None: not recorded)


def read_archive(path: Path) -> Iterator[ArchiveLine]:
    """Every line; a bad line is an error naming it."""
    from flower.core.entries import check_entry
    from flower.core.records import SessionKey

    if not path.is_file():
        raise FlowerError(_("cannot read {path}: no such file").format(path=path))
    with gzip.open(path, "rb") as handle:
        lines = iter(handle)
        number = 0
        while True:
            try:
                line = next(lines, None)
            except (OSError, EOFError) as exc:
                raise InvalidEntryError(
                    _("{path}: not a complete gzip file ({error})").format(path=path, error=exc)
                ) from None
            if line is None:
                return
            number += 1
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = SessionKey(**row["key"])
                entry = check_entry(row["entry"], number)
                age = row.get("modified_ms")
                if age is not None and (not isinstance(age, int) or isinstance(age, bool)):
                    raise TypeError(_("modified_ms is {age!r}, not milliseconds").format(age=age))
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidEntryError(
                    _("{path}:{number}: not an archive line ({error})").format(
                        path=path, number=number, error=exc
                    )
                ) from None
            yield ArchiveLine(key, entry, age)


def import_archive(store: SessionStoreBase, path: Path) -> tuple[int, int]:
    """Append an archive back (idempotent by uuid); (lines read, transcripts touched).

    The whole file is checked first, so a bad line writes nothing.
    """
    from flower.stores.copy import SessionAges, new_anonymous

    total = sum(1 for _ in read_archive(path))
    batches: dict[SessionKey, list[Entry]] = {}
    fresh: dict[SessionKey, Callable[[Entry], bool]] = {}
    ages: dict[SessionKey, tuple[int, int | None]] = {}  # archived age, target's before
    dates = SessionAges(store, store)  # only its view of the target's times is used
    for key, entry, age in read_archive(path):
        if key not in fresh:
            fresh[key] = new_anonymous(store, key)[0]  # uuid-less entries restored before
            if age is not None and key.subpath is None:
                ages[key] = (age, dates.target(key))
        if not fresh[key](entry):
            continue
        batches.setdefault(key, []).append(entry)
        if len(batches[key]) >= 500:
            store.append(key, batches.pop(key))
    for key, batch in batches.items():
        store.append(key, batch)
    for key, (age, before) in ages.items():
        # a restored session is as old as it was; one written since keeps its own time
        with contextlib.suppress(NotImplementedError):
            store.set_modified(key, max(age, before or 0))
    return total, len(batches)


@command_help(
    N_(
        "Export sessions to a compressed JSONL file, check it, then delete them on "
        "confirmation.\n"
        "\n"
        "Never a session that lineage still points at. `flower sessions import FILE` "
        "restores."
    )
)
def archive(
    ctx: typer.Context,
    output: Annotated[
        Path, typer.Option("-o", "--output", metavar="FILE", help=N_("A .jsonl.gz file to write."))
    ],
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", metavar="AGE", help=N_("e.g. 30d (default: every session).")),
    ] = None,
    keep: Annotated[bool, typer.Option("--keep", help=N_("Export only; delete nothing."))] = False,
    dry_run: DryRun = False,
    yes: Yes = False,
) -> None:
    from flower.cli.context import opened_store

    if not output.name.endswith(".jsonl.gz"):
        raise RetentionUsageError(
            _("{path}: an archive is gzip-compressed JSON lines; name it *.jsonl.gz").format(
                path=output
            )
        )
    if output.exists():
        raise RetentionUsageError(
            _("{path} exists; pick a new file (archives never overwrite)").format(path=output)
        )
    with opened_store(ctx, read_only=dry_run or keep, create=False) as (store, where):
        chosen, kept = _selection(ctx, store, older_than)
        _show(chosen, kept, archiving=True)
        if dry_run or not chosen:
            return
        if not keep and not yes and not _can_ask():
            # said before the archive is written: a re-run with --yes needs no new name
            raise RetentionUsageError(
                _(
                    "not archiving and deleting without --yes (no terminal to ask); "
                    "add --yes, or --keep to export only"
                )
            )
        keys = [c.key for c in chosen]
        written = write_archive(store, keys, output, {c.key: c.mtime_ms for c in chosen})
        read_back = sum(1 for _ in read_archive(output))
        if read_back != written:
            raise FlowerError(
                _("{path}: wrote {written} entries, read back {read}; kept all").format(
                    path=output, written=written, read=read_back
                )
            )
        entries = ngettext("{n} entry", "{n} entries", written).format(n=written)
        sessions = ngettext("{n} session", "{n} sessions", len(keys)).format(n=len(keys))
        typer.echo(
            _("archived {entries} of {sessions} to {path}").format(
                entries=entries, sessions=sessions, path=output
            )
        )
        if keep:
            return
        n = len(keys)
        question = ngettext(
            "Delete this {n} archived session from {store}?",
            "Delete these {n} archived sessions from {store}?",
            n,
        )
        _confirm(question.format(n=n, store=where), yes)
        deleted = _delete_unchanged(store, chosen)
    typer.echo(
        ngettext(
            "deleted {n} archived session from {store}",
            "deleted {n} archived sessions from {store}",
            deleted,
        ).format(n=deleted, store=where)
    )


def attach(app: typer.Typer) -> None:
    app.command("gc")(gc)
    app.command("archive")(archive)
