"""What a wake of the built-in workflow does, decided in one place.

``flower`` (cli/run.py) reads what the user says and prints; this module decides:
whether the directory has something to carry on (:func:`is_used`), whether a bare
``flower`` would wake (:func:`verdict`), whether to stop before anything runs
(:func:`check_store`, :func:`needs_words`), which words a killed run left to pass on first
(:func:`words_to_pass_on`), how a fresh start keeps the old lineage
(:func:`start_fresh`), and what ``--new`` moves into the archive
(:func:`archive_conversation`). See docs/continuity.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from flower.core.lineage import FreshStart, archive_dir, workspace_identity
from flower.stores.lineage import load_lineage
from flower.workflow.documents import documents, workflow_names
from flower.workflow.state import WakeState

Verdict = Literal["wakes", "nothing", "stops"]
"""What a bare ``flower`` would do here: wake, find nothing to carry on, or stop."""


def builtin_view(state: WakeState, settings: Any) -> WakeState:
    """``wake_state`` narrowed to the built-in workflow's steps, the ones `flower` runs:
    a workspace a Python ``Workflow`` of other steps used is no wake for it."""
    names = workflow_names(settings)
    ours = {names.clarify_step, names.goals_step, names.work_step}
    checks = state.checks
    fresh = checks.fresh
    if fresh is not None and fresh.reason == "gone":
        gone = [step for step in fresh.steps if step in ours]
        fresh = msgspec.structs.replace(fresh, steps=gone) if gone else None
    checks = msgspec.structs.replace(
        checks,
        recorded={k: v for k, v in checks.recorded.items() if k in ours},
        alive={k: v for k, v in checks.alive.items() if k in ours},
        context={k: v for k, v in checks.context.items() if k in ours},
        fresh=fresh,
    )
    steps = {k: v for k, v in state.steps.items() if k in ours}
    return msgspec.structs.replace(state, checks=checks, steps=steps, waking=bool(steps))


def is_used(state: WakeState) -> bool:
    """Whether the built-in workflow has been here (``state`` is a :func:`builtin_view`)."""
    checks = state.checks
    return bool(
        state.waking or checks.brief or checks.recorded or checks.request or checks.unrecorded
    )


def verdict(state: WakeState, settings: Any) -> Verdict:
    """What a bare ``flower`` would do with ``state`` (a whole ``wake_state``)."""
    if state.checks.store:
        return "stops"
    return "wakes" if is_used(builtin_view(state, settings)) else "nothing"


def check_store(state: WakeState) -> None:
    """Stop before any banner or write when the session store cannot be read: its
    sessions are not gone, and a run could not write its own either."""
    if state.checks.store:
        from flower.core.errors import StoreUnavailableError

        raise StoreUnavailableError(state.checks.store)


def needs_words(state: WakeState, said: str | None, *, interactive: bool) -> bool:
    """Nothing to carry on (``state`` a :func:`builtin_view`), nothing said, and no
    terminal to ask on: the run cannot start."""
    return said is None and not is_used(state) and not interactive


def words_to_pass_on(state: WakeState, said: str | None, settings: Any) -> list[str]:
    """What runs killed before recording it were told, to pass on before anything said
    now; on a first run what is said now replaces a request no step took up (as lineage
    has it), so then nothing."""
    unrecorded = list(state.checks.unrecorded)
    names = workflow_names(settings)
    replaced = said is not None and not (state.checks.brief or names.clarify_step in state.steps)
    return [] if replaced else unrecorded


def start_fresh(settings: Any, workspace: Path, state: WakeState) -> FreshStart | None:
    """When lineage is there but this wake cannot use it (``checks["fresh"]``), move it
    into notes/archive/ before anything overwrites it; what was done, for the banner."""
    fresh = state.checks.fresh
    if fresh is None:
        return None
    lineage = load_lineage(workspace, settings=settings, run_dir=settings.run_dir)
    return lineage.start_fresh(workspace, fresh.steps if fresh.reason == "gone" else ())


def archive_conversation(settings: Any, workspace: Path, *, keep: str | None = None) -> Path | None:
    """``--new``: move lineage, brief, goals (under any language's name) and unrecorded
    words (but those of token ``keep``, the new task's) into notes/archive/<stamp>/;
    sessions stay. ``None`` in a fresh directory (nothing to archive, no empty folder)."""
    from flower.workflow.said_journal import SaidJournal

    files = documents(workspace, settings)
    lineage = load_lineage(workspace, settings=settings, run_dir=settings.run_dir)
    # the other language's files too: left behind, the next run would take them up
    kept = (files.brief, files.goals, *files.not_used)
    frozen = [p for p in kept if p.exists()]
    if not lineage.found and not frozen:
        return None
    into = archive_dir(workspace)
    lineage.archive(into, extra=frozen)
    # words a killed run left unrecorded belong to the conversation archived with them
    journal = SaidJournal(Path(settings.run_path))
    journal.move_to(into, workspace_identity(workspace, settings), keep=keep)
    return into


def relative(path: str | os.PathLike[str], workspace: Path) -> str:
    """``path`` as the banner shows it: relative to the workspace when inside it."""
    target = Path(path)
    return str(target.relative_to(workspace) if target.is_relative_to(workspace) else target)


__all__ = [
    "Verdict",
    "archive_conversation",
    "builtin_view",
    "check_store",
    "is_used",
    "needs_words",
    "relative",
    "start_fresh",
    "verdict",
    "words_to_pass_on",
]
