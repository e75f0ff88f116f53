"""What a wake does, in its order.

What a wake starts from is read once, by :func:`~flower.workflow.plan.plan_wake` (its
:class:`~flower.workflow.plan.WakePlan` holds the fresh-start rule and the sessions the
wake resumes; :mod:`flower.workflow.plan`, re-exported here). ``flower`` (cli/run.py),
:meth:`~flower.workflow.base.Workflow.run` and ``flower status`` all read that plan.

``flower`` reads what the user says and prints, through a :class:`WakeIO` it passes in;
:func:`begin` runs the steps of a wake of the built-in workflow in their order: the run
directory's lock, ``--new``'s archive, a rewind a crash cut short, whether the directory
has something to carry on (:func:`is_used`, :func:`check_store`, :func:`needs_words`),
the fresh start that keeps the old lineage (:meth:`WakePlan.start_fresh`), the banner,
which words a killed run left to pass on first (:func:`words_to_pass_on`) and the wake
prompt. :func:`verdict` says what a bare ``flower`` would do and :func:`skipped_steps`
which frozen steps it skips (``flower status``). See docs/continuity.md and
docs/everyday.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from flower.core.errors import NothingToDoError
from flower.core.i18n import _
from flower.core.lineage import FreshStart, Lineage, archive_dir, workspace_identity
from flower.stores.lineage import load_lineage
from flower.workflow.documents import documents, workflow_names
from flower.workflow.plan import WakePlan, plan_wake
from flower.workflow.said import SaidJournal, said_record
from flower.workflow.said import words_to_pass_on as pass_on
from flower.workflow.state import WakeState

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.rewind import RewindPlan


Verdict = Literal["wakes", "nothing", "stops"]
"""What a bare ``flower`` would do here: wake, find nothing to carry on, or stop."""


def builtin_view(state: WakeState, settings: Settings) -> WakeState:
    """``wake_state`` narrowed to the built-in workflow's steps, the ones `flower` runs:
    a workspace a Python ``Workflow`` of other steps used is no wake for it."""
    ours = builtin_step_keys(settings)
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


def builtin_step_keys(settings: Settings) -> set[str]:
    """Every key the built-in workflow's steps may have in lineage: a name the settings
    set, else the step's key in any language (a directory switched between languages
    keeps the keys it has)."""
    from flower.core.labels import CLARIFY_STEP, GOALS_STEP, WORK_STEP, step_keys

    conf = settings.workflow
    keys: set[str] = set()
    for configured, message in (
        (conf.clarify_step, CLARIFY_STEP),
        (conf.goals_step, GOALS_STEP),
        (conf.work_step, WORK_STEP),
    ):
        keys.update([configured] if configured else step_keys(message))
    return keys


def with_step_names(settings: Settings, recorded: Iterable[str]) -> Settings:
    """``settings`` with the built-in workflow's step names fixed for this wake (see
    :func:`~flower.workflow.documents.workflow_names`): the keys ``recorded`` holds, in
    whichever language, else this wake's language's; every reader of the settings then
    names the steps alike, whatever lineage records during the run."""
    names = workflow_names(settings, recorded)
    conf = msgspec.structs.replace(
        settings.workflow,
        clarify_step=names.clarify_step,
        goals_step=names.goals_step,
        work_step=names.work_step,
    )
    return msgspec.structs.replace(settings, workflow=conf)


def is_used(state: WakeState) -> bool:
    """Whether the built-in workflow has been here (``state`` is a :func:`builtin_view`)."""
    checks = state.checks
    return bool(
        state.waking or checks.brief or checks.recorded or checks.request or checks.unrecorded
    )


def verdict(state: WakeState, settings: Settings) -> Verdict:
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


def words_to_pass_on(state: WakeState, said: str | None, settings: Settings) -> list[str]:
    """What runs killed before recording it were told, to pass on before anything said
    now; on a first run what is said now replaces a request no step took up (as lineage
    has it), so then nothing."""
    names = workflow_names(settings, state.steps)
    first_run = not (state.checks.brief or names.clarify_step in state.steps)
    return pass_on(state.checks.unrecorded, said, first_run=first_run)


def archive_conversation(
    settings: Settings,
    workspace: Path,
    *,
    keep: str | None = None,
    lineage: Lineage | None = None,
) -> Path | None:
    """``--new``: move lineage, brief, goals (under any language's name) and unrecorded
    words (but those of token ``keep``, the new task's) into notes/archive/<stamp>/;
    sessions stay. ``None`` in a fresh directory (nothing to archive, no empty folder).
    ``lineage``: the wake's, read already (its plan's), archived through it and so
    reset in place; None: read here."""
    files = documents(workspace, settings)
    if lineage is None:
        lineage = load_lineage(workspace, settings=settings, run_dir=settings.run_dir)
    # the other language's files too: left behind, the next run would take them up
    kept = (files.brief, files.goals, *files.not_used)
    frozen = [p for p in kept if p.exists()]
    if not lineage.found and not frozen:
        return None
    into = archive_dir(workspace)
    lineage.archive(into, extra=frozen)
    # words a killed run left unrecorded belong to the conversation archived with them
    journal = SaidJournal(Path(settings.run_path), settings)
    journal.move_to(into, workspace_identity(workspace, settings), keep=keep)
    return into


def lineage_name(settings: Settings) -> str:
    """Where lineage is kept, as messages name it: the json file, or the store's URL."""
    from flower.core.redact import redact_text

    conf = settings.lineage
    if conf.url:
        return redact_text(conf.url)
    if conf.backend == "json":
        return f"{settings.run_dir}/lineage.json"
    return _("the {backend!r} lineage store").format(backend=conf.backend)


# -- the steps of a wake, in order ---------------------------------------------------


Action = Literal["continue", "say", "new", "leave", "interrupted"]


class WakeChoice(msgspec.Struct, frozen=True):
    """What the user chose at the wake prompt: ``action`` and, for ``say`` and ``new``,
    the text they typed."""

    action: Action
    said: str | None = None


class WakeIO(Protocol):
    """How a wake talks to the user: the CLI reads a terminal and prints. ``ask_*`` raise
    ``KeyboardInterrupt`` on Ctrl-C."""

    def preflight(self) -> None:
        """Check what must hold before a byte is written (credentials, writable dirs)."""

    def ask_new_task(self) -> str | None:
        """What to do (a first run, ``--new``, ``/new``); None: the user left."""

    def ask_wake(self) -> WakeChoice:
        """The wake prompt of a used directory, asked once."""

    def rewind_finished(self, plan: RewindPlan) -> None:
        """A rewind a crash cut short was carried out."""

    def banner(self, state: WakeState | None) -> None:
        """The first line: what this wake resumes (``state``), or a fresh start (None)."""

    def fresh_start(self, fresh: FreshStart) -> None:
        """Lineage was there but this wake cannot use it: set aside as ``fresh`` says."""

    def passed_on(self, words: list[str]) -> None:
        """Words a killed run was told and never recorded go to the model first."""

    def archived(self, into: Path) -> None:
        """``--new`` moved the last conversation into ``into``."""


class WakeStart(msgspec.Struct, frozen=True):
    """What the run goes on with: what was said (None: just carry on), the journal
    that holds it until lineage does, and the plan of the wake (after ``--new``'s
    archive, a plan of the fresh start: lineage is not read again)."""

    said: str | None
    journal: SaidJournal
    plan: WakePlan


def begin(
    settings: Settings,
    workspace: Path,
    said: str | None,
    *,
    new: bool,
    interactive: bool,
    io: WakeIO,
    held: contextlib.ExitStack,
    token: str | None = None,
) -> WakeStart | None:
    """Everything a wake of the built-in workflow does before its first step, in order;
    None when the user left at a prompt (nothing ran). The run directory's lock is taken
    into ``held`` before the banner and ``--new``'s archive (a second ``flower`` here
    says so and leaves having shown and moved nothing); the caller runs the workflow
    while ``held`` is open. ``token``: the words' own token in the journal, the same on
    each execution of a fleet task, so that words lineage or the journal already holds
    under it are not said again.

    Lineage is read once and the session store opened once for the whole wake (its
    :class:`~flower.workflow.plan.WakePlan`, ``--new``'s archive included): the runtime
    and the workflow go on with them, and the store is closed as ``held`` closes."""
    from flower.core.run_lock import run_lock

    journal = SaidJournal(settings.run_path, settings)
    said_in = workspace_identity(workspace, settings)  # as lineage names the workspace
    if new:
        if said is None and not interactive:
            raise NothingToDoError(_('--new needs something to do: flower --new "what to do"'))
        io.preflight()
        if said is None:
            said = io.ask_new_task()
            if said is None:
                return None
        held.enter_context(run_lock(settings.run_path))
        keep = journal.add(said, said_in)  # a kill loses nothing
        plan = _plan(settings, workspace, io, held)
        _archive(settings, plan, io, keep=keep)
        io.banner(None)
        return WakeStart(said, journal, plan)
    plan = _plan(settings, workspace, io, held)
    if (
        said is not None
        and token is not None
        and said_record(plan.lineage.record.extra).holds(token)
    ):
        said = None  # an earlier execution of this fleet task recorded them: heard
    state = builtin_view(plan.state, settings)
    used = is_used(state)
    if needs_words(state, said, interactive=interactive):
        raise NothingToDoError(
            _(
                "nothing to carry on in {workspace} (no work recorded in {lineage}) and nothing"
                ' said. Say what to do: flower "write a script that ..."; or see it work'
                " offline: flower demo"
            ).format(workspace=workspace, lineage=lineage_name(settings))
        )
    io.preflight()
    if said is None and not used:
        said = io.ask_new_task()
        if said is None:
            return None
    held.enter_context(run_lock(settings.run_path))
    if said is not None:
        journal.add(said, said_in, token)  # from here a kill loses nothing said
    fresh = plan.start_fresh(builtin_step_keys(settings))
    io.banner(state)
    if fresh is not None:
        io.fresh_start(fresh)
    passed_on = words_to_pass_on(state, said, settings)
    if passed_on:
        io.passed_on(passed_on)
    if said is None and interactive and not state.checks.unrecorded:
        choice = io.ask_wake()
        if choice.action == "leave":
            return None
        if choice.action == "interrupted":
            raise KeyboardInterrupt
        said = choice.said
        said_now = None if said is None else journal.add(said, said_in)
        if choice.action == "new":
            _archive(settings, plan, io, keep=said_now)
            io.banner(None)
    return WakeStart(said, journal, plan)


def _plan(settings: Settings, workspace: Path, io: WakeIO, held: contextlib.ExitStack) -> WakePlan:
    """The plan of this wake (closed as ``held`` closes), a rewind a crash cut short
    finished first; stops before any banner or write when the store cannot be read."""
    plan = plan_wake(workspace, settings.run_dir, settings=settings, finish_rewind=True)
    held.callback(plan.close)
    if plan.rewound is not None:  # a rewind a crash cut short ends first
        io.rewind_finished(plan.rewound)
    plan.check_store()  # before any banner: nothing is gone, nothing runs
    return plan


def _archive(settings: Settings, plan: WakePlan, io: WakeIO, *, keep: str | None) -> None:
    """``--new``: archive the conversation through the plan's lineage, then the plan is
    the fresh start's."""
    into = archive_conversation(settings, plan.workspace, keep=keep, lineage=plan.lineage)
    if into is not None:
        plan.archived()
        io.archived(into)


__all__ = [
    "Action",
    "NothingToDoError",
    "Verdict",
    "WakeChoice",
    "WakeIO",
    "WakeStart",
    "archive_conversation",
    "begin",
    "builtin_step_keys",
    "builtin_view",
    "check_store",
    "is_used",
    "lineage_name",
    "needs_words",
    "verdict",
    "with_step_names",
    "words_to_pass_on",
]
