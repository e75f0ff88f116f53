"""What a wake does, decided in one place.

:func:`plan_wake` reads what a wake starts from, once: lineage, the session store (opened
once, then the runtime's), the brief, goals, words and verdict on disk; its
:class:`WakePlan` holds the one fresh-start rule (:func:`fresh_start`) and the sessions
the wake resumes. ``flower`` (cli/run.py), :meth:`~flower.workflow.base.Workflow.run`
and ``flower status`` all read it; :func:`wake_state` is its report.

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
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from flower.core.errors import NothingToDoError
from flower.core.i18n import _
from flower.core.lineage import FreshStart, Lineage, archive_dir, workspace_identity
from flower.stores.lineage import configured_lineage_store, load_lineage
from flower.workflow.documents import documents, workflow_names
from flower.workflow.state import WakeChecks, WakeFresh, WakeRewind, WakeState

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.rewind import RewindPlan
    from flower.workflow.said import SaidJournal

log = logging.getLogger(__name__)


# -- the plan of a wake: read once ----------------------------------------------------


@dataclass
class WakePlan:
    """What a wake starts from, read once (:func:`plan_wake`): the lineage (loaded once,
    the wake writes through it), the session store it looked in (opened once, the
    runtime's for the wake), and :attr:`state`, what ``wake_state`` reports.

    The CLI's run (:func:`begin`), :meth:`~flower.workflow.base.Workflow.run` and
    ``flower status`` all read this one plan: whether the wake starts afresh
    (:meth:`fresh`), which sessions it resumes (:attr:`known`), which frozen steps of the
    built-in workflow it skips (:func:`skipped_steps`)."""

    workspace: Path
    """The workspace folder (an old lineage is set aside under its notes/archive/)."""
    settings: Settings | None
    """The wake's settings (None: they could not be loaded; continuity goes on without)."""
    lineage: Lineage
    state: WakeState
    alive: dict[str, bool]
    """``{step: bool}``: whether the store holds the session lineage names for it."""
    store: SessionStoreBase | None = None
    """The session store the plan looked in; None when there is none yet (a missing
    SQLite file is not created to look) or it could not be opened."""
    owns_store: bool = False
    """The plan opened :attr:`store`: :meth:`close` closes it (the caller's stays open)."""
    store_error: Exception | None = None
    """Why the store could not be read (``state.checks.store`` says it in words)."""
    rewound: RewindPlan | None = None
    """A rewind a crash cut short that this plan carried out first (``finish_rewind``)."""

    @property
    def known(self) -> dict[str, str]:
        """``{step: session id}`` of the sessions this wake resumes (still in the store)."""
        return {
            step: sid for step, sid in self.lineage.record.steps.items() if self.alive.get(step)
        }

    def fresh(self, steps: Iterable[str] | None = None) -> WakeFresh | None:
        """Why this wake starts afresh although lineage is there, for a workflow of
        ``steps`` (None: every step lineage names), as lineage is now; None when it
        does not (once :meth:`start_fresh` set it aside, None)."""
        recorded = self.lineage.record.steps
        wanted = None if steps is None else set(steps)
        names = [s for s in recorded if wanted is None or s in wanted]  # lineage's order
        return fresh_start(self.lineage, names, self.alive, self.state.checks.store)

    def start_fresh(
        self, steps: Iterable[str] | None = None, *, known: Iterable[str] = ()
    ) -> FreshStart | None:
        """When lineage is there but this wake cannot use it (:meth:`fresh`), move it into
        notes/archive/ before anything overwrites it; what was done, for the banner.
        ``known``: steps resumed all the same (a ``resume_from`` session)."""
        fresh = self.fresh(steps)
        if fresh is None:
            return None
        gone = [s for s in fresh.steps if s not in set(known)] if fresh.reason == "gone" else []
        if fresh.reason == "gone" and not gone:
            return None
        return self.lineage.start_fresh(self.workspace, gone)

    def check_store(self) -> None:
        """Raise why the session store could not be read (its own
        :class:`~flower.core.errors.FlowerError`, else a ``StoreUnavailableError``): its
        sessions are not gone, and a run could not write its own either."""
        error = self.store_error
        if error is None:
            return
        from flower.core.errors import FlowerError, StoreUnavailableError

        if isinstance(error, FlowerError):
            raise error
        raise StoreUnavailableError(str(error)) from error

    def close(self) -> None:
        """Close the session store the plan opened (the runtime of the wake may use it
        until then)."""
        if self.store is not None and self.owns_store:
            self.store.close()
            self.store = None


def plan_wake(
    workspace: str | os.PathLike[str] = ".",
    run_dir: str | os.PathLike[str] = "runs",
    *,
    settings: Settings | None = None,
    read_only: bool = False,
    store: SessionStoreBase | None = None,
    finish_rewind: bool = False,
) -> WakePlan:
    """Read what the next wake of ``workspace`` starts from: lineage once, the session
    store once (``store``, the runtime's, when given: used, not closed; else opened, and
    the caller closes the plan), and the brief, goals, words and verdict on disk.

    ``read_only``: open the stores read-only, so this works where nothing may be written
    (``flower status``). ``finish_rewind``: first carry out a rewind a crash cut short
    (a wake does; status only reports it). Starts nothing, writes nothing else.
    """
    from flower.core.lineage import settings_for
    from flower.core.rewind import rewound_turns
    from flower.workflow.documents import brief_is_complete, documents, read_goals
    from flower.workflow.said import said_state
    from flower.workflow.verdict import last_verdict

    try:
        settings = settings_for(settings, run_dir)
    except Exception as exc:
        log.warning(_("settings unavailable: %s"), exc)
        settings = None
    # to read only: a SQL lineage store that is not there is not created
    lineage_store = configured_lineage_store(settings, read_only=True) if read_only else None
    lineage = load_lineage(workspace, settings=settings, run_dir=run_dir, store=lineage_store)
    owns = store is None
    error: Exception | None = None
    if store is None:
        store, error = _open_store(settings, read_only)
    run_path = Path(getattr(settings, "run_dir", None) or run_dir)
    rewound = None
    if finish_rewind and error is None:
        from flower.core.rewind import finish_pending, pending

        if pending(run_path) is not None:
            if store is None:
                from flower.stores.open import open_session_store

                store, owns = open_session_store(settings=settings), True
            rewound = finish_pending(lineage, store, run_path)
    recorded = lineage.steps
    alive, context, probe_error = _probe_sessions(workspace, recorded, store)
    error = error or probe_error
    problem = None if error is None else str(error)
    files = documents(workspace, settings)
    goals = read_goals(files.goals)
    said = said_state(lineage, settings, run_path, files.goals)
    checks = WakeChecks(
        lineage="ok" if lineage.found else "none",
        fresh=fresh_start(lineage, recorded, alive, problem),
        recorded=recorded,
        alive=alive,
        context=context,
        brief=brief_is_complete(files.brief),
        goals=len(goals or []),
        store=problem,
        request=said.request,
        goals_stale=said.goals_stale,
        unrecorded=said.unrecorded,
        rewound=rewound_turns(lineage.record.extra, lineage.woke),
        unheard=said.unheard,
        rewind=_pending_rewind(run_path),
        verdict=last_verdict(lineage.record.extra),
    )
    steps = {name: sid for name, sid in recorded.items() if alive.get(name)}
    state = WakeState(waking=bool(steps), checks=checks, woke=lineage.woke, steps=steps)
    return WakePlan(
        workspace=Path(workspace),
        settings=settings,
        lineage=lineage,
        state=state,
        alive=alive,
        store=store,
        owns_store=owns and store is not None,
        store_error=error,
        rewound=rewound,
    )


def wake_state(
    workspace: str | os.PathLike[str] = ".",
    run_dir: str | os.PathLike[str] = "runs",
    *,
    settings: Settings | None = None,
    read_only: bool = False,
) -> WakeState:
    """What the next run would resume, without starting anything (``read_only``: the
    session store is opened read-only, so this works where nothing may be written): the
    :attr:`~WakePlan.state` of :func:`plan_wake`.

    A :class:`~flower.workflow.state.WakeState` (``st["waking"]`` and the like read its
    fields): ``waking`` (bool), ``checks`` (a ``WakeChecks``), ``woke`` (int), ``steps``
    ({step: session id}): ``waking`` is True when at least one step would resume; ``woke``
    is how many times this workspace has woken so far (the next run is ``woke + 1``);
    ``steps`` holds only sessions still in the store. ``checks`` explains: ``lineage``
    (``"ok"`` or ``"none"``: missing, corrupt or another workspace), ``fresh`` (why the next
    wake starts afresh although lineage is there: a ``WakeFresh`` of ``reason``
    (``"moved"``, ``"unreadable"`` or ``"gone"``), ``moved_from`` and ``steps``, or None),
    ``recorded`` (every step lineage names), ``alive`` ({step: bool}), ``context`` ({step:
    tokens of the last round or None}), ``brief`` (the brief file is complete), ``goals``
    (number of goals in the goals file, 0 when missing or malformed), ``store`` (why the
    session store could not be read, or None), ``request`` (a first request a run killed
    before its first step took it up left behind, or None), ``goals_stale`` (a wake cut
    short left the goals to derive again: the next run does it first), ``unrecorded`` (what
    runs killed before recording it were told, oldest first: the next run passes it on),
    ``rewound`` (the user turns a ``flower rewind`` since the last wake undid, or None).
    """
    plan = plan_wake(workspace, run_dir, settings=settings, read_only=read_only)
    plan.close()
    return plan.state


def fresh_start(
    lineage: Lineage, steps: Iterable[str], alive: Mapping[str, bool], store_problem: str | None
) -> WakeFresh | None:
    """The one rule for starting afresh with lineage there: it was written for another
    folder or cannot be read (``moved``, ``unreadable``), or the store lost the sessions
    of some of ``steps`` (``gone``; not decided while the store cannot be read). None:
    the wake resumes what lineage names. ``flower adopt`` takes a set-aside lineage back."""
    mismatch = lineage.mismatch
    if mismatch is not None:
        return WakeFresh(mismatch.reason, moved_from=mismatch.moved_from)
    gone = [step for step in steps if not alive.get(step)]
    if gone and lineage.found and not store_problem:
        return WakeFresh("gone", steps=gone)
    return None


def skipped_steps(state: WakeState, settings: Settings, *, said: bool = False) -> set[str]:
    """The built-in workflow's frozen steps a wake from ``state`` skips: the clarify
    step once the brief is complete, the goals step while the goals file lists goals and
    nothing said since leaves them to derive again (``said``: words said now). The same
    rule as the steps' own ``skip_if`` (:func:`~flower.workflow.documents.brief_is_complete`,
    :func:`~flower.workflow.documents.goals_frozen`)."""
    from flower.workflow.documents import goals_frozen

    checks = state.checks
    names = workflow_names(settings, checks.recorded)
    rederive = said or checks.goals_stale or bool(checks.unrecorded)
    skipped = {names.clarify_step} if checks.brief else set()
    if goals_frozen(checks.goals, rederive=rederive):
        skipped.add(names.goals_step)
    return skipped


def _open_store(
    settings: Settings | None, read_only: bool
) -> tuple[SessionStoreBase | None, Exception | None]:
    """The configured session store, or None and why not (None, None: there is none, and
    looking creates none: a deleted sessions.db leaves nothing to resume)."""
    if settings is None:
        return None, None
    from flower.core.config import default_store_url, sqlite_file
    from flower.core.errors import StoreNotFoundError
    from flower.stores.open import open_session_store

    url = default_store_url(settings)
    database = sqlite_file(url) if url else None
    if database is not None and not database.exists():
        return None, None
    # opened even with nothing recorded: a run would open it next, and an unreadable
    # store must stop it before its banner and before a wake is counted
    try:
        return open_session_store(settings=settings, read_only=read_only), None
    except StoreNotFoundError:
        return None, None  # no store yet: nothing to resume
    except Exception as exc:
        return None, exc


def _probe_sessions(
    workspace: str | os.PathLike[str], recorded: dict[str, str], store: SessionStoreBase | None
) -> tuple[dict[str, bool], dict[str, int | None], Exception | None]:
    """Which recorded sessions ``store`` holds, their context sizes, and why it could
    not be read (``None``: it could, or there was nothing to look for)."""
    alive = dict.fromkeys(recorded, False)
    context: dict[str, int | None] = dict.fromkeys(recorded)
    if store is None:
        return alive, context, None
    from flower.core.errors import InvalidKeyError
    from flower.core.keys import project_key
    from flower.core.records import SessionKey
    from flower.core.transcript.usage import context_tokens

    problem: Exception | None = None
    pkey = project_key(workspace)
    for name, sid in recorded.items():
        try:
            key = SessionKey(pkey, sid)
            alive[name] = bool(store.exists(key))
            if alive[name]:
                usage = store.last_usage(key)
                context[name] = context_tokens(usage) if usage else None
        except InvalidKeyError:
            continue  # no session of this workspace could have that id
        except Exception as exc:
            problem = problem or exc
    return alive, context, problem


def _pending_rewind(run_path: Path) -> WakeRewind | None:
    """The plan of a rewind a crash cut short, if the run directory holds one."""
    from flower.core.rewind import RewindError, pending

    try:
        plan = pending(run_path)
    except RewindError as exc:
        return WakeRewind(damaged=str(exc))
    except OSError as exc:  # the run itself will say what is wrong with the run dir
        log.warning(_("%s unreadable: %s"), run_path, exc)
        return None
    if plan is None:
        return None
    return WakeRewind(step=plan.step, turns=plan.turns, new_session=plan.new_session)


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
    from flower.workflow.said import words_to_pass_on as pass_on

    names = workflow_names(settings, state.steps)
    first_run = not (state.checks.brief or names.clarify_step in state.steps)
    return pass_on(state.checks.unrecorded, said, first_run=first_run)


def archive_conversation(
    settings: Settings, workspace: Path, *, keep: str | None = None
) -> Path | None:
    """``--new``: move lineage, brief, goals (under any language's name) and unrecorded
    words (but those of token ``keep``, the new task's) into notes/archive/<stamp>/;
    sessions stay. ``None`` in a fresh directory (nothing to archive, no empty folder)."""
    from flower.workflow.said import SaidJournal

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
    that holds it until lineage does, and the plan of the wake (None after ``--new``'s
    archive: the workflow plans its own)."""

    said: str | None
    journal: SaidJournal
    plan: WakePlan | None = None


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
    under it are not said again."""
    from flower.core.run_lock import run_lock
    from flower.workflow.said import SaidJournal, said_record

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
        _archive(settings, workspace, io, keep=journal.add(said, said_in))  # a kill loses nothing
        io.banner(None)
        return WakeStart(said, journal)
    # lineage read once and the store opened once for the whole wake: the runtime and
    # the workflow go on with them (the store is closed as ``held`` closes)
    plan = plan_wake(workspace, settings.run_dir, settings=settings, finish_rewind=True)
    held.callback(plan.close)
    if (
        said is not None
        and token is not None
        and said_record(plan.lineage.record.extra).holds(token)
    ):
        said = None  # an earlier execution of this fleet task recorded them: heard
    if plan.rewound is not None:  # a rewind a crash cut short ends first
        io.rewind_finished(plan.rewound)
    plan.check_store()  # before any banner: nothing is gone, nothing runs
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
            _archive(settings, workspace, io, keep=said_now)
            io.banner(None)
            return WakeStart(said, journal)  # the archived lineage is no plan to go on with
    return WakeStart(said, journal, plan)


def _archive(settings: Settings, workspace: Path, io: WakeIO, *, keep: str | None) -> None:
    into = archive_conversation(settings, workspace, keep=keep)
    if into is not None:
        io.archived(into)


def relative(path: str | os.PathLike[str], workspace: Path) -> str:
    """``path`` as the banner shows it: relative to the workspace when inside it."""
    target = Path(path)
    return str(target.relative_to(workspace) if target.is_relative_to(workspace) else target)


__all__ = [
    "Action",
    "NothingToDoError",
    "Verdict",
    "WakeChoice",
    "WakeIO",
    "WakePlan",
    "WakeStart",
    "archive_conversation",
    "begin",
    "builtin_step_keys",
    "builtin_view",
    "check_store",
    "fresh_start",
    "is_used",
    "lineage_name",
    "needs_words",
    "plan_wake",
    "relative",
    "skipped_steps",
    "verdict",
    "wake_state",
    "with_step_names",
    "words_to_pass_on",
]
