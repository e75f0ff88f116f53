"""``flower rewind``: undo the last user turns of the work step, files flower wrote too."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flower.cli.context import get_settings
from flower.cli.lazy import command_help
from flower.cli.output import print_json, print_table
from flower.core.i18n import N_, _, ngettext
from flower.core.labels import shown_step

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.rewind import RewindPlan


def say_rewind_finished(plan: RewindPlan) -> None:
    """A rewind a crash cut short was carried out before this wake (see
    :func:`flower.workflow.rewind.finish_pending_rewind`)."""
    from flower.workflow.rewind import finished_said

    typer.echo(finished_said(plan), err=True)


def _show_turns(settings: Settings, step: str | None, as_json: bool) -> None:
    from flower.core.display import first_line, human_tokens
    from flower.workflow.rewind import step_turns

    listed = step_turns(settings, Path.cwd(), step)
    if as_json:
        print_json(listed.as_json())
        return
    n = len(listed.turns)
    typer.echo(
        ngettext(
            "{step}: session {session}, {n} user turn",
            "{step}: session {session}, {n} user turns",
            n,
        ).format(step=shown_step(listed.step), session=listed.key.session_id, n=n)
    )
    print_table(
        ["N", _("TIME"), _("CONTEXT"), _("SAID")],
        [
            (
                back or "-",
                t.timestamp or "",
                "" if t.context is None else human_tokens(t.context),
                first_line(t.text),
            )
            for back, t in listed.listed()
        ],
    )


@command_help(
    N_(
        "Undo the last N user turns of the work step: its session is forked N turns back\n"
        "(the old one stays, listed), the lineage points at the fork, and the files "
        "flower's\n"
        "Write and Edit changed since are put back."
    )
)
def rewind(
    ctx: typer.Context,
    turns: Annotated[
        int, typer.Argument(metavar="N", min=1, help=N_("User turns to undo (default 1)."))
    ] = 1,
    list_turns: Annotated[
        bool, typer.Option("--list", help=N_("Show the turns to choose from; change nothing."))
    ] = False,
    keep_files: Annotated[
        bool, typer.Option("--keep-files", help=N_("Rewind only the conversation, not the files."))
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help=N_("Put back files changed since flower wrote them, too.")),
    ] = False,
    step: Annotated[
        str | None,
        typer.Option(
            "--step", metavar="NAME", help=N_("The step to rewind (default: the work step).")
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=N_("Machine-readable output."))] = False,
) -> None:
    from flower.workflow.rewind import cut_short_said, rewind_said, rewind_step

    settings = get_settings(ctx)
    if list_turns:
        _show_turns(settings, step, as_json)
        return
    workspace = Path.cwd().resolve()
    plan, finished = rewind_step(
        settings, workspace, turns, step=step, keep_files=keep_files, force=force
    )
    if as_json:
        import msgspec

        print_json({**msgspec.to_builtins(plan), "cut_short": finished})
        return
    said = cut_short_said(plan, turns) if finished else rewind_said(plan, workspace)
    for line in said:
        typer.echo(line)
    sys.stdout.flush()
