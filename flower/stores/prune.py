"""``PruningSessionStore``: a read view over any SessionStore, pruned for the model.

``append`` passes straight through; ``load`` returns the stored transcript with the
model's context (from the last compaction boundary on, see
:func:`flower.core.transcript.context_start`) run through an ordered chain of pruning
policies, then made a valid Messages API conversation by
:func:`flower.core.transcript.repair_conversation`. Storage is never modified:
``load_raw`` (or the inner store) still returns everything as written.

A policy that raises is skipped for that load with a :class:`PruningWarning` naming the
policy and the session; the load goes on with the other policies.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec

from flower.core.entries import json_bytes
from flower.core.errors import ConfigError, did_you_mean
from flower.core.protocols import PruneContext, PruningPolicy, SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey
from flower.core.transcript import active_chain, context_start, has_leaf, repair_conversation
from flower.core.transcript_index import TranscriptIndex

if TYPE_CHECKING:
    from flower.core.config import Settings

TRIM_POLICY = "trim"
EPHEMERAL_POLICY = "ephemeral"
REPAIR_STEP = "(repair)"
_T = TypeVar("_T")


class PruningWarning(UserWarning):
    """A policy failed (and was skipped), or the chain needed the safety-net repair."""


@dataclass
class PolicyStats:
    """What one policy did to one transcript."""

    policy: str
    removed: int = 0
    changed: int = 0
    added: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_saved(self) -> int:
        return self.bytes_before - self.bytes_after

    @property
    def tokens_saved(self) -> int:
        return estimate_tokens(self.bytes_saved)

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "removed": self.removed,
            "changed": self.changed,
            "added": self.added,
            "bytes_saved": self.bytes_saved,
            "tokens_saved": self.tokens_saved,
            "error": self.error,
            "notes": self.notes,
        }


def estimate_tokens(n_bytes: int) -> int:
    """About four bytes of JSON per token: an estimate, not a tokenizer."""
    return round(n_bytes / 4)


def model_bytes(entry: Entry) -> int:
    """Bytes the model is sent for this entry: its ``message`` as JSON (0 for others)."""
    message = entry.get("message")
    if entry.get("type") not in ("user", "assistant") or not isinstance(message, dict):
        return 0
    try:
        return len(json_bytes(message))  # a lone surrogate (cut mid-emoji) as its escape
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError):
        return 0


def _session_label(ctx: PruneContext | None) -> str:
    key = getattr(ctx, "key", None)
    return key.session_id if key is not None else "<unknown session>"


def _apply(policy: PruningPolicy, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
    try:
        result = policy.prune(entries, ctx)
    except SystemExit as exc:  # a plugin must not end the process that resumes
        raise RuntimeError(f"prune() called sys.exit({exc.code!r})") from None
    if not isinstance(result, list):
        raise TypeError(f"prune() returned {type(result).__name__}, not a list of entries")
    stranger = next((item for item in result if item.__class__ is not dict), _NO_ITEM)
    if stranger is not _NO_ITEM:
        raise TypeError(
            f"prune() returned a list holding {type(stranger).__name__}, not only entries "
            "(JSON objects)"
        )
    if entries and not result:
        _warn_emptied(getattr(policy, "name", repr(policy)), ctx)
    return result


def _warn_emptied(name: str, ctx: PruneContext) -> None:
    warnings.warn(
        f"pruning policy {name!r} removed every entry of session {_session_label(ctx)}: "
        "the model is sent an empty conversation",
        PruningWarning,
        stacklevel=5,
    )


def _plan(policy: PruningPolicy, index: TranscriptIndex) -> None:
    """``policy.plan(index)``, with the warning :func:`_apply` gives a policy that
    removes every entry."""
    emptied = index.is_empty()
    policy.plan(index)  # type: ignore[attr-defined]
    if not emptied and index.is_empty():
        _warn_emptied(getattr(policy, "name", repr(policy)), index.ctx)


_NO_ITEM = object()


def _warn_failure(name: str, ctx: PruneContext, exc: BaseException) -> str:
    message = (
        f"pruning policy {name!r} failed on session {_session_label(ctx)} and was skipped "
        f"for this load: {type(exc).__name__}: {exc}"
    )
    warnings.warn(message, PruningWarning, stacklevel=4)
    return message


def _warn_unplaced(count: int, ctx: PruneContext) -> None:
    """Damage no repair can undo: a message without a uuid has no place in the chain."""
    if count:
        what = (
            "1 user/assistant entry has no uuid, so it has"
            if count == 1
            else f"{count} user/assistant entries have no uuid, so they have"
        )
        warnings.warn(
            f"session {_session_label(ctx)}: {what} no place in the conversation and "
            f"{'is' if count == 1 else 'are'} not sent to the model",
            PruningWarning,
            stacklevel=4,
        )


def _check(
    entries: list[Entry], index: TranscriptIndex | None, ctx: PruneContext
) -> tuple[list[Entry], list[str]]:
    """The safety net on ``entries``, a view the ``index`` made (if any): the index's
    check, and the full check and repair when the index cannot vouch for the view."""
    if needs_check(index):
        return _finish(entries, ctx)
    assert index is not None
    _warn_unplaced(len(index.uuidless_messages), ctx)
    return entries, []


def _finish(entries: list[Entry], ctx: PruneContext) -> tuple[list[Entry], list[str]]:
    _warn_unplaced(
        sum(
            1
            for entry in entries
            if entry.__class__ is dict
            and entry.get("uuid") is None
            and entry.get("type") in ("user", "assistant")
        ),
        ctx,
    )
    try:
        repaired, fixes = repair_conversation(entries)
    except (AttributeError, TypeError):
        # only a caller of prune() can pass these: every store rejects them on append
        kept = [entry for entry in entries if isinstance(entry, dict)]
        if len(kept) == len(entries):
            raise
        repaired, fixes = repair_conversation(kept)
        fixes.insert(0, f"left out {len(entries) - len(kept)} entries that are not JSON objects")
    if fixes:
        warnings.warn(
            f"session {_session_label(ctx)}: the pruned transcript was not a valid "
            f"conversation; repaired: {'; '.join(fixes)}",
            PruningWarning,
            stacklevel=4,
        )
    return repaired, fixes


def _run_generic(
    entries: list[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> list[Entry]:
    current = entries
    for policy in policies:
        try:
            current = _apply(policy, current, ctx)
        except Exception as exc:  # one bad policy must not stop a resume
            _warn_failure(getattr(policy, "name", repr(policy)), ctx, exc)
    return current


def _run_indexed(
    entries: list[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], TranscriptIndex | None]:
    """Built-in policies planning on one shared index; the generic path whenever the
    index does not cover the transcript (or a planner fails, so the generic path can
    name the policy in its warning). Returns the index too, when it made the output."""
    try:
        index = TranscriptIndex(entries, ctx)
        for policy in policies:
            _plan(policy, index)
        return index.materialise(), index
    except Exception:
        return _run_generic(entries, policies, ctx), None


def _runs(policies: Sequence[PruningPolicy]) -> Iterator[tuple[bool, list[PruningPolicy]]]:
    """Consecutive policies grouped by whether they can plan on a shared index."""
    run: list[PruningPolicy] = []
    indexed = False
    for policy in policies:
        plans = callable(getattr(policy, "plan", None))
        if run and plans != indexed:
            yield indexed, run
            run = []
        indexed = plans
        run.append(policy)
    if run:
        yield indexed, run


def _run_all(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], TranscriptIndex | None]:
    """The policies in order; the index that made the output, if the last run had one."""
    current = list(entries)
    index: TranscriptIndex | None = None
    for indexed, run in _runs(policies):
        if indexed:
            current, index = _run_indexed(current, run, ctx)
        else:
            current, index = _run_generic(current, run, ctx), None
    return current, index


def run_policies(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> list[Entry]:
    """``entries`` through ``policies`` in order (no repair). Runs of built-in policies
    share one :class:`TranscriptIndex`; any other policy gets the plain list."""
    return _run_all(entries, policies, ctx)[0]


def needs_check(index: TranscriptIndex | None) -> bool:
    """Whether the safety net must walk the pruned chain itself: yes unless the index
    that made the output shows its active chain is already a valid conversation."""
    return index is None or not index.view_is_valid()


def prune(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> list[Entry]:
    """Run the model's part of ``entries`` (from :func:`context_start` on) through
    ``policies`` in order, then the safety-net repair; the history before it is kept
    as stored."""

    def prune_part(part: Sequence[Entry]) -> tuple[list[Entry], None]:
        current, index = _run_all(part, policies, ctx)
        return _check(current, index, ctx)[0], None

    return _from_context_start(entries, prune_part)[0]


def prune_to_chain(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], list[Entry]]:
    """:func:`prune`, and the view's active chain (what the model is sent): the one the
    safety net's check walked when it vouched for the view, instead of a second walk
    over the whole view."""

    def prune_part(part: Sequence[Entry]) -> tuple[list[Entry], list[Entry] | None]:
        current, index = _run_all(part, policies, ctx)
        checked = _check(current, index, ctx)[0]
        valid = index is not None and checked is current
        return checked, index.valid_chain if valid and index is not None else None

    view, chain, _ = _from_context_start(entries, prune_part)
    # The history before the context is never on the chain: the cut is only taken where
    # the chain walks inside the context (see context_start).
    return view, active_chain(view) if chain is None else chain


def _from_context_start(
    entries: Sequence[Entry], prune_part: Callable[[Sequence[Entry]], tuple[list[Entry], _T]]
) -> tuple[list[Entry], _T, int]:
    """``prune_part`` on the model's context (from :func:`context_start` on), the history
    before it kept as stored; on the whole transcript when the pruned context is left
    with no leaf (the conversation would then end in the unpruned history). Returns the
    view, what ``prune_part`` reported, and how many entries were kept as history."""
    start = context_start(entries)
    if not start:
        return (*prune_part(entries), 0)
    # the warnings of a pass whose output may be discarded are held back until it is used
    with warnings.catch_warnings(record=True) as held:
        warnings.simplefilter("always")
        current, extra = prune_part(entries[start:])
    if not has_leaf(current):
        return (*prune_part(entries), 0)
    for caught in held:
        warnings.warn_explicit(caught.message, caught.category, caught.filename, caught.lineno)
    return [*entries[:start], *current], extra, start


def _diff(before: list[Entry], after: list[Entry], stats: PolicyStats) -> None:
    """Count removed/changed/added entries and bytes, relying on policies copying only
    what they change: an entry object present in both lists is unchanged."""
    after_ids = {id(e) for e in after}
    before_ids = {id(e) for e in before}
    after_uuids = {e.get("uuid") for e in after if id(e) not in before_ids}
    for entry in before:
        if id(entry) in after_ids:
            continue
        stats.bytes_before += model_bytes(entry)
        if entry.get("uuid") is not None and entry.get("uuid") in after_uuids:
            stats.changed += 1
        else:
            stats.removed += 1
    before_uuids = {e.get("uuid") for e in before if id(e) not in after_ids}
    for entry in after:
        if id(entry) in before_ids:
            continue
        stats.bytes_after += model_bytes(entry)
        if entry.get("uuid") is None or entry.get("uuid") not in before_uuids:
            stats.added += 1


def _snapshot(entries: list[Entry]) -> bytes | None:
    try:
        return msgspec.json.encode(entries)
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError):  # nothing to compare against
        return None


def _stats_generic(
    entries: list[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], list[PolicyStats]]:
    current = entries
    report: list[PolicyStats] = []
    for policy in policies:
        name = getattr(policy, "name", repr(policy))
        stats = PolicyStats(name)
        given = _snapshot(current)  # a report may afford checking the policy's contract
        try:
            result = _apply(policy, current, ctx)
        except Exception as exc:
            stats.error = _warn_failure(name, ctx, exc)
            result = current
        if given is not None and _snapshot(current) != given:
            stats.notes.append(
                "changed the entries it was given in place (a policy must return new "
                "entries and leave its input alone); the counts miss those changes"
            )
        _diff(current, result, stats)
        report.append(stats)
        current = result
    return current, report


def _plan_with_stats(index: TranscriptIndex, policy: PruningPolicy, stats: PolicyStats) -> None:
    """``policy.plan(index)``, counting what it changed as :func:`_diff` would on the
    lists before and after: the index's edits say which entries those are."""
    base = index.base
    replaced_before = dict(index.replaced)
    dropped_before = set(index.dropped)
    notes_before = {id(note): note for note in index.notes()}
    _plan(policy, index)
    gone: list[Entry] = []  # entries of the list before that the list after lacks
    new: list[Entry] = []  # entries of the list after that the list before lacked
    for slot in index.dropped - dropped_before:
        gone.append(replaced_before.get(slot, base[slot]))
    for slot, entry in index.replaced.items():
        if slot in index.dropped:
            continue
        old = replaced_before.get(slot, base[slot])
        if entry is not old:
            gone.append(old)
            new.append(entry)
    notes_after = index.notes()
    kept = {id(note) for note in notes_after}
    gone += [note for key, note in notes_before.items() if key not in kept]
    new += [note for note in notes_after if id(note) not in notes_before]
    new_uuids = {e.get("uuid") for e in new}
    gone_uuids = {e.get("uuid") for e in gone}
    for entry in gone:
        stats.bytes_before += model_bytes(entry)
        if entry.get("uuid") is not None and entry.get("uuid") in new_uuids:
            stats.changed += 1
        else:
            stats.removed += 1
    for entry in new:
        stats.bytes_after += model_bytes(entry)
        if entry.get("uuid") is None or entry.get("uuid") not in gone_uuids:
            stats.added += 1


def _stats_indexed(
    entries: list[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], list[PolicyStats], TranscriptIndex | None]:
    """The shared index for a run of built-ins, with each policy's counts; the generic
    path (and no index) whenever the index does not cover the run."""
    try:
        index = TranscriptIndex(entries, ctx)
        report = []
        for policy in policies:
            stats = PolicyStats(getattr(policy, "name", repr(policy)))
            _plan_with_stats(index, policy, stats)
            report.append(stats)
        return index.materialise(), report, index
    except Exception:
        return (*_stats_generic(entries, policies, ctx), None)


class PruneDetail(NamedTuple):
    """A pruned view and what made it."""

    entries: list[Entry]
    policies: list[PolicyStats]  # each policy's counts, then the safety net's
    history: int  # entries before the model's context, kept as stored (0: none)


def prune_with_stats(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> tuple[list[Entry], list[PolicyStats]]:
    """Like :func:`prune`, and report what each policy removed, changed and saved.

    A re-linked entry (only its ``parentUuid`` changed) counts as changed with about
    zero bytes saved. The last row, ``(repair)``, is the safety net.
    """
    detail = prune_in_detail(entries, policies, ctx)
    return detail.entries, detail.policies


def prune_in_detail(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> PruneDetail:
    """:func:`prune_with_stats`, and how much history the view kept as stored."""

    def prune_part(part: Sequence[Entry]) -> tuple[list[Entry], list[PolicyStats]]:
        current = list(part)
        report: list[PolicyStats] = []
        index: TranscriptIndex | None = None
        for indexed, run in _runs(policies):
            if indexed:
                current, rows, index = _stats_indexed(current, run, ctx)
            else:
                (current, rows), index = _stats_generic(current, run, ctx), None
            report += rows
        repair = PolicyStats(REPAIR_STEP)
        result, repair.notes = _check(current, index, ctx)
        if result is not current:
            _diff(current, result, repair)
        report.append(repair)
        current = result
        return current, report

    return PruneDetail(*_from_context_start(entries, prune_part))


# --------------------------------------------------------------------------- policies


def policy_names(
    settings: Settings, *, trim: bool | None = None, ephemeral: bool | None = None
) -> list[str]:
    """The configured chain: ``[tool.flower.pruning] policies``, with ``ephemeral``
    removed when switched off and ``trim`` appended when on (and removed when off)."""
    names = list(settings.pruning.policies)
    use_ephemeral = settings.pruning.ephemeral if ephemeral is None else ephemeral
    use_trim = settings.trim.enabled if trim is None else trim
    if not use_ephemeral:
        names = [n for n in names if n != EPHEMERAL_POLICY]
    if not use_trim:
        names = [n for n in names if n != TRIM_POLICY]
    elif TRIM_POLICY not in names:
        names.append(TRIM_POLICY)
    return names


def build_policies(names: Sequence[str], settings: Settings) -> list[PruningPolicy]:
    """Instantiate policies by name through the plugin registry.

    A bad name is a :class:`ConfigError` (see :func:`check_policy_names`), and so is
    a ``ConfigError`` a factory raises about its options. A factory that fails any
    other way, or makes something without ``prune()``, is a broken plugin: that policy
    is left out with a :class:`PruningWarning` and the others run, so a resume goes on.
    """
    from flower.core.plugins import get_registry

    registry = get_registry()
    failed = [info.name for info in registry.plugins if info.error]
    check_policy_names(names, settings, registry.names("pruning_policies"), failed)
    policies: list[PruningPolicy] = []
    for name in names:
        reg = registry.get("pruning_policies", name)
        label = f"pruning policy {name!r} (plugin {reg.plugin!r})"
        try:
            policy = reg.factory(settings)
        except ConfigError as exc:
            if exc.key is not None:
                raise
            table = f"[tool.flower.pruning.options.{name}]"
            text = str(exc) if table in str(exc) else f"{table}: {exc}"
            raise ConfigError(text, key="pruning.options") from None
        except Exception as exc:  # one broken plugin must not stop a resume
            warnings.warn(
                f"{label} could not be created and is left out: {type(exc).__name__}: {exc}",
                PruningWarning,
                stacklevel=2,
            )
            continue
        if not callable(getattr(policy, "prune", None)):
            warnings.warn(f"{label} has no prune() and is left out", PruningWarning, stacklevel=2)
            continue
        if getattr(policy, "name", None) != name:  # warnings name what the config says
            with contextlib.suppress(AttributeError):
                policy.name = name
        policies.append(policy)
    return policies


def configured_policies(
    settings: Settings, *, trim: bool | None = None, ephemeral: bool | None = None
) -> list[PruningPolicy]:
    """The chain ``[tool.flower.pruning]`` configures (see :func:`policy_names`), built."""
    return build_policies(policy_names(settings, trim=trim, ephemeral=ephemeral), settings)


def check_policy_names(
    names: Sequence[str],
    settings: Settings,
    available: Sequence[str],
    failed_plugins: Sequence[str] = (),
) -> None:
    """A :class:`ConfigError` for a chain naming a policy no plugin provides or one
    policy twice, or for an options table of a policy no plugin provides. Plugins that
    failed to load are named: the missing policy may be one of theirs."""
    offered = ", ".join(available) or "none"
    unknown = [n for n in names if n not in available]
    if unknown:
        failed = (
            f" (plugins that failed to load, which may provide it: {', '.join(failed_plugins)};"
            " see `flower plugins`)"
            if failed_plugins
            else ""
        )
        raise ConfigError(
            f"[tool.flower.pruning] policies: no plugin provides {', '.join(map(repr, unknown))}"
            f"{did_you_mean(unknown, available)}; available: {offered}{failed}",
            key="pruning.policies",
        )
    listed = [*settings.pruning.policies, *(n for n in names if n not in settings.pruning.policies)]
    repeated = sorted({n for n in listed if listed.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"[tool.flower.pruning] policies: {', '.join(map(repr, repeated))} listed twice; "
            "each policy runs once, where it is listed",
            key="pruning.policies",
        )
    for name in settings.pruning.options:
        if name not in available:
            raise ConfigError(
                f"[tool.flower.pruning.options.{name}]: no plugin provides a policy {name!r}"
                f"{did_you_mean([name], available)}; available: {offered}",
                key="pruning.options",
            )
        if name in BUILTIN_SETTINGS:
            raise ConfigError(
                f"[tool.flower.pruning.options.{name}]: the built-in policy {name!r} takes "
                f"no options table; {BUILTIN_SETTINGS[name]}",
                key="pruning.options",
            )


# where each built-in policy is configured instead of an options table
BUILTIN_SETTINGS = {
    "synthetic-errors": "it has no settings",
    "denials": "set [tool.flower.pruning] keep_denials",
    "interrupted": "it has no settings",
    "ephemeral": "set [tool.flower.pruning] ephemeral and ephemeral_commands",
    "trim": "set [tool.flower.trim] enabled, min_chars and keep_recent_turns",
}


# --------------------------------------------------------------------------- the store


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pruning allocates many small containers and frees none of them in cycles; the
    collector's repeated full scans of a large transcript cost more than the pruning
    itself, so it is paused for the duration (and restored after)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class PruningSessionStore(SessionStoreBase):
    """Wraps ``inner``: writes go through untouched, ``load`` returns the pruned view."""

    def __init__(
        self,
        inner: SessionStoreBase,
        policies: Sequence[PruningPolicy],
        *,
        run_dir: Path | str = Path("runs"),
        options: dict[str, Any] | None = None,
    ) -> None:
        self.inner = inner
        self.policies = list(policies)
        self.run_dir = Path(run_dir)
        self.options = dict(options or {})

    @classmethod
    def from_settings(
        cls,
        inner: SessionStoreBase,
        settings: Settings,
        *,
        trim: bool | None = None,
        ephemeral: bool | None = None,
        keep_denials: int | None = None,
        run_dir: Path | None = None,
    ) -> PruningSessionStore:
        """The configured chain; ``trim=False`` turns off only trim, ``ephemeral=False``
        only the ephemeral policy, ``keep_denials`` overrides the configuration."""
        if keep_denials is not None:
            if keep_denials < 0:
                raise ConfigError(f"keep_denials must be 0 or more, got {keep_denials}")
            settings = msgspec.structs.replace(
                settings,
                pruning=msgspec.structs.replace(settings.pruning, keep_denials=keep_denials),
            )
        policies = configured_policies(settings, trim=trim, ephemeral=ephemeral)
        return cls(inner, policies, run_dir=run_dir or settings.run_path)

    def context(self, key: SessionKey | None) -> PruneContext:
        return PruneContext(key=key, run_dir=self.run_dir, options=dict(self.options))

    # writes and listings: the inner store's, untouched
    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        self.inner.append(key, entries)

    def load_raw(self, key: SessionKey) -> list[Entry] | None:
        """Everything as written, not pruned."""
        return self.inner.load(key)

    def load(self, key: SessionKey) -> list[Entry] | None:
        raw = self.inner.load(key)
        return None if raw is None else self.prune_loaded(key, raw)

    def prune_loaded(self, key: SessionKey, raw: Sequence[Entry]) -> list[Entry]:
        """The view of ``raw``, the transcript of ``key`` the caller already loaded (a
        resume that needs both reads the store once)."""
        with _collector_paused():
            return prune(raw, self.policies, self.context(key))

    def load_chain(self, key: SessionKey) -> list[Entry] | None:
        """The active chain of the view: the entries the model is sent, oldest first
        (``active_chain(load(key))``, without walking the view a second time)."""
        raw = self.inner.load(key)
        return None if raw is None else self.prune_loaded_chain(key, raw)

    def prune_loaded_chain(self, key: SessionKey, raw: Sequence[Entry]) -> list[Entry]:
        """:meth:`load_chain` of ``raw``, the transcript of ``key`` already loaded."""
        with _collector_paused():
            return prune_to_chain(raw, self.policies, self.context(key))[1]

    def load_with_stats(self, key: SessionKey) -> tuple[list[Entry], list[PolicyStats]] | None:
        raw = self.inner.load(key)
        if raw is None:
            return None
        detail = self.prune_loaded_in_detail(key, raw)
        return detail.entries, detail.policies

    def prune_loaded_in_detail(self, key: SessionKey, raw: Sequence[Entry]) -> PruneDetail:
        """:meth:`prune_loaded`, with what each policy did and the history kept."""
        return prune_in_detail(raw, self.policies, self.context(key))

    def iter_entries(self, key: SessionKey) -> Iterator[Entry]:
        yield from self.load(key) or []

    def list_sessions(self, project_key: str) -> list[SessionInfo]:
        return self.inner.list_sessions(project_key)

    def list_projects(self) -> list[str]:
        return self.inner.list_projects()

    def delete(self, key: SessionKey) -> None:
        self.inner.delete(key)

    def set_modified(self, key: SessionKey, mtime_ms: int) -> None:
        self.inner.set_modified(key, mtime_ms)

    def list_subkeys(self, key: SessionKey) -> list[str]:
        return self.inner.list_subkeys(key)

    def exists(self, key: SessionKey) -> bool:
        exists = getattr(self.inner, "exists", None)
        return exists(key) if exists else self.inner.load(key) is not None

    def find_session(self, session_id: str) -> SessionKey | None:
        return self.inner.find_session(session_id)

    def last_usage(self, key: SessionKey) -> dict[str, Any] | None:
        return self.inner.last_usage(key)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # anything else a backend offers (e.g. a schema check) stays reachable
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


__all__ = [
    "PolicyStats",
    "PruneDetail",
    "PruningSessionStore",
    "PruningWarning",
    "build_policies",
    "estimate_tokens",
    "policy_names",
    "prune",
    "prune_in_detail",
    "prune_to_chain",
    "prune_with_stats",
]
