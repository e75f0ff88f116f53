"""The active chain: the branch of a transcript the model is sent, walked by ``parentUuid``.

And what is off it: :func:`unsent` counts the stored messages the model is not sent (no
uuid, before the compaction the chain starts at, an older branch), and
:func:`unsent_notes` says them as ``flower sessions show --pruned`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice, repeat
from typing import Any, NamedTuple

from flower.core.i18n import ngettext
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
    at = position.get(leaf_uuid)
    if at is None:
        return []

    on_chain: set[int] = set()
    while at is not None and at not in on_chain:  # (a cycle in corrupt data: stop there)
        on_chain.add(at)
        parent = entries[at].get("parentUuid")
        at = position.get(parent) if isinstance(parent, str) else None

    floor = min(on_chain)
    if len(on_chain) == len(entries) - floor:  # every entry from the root on: one branch
        return list(islice(entries, floor, None))
    _complete_replies(entries, on_chain, floor)
    return [entries[i] for i in sorted(on_chain)]


def _complete_replies(entries: Sequence[Entry], on_chain: set[int], floor: int) -> None:
    """Add the sibling block entries of replies on the chain, then results on side
    branches (hanging off the chain) for tool_uses the chain leaves unanswered. Only
    entries after the chain's first one (at ``floor``) are taken: nothing written before
    the root (a compaction boundary, the first prompt) is part of the conversation it
    starts.

    Only main-thread turns the walk did not reach can complete it, so those are found
    first; a transcript without any (one branch) is done without reading a message."""
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


def unsent_notes(stored: list[Entry]) -> list[str]:
    """What ``flower sessions show --pruned`` says of :func:`unsent`'s counts, in the
    active language: one ``flower: note:`` line for each reason some of ``stored``'s
    messages are not sent (none when every message is)."""
    no_uuid, history, branch = unsent(stored)
    notes = (
        ngettext(
            "flower: note: {count} message of this session has no uuid, so it has no place "
            "in the chain: the model is not sent it",
            "flower: note: {count} messages of this session have no uuid, so they have no "
            "place in the chain: the model is not sent them",
            no_uuid,
        ),
        ngettext(
            "flower: note: {count} message of this session is from before the last "
            "compaction, which its summary stands for: the model is not sent it",
            "flower: note: {count} messages of this session are from before the last "
            "compaction, which its summary stands for: the model is not sent them",
            history,
        ),
        ngettext(
            "flower: note: {count} message of this session is off the active chain, on an "
            "older branch (a rewind, or a resume from an earlier point): the model is not "
            "sent it",
            "flower: note: {count} messages of this session are off the active chain, on an "
            "older branch (a rewind, or a resume from an earlier point): the model is not "
            "sent them",
            branch,
        ),
    )
    counts = (no_uuid, history, branch)
    return [note.format(count=n) for n, note in zip(counts, notes, strict=True) if n]


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
