"""``PruningSessionStore``: a read view over any SessionStore, pruned for the model.

``append`` passes straight through; ``load`` returns what the model is sent: the stored
transcript's active chain (:func:`flower.core.transcript.active_chain`) run through an
ordered chain of pruning policies, then made a valid Messages API conversation by
:func:`flower.core.transcript.model_chain`. Storage is never modified: ``load_raw`` (or
the inner store) still returns everything as written.

A policy that raises is skipped for that load with a :class:`PruningWarning` naming the
policy and the session; the load goes on with the other policies.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from flower.core.entries import json_bytes
from flower.core.errors import ConfigError, NoSuchPluginError
from flower.core.i18n import N_, _, ngettext
from flower.core.protocols import PruneContext, PruningPolicy, SessionStoreBase
from flower.core.records import Entry, SessionInfo, SessionKey
from flower.core.suggest import did_you_mean
from flower.core.transcript.chain import active_chain
from flower.core.transcript.repair import model_chain

if TYPE_CHECKING:
    from flower.core.config import Settings

TRIM_POLICY = "trim"
EPHEMERAL_POLICY = "ephemeral"
REPAIR_STEP = "(repair)"


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
        raise RuntimeError(
            _("prune() called sys.exit({code})").format(code=repr(exc.code))
        ) from None
    if result is entries:  # nothing changed: nothing new to check
        return result
    if not isinstance(result, list):
        raise TypeError(
            _("prune() returned {type}, not a list of entries").format(type=type(result).__name__)
        )
    if set(map(type, result)) - {dict}:
        stranger = next(item for item in result if item.__class__ is not dict)
        raise TypeError(
            _("prune() returned a list holding {type}, not only entries (JSON objects)").format(
                type=type(stranger).__name__
            )
        )
    if entries and not result:
        warnings.warn(
            _(
                "pruning policy {policy} removed every entry of session {session}: "
                "the model is sent an empty conversation"
            ).format(policy=repr(_name(policy)), session=_session_label(ctx)),
            PruningWarning,
            stacklevel=4,
        )
    return result


def _name(policy: PruningPolicy) -> str:
    return getattr(policy, "name", repr(policy))


def _warn_failure(name: str, ctx: PruneContext, exc: BaseException) -> str:
    message = _(
        "pruning policy {policy} failed on session {session} and was skipped for this load: {error}"
    ).format(policy=repr(name), session=_session_label(ctx), error=f"{type(exc).__name__}: {exc}")
    warnings.warn(message, PruningWarning, stacklevel=4)
    return message


def _warn_unplaced(entries: Sequence[Entry], ctx: PruneContext) -> None:
    """Damage no repair can undo: a message without a uuid has no place in the chain."""
    count = sum(
        1
        for entry in entries
        if entry.__class__ is dict
        and entry.get("uuid") is None
        and entry.get("type") in ("user", "assistant")
    )
    if count:
        warnings.warn(
            ngettext(
                "session {session}: {count} user/assistant entry has no uuid, so it has "
                "no place in the conversation and is not sent to the model",
                "session {session}: {count} user/assistant entries have no uuid, so they "
                "have no place in the conversation and are not sent to the model",
                count,
            ).format(session=_session_label(ctx), count=count),
            PruningWarning,
            stacklevel=4,
        )


def _walk(entries: Sequence[Entry], ctx: PruneContext) -> list[Entry]:
    """The stored transcript's active chain: what the policies are given."""
    _warn_unplaced(entries, ctx)
    try:
        return active_chain(entries)
    except (AttributeError, TypeError):
        # only a caller of prune() can pass these: every store rejects them on append
        kept = [entry for entry in entries if isinstance(entry, dict)]
        if len(kept) == len(entries):
            raise
        warnings.warn(
            _("session {session}: left out {count} entries that are not JSON objects").format(
                session=_session_label(ctx), count=len(entries) - len(kept)
            ),
            PruningWarning,
            stacklevel=4,
        )
        return active_chain(kept)


def _check(entries: list[Entry], ctx: PruneContext) -> tuple[list[Entry], list[str]]:
    """The safety net: the active chain of what the policies returned, made a valid
    Messages API conversation (see :func:`flower.core.transcript.model_chain`)."""
    chain, fixes = model_chain(entries)
    if fixes:
        warnings.warn(
            _(
                "session {session}: the pruned transcript was not a valid conversation; "
                "repaired: {fixes}"
            ).format(session=_session_label(ctx), fixes="; ".join(fixes)),
            PruningWarning,
            stacklevel=4,
        )
    return chain, fixes


def prune(
    entries: Sequence[Entry], policies: Sequence[PruningPolicy], ctx: PruneContext
) -> list[Entry]:
    """What the model is sent of ``entries``: their active chain (from the newest leaf
    back to the root or the last compaction boundary) through ``policies`` in order,
    then the safety net; oldest first. Entries off that chain are not pruned: the model
    is never sent them."""
    return _check(_run(_walk(entries, ctx), policies, ctx), ctx)[0]


def run_policies(
    entries: Sequence[Entry],
    policies: Sequence[PruningPolicy],
    ctx: PruneContext,
    report: list[PolicyStats] | None = None,
) -> list[Entry]:
    """``entries`` through ``policies`` in order, as given (no walk, no repair): a
    policy that fails is skipped with a :class:`PruningWarning` naming it. The one
    policy loop: with a ``report``, each policy's :class:`PolicyStats` is appended to
    it (what it removed, changed and saved, and whether it edited its input in place)."""
    return _run(list(entries), policies, ctx, report)


def _run(
    current: list[Entry],
    policies: Sequence[PruningPolicy],
    ctx: PruneContext,
    report: list[PolicyStats] | None = None,
) -> list[Entry]:
    """:func:`run_policies` on a list of the caller's own (the walk's), not copied."""
    for policy in policies:
        stats = PolicyStats(_name(policy))
        given = None if report is None else _snapshot(current)  # a report may afford it
        try:
            result = _apply(policy, current, ctx)
        except Exception as exc:  # one bad policy must not stop a resume
            stats.error = _warn_failure(stats.policy, ctx, exc)
            result = current
        if report is not None:
            if given is not None and _snapshot(current) != given:
                stats.notes.append(
                    _(
                        "changed the entries it was given in place (a policy must return new "
                        "entries and leave its input alone); the counts miss those changes"
                    )
                )
            _diff(current, result, stats)
            report.append(stats)
        current = result
    return current


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


class PruneDetail(NamedTuple):
    """A pruned view and what made it."""

    entries: list[Entry]  # the view: what the model is sent
    policies: list[PolicyStats]  # each policy's counts, then the safety net's
    off_chain: int  # stored entries off the active chain, not pruned (0: none)


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
    """:func:`prune_with_stats`, and how many stored entries were off the chain."""
    chain = _walk(entries, ctx)
    off_chain = len(entries) - len(chain)
    report: list[PolicyStats] = []
    current = _run(chain, policies, ctx, report)
    repair = PolicyStats(REPAIR_STEP)
    view, repair.notes = _check(current, ctx)
    _diff(current, view, repair)
    report.append(repair)
    return PruneDetail(view, report, off_chain)


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
        label = _("pruning policy {name!r} (plugin {plugin!r})").format(
            name=name, plugin=reg.plugin
        )
        try:
            policy = _made(reg.factory, name, settings)
        except ConfigError:
            raise
        except Exception as exc:  # one broken plugin must not stop a resume
            warnings.warn(
                _("{policy} could not be created and is left out: {error}").format(
                    policy=label, error=f"{type(exc).__name__}: {exc}"
                ),
                PruningWarning,
                stacklevel=2,
            )
            continue
        if not callable(getattr(policy, "prune", None)):
            warnings.warn(
                _("{policy} has no prune() and is left out").format(policy=label),
                PruningWarning,
                stacklevel=2,
            )
            continue
        if getattr(policy, "name", None) != name:  # warnings name what the config says
            with contextlib.suppress(AttributeError):
                policy.name = name
        policies.append(policy)
    return policies


def _made(factory: Callable[[Settings], Any], name: str, settings: Settings) -> Any:
    """``factory(settings)``; a ``ConfigError`` it raises about its options names the
    policy's table (``[tool.flower.pruning.options.<name>]``) and ``pruning.options``."""
    try:
        return factory(settings)
    except ConfigError as exc:
        if exc.key is not None:
            raise
        table = f"[tool.flower.pruning.options.{name}]"
        text = str(exc) if table in str(exc) else f"{table}: {exc}"
        raise ConfigError(text, key="pruning.options") from None


def check_policy_options(settings: Settings) -> None:
    """Each ``[tool.flower.pruning.options.<name>]`` table read by its policy, as a run
    would when it first loads a transcript: a misspelt key or a wrong value is the same
    :class:`ConfigError` there (exit 2), only before anything is sent or written. A
    factory that fails another way is left for the run to report (a broken plugin)."""
    from flower.core.plugins import get_registry

    registry = get_registry()
    for name in settings.pruning.options:
        try:
            reg = registry.get("pruning_policies", name)
        except NoSuchPluginError:
            continue  # check_policy_names says so
        try:
            _made(reg.factory, name, settings)
        except ConfigError:
            raise
        except Exception:  # building it in the run warns, with its error
            continue


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
    offered = ", ".join(available) or _("none")
    unknown = [n for n in names if n not in available]
    if unknown:
        failed = (
            " "
            + _(
                "(plugins that failed to load, which may provide it: {plugins}; "
                "see `flower plugins`)"
            ).format(plugins=", ".join(failed_plugins))
            if failed_plugins
            else ""
        )
        raise ConfigError(
            _(
                "[tool.flower.pruning] policies: no plugin provides {names}{did_you_mean}; "
                "available: {available}{failed}"
            ).format(
                names=", ".join(map(repr, unknown)),
                did_you_mean=did_you_mean(unknown, available),
                available=offered,
                failed=failed,
            ),
            key="pruning.policies",
        )
    listed = [*settings.pruning.policies, *(n for n in names if n not in settings.pruning.policies)]
    repeated = sorted({n for n in listed if listed.count(n) > 1})
    if repeated:
        raise ConfigError(
            _(
                "[tool.flower.pruning] policies: {names} listed twice; "
                "each policy runs once, where it is listed"
            ).format(names=", ".join(map(repr, repeated))),
            key="pruning.policies",
        )
    for name in settings.pruning.options:
        if name not in available:
            raise ConfigError(
                _(
                    "[tool.flower.pruning.options.{name}]: no plugin provides a policy "
                    "{name!r}{did_you_mean}; available: {available}"
                ).format(
                    name=name, did_you_mean=did_you_mean([name], available), available=offered
                ),
                key="pruning.options",
            )
        if name in BUILTIN_SETTINGS:
            raise ConfigError(
                _(
                    "[tool.flower.pruning.options.{name}]: the built-in policy {name!r} takes "
                    "no options table; {where}"
                ).format(name=name, where=_(BUILTIN_SETTINGS[name])),
                key="pruning.options",
            )


# where each built-in policy is configured instead of an options table (English msgids)
BUILTIN_SETTINGS = {
    "synthetic-errors": N_("it has no settings"),
    "denials": N_("set [tool.flower.pruning] keep_denials"),
    "interrupted": N_("it has no settings"),
    "ephemeral": N_("set [tool.flower.pruning] ephemeral and ephemeral_commands"),
    "trim": N_("set [tool.flower.trim] enabled, min_chars and keep_recent_turns"),
}


# --------------------------------------------------------------------------- the store


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
        dry_run: bool = False,
    ) -> PruningSessionStore:
        """The configured chain; ``trim=False`` turns off only trim, ``ephemeral=False``
        only the ephemeral policy, ``keep_denials`` overrides the configuration.
        ``dry_run``: a view to look at (``flower sessions show --pruned``), where trim
        shows its pointers but writes no file under ``trimmed/``."""
        if keep_denials is not None:
            if keep_denials < 0:
                raise ConfigError(f"keep_denials must be 0 or more, got {keep_denials}")
            settings = msgspec.structs.replace(
                settings,
                pruning=msgspec.structs.replace(settings.pruning, keep_denials=keep_denials),
            )
        policies = configured_policies(settings, trim=trim, ephemeral=ephemeral)
        options = {"dry_run": True} if dry_run else None
        return cls(inner, policies, run_dir=run_dir or settings.run_path, options=options)

    def context(self, key: SessionKey | None) -> PruneContext:
        return PruneContext(key=key, run_dir=self.run_dir, options=dict(self.options))

    # writes and listings: the inner store's, untouched
    def append(self, key: SessionKey, entries: Sequence[Entry]) -> None:
        self.inner.append(key, entries)

    def load_raw(self, key: SessionKey) -> list[Entry] | None:
        """Everything as written, not pruned."""
        return self.inner.load(key)

    def load(self, key: SessionKey) -> list[Entry] | None:
        """What the model is sent: the active chain, pruned, oldest first."""
        raw = self.inner.load(key)
        return None if raw is None else self.prune_loaded(key, raw)

    def prune_loaded(self, key: SessionKey, raw: Sequence[Entry]) -> list[Entry]:
        """The view of ``raw``, the transcript of ``key`` the caller already loaded (a
        resume that needs both reads the store once)."""
        return prune(raw, self.policies, self.context(key))

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
    "prune_with_stats",
    "run_policies",
]
