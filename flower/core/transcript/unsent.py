"""Which stored messages the model is not sent, and why.

The model is sent the active chain only (:func:`~flower.core.transcript.chain.active_chain`),
not the history before the compaction the chain starts at, nor an abandoned branch, nor
a message without a uuid (which no chain holds). :func:`unsent` counts each kind, as
``flower sessions show --pruned`` says them.
"""

from __future__ import annotations

from typing import NamedTuple

from flower.core.records import Entry
from flower.core.transcript.chain import active_chain


class Unsent(NamedTuple):
    """Stored user and assistant messages the model is not sent, by why."""

    no_uuid: int
    """Without a uuid: no place in any chain."""
    history: int
    """From before the compaction the active chain starts at (its summary stands for them)."""
    branch: int
    """On an older branch (a rewind, or a resume from an earlier point)."""


def unsent(stored: list[Entry]) -> Unsent:
    """Count the user and assistant messages of ``stored`` (sidechains left out) that are
    off its active chain, by why."""
    chain = active_chain(stored)
    sent = {id(entry) for entry in chain}
    boundary = compaction_start(stored, chain)
    before = boundary is not None
    no_uuid = history = branch = 0
    for entry in stored:
        if entry is boundary:
            before = False
        if (
            entry.get("type") not in ("user", "assistant")
            or entry.get("isSidechain")
            or id(entry) in sent
        ):
            continue
        if not isinstance(entry.get("uuid"), str):
            no_uuid += 1
        elif before:
            history += 1
        else:
            branch += 1
    return Unsent(no_uuid, history, branch)


def compaction_start(view: list[Entry], chain: list[Entry]) -> Entry | None:
    """The entry the active chain's compaction starts at, if it starts at one: a
    ``compact_boundary``, or, as older Claude Code compacted, a ``summary`` entry (its
    ``leafUuid`` naming the conversation it sums up) just before the chain's root, or a
    root that is itself the compact summary."""
    if not chain:
        return None
    root = chain[0]
    if root.get("subtype") == "compact_boundary" or (
        root.get("isCompactSummary") and root.get("parentUuid") is None
    ):
        return root
    if root.get("parentUuid") is not None:
        return None
    on_chain = {entry.get("uuid") for entry in chain}
    at = next((i for i, entry in enumerate(view) if entry is root), 0)
    for entry in reversed(view[:at]):
        if entry.get("type") in ("user", "assistant"):
            return None  # a message just before the root: a new branch, not a compaction
        leaf = entry.get("leafUuid")
        if entry.get("type") == "summary" and isinstance(leaf, str) and leaf not in on_chain:
            return entry  # (a summary naming a leaf on the chain is only its title)
    return None


__all__ = ["Unsent", "compaction_start", "unsent"]
