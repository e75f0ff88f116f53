"""``flower prune ID``: what each pruning policy removes or changes, and what it saves.

Read only: trim runs in dry-run mode here, so no pointer file is written. The report is
:mod:`flower.stores.prune_report`'s; this module finds the id and prints.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import typer

from flower.cli.lazy import command_help
from flower.cli.session_ids import ProjectOption
from flower.core.i18n import N_, _, language, ngettext


def render_report(report: dict[str, Any]) -> str:
    from flower.core.display import pad, shown_width

    rows = [
        (_("policy"), _("removed"), _("changed"), _("added"), _("bytes saved"), _("~tokens saved"))
    ]
    for p in report["policies"]:
        rows.append(
            (
                _("{policy} (FAILED)").format(policy=p["policy"]) if p["error"] else p["policy"],
                str(p["removed"]),
                str(p["changed"]),
                str(p["added"]),
                str(p["bytes_saved"]),
                str(p["tokens_saved"]),
            )
        )
    widths = [max(shown_width(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        _("session {session} ({project})").format(
            session=report["session_id"], project=report["project_key"]
        )
    ]
    for row in rows:
        cells = [pad(row[0], widths[0])] + [
            pad(c, w, right=True) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    chain = report["chain_bytes"]
    entries = report["entries"]
    summary = _(
        "entries {stored} stored, {chain} on the active chain -> {pruned}, messages "
        "{messages} -> {messages_pruned}; conversation {bytes} -> {bytes_pruned} bytes ({saved})"
    )
    lines.append(
        summary.format(
            stored=entries["raw"],
            chain=entries["chain"],
            pruned=entries["pruned"],
            messages=report["messages"]["raw"],
            messages_pruned=report["messages"]["pruned"],
            bytes=chain["raw"],
            bytes_pruned=chain["pruned"],
            saved=_saved(chain["saved"], report["tokens_saved"]),
        )
    )
    if entries["off_chain"]:
        off_chain = ngettext(
            "the {count} stored entry off the active chain (before the last compaction, "
            "older branches, subagents) is not sent to the model: not pruned",
            "the {count} stored entries off the active chain (before the last compaction, "
            "older branches, subagents) are not sent to the model: not pruned",
            entries["off_chain"],
        )
        lines.append(off_chain.format(count=entries["off_chain"]))
    warning = _("warning: {message}")
    for p in report["policies"]:
        if p["error"]:
            lines.append(warning.format(message=p["error"]))
        for note in p["notes"]:
            lines.append(f"{p['policy']}: {note}")
    lines.extend(warning.format(message=notice) for notice in report["warnings"])
    return "\n".join(lines)


@command_help(
    N_(
        "Show what each pruning policy removes or changes in a session's active chain\n"
        "(what the model is sent), and the bytes and estimated tokens it saves. Storage\n"
        "is not modified."
    )
)
def prune(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help=N_("The session id to inspect.")),
    as_json: bool = typer.Option(False, "--json", help=N_("Print the report as JSON.")),
    project: ProjectOption = None,
    no_trim: bool = typer.Option(False, "--no-trim", help=N_("Leave the trim policy out.")),
) -> None:
    import json

    from flower.cli.context import get_settings
    from flower.cli.errors import report_error
    from flower.cli.session_ids import find_key
    from flower.core.errors import FlowerError
    from flower.stores.prune_report import prune_report

    try:  # reported here too, so the command reads the same in any app
        settings = get_settings(ctx)  # with the global --run-dir and --sessions-url
        # --json is read by scripts: the warnings and failures it lists are English
        with language("en") if as_json else nullcontext():
            report = prune_report(
                settings,
                session_id,
                project=project,
                trim=False if no_trim else None,
                find=find_key,
            )
    except FlowerError as exc:
        raise typer.Exit(report_error(exc)) from None
    typer.echo(
        json.dumps(report, ensure_ascii=False, indent=2) if as_json else render_report(report)
    )


def add_prune_command(app: typer.Typer) -> None:
    """``prune`` on ``app`` (a built-in of ``flower``; this is for an app of one's own)."""
    app.command("prune")(prune)


def _saved(n_bytes: int, tokens: int) -> str:
    """``saved N bytes, ~T tokens``; a view that grew (a note longer than what it
    replaced) says so instead of saving a negative amount."""
    if n_bytes < 0:
        return _("grew by {bytes} bytes, ~{tokens} tokens").format(bytes=-n_bytes, tokens=-tokens)
    return _("saved {bytes} bytes, ~{tokens} tokens").format(bytes=n_bytes, tokens=tokens)
