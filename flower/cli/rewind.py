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
    typer.echo(
        _("flower: finished the rewind of {step} a crash cut short (now session {session})").format(
            step=shown_step(plan.step), session=plan.new_session
        ),
        err=True,
    )


def _short(text: str, width: int = 60) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def _show_turns(settings: Settings, step: str | None, as_json: bool) -> None:
    from flower.core.display import human_tokens
    from flower.workflow.rewind import step_turns

    step, key, turns = step_turns(settings, Path.cwd(), step)
    rows = [(len(turns) - i, t) for i, t in enumerate(turns)]
    if as_json:
        print_json(
            {
                "step": step,
                "session_id": key.session_id,
                "turns": [
                    {
                        "turns_back": back if back < len(turns) else None,
                        "uuid": t.uuid,
                        "timestamp": t.timestamp,
                        "text": t.text,
                        "context": t.context,
                    }
                    for back, t in rows
                ],
            }
        )
        return
    n = len(turns)
    typer.echo(
        ngettext(
            "{step}: session {session}, {n} user turn",
            "{step}: session {session}, {n} user turns",
            n,
        ).format(step=shown_step(step), session=key.session_id, n=n)
    )
    print_table(
        ["N", _("TIME"), _("CONTEXT"), _("SAID")],
        [
            (
                back if back < len(turns) else "-",
                t.timestamp or "",
                "" if t.context is None else human_tokens(t.context),
                _short(t.text),
            )
            for back, t in rows
        ],
    )


def _report(plan: RewindPlan, workspace: Path) -> None:
    def shown(path: str) -> str:
        try:
            return str(Path(path).relative_to(workspace))
        except ValueError:
            return path

    typer.echo(
        ngettext(
            "rewound {step} {n} turn: now session {new}; the old session {old} stays "
            "(flower sessions show {old})",
            "rewound {step} {n} turns: now session {new}; the old session {old} stays "
            "(flower sessions show {old})",
            plan.turns,
        ).format(
            step=shown_step(plan.step), n=plan.turns, new=plan.new_session, old=plan.old_session
        )
    )
    for item in plan.restore:
        if item.before is None:
            line = _("  file {path}: removed (flower created it after that point)")
        else:
            line = _("  file {path}: put back")
        typer.echo(line.format(path=shown(item.path)))
    for left in plan.left:
        typer.echo(
            _("  file {path}: left as it is, {reason}").format(
                path=shown(left.path), reason=_(left.reason)
            )
        )
    if plan.bash:
        typer.echo(_("  not undone: these commands ran through Bash after that point:"))
        for command in plan.bash:
            typer.echo(f"    $ {_short(command, 100)}")


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
    from flower.workflow.rewind import rewind_step

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
    if finished:
        _report_cut_short(plan, turns)
    else:
        _report(plan, workspace)
    sys.stdout.flush()


def _report_cut_short(plan: RewindPlan, asked: int) -> None:
    """A rewind a crash cut short was pending: it was finished, and nothing more."""
    typer.echo(
        ngettext(
            "finished the rewind of {step} a crash cut short ({n} turn back): now session "
            "{new}; the old session {old} stays (flower sessions show {old})",
            "finished the rewind of {step} a crash cut short ({n} turns back): now session "
            "{new}; the old session {old} stays (flower sessions show {old})",
            plan.turns,
        ).format(
            step=shown_step(plan.step), n=plan.turns, new=plan.new_session, old=plan.old_session
        )
    )
    typer.echo(
        ngettext(
            "nothing more was rewound; to go {n} more turn back, type `flower rewind {n}` again",
            "nothing more was rewound; to go {n} more turns back, type `flower rewind {n}` again",
            asked,
        ).format(n=asked)
    )
