"""What each pruning policy removes or changes in one stored session: ``flower prune``'s report.

Read only: the policies run on the session's active chain (what the model is sent) in
dry-run mode, so trim writes no pointer file. The report is plain data (what
``flower prune ID --json`` prints)::

    from flower import load_settings
    from flower.stores.prune_report import prune_report

    report = prune_report(load_settings().settings, "71a21bd9")
    print(report["tokens_saved"], [p["policy"] for p in report["policies"]])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flower.core.errors import UnknownSessionError
from flower.core.i18n import _

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import SessionStoreBase
    from flower.core.records import Entry, SessionKey

KeyFinder = Callable[["SessionStoreBase", str, str, "str | None"], "SessionKey"]
"""``(store, session id, store's name, project) -> key``: how the session is found."""


def _silently(
    store: SessionStoreBase, session_id: str, where: str, project: str | None
) -> SessionKey:
    from flower.stores.lookup import find_session_key

    return find_session_key(store, session_id, where, project).key


def prune_report(
    settings: Settings,
    session_id: str,
    where: str | None = None,
    *,
    project: str | None = None,
    trim: bool | None = None,
    find: KeyFinder | None = None,
) -> dict[str, Any]:
    """The per-policy report for one stored session of the configured store, as plain
    data. ``where`` names the store in errors (default: its redacted URL,
    :func:`flower.core.config.store_name`); ``trim=False`` leaves the trim policy out.

    The id (or a unique prefix of it) is found by ``find``, by default as
    :func:`flower.stores.lookup.find_session_key` finds it: in ``project``, else the
    newest of the projects holding it. Pruning warnings are in the report (``warnings``
    and each policy's ``error``), not emitted."""
    from flower.core.transcript.chain import active_chain
    from flower.core.transcript.messages import to_messages
    from flower.core.transcript.usage import context_tokens
    from flower.stores.open import open_readable
    from flower.stores.prune import (
        PruningSessionStore,
        PruningWarning,
        configured_policies,
        estimate_tokens,
        model_bytes,
    )

    find = find or _silently
    if where is None:
        from flower.core.config import store_name
        from flower.core.redact import redact_text

        where = redact_text(store_name(settings))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PruningWarning)
        policies = configured_policies(settings, trim=trim)  # the configuration first
        store = open_readable(settings)
        try:
            view = PruningSessionStore(store, policies, run_dir=settings.run_path)
            view.options["dry_run"] = True
            key = find(store, session_id, where, project)
            raw = store.load(key)
            if raw is None:  # removed since it was found
                raise UnknownSessionError(
                    _("no session {session} in {store}").format(session=key.session_id, store=where)
                )
            chain = active_chain(raw)  # what the model would be sent, before any policy
            pruned, stats, off_chain = view.prune_loaded_in_detail(key, raw)
        finally:
            store.close()
    failures = {s.error for s in stats if s.error}
    notices = []
    for warning in caught:
        if not issubclass(warning.category, PruningWarning):
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
        elif str(warning.message) not in failures:
            notices.append(str(warning.message))
    before = sum(model_bytes(e) for e in chain)
    after = sum(model_bytes(e) for e in pruned)  # the view is the pruned chain
    return {
        "session_id": key.session_id,
        "project_key": key.project_key,
        # stored entries off the active chain (before the last compaction, older
        # branches, subagents): the model is not sent them, so they are not pruned
        "entries": {
            "raw": len(raw),
            "chain": len(chain),
            "pruned": len(pruned),
            "off_chain": off_chain,
        },
        "messages": {"raw": len(to_messages(chain)), "pruned": len(to_messages(pruned))},
        "policies": [s.as_dict() for s in stats],
        "chain_bytes": {"raw": before, "pruned": after, "saved": before - after},
        "tokens_saved": estimate_tokens(before - after),
        "last_context_tokens": context_tokens(_last_usage(raw)),
        "warnings": notices,  # besides each policy's own "error"
    }


def _last_usage(entries: list[Entry]) -> dict[str, Any] | None:
    for entry in reversed(entries):
        if entry.get("type") == "assistant" and not entry.get("isApiErrorMessage"):
            usage = (entry.get("message") or {}).get("usage")
            if isinstance(usage, dict):
                return usage
    return None


__all__ = ["KeyFinder", "prune_report"]
