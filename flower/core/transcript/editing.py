"""Editing a transcript without breaking its chain: a drop re-links, an insert links in."""

from __future__ import annotations

import copy
import uuid as uuid_module
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from flower.core.records import Entry
from flower.core.transcript.blocks import message_of

SYNTHETIC_NAMESPACE = uuid_module.UUID("6f1c3a52-4d0e-4b8a-9a51-0f10e7c0a11e")


def drop_entries(entries: Sequence[Entry], uuids_to_drop: Collection[str]) -> list[Entry]:
    """Remove entries by uuid; their children are re-linked to the nearest surviving ancestor.

    ``parentUuid`` (and a compact boundary's ``logicalParentUuid``) pointing at a dropped
    entry is rewritten to the first ancestor that survives, or ``None`` when none does,
    so the chain stays connected. Re-linked entries are copies; the input is untouched.
    """
    if not uuids_to_drop:
        return list(entries)
    drop = set(uuids_to_drop)
    parent_of: dict[str, str | None] = {}  # each dropped entry's parent
    kept: list[Entry] = []
    append = kept.append
    relinked: list[int] = []  # where in ``kept`` an entry links to a dropped one
    for entry in entries:  # one pass: the links are re-pointed once every drop is known
        uid = entry.get("uuid")
        parent = entry.get("parentUuid")
        if uid in drop:
            parent_of[uid] = parent if isinstance(parent, str) else None
            continue
        logical = entry.get("logicalParentUuid")
        # A hostile or corrupt entry may hold a list or dict here: not a uuid, not dropped.
        if (isinstance(parent, str) and parent in drop) or (
            isinstance(logical, str) and logical in drop
        ):
            relinked.append(len(kept))
        append(entry)

    resolved: dict[str, str | None] = {}
    for at in relinked:
        entry = kept[at]
        changes: dict[str, Any] = {}
        for link in ("parentUuid", "logicalParentUuid"):
            value = entry.get(link)
            if isinstance(value, str) and value in drop:
                changes[link] = surviving_ancestor(value, parent_of, drop, resolved)
        kept[at] = {**entry, **changes}
    return kept


def surviving_ancestor(
    uid: str,
    parent_of: Mapping[str, str | None],
    drop: Collection[str],
    resolved: dict[str, str | None],
) -> str | None:
    """The first ancestor of dropped ``uid`` that is not dropped (``None``: none is);
    ``parent_of`` holds the dropped entries' parents, ``resolved`` memoises walks."""
    trail: list[str] = []
    current: str | None = uid
    while current is not None and current in drop:
        if current in resolved:
            current = resolved[current]
            break
        if current in trail:  # cycle among dropped entries
            current = None
            break
        trail.append(current)
        current = parent_of.get(current)
    for seen in trail:
        resolved[seen] = current
    return current


def insert_after(entries: Sequence[Entry], anchor_uuid: str, new_entry: Entry) -> list[Entry]:
    """Insert ``new_entry`` as the anchor's child right after it, and re-link the anchor's
    other children to ``new_entry`` so the chain passes through it."""
    return insert_chains(entries, {anchor_uuid: [new_entry]})


def insert_chains(entries: Sequence[Entry], inserts: Mapping[str, Sequence[Entry]]) -> list[Entry]:
    """Several :func:`insert_after` in one pass: after each anchor uuid, its new entries
    as a little chain (anchor -> first -> ... -> last); the anchor's former children
    become children of the last one. Raises ``KeyError`` for an anchor not present.

    A uuid that (in damaged data) several entries carry anchors at its last entry: the
    one :func:`active_chain` resolves the uuid to."""
    if not inserts:
        return list(entries)
    # every child of an anchor moves below its notes, also one written before it
    relink = {uid: new[-1]["uuid"] for uid, new in inserts.items() if new}
    linked: list[Entry] = []
    append = linked.append
    anchor_at: dict[str, int] = {}  # each anchor uuid's last entry
    for entry in entries:
        parent = entry.get("parentUuid")
        if isinstance(parent, str) and parent in relink:  # (damaged links: left alone)
            entry = {**entry, "parentUuid": relink[parent]}
        uid = entry.get("uuid")
        if uid.__class__ is str and uid in inserts:
            anchor_at[uid] = len(linked)
        append(entry)
    missing = set(inserts) - anchor_at.keys()
    if missing:
        raise KeyError(f"no entry with uuid {sorted(missing)[0]!r} to insert after")
    out: list[Entry] = []
    start = 0
    for uid, at in sorted(anchor_at.items(), key=lambda item: item[1]):
        out += linked[start : at + 1]
        previous = uid
        for new in inserts[uid]:
            out.append({**new, "parentUuid": previous})
            previous = new["uuid"]
        start = at + 1
    out += linked[start:]
    return out


def with_content(entry: Entry, content: list[Any] | str) -> Entry:
    """A copy of ``entry`` whose ``message.content`` is ``content``."""
    return {**entry, "message": {**message_of(entry), "content": content}}


def replace_blocks(
    entry: Entry, change: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> Entry | None:
    """Apply ``change`` to each dict block of ``message.content``.

    ``change`` returns the block (unchanged: same object), a new block, or ``None`` to
    remove it. Returns ``entry`` itself when nothing changed, a copy otherwise, and
    ``None`` when no block is left (the caller drops the entry with :func:`drop_entries`).
    """
    content = message_of(entry).get("content")
    if not isinstance(content, list):
        return entry
    new_blocks: list[Any] = []
    changed = False
    for block in content:
        if not isinstance(block, dict):
            new_blocks.append(block)
            continue
        result = change(block)
        if result is not block:
            changed = True
        if result is not None:
            new_blocks.append(result)
    if not changed:
        return entry
    if not new_blocks:
        return None
    return with_content(entry, new_blocks)


def replace_result_body(block: dict[str, Any], body: str | list[Any]) -> dict[str, Any]:
    """A copy of a tool_result block whose ``content`` is ``body``."""
    return {**block, "content": body}


def synthetic_tool_result(
    tool_use_id: str, text: str, template: Mapping[str, Any], *, marker: str
) -> Entry:
    """A view-only user entry answering ``tool_use_id``; its uuid is derived from the id,
    so every load produces the same entry (and a child written after it stays linked)."""
    entry: Entry = {
        key: template[key]
        for key in ("sessionId", "cwd", "version", "userType", "gitBranch", "timestamp")
        if key in template
    }
    entry.update(
        {
            "type": "user",
            "uuid": str(uuid_module.uuid5(SYNTHETIC_NAMESPACE, f"{marker}:{tool_use_id}")),
            "parentUuid": template.get("uuid"),
            # a subagent's cut call is answered on its sidechain, not the main thread
            "isSidechain": template.get("isSidechain") is True,
            "flowerSynthetic": marker,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}],
            },
        }
    )
    return entry


def deep_copy(entry: Entry) -> Entry:
    """A full copy, for the rare edit that must change something deep inside."""
    return copy.deepcopy(entry)
