"""The active chain: the branch of a transcript the model is sent, walked by ``parentUuid``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flower.core.records import Entry
from flower.core.transcript.blocks import is_conversation


def active_chain(entries: Sequence[Entry], leaf_uuid: str | None = None) -> list[Entry]:
    """The entries of the branch ending at the newest leaf (or ``leaf_uuid``), oldest first.

    The walk follows ``parentUuid`` and stops at a root: ``null``, a parent that is not in
    the transcript, or a ``compact_boundary`` (whose ``parentUuid`` is null by design; the
    summary after it stands for everything before). The walk is then completed with the
    other content-block entries of every assistant reply on the chain (Claude Code streams
    one entry per block sharing ``message.id``) and with the tool results answering them
    that sit on sibling branches, so a reply is never cut in half. Only entries after
    the chain's first one complete it: what was written before a compaction boundary
    never joins the conversation after it.
    """
    # one indexing pass: uuid -> position, reply id -> block entries, tool id -> results,
    # and each entry's own tool_use / tool_result ids (so completing replies rescans nothing)
    position: dict[str, int] = {}
    reply_entries: dict[str, list[int]] = {}
    result_entries: dict[Any, list[int]] = {}
    uses_at: dict[int, list[Any]] = {}
    results_at: dict[int, list[Any]] = {}
    newest = -1
    for i, entry in enumerate(entries):
        uid = entry.get("uuid")
        if uid.__class__ is not str and not isinstance(uid, str):
            continue
        position[uid] = i
        kind = entry.get("type")
        if kind != "assistant" and kind != "user":
            continue
        message = entry.get("message")
        content = message.get("content") if message.__class__ is dict else None
        sidechain = entry.get("isSidechain")
        if not sidechain:
            newest = i
        if message.__class__ is not dict:
            continue
        if kind == "assistant":
            if not sidechain:
                mid = message.get("id")
                if isinstance(mid, str):
                    reply_entries.setdefault(mid, []).append(i)
            if content.__class__ is list:
                ids = [
                    b.get("id")
                    for b in content
                    if b.__class__ is dict and b.get("type") == "tool_use"
                ]
                if ids:
                    uses_at[i] = ids
        elif content.__class__ is list:
            ids = [
                b.get("tool_use_id")
                for b in content
                if b.__class__ is dict and b.get("type") == "tool_result"
            ]
            if ids:
                results_at[i] = ids
                if not sidechain:
                    for tid in ids:
                        result_entries.setdefault(tid, []).append(i)
    if leaf_uuid is None:
        if newest < 0:
            return []
        leaf_uuid = entries[newest]["uuid"]
    if leaf_uuid not in position:
        return []

    on_chain: set[int] = set()
    current: str | None = leaf_uuid
    while current is not None and current in position:
        i = position[current]
        if i in on_chain:  # a cycle in corrupt data: stop rather than loop forever
            break
        on_chain.add(i)
        parent = entries[i].get("parentUuid")
        current = parent if isinstance(parent, str) else None

    _complete_replies(entries, on_chain, reply_entries, result_entries, uses_at, results_at)
    return [entries[i] for i in sorted(on_chain)]


def _complete_replies(
    entries: Sequence[Entry],
    on_chain: set[int],
    reply_entries: dict[str, list[int]],
    result_entries: dict[Any, list[int]],
    uses_at: dict[int, list[Any]],
    results_at: dict[int, list[Any]],
) -> None:
    """Add the sibling block entries of replies on the chain, then results on side
    branches (hanging off the chain) for tool_uses the chain leaves unanswered. Only
    entries after the chain's first one are taken: nothing written before the root (a
    compaction boundary, the first prompt) is part of the conversation it starts."""
    floor = min(on_chain, default=-1)
    added: list[int] = []
    for indices in reply_entries.values():
        if len(indices) > 1 and any(i in on_chain for i in indices):
            added.extend(i for i in indices if i not in on_chain and i > floor)
    on_chain.update(added)
    asked: list[Any] = []
    answered: set[Any] = set()
    for i in sorted(on_chain & uses_at.keys()):
        asked.extend(uses_at[i])
    for i in on_chain & results_at.keys():
        answered.update(results_at[i])
    missing = [tid for tid in asked if tid not in answered and tid in result_entries]
    if not missing:
        return
    chain_uuids = {entries[i].get("uuid") for i in on_chain}
    for tid in missing:
        for i in result_entries[tid]:
            entry = entries[i]
            ids = set(results_at.get(i, ()))
            parent = entry.get("parentUuid")
            if (
                i > floor
                and i not in on_chain
                and parent.__class__ is str
                and parent in chain_uuids
                and not ids & answered
            ):
                on_chain.add(i)
                chain_uuids.add(entry.get("uuid"))
                answered.update(ids)
                break


def leaf_uuid(entries: Sequence[Entry]) -> str | None:
    """The uuid a new entry should take as ``parentUuid`` to continue this transcript:
    the last main-thread turn of :func:`active_chain`.

    That is the newest leaf itself (the chain starts there, and a turn after it on the
    chain would be a newer leaf), so only the entries after it are read, unless one of
    them reuses its uuid (corrupt data): then the chain is walked.
    """
    for i in range(len(entries) - 1, -1, -1):
        if is_leaf(entries[i]):
            uid = entries[i]["uuid"]
            if all(entry.get("uuid") != uid for entry in entries[i + 1 :]):
                return uid
            break
    chain = active_chain(entries)
    for entry in reversed(chain):
        if is_conversation(entry):
            return entry.get("uuid")
    return None


def is_leaf(entry: Mapping[str, Any]) -> bool:
    """A main-thread user/assistant entry with a uuid: one the conversation can end on."""
    kind = entry.get("type")
    return (
        (kind == "user" or kind == "assistant")
        and entry.get("uuid").__class__ is str
        and not entry.get("isSidechain")
    )
