"""``flower sessions gc`` and ``flower sessions archive``: retention that never surprises.

Nothing is deleted automatically, ever. ``gc`` lists the sessions older than a given
age, then deletes them only on confirmation; ``archive`` first exports them to a
gzip-compressed JSONL file (one ``{"key": ..., "entry": ...}`` per line), reads it
back, and only then deletes. A session that lineage still points at (the configured
lineage store, and every ``lineage.json`` under the run directory) is never selected.
``flower sessions import FILE.jsonl.gz`` puts an archive back.

Only the options and what is said live here: the choosing and deleting are
:mod:`flower.stores.retention`, the archive format :mod:`flower.stores.archive`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.errors import UsageError
from flower.core.i18n import N_, _, ngettext

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import Leftover
    from flower.stores.retention import Candidate


def _show(chosen: list[Candidate], kept: list[Candidate], archiving: bool) -> None:
    from flower.cli.output import print_table
    from flower.core.display import utc_time

    if chosen:
        print_table(
            [_("SESSION"), _("MODIFIED (UTC)"), _("PROJECT")],
            [(c.key.session_id, utc_time(c.mtime_ms), c.key.project_key) for c in chosen],
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
    from flower.stores.retention import delete_unchanged

    def said(c: Candidate) -> None:
        typer.echo(
            _("kept {session}: written to since it was listed").format(session=c.key.session_id),
            err=True,
        )

    return delete_unchanged(store, chosen, said)


def _can_ask() -> bool:
    from flower.cli.output import is_tty

    return is_tty(sys.stdin)


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not _can_ask():
        raise UsageError(_("not deleting anything without --yes (no terminal to ask)"))
    if not typer.confirm(question):
        typer.echo(_("nothing deleted"))
        raise typer.Exit(1)


def _selection(
    ctx: typer.Context, store: SessionStoreBase, older_than: str | None
) -> tuple[list[Candidate], list[Candidate]]:
    from flower.cli.context import get_settings
    from flower.stores.retention import selection

    return selection(store, get_settings(ctx), Path.cwd(), older_than, time.time())


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


def _leftovers(store: SessionStoreBase) -> list[Leftover]:
    """What a killed writer left in the store (a first batch's temporary file), listed."""
    from flower.core.display import utc_time
    from flower.stores.retention import LEFTOVER_AGE

    found = store.leftovers(LEFTOVER_AGE, time.time())
    for leftover in found:
        typer.echo(
            _("leftover {path}: {size} bytes a killed writer left, last written {time}").format(
                path=leftover.path, size=leftover.size, time=utc_time(leftover.mtime_ms)
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
    from flower.cli.context import get_settings
    from flower.stores.retention import sweep_snapshots

    gone = sweep_snapshots(store, get_settings(ctx).run_path, time.time())
    if gone:
        typer.echo(
            ngettext(
                "removed {n} file snapshot no session names",
                "removed {n} file snapshots no session names",
                gone,
            ).format(n=gone),
            err=True,
        )


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
    from flower.stores.archive import check_new_archive, write_checked_archive

    check_new_archive(output)
    with opened_store(ctx, read_only=dry_run or keep, create=False) as (store, where):
        chosen, kept = _selection(ctx, store, older_than)
        _show(chosen, kept, archiving=True)
        if dry_run or not chosen:
            return
        if not keep and not yes and not _can_ask():
            # said before the archive is written: a re-run with --yes needs no new name
            raise UsageError(
                _(
                    "not archiving and deleting without --yes (no terminal to ask); "
                    "add --yes, or --keep to export only"
                )
            )
        keys = [c.key for c in chosen]
        ages = {c.key: c.mtime_ms for c in chosen}
        written = write_checked_archive(store, keys, output, ages)
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
