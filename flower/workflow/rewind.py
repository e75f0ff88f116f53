"""A step's rewind as ``flower rewind`` does it, and a rewind a crash cut short finished
before a workflow loads its lineage.

::

    from pathlib import Path
    from flower import load_settings
    from flower.workflow.rewind import rewind_step, step_turns

    settings = load_settings().settings
    listed = step_turns(settings, Path.cwd())  # the work step's user turns
    done = rewind_step(settings, Path.cwd(), turns=1)
    print(done.plan.new_session, done.cut_short)
    print("\n".join(rewind_said(done.plan, Path.cwd())))  # what flower rewind says
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from flower.core.display import first_line, relative_path
from flower.core.i18n import _, ngettext
from flower.core.labels import shown_step
from flower.core.rewind import finish_pending, pending
from flower.stores.lineage import load_lineage

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.fork import UserTurn
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import SessionKey
    from flower.core.rewind import RewindPlan


def finish_rewind(
    workspace: str | os.PathLike[str],
    store: SessionStoreBase,
    *,
    settings: Settings,
    run_dir: str | os.PathLike[str],
) -> RewindPlan | None:
    """Carry out the plan of a rewind ``run_dir`` still holds (under its lock), so a
    wake resumes the fork the rewind chose; returns that plan, or None."""
    run_path = Path(run_dir)
    if pending(run_path) is None:
        return None
    lineage = load_lineage(workspace, settings=settings, run_dir=run_path)
    return finish_pending(lineage, store, run_path)


def finish_pending_rewind(
    settings: Settings, workspace: str | os.PathLike[str]
) -> RewindPlan | None:
    """:func:`finish_rewind` in ``settings``' run directory, opening its session store
    only when a plan is pending (before a wake of the built-in workflow)."""
    if pending(settings.run_path) is None:
        return None
    from flower.stores.open import open_session_store

    with open_session_store(settings=settings) as store:
        return finish_rewind(workspace, store, settings=settings, run_dir=settings.run_path)


class StepTurns(NamedTuple):
    """A step's session and the user turns of its active chain, oldest first."""

    step: str
    """The step's lineage key (``干活`` for ``work``)."""
    key: SessionKey
    turns: list[UserTurn]

    def listed(self) -> list[tuple[int | None, UserTurn]]:
        """Each turn, oldest first, with the N of ``flower rewind N`` that goes back to
        just before it (None for the first turn: a rewind leaves at least one)."""
        n = len(self.turns)
        return [(n - i if i else None, turn) for i, turn in enumerate(self.turns)]

    def as_json(self) -> dict[str, object]:
        """What ``flower rewind --list --json`` prints."""
        return {
            "step": self.step,
            "session_id": self.key.session_id,
            "turns": [
                {
                    "turns_back": back,
                    "uuid": t.uuid,
                    "timestamp": t.timestamp,
                    "text": t.text,
                    "context": t.context,
                }
                for back, t in self.listed()
            ],
        }


def step_turns(settings: Settings, workspace: Path, step: str | None = None) -> StepTurns:
    """The turns ``flower rewind --list`` shows: of ``step`` (default: the work step),
    read only (a store that is not there yet is not created)."""
    from flower.core.keys import project_key
    from flower.core.rewind import lineage_step, step_key, turns_of
    from flower.stores.open import open_readable
    from flower.workflow.documents import workflow_names

    lineage = load_lineage(workspace, settings=settings)
    step = lineage_step(lineage, step or workflow_names(settings).work_step, settings.run_path)
    key = step_key(lineage, step, project_key(workspace), settings.run_path)
    with open_readable(settings) as store:
        return StepTurns(step, key, turns_of(store, key))


class Rewound(NamedTuple):
    """What :func:`rewind_step` did."""

    plan: RewindPlan
    cut_short: bool
    """The plan was a rewind a crash cut short, finished now, and nothing more was done."""


def rewind_step(
    settings: Settings,
    workspace: Path,
    turns: int = 1,
    *,
    step: str | None = None,
    keep_files: bool = False,
    force: bool = False,
) -> Rewound:
    """Rewind ``step`` (default: the work step) ``turns`` user turns, under the run
    directory's lock (:meth:`flower.core.lineage.Lineage.rewind`); a rewind a crash cut
    short is finished first, and is then all that is done. What is missing (no lineage,
    no such step) is said before the lock is taken."""
    from flower.core.keys import project_key
    from flower.core.rewind import step_key
    from flower.core.run_lock import run_lock
    from flower.stores.open import open_session_store
    from flower.workflow.documents import workflow_names

    workspace = workspace.resolve()
    step = step or workflow_names(settings).work_step
    cut_short = pending(settings.run_path)
    if cut_short is None:
        lineage = load_lineage(workspace, settings=settings)
        step_key(lineage, step, project_key(workspace), settings.run_path)
    with run_lock(settings.run_path), open_session_store(settings=settings) as store:
        plan = load_lineage(workspace, settings=settings).rewind(
            step,
            turns,
            workspace=workspace,
            store=store,
            settings=settings,
            keep_files=keep_files,
            force=force,
        )
    return Rewound(plan, cut_short is not None and plan.new_session == cut_short.new_session)


def rewind_said(plan: RewindPlan, workspace: Path) -> list[str]:
    """What ``flower rewind`` says of a rewind it made, in the active language: the new
    session and the old one kept, each file put back or removed (relative to
    ``workspace``), each left as it is and why, and the Bash commands not undone."""
    lines = [
        ngettext(
            "rewound {step} {n} turn: now session {new}; the old session {old} stays "
            "(flower sessions show {old})",
            "rewound {step} {n} turns: now session {new}; the old session {old} stays "
            "(flower sessions show {old})",
            plan.turns,
        ).format(
            step=shown_step(plan.step), n=plan.turns, new=plan.new_session, old=plan.old_session
        )
    ]
    for item in plan.restore:
        if item.before is None:
            line = _("  file {path}: removed (flower created it after that point)")
        else:
            line = _("  file {path}: put back")
        lines.append(line.format(path=relative_path(item.path, workspace)))
    for left in plan.left:
        lines.append(
            _("  file {path}: left as it is, {reason}").format(
                path=relative_path(left.path, workspace), reason=_(left.reason)
            )
        )
    if plan.bash:
        lines.append(_("  not undone: these commands ran through Bash after that point:"))
        lines.extend(f"    $ {first_line(command, 100)}" for command in plan.bash)
    return lines


def cut_short_said(plan: RewindPlan, asked: int) -> list[str]:
    """What ``flower rewind`` says when a rewind a crash cut short was pending (it was
    finished, and nothing more was done): that, and how to go the ``asked`` turns back."""
    return [
        ngettext(
            "finished the rewind of {step} a crash cut short ({n} turn back): now session "
            "{new}; the old session {old} stays (flower sessions show {old})",
            "finished the rewind of {step} a crash cut short ({n} turns back): now session "
            "{new}; the old session {old} stays (flower sessions show {old})",
            plan.turns,
        ).format(
            step=shown_step(plan.step), n=plan.turns, new=plan.new_session, old=plan.old_session
        ),
        ngettext(
            "nothing more was rewound; to go {n} more turn back, type `flower rewind {n}` again",
            "nothing more was rewound; to go {n} more turns back, type `flower rewind {n}` again",
            asked,
        ).format(n=asked),
    ]


def finished_said(plan: RewindPlan) -> str:
    """What a wake says when it first finished a rewind a crash cut short
    (:func:`finish_pending_rewind`), in the active language."""
    return _(
        "flower: finished the rewind of {step} a crash cut short (now session {session})"
    ).format(step=shown_step(plan.step), session=plan.new_session)


__all__ = [
    "Rewound",
    "StepTurns",
    "cut_short_said",
    "finish_pending_rewind",
    "finish_rewind",
    "finished_said",
    "rewind_said",
    "rewind_step",
    "step_turns",
]
