"""The active chain: the branch of a transcript the model is sent, walked by ``parentUuid``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
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
    if leaf_uuid is None:
        newest = next((i for i in range(len(entries) - 1, -1, -1) if is_leaf(entries[i])), -1)
        if newest < 0:
            return []
        leaf_uuid = entries[newest]["uuid"]
    # uuid -> index (the last entry carrying it); a uuid that is no str is no link
    uuids = map(dict.get, entries, repeat("uuid"))
    position = {uid: i for i, uid in enumerate(uuids) if uid.__class__ is str}
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

    _complete_replies(entries, on_chain)
    return [entries[i] for i in sorted(on_chain)]


def _complete_replies(entries: Sequence[Entry], on_chain: set[int]) -> None:
    """Add the sibling block entries of replies on the chain, then results on side
    branches (hanging off the chain) for tool_uses the chain leaves unanswered. Only
    entries after the chain's first one are taken: nothing written before the root (a
    compaction boundary, the first prompt) is part of the conversation it starts.

    Only main-thread turns the walk did not reach can complete it, so those are found
    first; a transcript without any (one branch) is done without reading a message."""
    floor = min(on_chain, default=-1)
    blocks_of: dict[str, list[int]] = {}  # reply id -> its block entries off the chain
    results_of: dict[Any, list[int]] = {}  # tool_use id -> result entries off the chain
    for i in range(floor + 1, len(entries)):
        if i in on_chain:
            continue
        entry = entries[i]
        if entry.get("isSidechain") or not isinstance(entry.get("uuid"), str):
            continue
        kind = entry.get("type")
        if kind == "assistant":
            mid = _reply_id(entry)
            if mid is not None:
                blocks_of.setdefault(mid, []).append(i)
        elif kind == "user":
            for tid in _result_ids(entry):
                results_of.setdefault(tid, []).append(i)
    if blocks_of:
        for j in sorted(on_chain):
            entry = entries[j]
            mid = _reply_id(entry) if entry.get("type") == "assistant" else None
            if mid is not None and not entry.get("isSidechain"):
                on_chain.update(blocks_of.pop(mid, ()))
    if not results_of:
        return
    asked: list[Any] = []
    answered: set[Any] = set()
    for j in sorted(on_chain):
        kind = entries[j].get("type")
        if kind == "assistant":
            asked.extend(_use_ids(entries[j]))
        elif kind == "user":
            answered.update(_result_ids(entries[j]))
    missing = [tid for tid in asked if tid not in answered and tid in results_of]
    if not missing:
        return
    chain_uuids = {entries[i].get("uuid") for i in on_chain}
    for tid in missing:
        for i in results_of[tid]:
            entry = entries[i]
            ids = set(_result_ids(entry))
            parent = entry.get("parentUuid")
            if (
                i not in on_chain
                and parent.__class__ is str
                and parent in chain_uuids
                and not ids & answered
            ):
                on_chain.add(i)
                chain_uuids.add(entry.get("uuid"))
                answered.update(ids)
                break


def _reply_id(entry: Entry) -> str | None:
    """The ``message.id`` an assistant entry's blocks share (``None``: it has none)."""
    message = entry.get("message")
    mid = message.get("id") if message.__class__ is dict else None
    return mid if isinstance(mid, str) else None


def _block_values(entry: Entry, kind: str, field: str) -> list[Any]:
    """``field`` of each ``kind`` block of the entry's content, as stored."""
    message = entry.get("message")
    content = message.get("content") if message.__class__ is dict else None
    if content.__class__ is not list:
        return []
    return [b.get(field) for b in content if b.__class__ is dict and b.get("type") == kind]


def _use_ids(entry: Entry) -> list[Any]:
    return _block_values(entry, "tool_use", "id")


def _result_ids(entry: Entry) -> list[Any]:
    return _block_values(entry, "tool_result", "tool_use_id")


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
