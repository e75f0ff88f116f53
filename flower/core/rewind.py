"""Rewind a workflow step: fork its session some user turns back, put flower's file
changes back, and point the lineage at the fork. Nothing is deleted.

A rewind touches three things that cannot change together: the session store (the
fork), the workspace (files flower's Write and Edit changed after the rewind point) and
the lineage record. So it first writes its whole plan to ``<run_dir>/rewind.json``
(atomically): before that file exists nothing has changed; once it exists every step
is idempotent (a fork under a fixed id, files rewritten from their snapshots, the
lineage set) and the plan is carried out to its end, by this rewind or, after a crash,
by the next ``flower`` or ``flower rewind`` here (:func:`finish_pending`). The plan
file goes last.
"""

from __future__ import annotations

import os
import stat
import uuid as uuid_module
from collections.abc import Sequence
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from flower.core.errors import FlowerError
from flower.core.fileperms import private_dir, replaced_atomically
from flower.core.fork import ForkError, UserTurn, fork, turns_back_point, user_turns
from flower.core.i18n import N_, _
from flower.core.labels import shown_steps, step_named
from flower.core.records import Entry, LineageRecord, SessionKey
from flower.core.run_lock import run_lock
from flower.core.snapshots import Snapshots, digest, file_changes
from flower.core.transcript.blocks import tool_uses
from flower.core.transcript.chain import active_chain

if TYPE_CHECKING:
    from flower.core.protocols import SessionStoreBase

PLAN_FILE = "rewind.json"
"""The plan of a rewind under way, in the run directory."""


class RewoundLineage(Protocol):
    """What a rewind reads and sets of a workspace's lineage
    (:class:`flower.core.lineage.Lineage`; named by shape, as lineage calls rewind)."""

    record: LineageRecord
    found: bool
    workspace: str

    @property
    def steps(self) -> dict[str, str]: ...

    @property
    def woke(self) -> int: ...

    def save(self) -> bool: ...


class RewindError(FlowerError):
    """A rewind that cannot be done as asked (no lineage, no such step...): exit 2."""

    exit_code = 2


class FileRestore(msgspec.Struct, frozen=True):
    """Put ``path`` back to the content kept as ``before`` (``None``: remove it)."""

    path: str
    before: str | None


class LeftFile(msgspec.Struct, frozen=True):
    """A file the rewind did not put back, and why."""

    path: str
    reason: str


class RewindPlan(msgspec.Struct, frozen=True):
    """Everything a rewind does, decided before it changes anything."""

    step: str
    project_key: str
    old_session: str
    new_session: str
    at: str
    """The last entry the fork keeps."""
    turns: int
    woke: int
    """The lineage's wake count when the rewind was made (the next wake announces it)."""
    restore: list[FileRestore] = msgspec.field(default_factory=list)
    left: list[LeftFile] = msgspec.field(default_factory=list)
    bash: list[str] = msgspec.field(default_factory=list)
    """Commands the model ran through Bash after the rewind point: not undone."""


def _read_file(path: Path) -> bytes | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return b""  # a folder, link or device where flower wrote a file: never a match
    return path.read_bytes()


def _after(chain: Sequence[Entry], at: str) -> list[Entry]:
    for i, entry in enumerate(chain):
        if entry.get("uuid") == at:
            return list(chain[i + 1 :])
    return []


def bash_commands(entries: Sequence[Entry]) -> list[str]:
    """The commands of the Bash calls in ``entries``, in order."""
    commands: list[str] = []
    for entry in entries:
        for use in tool_uses(entry):
            args = use.get("input")
            if use.get("name") == "Bash" and isinstance(args, dict):
                command = args.get("command")
                if isinstance(command, str):
                    commands.append(command)
    return commands


CHANGED_SINCE = N_("changed since flower wrote it (--force puts it back)")
NO_LONGER_KEPT = N_("its earlier content is no longer kept")
"""Why a file is left as it is: kept in English in the plan (``--json`` shows it as
data), shown translated."""


def _file_plan(
    after: Sequence[Entry], snapshots: Snapshots, force: bool
) -> tuple[list[FileRestore], list[LeftFile]]:
    first: dict[str, str | None] = {}
    last: dict[str, str] = {}
    for change in file_changes(after):
        first.setdefault(change.path, change.before)
        last[change.path] = change.after
    restore: list[FileRestore] = []
    left: list[LeftFile] = []
    for path, before in first.items():
        now = _read_file(Path(path))
        now_sha = None if now is None else digest(now)
        if now_sha == before:
            continue  # already as it was at the rewind point
        if now_sha != last[path] and not force:
            left.append(LeftFile(path, CHANGED_SINCE))
            continue
        if before is not None and snapshots.read(before) is None:
            left.append(LeftFile(path, NO_LONGER_KEPT))
            continue
        restore.append(FileRestore(path, before))
    return restore, left


def plan_rewind(
    store: SessionStoreBase,
    key: SessionKey,
    step: str,
    turns: int,
    *,
    woke: int,
    snapshots: Snapshots,
    keep_files: bool = False,
    force: bool = False,
) -> RewindPlan:
    """What rewinding ``key`` ``turns`` user turns back would do; changes nothing."""
    entries = store.load(key)
    if entries is None:
        raise RewindError(
            _("step {step!r} names session {session}, which is not in the store").format(
                step=step, session=key.session_id
            )
        )
    chain = active_chain(entries)
    at = turns_back_point(chain, turns, key.session_id)
    after = _after(chain, at)
    restore, left = ([], []) if keep_files else _file_plan(after, snapshots, force)
    return RewindPlan(
        step=step,
        project_key=key.project_key,
        old_session=key.session_id,
        new_session=str(uuid_module.uuid4()),
        at=at,
        turns=turns,
        woke=woke,
        restore=restore,
        left=left,
        bash=bash_commands(after),
    )


def _put_back(item: FileRestore, snapshots: Snapshots) -> None:
    path = Path(item.path)
    if item.before is None:
        if os.path.lexists(path) and not path.is_dir():
            path.unlink()
        return
    data = snapshots.read(item.before)
    if data is None:
        raise RewindError(
            _("the kept content of {path} ({sha}) is gone").format(path=path, sha=item.before)
        )
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, durable=True, mode=0o666) as f:  # the user's file
        f.write(data)
        if mode is not None:
            os.fchmod(f.fileno(), mode)


def _plan_path(run_dir: Path) -> Path:
    return run_dir / PLAN_FILE


def _tidy(path: Path) -> None:
    """Remove what a write of ``path`` killed half-way left: its temporary siblings."""
    for stale in path.parent.glob(f".{glob_escape(path.name)}.*-*.tmp"):
        stale.unlink(missing_ok=True)


def _marker(before: object, plan: RewindPlan) -> dict[str, Any]:
    """What the next wake announces: the turns of every rewind since the last wake (a
    plan carried out twice, after a crash, counts once)."""
    turns, forks = plan.turns, [plan.new_session]
    if isinstance(before, dict) and before.get("woke") == plan.woke:
        earlier = before.get("forks")
        earlier = [f for f in earlier if isinstance(f, str)] if isinstance(earlier, list) else []
        counted = before.get("turns")
        if plan.new_session in earlier:
            return before
        if isinstance(counted, int) and not isinstance(counted, bool):
            turns, forks = counted + plan.turns, [*earlier, plan.new_session]
    return {
        "step": plan.step,
        "turns": turns,
        "from": plan.old_session,
        "woke": plan.woke,
        "forks": forks,
    }


def carry_out(
    plan: RewindPlan,
    store: SessionStoreBase,
    lineage: RewoundLineage,
    run_dir: Path,
    *,
    recovering: bool = False,
) -> None:
    """Do ``plan`` (every part idempotent), then remove the plan file. ``recovering``
    (after a crash) also removes the temporary files a killed restore left."""
    source = SessionKey(plan.project_key, plan.old_session)
    fork(store, source, plan.at, session_id=plan.new_session)
    snapshots = Snapshots.of_run_dir(run_dir)
    for item in plan.restore:
        if recovering:
            _tidy(Path(item.path))
        _put_back(item, snapshots)
    lineage.record.steps[plan.step] = plan.new_session
    lineage.record.extra["rewound"] = _marker(lineage.record.extra.get("rewound"), plan)
    if not lineage.save():
        raise RewindError(
            _(
                "could not write the lineage record; the rewind finishes on the next "
                "`flower` here ({plan} keeps it)"
            ).format(plan=_plan_path(run_dir))
        )
    _plan_path(run_dir).unlink(missing_ok=True)


def rewind(
    lineage: RewoundLineage,
    step: str,
    turns: int,
    *,
    store: SessionStoreBase,
    project_key: str,
    run_dir: str | os.PathLike[str],
    keep_files: bool = False,
    force: bool = False,
) -> RewindPlan:
    """Rewind ``step`` ``turns`` user turns back, holding the run directory's lock;
    returns what was done.

    When a rewind a crash cut short is pending here, that one is finished and returned
    instead, and nothing more is rewound: the user who types the same ``flower rewind
    N`` again after the crash gets the N turns asked for, not 2N."""
    run_path = Path(run_dir)
    with run_lock(run_path):
        cut_short = finish_pending(lineage, store, run_path)
        if cut_short is not None:
            return cut_short
        step = lineage_step(lineage, step, run_path)
        key = step_key(lineage, step, project_key, run_path)
        plan = plan_rewind(
            store,
            key,
            step,
            turns,
            woke=lineage.woke,
            snapshots=Snapshots.of_run_dir(run_path),
            keep_files=keep_files,
            force=force,
        )
        private_dir(run_path)
        with replaced_atomically(_plan_path(run_path)) as f:  # from here on, it happens
            f.write(msgspec.json.encode(plan))
        carry_out(plan, store, lineage, run_path)
    return plan


def lineage_step(lineage: RewoundLineage, name: str, run_dir: Path) -> str:
    """The lineage key of the step ``name`` names (its key, or its name as shown in any
    language: ``work`` for ``干活``); a clear error naming what lineage holds otherwise."""
    if not lineage.found:
        raise RewindError(
            _(
                "nothing to rewind: no lineage for {workspace} in {run_dir} "
                "(flower has not worked in this directory)"
            ).format(workspace=lineage.workspace, run_dir=run_dir)
        )
    step = step_named(name, lineage.steps)
    if step is None:
        known = shown_steps(lineage.steps) or _("none")
        raise RewindError(
            _("lineage has no step {step!r}; its steps: {known}").format(step=name, known=known)
        )
    return step


def step_key(lineage: RewoundLineage, step: str, project_key: str, run_dir: Path) -> SessionKey:
    """The session key of the step ``step`` names (see :func:`lineage_step`)."""
    return SessionKey(project_key, lineage.steps[lineage_step(lineage, step, run_dir)])


def turns_of(store: SessionStoreBase, key: SessionKey) -> list[UserTurn]:
    """The user turns of ``key``'s active chain, for ``flower rewind --list``."""
    return user_turns(active_chain(store.load(key) or []))


def pending(run_dir: Path) -> RewindPlan | None:
    """The plan of a rewind a crash cut short, if any (an unreadable plan is an error)."""
    try:
        raw = _plan_path(run_dir).read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # no run directory, so no plan in it
        return None
    try:
        return msgspec.json.decode(raw, type=RewindPlan)
    except msgspec.DecodeError as exc:
        raise RewindError(
            _("{plan} is damaged ({error}); look at it, then remove it to go on").format(
                plan=_plan_path(run_dir), error=exc
            )
        ) from None


def finish_pending(
    lineage: RewoundLineage, store: SessionStoreBase, run_dir: Path
) -> RewindPlan | None:
    """Carry out the rewind a crash cut short in ``run_dir``, holding the run
    directory's lock; returns its plan, or None."""
    if pending(run_dir) is None:
        return None
    with run_lock(run_dir):
        plan = pending(run_dir)  # another flower may have finished it meanwhile
        if plan is not None:
            carry_out(plan, store, lineage, run_dir, recovering=True)
    return plan


def rewound_turns(extra: dict[str, Any], woke: int) -> int | None:
    """The turns of a rewind made since the last wake (what the next banner says)."""
    marker = extra.get("rewound")
    if isinstance(marker, dict) and marker.get("woke") == woke:
        turns = marker.get("turns")
        if isinstance(turns, int) and not isinstance(turns, bool):
            return turns
    return None


__all__ = [
    "PLAN_FILE",
    "FileRestore",
    "ForkError",
    "LeftFile",
    "RewindError",
    "RewindPlan",
    "RewoundLineage",
    "bash_commands",
    "carry_out",
    "finish_pending",
    "lineage_step",
    "pending",
    "plan_rewind",
    "rewind",
    "rewound_turns",
    "step_key",
    "turns_of",
]
