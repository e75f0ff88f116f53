"""``flower sessions repair``: save what a damaged SQLite session store still holds."""

from __future__ import annotations

from typing import Annotated

import typer

from flower.cli.lazy import command_help
from flower.core.i18n import N_, _, ngettext


@command_help(
    N_(
        "Save every readable session of a damaged SQLite store into a new one.\n"
        "\n"
        "Each transcript is copied up to the first entry that cannot be read; the damaged\n"
        "file is then renamed <name>.damaged-<time> and the new store takes its place.\n"
        "A sound store is left as it is. Run it while no flower run uses the store."
    )
)
def repair(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help=N_("Copy and set the file aside even if it is sound."))
    ] = False,
) -> None:
    from flower.cli.context import get_settings
    from flower.core.display import n_entries, n_sessions
    from flower.stores.repair import repair_configured

    done = repair_configured(get_settings(ctx), force=force)
    if done.why is None or done.report is None:
        typer.echo(_("{path} is sound: nothing to repair").format(path=done.path))
        return
    report = done.report
    typer.echo(_("{path} was damaged: {why}").format(path=done.path, why=done.why))
    typer.echo(
        _("saved {sessions} ({entries}) into a new {path}; the damaged file is now {aside}").format(
            sessions=n_sessions(report.copy.sessions),
            entries=n_entries(report.copy.entries_written),
            path=done.path,
            aside=done.aside,
        )
    )
    for cut in report.cut:
        name = cut.key.session_id + (f"/{cut.key.subpath}" if cut.key.subpath else "")
        line = ngettext(
            "session {session}: {count} entry saved; the rest of it could not be read",
            "session {session}: {count} entries saved; the rest of it could not be read",
            cut.entries,
        )
        typer.echo(line.format(session=name, count=cut.entries), err=True)


def attach(app: typer.Typer) -> None:
    app.command("repair")(repair)
