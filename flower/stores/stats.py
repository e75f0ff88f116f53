"""What a transcript holds and what pruning would remove: ``flower sessions stats``'s figures.

Two kinds of token figures, never mixed:

- ``~tokens`` per kind of entry is an **estimate**: the entry's ``message`` as JSON,
  four bytes per token (what the model would be sent; 0 for bookkeeping entries).
- ``usage`` figures come **from the API's own counts** in assistant entries: output
  tokens summed once per API message (Claude Code repeats one message's usage on
  every content-block entry) and the context size of the last round.

::

    from flower import PruningSessionStore, load_settings, open_session_store
    from flower.stores.copy import select_sessions
    from flower.stores.stats import collect

    settings = load_settings().settings
    with open_session_store(settings=settings) as store:
        view = PruningSessionStore.from_settings(store, settings, dry_run=True)
        print(collect(store, select_sessions(store), view).as_dict())
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flower.core.entries import encode_entry
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey
from flower.stores.transcripts import transcripts

if TYPE_CHECKING:
    from flower.stores.prune import PolicyStats, PruningSessionStore

KINDS_ORDER = ("user", "assistant", "tool result", "api error", "system")
"""The order kinds are listed in; other entry types follow, by name."""


def kind_of(entry: Entry) -> str:
    """A reader's category: user prompt, assistant reply, tool result, api error, or type."""
    kind = str(entry.get("type"))
    message = entry.get("message")
    if kind == "assistant" and entry.get("isApiErrorMessage"):
        return "api error"
    if kind == "user" and isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return "tool result"
    return kind


@dataclass
class KindStats:
    """One kind's entries, their stored bytes and their estimated tokens."""

    entries: int = 0
    bytes: int = 0
    est_tokens: int = 0


@dataclass
class Stats:
    """Totals over one or more transcripts; :meth:`as_dict` is what ``--json`` prints."""

    sessions: int = 0
    transcripts: int = 0
    kinds: dict[str, KindStats] = field(default_factory=dict)
    output_tokens: int = 0
    last_context_tokens: int | None = None
    prune_removed: Counter[str] = field(default_factory=Counter)
    prune_policies: dict[str, dict[str, int]] = field(default_factory=dict)

    def add_entries(self, entries: list[Entry]) -> None:
        from flower.stores.prune import estimate_tokens, model_bytes

        seen_messages: set[str] = set()
        for entry in entries:
            row = self.kinds.setdefault(kind_of(entry), KindStats())
            row.entries += 1
            row.bytes += len(encode_entry(entry))
            row.est_tokens += estimate_tokens(model_bytes(entry))
            message = entry.get("message")
            if entry.get("type") != "assistant" or not isinstance(message, dict):
                continue
            usage = message.get("usage")
            message_id = str(message.get("id", id(entry)))
            if isinstance(usage, dict) and message_id not in seen_messages:
                seen_messages.add(message_id)
                value = usage.get("output_tokens")
                if isinstance(value, int) and not isinstance(value, bool):
                    self.output_tokens += value
        self.transcripts += 1

    def add_pruning(
        self, raw: list[Entry], pruned: list[Entry], policies: list[PolicyStats]
    ) -> None:
        kept = {e.get("uuid") for e in pruned if e.get("uuid") is not None}
        for entry in raw:
            uid = entry.get("uuid")
            if uid is not None and uid not in kept:
                self.prune_removed[kind_of(entry)] += 1
        for stat in policies:
            row = self.prune_policies.setdefault(
                stat.policy, {"removed": 0, "changed": 0, "bytes_saved": 0, "tokens_saved": 0}
            )
            row["removed"] += stat.removed
            row["changed"] += stat.changed
            row["bytes_saved"] += stat.bytes_saved
            row["tokens_saved"] += stat.tokens_saved

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "transcripts": self.transcripts,
            "entries": sum(k.entries for k in self.kinds.values()),
            "bytes": sum(k.bytes for k in self.kinds.values()),
            "by_kind": {
                name: {"entries": k.entries, "bytes": k.bytes, "est_tokens": k.est_tokens}
                for name, k in _ordered(self.kinds)
            },
            "tokens_note": "est_tokens: message JSON bytes / 4 (an estimate); "
            "usage: the API's own counts",
            "usage": {
                "output_tokens": self.output_tokens,
                "last_context_tokens": self.last_context_tokens,
            },
            "pruning": {
                "would_remove": dict(self.prune_removed),
                "policies": self.prune_policies,
            },
        }


def _ordered(kinds: dict[str, KindStats]) -> list[tuple[str, KindStats]]:
    rank = {name: i for i, name in enumerate(KINDS_ORDER)}
    return sorted(kinds.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def collect(store: SessionStoreBase, keys: list[SessionKey], view: PruningSessionStore) -> Stats:
    """Stats over ``keys`` (main keys; their subagent transcripts count too).

    ``view`` is a :class:`~flower.stores.prune.PruningSessionStore` over ``store`` in
    dry-run mode: pruning is computed, nothing is written.
    """
    from flower.core.transcript.chain import active_chain
    from flower.core.transcript.usage import context_tokens

    stats = Stats()
    for main in keys:
        stats.sessions += 1
        for key in transcripts(store, main):
            raw = store.load(key) or []
            stats.add_entries(raw)
            detail = view.prune_loaded_in_detail(key, raw)
            # pruning works on what the model is sent: the active chain
            stats.add_pruning(active_chain(raw), detail.entries, detail.policies)
        if len(keys) == 1:
            stats.last_context_tokens = context_tokens(store.last_usage(main))
    return stats


__all__ = ["KINDS_ORDER", "KindStats", "Stats", "collect", "kind_of"]
