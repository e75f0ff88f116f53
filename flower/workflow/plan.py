"""The plan of a wake: what it starts from, read once.

:func:`plan_wake` reads what a wake starts from, once: lineage, the session store (opened
once, or the runtime's), the brief, goals, words and verdict on disk. Its
:class:`WakePlan` holds the one fresh-start rule (:func:`fresh_start`) and the sessions
the wake resumes; :func:`skipped_steps` says which frozen steps of the built-in workflow
it skips. ``flower`` (:func:`flower.workflow.wake.begin`),
:meth:`~flower.workflow.base.Workflow.run` and ``flower status`` all read it;
:func:`wake_state` is its report.

This module sits low in the workflow package: it reads the documents, the words
(:mod:`flower.workflow.said`) and the verdict, and nothing that runs a step, so the
workflow (:mod:`flower.workflow.base`) and the order of a wake
(:mod:`flower.workflow.wake`) both build on it. See docs/continuity.md.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flower.core.i18n import _
from flower.core.lineage import FreshStart, Lineage, settings_for, workspace_identity
from flower.stores.lineage import configured_lineage_store, load_lineage
from flower.workflow.documents import (
    brief_is_complete,
    documents,
    goals_frozen,
    read_goals,
    workflow_names,
)
from flower.workflow.said import said_state
from flower.workflow.state import WakeChecks, WakeFresh, WakeRewind, WakeState
from flower.workflow.verdict import last_verdict

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.rewind import RewindPlan

log = logging.getLogger(__name__)


@dataclass
class WakePlan:
    """What a wake starts from, read once (:func:`plan_wake`): the lineage (loaded once,
    the wake writes through it), the session store it looked in (opened once, the
    runtime's for the wake), and :attr:`state`, what ``wake_state`` reports.

    The CLI's run (:func:`~flower.workflow.wake.begin`),
    :meth:`~flower.workflow.base.Workflow.run` and ``flower status`` all read this one
    plan: whether the wake starts afresh (:meth:`fresh`), which sessions it resumes
    (:attr:`known`), which frozen steps of the built-in workflow it skips
    (:func:`skipped_steps`)."""

    workspace: Path
    """The workspace folder (an old lineage is set aside under its notes/archive/)."""
    settings: Settings | None
    """The wake's settings (None: they could not be loaded; continuity goes on without)."""
    lineage: Lineage
    state: WakeState
    alive: dict[str, bool]
    """``{step: bool}``: whether the store holds the session lineage names for it."""
    run_path: Path
    """The run directory (the words' journal, a pending rewind)."""
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

    def archived(self) -> None:
        """``--new`` archived :attr:`lineage` (through it, so it is reset in place): the
        plan now says what the wake starts from, lineage not read again (the brief,
        goals and words are, since they moved with it)."""
        self.alive = {}  # lineage names no step now
        self.state = _assess(
            self.workspace,
            self.settings,
            self.lineage,
            self.run_path,
            self.alive,
            {},
            self.store_error,
        )

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
    lineage: Lineage | None = None,
) -> WakePlan:
    """Read what the next wake of ``workspace`` starts from: lineage once, the session
    store once (``store``, the runtime's, when given: used, not closed; else opened, and
    the caller closes the plan), and the brief, goals, words and verdict on disk.

    ``read_only``: open the stores read-only, so this works where nothing may be written
    (``flower status``). ``finish_rewind``: first carry out a rewind a crash cut short
    (a wake does; status only reports it). ``lineage``: this workspace's lineage, read
    already for this wake (:func:`~flower.workflow.builtin.builtin_workflow` reads it to
    name its steps): used, not read again. Starts nothing, writes nothing else.
    """
    try:
        settings = settings_for(settings, run_dir)
    except Exception as exc:
        log.warning(_("settings unavailable: %s"), exc)
        settings = None
    if lineage is None or lineage.workspace != workspace_identity(workspace, settings):
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
    alive, context, probe_error = _probe_sessions(workspace, lineage.steps, store)
    error = error or probe_error
    state = _assess(Path(workspace), settings, lineage, run_path, alive, context, error)
    return WakePlan(
        workspace=Path(workspace),
        settings=settings,
        lineage=lineage,
        state=state,
        alive=alive,
        run_path=run_path,
        store=store,
        owns_store=owns and store is not None,
        store_error=error,
        rewound=rewound,
    )


def _assess(
    workspace: Path,
    settings: Settings | None,
    lineage: Lineage,
    run_path: Path,
    alive: dict[str, bool],
    context: dict[str, int | None],
    error: Exception | None,
) -> WakeState:
    """What ``lineage`` (as it is in memory), the sessions found ``alive`` with their
    ``context`` sizes, the store's ``error`` and the files on disk leave to the wake."""
    from flower.core.rewind import rewound_turns

    recorded = lineage.steps
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
    return WakeState(waking=bool(steps), checks=checks, woke=lineage.woke, steps=steps)


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


__all__ = ["WakePlan", "fresh_start", "plan_wake", "skipped_steps", "wake_state"]
