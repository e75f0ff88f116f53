"""``flower adopt [PATH|ARCHIVE]``: take an old place back after a move, a copy or a fresh start."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flower.cli.context import RunDirOption, get_settings, get_state
from flower.cli.lazy import command_help
from flower.core.i18n import N_, _, ngettext
from flower.core.labels import shown_step


@command_help(
    N_(
        "Point this directory's lineage at the sessions of an old one, so `flower` "
        "carries on.\n"
        "\n"
        "Checks every session it names is in the session store (those kept for the old\n"
        "directory are copied to this one), keeps `woke`, and sets this directory's own\n"
        "lineage aside into notes/archive/ first. Nothing changes if a session is "
        "missing."
    )
)
def adopt(
    ctx: typer.Context,
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="[PATH|ARCHIVE]",
            help=N_(
                "The directory this one was copied from, an archive folder "
                "(notes/archive/<stamp>) or a lineage file. Default: lineage here written for "
                "another directory, else the newest archive."
            ),
        ),
    ] = None,
    run_dir: RunDirOption = None,
    json_out: Annotated[
        bool, typer.Option("--json", help=N_("What was adopted, as JSON."))
    ] = False,
) -> None:
    import msgspec

    from flower.core.display import relative_path, short_path
    from flower.workflow.adopt import adopt_here

    if run_dir:
        get_state(ctx).run_dir = run_dir
    workspace = Path.cwd().resolve()
    done = adopt_here(workspace, source, get_settings(ctx))
    if json_out:
        from flower.cli.output import print_json

        print_json(msgspec.to_builtins(done))
        return
    typer.echo(
        _("adopted the lineage of {old} from {source}").format(
            old=done.moved_from, source=done.source
        )
    )
    woken = ngettext("woken {n} time", "woken {n} times", done.woke).format(n=done.woke)
    typer.echo(
        "   "
        + _("steps {steps} · {woken}").format(
            steps=", ".join(shown_step(s) for s in done.steps), woken=woken
        )
    )
    if done.copied:
        n = len(done.copied)
        typer.echo(
            "   "
            + ngettext("copied {n} session to {path}", "copied {n} sessions to {path}", n).format(
                n=n, path=short_path(workspace)
            )
        )
    if done.set_aside:
        shown = relative_path(done.set_aside, workspace)
        typer.echo("   " + _("this directory's own lineage is in {path}/").format(path=shown))
    typer.echo("   " + _("`flower` here carries on"))


__all__ = ["adopt"]
