"""``flower sessions import --claude-code [DIR]``: Claude Code's transcripts into a store.

Claude Code keeps ``~/.claude/projects/<project key>/<session>.jsonl`` and its
subagents in ``<session>/subagents/agent-<id>.jsonl``: the jsonfs layout, so folder
names become project keys and ``subagents/agent-<id>`` subpaths. Lines that are torn
or not JSON (a crash mid-write, a hand edit) are imported around: each is reported
with its file and line number and everything else still comes in. Re-running adds
nothing (entries are matched by ``uuid``, the rest by content).

The import itself is :mod:`flower.compat.claude_code`; this module says what it did.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.display import n_entries, n_transcripts
from flower.core.i18n import _, ngettext

if TYPE_CHECKING:
    from flower.compat.claude_code import ClaudeCodeSource, ClaudeImport, ProgressFactory
    from flower.core.protocols import SessionStoreBase


def run_claude_import(
    folder: Path | ClaudeCodeSource | None,
    target: SessionStoreBase,
    where: str,
    progress_factory: ProgressFactory | None = None,
) -> ClaudeImport:
    """The CLI's part: import, then one line per skipped line and a final count."""
    import typer

    from flower.compat.claude_code import default_dir, import_claude_code

    done = import_claude_code(folder or default_dir(), target, progress_factory=progress_factory)
    for skipped in done.skipped:
        typer.echo(_("skipped {line}").format(line=skipped), err=True)
    conflict = _("conflict: {transcript} already holds a different entry {uuid} (kept)")
    for found in done.report.conflicts[:20]:
        typer.echo(conflict.format(transcript=found.key.session_id, uuid=found.uuid), err=True)
    report = done.report
    imported = ngettext(
        "imported {sessions} ({transcripts}) from {source} into {store}: {entries} read, "
        "{new} new, {present} already there, {count} line skipped",
        "imported {sessions} ({transcripts}) from {source} into {store}: {entries} read, "
        "{new} new, {present} already there, {count} lines skipped",
        len(done.skipped),
    )
    sessions = ngettext(
        "{count} Claude Code session", "{count} Claude Code sessions", report.sessions
    ).format(count=report.sessions)
    typer.echo(
        imported.format(
            sessions=sessions,
            transcripts=n_transcripts(report.transcripts),
            source=done.source,
            store=where,
            entries=n_entries(report.entries_read),
            new=report.entries_written,
            present=report.entries_present,
            count=len(done.skipped),
        )
    )
    if report.conflicts:
        raise typer.Exit(1)
    return done
