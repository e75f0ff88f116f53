"""``flower sessions``: list, show, export, import, remove and copy transcripts.

Session ids (or a unique prefix of one) are found across projects by
:func:`flower.cli.session_ids.find_key`; an unknown id is ``no session <id> in <store>``
and exit code 1, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flower.cli.context import get_settings, opened_store
from flower.cli.lazy import command_help
from flower.cli.output import is_tty, print_json, print_table
from flower.cli.session_ids import ProjectOption, UsageFlowerError, find_key
from flower.core.display import n_sessions, n_transcripts
from flower.core.errors import FlowerError
from flower.core.i18n import N_, _, ngettext
from flower.core.redact import redact_text

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import Entry, SessionKey
    from flower.stores.copy import CopyReport

app = typer.Typer(
    name="sessions",
    help=N_("List, show, export, import, remove and copy session transcripts."),
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))]


@app.command("list")
@command_help(N_("List sessions, newest first: of one project, or of every project the store has."))
def list_sessions(
    ctx: typer.Context,
    project: Annotated[
        str | None, typer.Option("--project", metavar="KEY", help=N_("Only this project key."))
    ] = None,
    as_json: JsonOption = False,
    forks: Annotated[
        bool,
        typer.Option(
            "--forks", help=N_("Add FORKED FROM (reads the first entry of every session: slower).")
        ),
    ] = False,
) -> None:
    from flower.core.records import check_name
    from flower.workflow.roles import listed_sessions

    with opened_store(ctx, read_only=True) as (store, where):
        project = None if project is None else check_name("project key", project)
        try:
            found = listed_sessions(
                get_settings(ctx), store, project, workspace=Path.cwd(), forks=forks, gettext=_
            )
        except NotImplementedError:
            raise FlowerError(_("{store} cannot list its sessions").format(store=where)) from None
    if as_json:
        print_json([r.as_json(forks) for r in found])
        return
    if not found:
        typer.echo(_("no sessions in {store}").format(store=where), err=True)
        return
    headers = [_("SESSION"), _("MODIFIED (UTC)"), _("PROJECT")]
    table = [[r.row.session_id, r.row.last_active, r.row.project_key] for r in found]
    if forks:
        headers.append(_("FORKED FROM"))
        for line, r in zip(table, found, strict=True):
            line.append(r.forked_from.session_id if r.forked_from else "")
    if any(r.known for r in found):  # a workflow ran here: who its sessions were, and why
        headers += [_("ROLE"), _("STEP"), _("TITLE")]
        for line, r in zip(table, found, strict=True):
            shown = (r.known.shown_role(_), r.known.shown_step(_)) if r.known else ("", "")
            line += [*shown, r.title or ""]
    print_table(headers, table)


def _pruned_entries(
    ctx: typer.Context, store: SessionStoreBase, key: SessionKey, quiet: bool = False
) -> list[Entry]:
    """The view a resume would send, as a dry run (as ``flower prune`` and ``sessions
    stats`` take it): trim shows its pointers but writes no file under ``trimmed/``.
    Says on stderr which stored messages the model is not sent (``unsent_notes``)."""
    try:
        from flower.stores.prune import PruningSessionStore
    except ImportError:
        raise FlowerError(
            _("{option} needs {module}, which is not installed").format(
                option="--pruned", module="flower.stores.prune"
            )
        ) from None
    view = PruningSessionStore.from_settings(store, get_settings(ctx), dry_run=True)
    raw = store.load(key) or []
    if not quiet:
        from flower.core.transcript.chain import unsent_notes

        for note in unsent_notes(raw):
            typer.echo(note, err=True)
    return view.prune_loaded(key, raw)


@app.command("show")
@command_help(N_("Show a session: a readable view of messages, tool calls and results."))
def show(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID", help=N_("Session id."))],
    project: ProjectOption = None,
    raw: Annotated[
        bool, typer.Option("--raw", help=N_("The stored entries as JSON lines."))
    ] = False,
    pruned: Annotated[
        bool, typer.Option("--pruned", help=N_("What the model is sent: the active chain, pruned."))
    ] = False,
    as_json: JsonOption = False,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help=N_("Keep printing new entries as they are written.")),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help=N_("Only entries from WHEN on: 10m, 2h, 1d or an ISO time."),
        ),
    ] = None,
    interval: Annotated[
        float | None,
        typer.Option(
            "--interval", min=0.05, metavar="SECONDS", help=N_("--follow poll period (default 1).")
        ),
    ] = None,
    stats: Annotated[
        bool,
        typer.Option(
            "--stats", help=N_("With --pruned: what each policy removed and saved (flower prune).")
        ),
    ] = False,
) -> None:
    if stats:
        others = (raw, follow, since is not None)
        _show_pruning_stats(
            ctx, session_id, project=project, pruned=pruned, as_json=as_json, others=others
        )
        return
    if raw and as_json:
        raise UsageFlowerError(_("--raw and --json do not go together: pick one"))
    if follow and (pruned or as_json):
        raise UsageFlowerError(
            _("--follow shows stored entries as they come: no --pruned or --json")
        )
    if interval is not None and not follow:
        raise UsageFlowerError(_("--interval is how often --follow polls: it needs --follow"))
    from flower.cli import session_view
    from flower.core.entries import encode_entry
    from flower.stores.tail import parse_since
    from flower.stores.tail import since as since_cutoff

    cutoff = parse_since(since) if since is not None else None
    with opened_store(ctx, read_only=True) as (store, where):
        key = find_key(store, session_id, where, project)
        if follow:
            printer = session_view.EntryPrinter(raw)
            session_view.follow(store, key, printer, cutoff=cutoff, interval=interval or 1.0)
            return
        entries: Iterator[Entry] | list[Entry]
        entries = _pruned_entries(ctx, store, key, as_json) if pruned else store.iter_entries(key)
        if cutoff is not None:
            entries = list(since_cutoff(entries, cutoff))
        if raw:
            out = sys.stdout.buffer
            for entry in entries:
                out.write(encode_entry(entry) + b"\n")
            out.flush()
        elif as_json:
            print_json(
                {
                    "project_key": key.project_key,
                    "session_id": key.session_id,
                    "pruned": pruned,
                    "entries": list(entries),
                }
            )
        else:
            from flower.cli.render import print_transcript
            from flower.core.fork import fork_marks

            title = (
                _("{session}  ({project}, pruned)") if pruned else _("{session}  ({project})")
            ).format(session=key.session_id, project=key.project_key)
            origin, notes = fork_marks(store, key)
            print_transcript(entries, title + origin, notes)


@app.command("fork")
@command_help(
    N_(
        "Fork a session into a new one (up to its leaf, an entry, or N turns back); "
        "prints\n"
        "the new id. The old session is left as it is."
    )
)
def fork(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID", help=N_("Session id."))],
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="UUID", help=N_("Fork at this entry of the active chain.")),
    ] = None,
    turns_back: Annotated[
        int | None,
        typer.Option(
            "--turns-back", metavar="N", min=1, help=N_("Fork before the last N user turns.")
        ),
    ] = None,
    project: ProjectOption = None,
    as_json: JsonOption = False,
) -> None:
    if at is not None and turns_back is not None:
        raise UsageFlowerError(_("--at and --turns-back both say where to fork: pick one"))
    from flower.core.fork import fork_back

    with opened_store(ctx) as (store, where):
        key = find_key(store, session_id, where, project)
        new, at = fork_back(store, key, at, turns_back)
    if as_json:
        print_json(
            {
                "session_id": new.session_id,
                "project_key": new.project_key,
                "forked_from": {"session_id": key.session_id, "message_uuid": at},
            }
        )
        return
    typer.echo(new.session_id)


def _show_pruning_stats(
    ctx: typer.Context,
    session_id: str,
    *,
    project: str | None,
    pruned: bool,
    as_json: bool,
    others: tuple[bool, ...],
) -> None:
    """``sessions show ID --pruned --stats``: the report ``flower prune ID`` prints."""
    if not pruned or any(others):
        raise UsageFlowerError(_("--stats goes with --pruned (and --json), nothing else"))
    from flower.cli.prune import render_report
    from flower.stores.prune_report import prune_report

    report = prune_report(get_settings(ctx), session_id, project=project, find=find_key)
    if as_json:
        print_json(report)
    else:
        typer.echo(render_report(report))


@app.command("export")
@command_help(
    N_("Write a session's entries as JSON lines (stdout, or -o FILE written atomically).")
)
def export(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID", help=N_("Session id."))],
    project: ProjectOption = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="FILE", help=N_("Write here instead of stdout.")),
    ] = None,
) -> None:
    from flower.core.entries import encode_entry

    with opened_store(ctx, read_only=True) as (store, where):
        key = find_key(store, session_id, where, project)
        if output is None:
            out = sys.stdout.buffer
            for entry in store.iter_entries(key):
                out.write(encode_entry(entry) + b"\n")
            out.flush()
            return
        from flower.compat.claude_code import write_jsonl

        count = write_jsonl(store, key, output)
    exported = ngettext(
        "exported {count} entry of {session} to {path}",
        "exported {count} entries of {session} to {path}",
        count,
    )
    typer.echo(exported.format(count=count, session=key.session_id, path=output), err=True)


@app.command("import")
@command_help(
    N_(
        "Import a JSONL transcript, or Claude Code's sessions with --claude-code.\n"
        "\n"
        "Idempotent: entries already there (by uuid) are skipped."
    )
)
def import_(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE|DIR",
            help=N_(
                "A .jsonl transcript; with --claude-code a projects folder "
                "(default ~/.claude/projects)."
            ),
        ),
    ] = None,
    claude_code: Annotated[
        bool,
        typer.Option(
            "--claude-code", help=N_("Import every Claude Code session (with subagents) in DIR.")
        ),
    ] = False,
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="URL", help=N_("Into this store, not the configured one.")),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", metavar="KEY", help=N_("Default: from the entries' cwd.")),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help=N_("Default: the entries' sessionId.")),
    ] = None,
) -> None:
    if claude_code:
        if project is not None or session is not None:
            raise UsageFlowerError(
                _("--claude-code takes the keys from the folders: no --project/--session")
            )
        from flower.cli.claude_import import run_claude_import
        from flower.compat.claude_code import ClaudeCodeSource, default_dir

        # a folder that is not there is said before the target store is opened (and created)
        source = ClaudeCodeSource(file or default_dir())
        with opened_store(ctx, to) as (store, where):
            run_claude_import(source, store, where, _progress_bar)
        return
    from flower.stores.archive import import_archive, is_gzip

    if file is not None and is_gzip(file):  # an archive, whatever its name
        with opened_store(ctx, to) as (store, where):
            lines, transcripts = import_archive(store, file)
        imported = ngettext(
            "imported {file}: {count} entry into {transcripts} in {store}",
            "imported {file}: {count} entries into {transcripts} in {store}",
            lines,
        )
        typer.echo(
            imported.format(
                file=file, count=lines, transcripts=n_transcripts(transcripts), store=where
            )
        )
        return
    if file is None:
        raise UsageFlowerError(_("give a FILE to import, or --claude-code [DIR]"))
    from flower.compat.claude_code import import_jsonl, jsonl_target

    key, _count, skipped = jsonl_target(file, project, session)
    for line in skipped:
        typer.echo(_("skipped {line}").format(line=line), err=True)
    with opened_store(ctx, to) as (store, where):
        done = import_jsonl(store, file, key)
    subpath = key.subpath
    if subpath:
        into = _("into subagent transcript {subpath} of session {session}")
    else:
        into = _("into session {session}")
    read = ngettext(
        "imported {file}: {count} entry read, {new} new, {into} of project {project} in {store}",
        "imported {file}: {count} entries read, {new} new, {into} of project {project} in {store}",
        done.read,
    )
    line = read.format(
        file=file,
        count=done.read,
        new=done.new,
        into=into.format(subpath=subpath, session=key.session_id),
        project=key.project_key,
        store=where,
    )
    if skipped:
        tail = ngettext(", {count} line skipped", ", {count} lines skipped", len(skipped))
        line += tail.format(count=len(skipped))
    typer.echo(line)


@app.command("rm")
@command_help(N_("Delete a session and its subagent transcripts."))
def remove(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID", help=N_("Session id."))],
    project: ProjectOption = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help=N_("Do not ask for confirmation."))
    ] = False,
) -> None:
    with opened_store(ctx, create=False) as (store, where):
        key = find_key(store, session_id, where, project, only_one=True)
        if not yes:
            if not is_tty(sys.stdin):
                raise UsageFlowerError(
                    _("not deleting {session} without {option} (no terminal)").format(
                        session=key.session_id, option="--yes"
                    )
                )
            question = _("Delete session {session} from {store}?")
            if not typer.confirm(question.format(session=key.session_id, store=where)):
                typer.echo(_("nothing deleted"))
                raise typer.Exit(1)
        try:
            store.delete(key)
        except NotImplementedError:
            raise FlowerError(_("{store} cannot delete sessions").format(store=where)) from None
    deleted = _("deleted session {session} (project {project}) from {store}")
    typer.echo(deleted.format(session=key.session_id, project=key.project_key, store=where))


@contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[CopyReport], None] | None]:
    """A rich progress bar on stderr when it is a terminal, else no callback."""
    if not is_tty(sys.stderr):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn(_("sessions")),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(_("{entries} entries").format(entries="{task.fields[entries]}")),
        console=Console(file=sys.stderr),
        transient=True,
    )
    with progress:
        task = progress.add_task("copy", total=total, entries=0)

        def update(report: CopyReport) -> None:
            progress.update(task, completed=report.sessions, entries=report.entries_read)

        yield update


def _print_report(report: CopyReport, source: str, target: str, as_json: bool) -> None:
    if as_json:
        print_json({"from": source, "to": target, **report.as_dict()})
        return
    said = report.said(source, target)
    typer.echo(said.summary)
    for line in said.conflicts:
        typer.echo(line, err=True)
    if said.verified is not None:
        typer.echo(said.verified)
    for line in said.differences:
        typer.echo(line, err=True)


@app.command("copy")
@command_help(
    N_(
        "Copy sessions between any two stores (sqlite, postgres, jsonfs, "
        "~/.claude/projects).\n"
        "\n"
        "Streaming and idempotent: re-running adds nothing. A target entry with the same\n"
        "uuid but different content is reported and kept, never overwritten (exit 1)."
    )
)
def copy(
    ctx: typer.Context,
    source_url: Annotated[str, typer.Option("--from", metavar="URL", help=N_("Source store URL."))],
    target_url: Annotated[str, typer.Option("--to", metavar="URL", help=N_("Target store URL."))],
    project: Annotated[
        str | None, typer.Option("--project", metavar="KEY", help=N_("Only this project."))
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help=N_("Only this session."))
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify", help=N_("Compare both sides entry by entry afterwards."))
    ] = False,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help=N_("Entries per append."))
    ] = 500,
    as_json: JsonOption = False,
) -> None:
    from flower.core.records import check_name
    from flower.stores.copy import copy_sessions, select_sessions

    if project is not None:
        check_name("project key", project)
    source_name, target_name = redact_text(source_url), redact_text(target_url)
    # the source is only read: one that is not there is an error, never created
    with (
        opened_store(ctx, source_url, read_only=True) as (source, _where),
        opened_store(ctx, target_url) as (target, _target_where),
    ):
        try:
            if session is not None:  # found as every command finds an id (a prefix too)
                keys = [find_key(source, session, source_name, project)]
            else:
                keys = select_sessions(source, project=project)
        except NotImplementedError:
            raise FlowerError(
                _("{store} cannot list its sessions; pass {option}").format(
                    store=source_name, option="--session"
                )
            ) from None
        with _progress_bar(len(keys)) as on_progress:
            report = copy_sessions(
                source, target, keys, batch_size=batch_size, progress=on_progress, verify=verify
            )
    _print_report(report, source_name, target_name, as_json)
    if not report.ok:
        raise typer.Exit(1)


@app.command("stats")
@command_help(
    N_(
        "Entries, bytes and tokens by kind of entry, and what pruning would remove.\n"
        "\n"
        "~tokens are estimated (4 bytes of message JSON per token); usage figures are the\n"
        "API's own counts. Storage is not modified."
    )
)
def stats(
    ctx: typer.Context,
    session_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help=N_("One session; default every session."))
    ] = None,
    as_json: JsonOption = False,
) -> None:
    from flower.cli.session_stats import render
    from flower.stores.copy import select_sessions
    from flower.stores.prune import PruningSessionStore
    from flower.stores.stats import collect

    with opened_store(ctx, read_only=True) as (store, where):
        if session_id is not None:
            keys = [find_key(store, session_id, where)]
            title = _("session {session} ({project})").format(
                session=keys[0].session_id, project=keys[0].project_key
            )
        else:
            try:
                keys = select_sessions(store)
            except NotImplementedError:
                raise FlowerError(
                    _("{store} cannot list its sessions; pass an ID").format(store=where)
                ) from None
            title = _("{sessions} in {store}").format(sessions=n_sessions(len(keys)), store=where)
        view = PruningSessionStore.from_settings(store, get_settings(ctx), dry_run=True)
        result = collect(store, keys, view)
    if as_json:
        print_json(result.as_dict())
    else:
        typer.echo(render(result, title))


def _attach_security_commands() -> None:
    """keygen, rekey, scan, gc and archive live in their own modules (docs/security.md)."""
    from flower.cli import encryption, repair, retention, secrets_scan

    for module in (encryption, secrets_scan, retention, repair):
        module.attach(app)


_attach_security_commands()
