"""Transcripts as the model sees them: the active chain, reparenting, messages, context size.

A stored transcript is a list of Claude-Code-shaped entries (see docs/entries.md) that
may hold several branches (forks from a rewind or a resume), streamed assistant replies
split one entry per content block, compaction boundaries and entries that are not
conversation at all. This module is the one place that knows how to read that:

- :func:`active_chain` walks from the newest leaf back to the root by ``parentUuid``;
- :func:`drop_entries` removes entries and re-links their children (the ONE helper
  every pruning policy uses, so the chain never breaks);
- :func:`insert_after` adds a view-only entry and re-links the anchor's children to it;
- :func:`to_messages` turns a chain into the Messages API ``messages`` list;
- :func:`check_conversation` validates the invariant the API enforces, and
  :func:`model_chain` repairs a chain that breaks it (the safety net of every load);
- :func:`context_tokens` is the context size of one round, from its ``usage``.

Nothing here mutates its input: a changed entry is a copy, everything else is shared.
"""

from __future__ import annotations

import copy
import uuid as uuid_module
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

from flower.core.errors import FlowerError
from flower.core.records import Entry

CONVERSATION_TYPES = frozenset({"user", "assistant"})
SYNTHETIC_NAMESPACE = uuid_module.UUID("6f1c3a52-4d0e-4b8a-9a51-0f10e7c0a11e")


class InvalidConversationError(FlowerError, ValueError):
    """A messages list the Messages API would reject; ``problems`` says why."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid conversation: " + "; ".join(self.problems))


# --------------------------------------------------------------------------- reading


def message_of(entry: Mapping[str, Any]) -> dict[str, Any]:
    message = entry.get("message")
    return message if isinstance(message, dict) else {}


def content_blocks(entry: Mapping[str, Any]) -> list[Any]:
    """The entry's ``message.content`` as a list (a plain string becomes one text block)."""
    content = message_of(entry).get("content")
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return []


def is_conversation(entry: Mapping[str, Any]) -> bool:
    """A user or assistant turn of the main thread (sidechains belong to subagents)."""
    return entry.get("type") in CONVERSATION_TYPES and not entry.get("isSidechain")


def _blocks_of_kind(entry: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    # hot path (every policy scans every entry): plain lookups, no helper calls
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def iter_blocks(
    entries: Sequence[Entry], entry_type: str, block_type: str
) -> Iterator[tuple[int, Entry, dict[str, Any]]]:
    """``(index, entry, block)`` for every ``block_type`` block in entries of
    ``entry_type``: the one fast scan policies share (``tool_use`` in ``assistant``,
    ``tool_result`` in ``user``)."""
    for i, entry in enumerate(entries):
        if entry.get("type") != entry_type:
            continue
        message = entry.get("message")
        if message.__class__ is not dict:
            continue
        content = message.get("content")
        if content.__class__ is not list:
            continue
        for block in content:
            if block.__class__ is dict and block.get("type") == block_type:
                yield i, entry, block


def tool_uses(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    if entry.get("type") != "assistant":
        return []
    return _blocks_of_kind(entry, "tool_use")


def tool_results(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    if entry.get("type") != "user":
        return []
    return _blocks_of_kind(entry, "tool_result")


def result_text(block: Mapping[str, Any]) -> str:
    """The text of a tool_result's ``content`` (string or text blocks); images are skipped."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


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


def prompt_texts(entry: Mapping[str, Any]) -> list[str]:
    """The words of a user entry, in order: its string content or its text blocks (tool
    results and anything else left out); ``[]`` for any other entry."""
    return message_texts(entry) if entry.get("type") == "user" else []


def message_texts(entry: Mapping[str, Any]) -> list[str]:
    """The text of an entry's message, in order: its string content or its text blocks
    (tool calls, results, thinking and images left out)."""
    content = message_of(entry).get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def waiting_user_texts(entries: Sequence[Entry]) -> list[str]:
    """The texts of the user messages after the last reply the model gave (a synthetic
    API-error entry is no reply): what still waits for an answer, oldest first."""
    from flower.core.entries import is_synthetic_error

    texts: list[str] = []
    for entry in reversed(entries):
        if entry.get("type") == "assistant" and not is_synthetic_error(entry):
            break
        texts[:0] = prompt_texts(entry)
    return texts


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


# --------------------------------------------------------------------------- editing


def drop_entries(entries: Sequence[Entry], uuids_to_drop: Collection[str]) -> list[Entry]:
    """Remove entries by uuid; their children are re-linked to the nearest surviving ancestor.

    ``parentUuid`` (and a compact boundary's ``logicalParentUuid``) pointing at a dropped
    entry is rewritten to the first ancestor that survives, or ``None`` when none does,
    so the chain stays connected. Re-linked entries are copies; the input is untouched.
    """
    if not uuids_to_drop:
        return list(entries)
    drop = set(uuids_to_drop)
    parent_of: dict[str, str | None] = {}
    for entry in entries:
        uid = entry.get("uuid")
        if uid in drop:
            parent = entry.get("parentUuid")
            parent_of[uid] = parent if isinstance(parent, str) else None

    resolved: dict[str, str | None] = {}

    def survivor(uid: str) -> str | None:
        return surviving_ancestor(uid, parent_of, drop, resolved)

    kept: list[Entry] = []
    append = kept.append
    for entry in entries:
        if entry.get("uuid") in drop:
            continue
        parent = entry.get("parentUuid")
        logical = entry.get("logicalParentUuid")
        # A hostile or corrupt entry may hold a list or dict here: not a uuid, not dropped.
        parent_dropped = isinstance(parent, str) and parent in drop
        logical_dropped = isinstance(logical, str) and logical in drop
        if not parent_dropped and not logical_dropped:
            append(entry)
            continue
        changes: dict[str, Any] = {}
        if parent_dropped:
            changes["parentUuid"] = survivor(parent)
        if logical_dropped:
            changes["logicalParentUuid"] = survivor(logical)
        append({**entry, **changes})
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
    anchor_at = {uid: i for i, uid in enumerate(map(_str_uuid, entries)) if uid in inserts}
    missing = set(inserts) - anchor_at.keys()
    if missing:
        raise KeyError(f"no entry with uuid {sorted(missing)[0]!r} to insert after")
    # every child of an anchor moves below its notes, also one written before it
    relink = {uid: new[-1]["uuid"] for uid, new in inserts.items() if new}
    out: list[Entry] = []
    for i, entry in enumerate(entries):
        parent = entry.get("parentUuid")
        relinked = parent.__class__ is str and parent in relink  # (damaged links: left alone)
        out.append({**entry, "parentUuid": relink[parent]} if relinked else entry)
        uid = entry.get("uuid")
        if uid.__class__ is str and uid in inserts and anchor_at[uid] == i:
            previous = uid
            for new in inserts[uid]:
                out.append({**new, "parentUuid": previous})
                previous = new["uuid"]
    return out


def _str_uuid(entry: Mapping[str, Any]) -> str | None:
    uid = entry.get("uuid")
    return uid if uid.__class__ is str else None


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


# --------------------------------------------------------------------------- messages


def to_messages(chain: Iterable[Entry]) -> list[dict[str, Any]]:
    """The Messages API ``messages`` for a chain (see :func:`active_chain`).

    Only main-thread user/assistant entries count. Consecutive entries of one role are
    merged into one message (the API wants roles to alternate), and in a user message
    tool_result blocks come before any other block, as the API requires. Messages with
    no content are left out. Block dicts are shared with the entries, not copied.
    """
    messages: list[dict[str, Any]] = []
    for entry in chain:
        if not is_conversation(entry):
            continue
        role = entry["type"]  # what the entry is, whatever its message.role says
        blocks = content_blocks(entry)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            merged = messages[-1]["content"]
            if role == "user" and _repeats_the_last_words(merged, blocks):
                continue
            merged.extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    for message in messages:
        if message["role"] == "user":
            content = message["content"]
            results = [b for b in content if _is_block(b, "tool_result")]
            if results and len(results) != len(content):
                message["content"] = results + [
                    b for b in content if not _is_block(b, "tool_result")
                ]
    return messages


def _repeats_the_last_words(merged: list[Any], blocks: list[Any]) -> bool:
    """Whether a user entry only says again the text its merged message ends with: the
    same prompt given twice with the turn between them pruned away (an old denial) is
    sent once, not twice in a row."""
    return (
        len(blocks) == 1
        and _is_block(blocks[0], "text")
        and bool(merged)
        and _is_block(merged[-1], "text")
        and merged[-1].get("text") == blocks[0].get("text")
    )


def _is_block(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def conversation_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why the Messages API would reject ``messages`` (empty list: it would not)."""
    problems: list[str] = []
    if messages and messages[0].get("role") != "user":
        problems.append("the first message is not from the user")
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if role not in ("user", "assistant"):
            problems.append(f"message {i} has role {role!r}")
            continue
        if i and messages[i - 1].get("role") == role:
            problems.append(f"messages {i - 1} and {i} are both {role}")
        if not content:
            problems.append(f"message {i} is empty")
        answered = [b.get("tool_use_id") for b in blocks if _is_block(b, "tool_result")]
        if role == "user":
            expected = set(pending)
            for tid in answered:
                if tid not in expected:
                    problems.append(f"message {i} answers tool_use {tid!r} that was not asked")
            seen: set[str] = set()
            for tid in answered:
                if tid in seen:
                    problems.append(f"message {i} answers tool_use {tid!r} twice")
                seen.add(tid)
            for tid in pending:
                if tid not in seen:
                    problems.append(f"tool_use {tid!r} is not answered in message {i}")
            if answered and not all(_is_block(b, "tool_result") for b in blocks[: len(answered)]):
                problems.append(f"message {i} has text before its tool results")
            pending = []
        else:
            for tid in pending:
                problems.append(f"tool_use {tid!r} is not answered before message {i}")
            if answered:
                problems.append(f"assistant message {i} holds tool results")
            pending = [b.get("id") for b in blocks if _is_block(b, "tool_use")]
            if not all(_is_tool_id(tid) for tid in pending):
                problems.append(f"message {i} has a tool_use without an id")
    for tid in pending:
        problems.append(f"tool_use {tid!r} is never answered")
    return problems


def check_conversation(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`InvalidConversationError` unless the API would accept ``messages``
    as a conversation to continue: an empty list passes, since a resume always adds
    the next prompt."""
    problems = conversation_problems(messages)
    if problems:
        raise InvalidConversationError(problems)


def conversation(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The messages to send when resuming ``entries``: ``to_messages(active_chain(...))``."""
    return to_messages(active_chain(entries))


# --------------------------------------------------------------------------- context


def context_tokens(usage: Mapping[str, Any] | None) -> int:
    """The context size of one round: input + cache creation + cache read tokens."""
    if not usage:
        return 0
    total = 0
    for field in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += int(value)
    return total


# --------------------------------------------------------------------------- repair

INTERRUPTED_NOTE = "[the previous round was interrupted here; this tool result was never produced]"
OMITTED_NOTE = "[earlier conversation omitted]"


def _message_groups(chain: Sequence[Entry]) -> list[tuple[str, list[Entry]]]:
    groups: list[tuple[str, list[Entry]]] = []
    for entry in chain:
        if not is_conversation(entry) or not content_blocks(entry):
            continue
        role = entry["type"]  # what the entry is, whatever its message.role says
        if groups and groups[-1][0] == role:
            groups[-1][1].append(entry)
        else:
            groups.append((role, [entry]))
    return groups


def repair_conversation(entries: Sequence[Entry]) -> tuple[list[Entry], list[str]]:
    """Make the active chain a valid Messages API conversation; say what was fixed.

    The safety net after the policy chain: unanswered tool_uses get the interrupted
    note as their result, tool results that answer nothing (or answer twice) are
    removed, and a chain that starts with the assistant gets a short user note first.
    Returns the entries unchanged (same list content) and ``[]`` when all was valid.
    """
    out, fixes, _ = _repaired(entries)
    return out, fixes


def model_chain(entries: Sequence[Entry]) -> tuple[list[Entry], list[str]]:
    """What the model is sent of ``entries``: the active chain of
    :func:`repair_conversation`'s output (its own walk, not a second one), oldest
    first, and the fixes the repair made (``[]``: the chain was valid as it was)."""
    _, fixes, chain = _repaired(entries)
    return chain, fixes


def _repaired(entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[Entry]]:
    out = without_repeats(entries)
    fixes: list[str] = []
    if len(out) != len(entries):
        fixes.append(f"kept only the last copy of {len(entries) - len(out)} repeated entries")
    for attempt in range(6):
        chain = active_chain(out)
        if not conversation_problems(to_messages(chain)):
            return out, fixes, chain
        if attempt == 3:
            # damaged links (a reply split across branches, a parent skipping the
            # summary) can keep the fixes off the walked chain: link the chain's
            # entries one after the other, then fix that
            out = _linked_in_order(out, chain)
            fixes.append("re-linked the conversation's entries in order")
            continue
        out, step = _repair_once(out, chain)
        fixes.extend(step)
    return out, fixes, active_chain(out)


def _linked_in_order(entries: list[Entry], chain: list[Entry]) -> list[Entry]:
    """``entries`` with each entry of ``chain`` re-linked to the one before it."""
    on_chain = {id(entry) for entry in chain}
    out: list[Entry] = []
    previous: str | None = None
    for entry in entries:
        if id(entry) in on_chain:
            if entry.get("parentUuid") != previous:
                entry = {**entry, "parentUuid": previous}
            previous = entry.get("uuid")
        out.append(entry)
    return out


def without_repeats(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` with each uuid once, at its last copy (the one :func:`active_chain`
    resolves it to); entries without a uuid all stay. Damaged or merged transcripts can
    hold an entry twice, and the model must not be sent it twice."""
    try:
        uuids = list(map(dict.get, entries, repeat("uuid")))
        distinct = set(uuids)
    except TypeError:  # an entry that is no dict, an unhashable uuid: left to the repair
        return list(entries)
    distinct.discard(None)
    if len(distinct) == len(uuids) - uuids.count(None):
        return list(entries)
    last = {uid: i for i, uid in enumerate(uuids) if uid is not None}
    return [e for i, e in enumerate(entries) if uuids[i] is None or last[uuids[i]] == i]


def _is_tool_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _without_idless_call(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "tool_use" and not _is_tool_id(block.get("id")):
        return None
    return block


def _repair_once(entries: list[Entry], chain: list[Entry]) -> tuple[list[Entry], list[str]]:
    fixes: list[str] = []
    groups = _message_groups(chain)
    replacements: dict[str, Entry | None] = {}
    # (the entries of the assistant message that asked, a tool_use id nothing answers);
    # the note's anchor is picked once all fixes are known: an entry the pass keeps
    missing: list[tuple[list[Entry], str]] = []
    asked: list[str] = []
    for index, (role, group) in enumerate(groups):
        if role == "assistant":
            for tid in asked:  # the previous assistant message got no user reply at all
                missing.append((groups[index - 1][1], tid))
            asked = []
            for entry in group:
                new = replace_blocks(entry, _without_idless_call)
                if new is not entry:  # a call no result can answer: the API refuses it
                    replacements[entry["uuid"]] = new
                    fixes.append("removed a tool_use without an id")
                asked += [b.get("id") for b in tool_uses(new)] if new is not None else []
            continue
        allowed = set(asked)
        seen: set[str] = set()
        for entry in group:

            def keep(
                block: dict[str, Any], seen: set[str] = seen, allowed: set[str] = allowed
            ) -> dict[str, Any] | None:
                if block.get("type") != "tool_result":
                    return block
                tid = block.get("tool_use_id")
                if tid not in allowed or tid in seen:
                    fixes.append(f"removed a tool_result for {tid!r} that answers nothing")
                    return None
                seen.add(tid)
                return block

            new = replace_blocks(entry, keep)
            if new is not entry:
                replacements[entry["uuid"]] = new
        if index:
            missing.extend((groups[index - 1][1], tid) for tid in asked if tid not in seen)
        asked = []
    if asked and groups:
        missing.extend((groups[-1][1], tid) for tid in asked)

    emptied = [uid for uid, new in replacements.items() if new is None]
    out = [replacements.get(e.get("uuid"), e) or e for e in entries]
    out = drop_entries(out, emptied)
    out = _answer_interrupted(out, missing, replacements, fixes)
    first = _first_kept(groups, replacements)
    if first is not None and first[0] == "assistant":
        out = _omitted_note_before(out, first[1])
        fixes.append("added a user note before a chain that started with the assistant")
    return out, fixes


def _kept(group: Sequence[Entry], replacements: Mapping[str, Entry | None]) -> list[Entry]:
    """The entries of ``group`` a repair pass keeps: it drops the ones it emptied."""
    return [e for e in group if replacements.get(e["uuid"], e) is not None]


def _first_kept(
    groups: Sequence[tuple[str, list[Entry]]], replacements: Mapping[str, Entry | None]
) -> tuple[str, Entry] | None:
    """The role and entry the repaired chain starts with (``None``: it is empty)."""
    for role, group in groups:
        kept = _kept(group, replacements)
        if kept:
            return role, kept[0]
    return None


def _answer_interrupted(
    entries: list[Entry],
    missing: Sequence[tuple[list[Entry], str]],
    replacements: Mapping[str, Entry | None],
    fixes: list[str],
) -> list[Entry]:
    """``entries`` with the interrupted note answering each missing tool_use, after the
    last entry of its assistant message that the pass keeps."""
    inserts: dict[str, list[Entry]] = {}
    for asking, tid in missing:
        kept = _kept(asking, replacements)
        if not kept:  # all dropped (a uuid repeated in damaged data): no call is left
            continue
        anchor = kept[-1]
        note = synthetic_tool_result(tid, INTERRUPTED_NOTE, anchor, marker="repair")
        inserts.setdefault(anchor["uuid"], []).append(note)
        fixes.append(f"answered tool_use {tid!r} with the interrupted note")
    return insert_chains(entries, inserts)


def _omitted_note_before(entries: list[Entry], root: Entry) -> list[Entry]:
    """``entries`` with a user note as the parent of ``root``, the assistant entry the
    chain starts with (the API wants the user first)."""
    note = synthetic_tool_result("", OMITTED_NOTE, root, marker="omitted")
    note["uuid"] = str(uuid_module.uuid5(SYNTHETIC_NAMESPACE, f"omitted:{root['uuid']}"))
    note["message"] = {"role": "user", "content": OMITTED_NOTE}
    # the last entry with the root's uuid: the one the walk reached; its parent may have
    # been re-linked past an entry this pass dropped
    at = max(i for i, e in enumerate(entries) if e.get("uuid") == root["uuid"])
    note["parentUuid"] = entries[at].get("parentUuid")
    return [*entries[:at], note, {**entries[at], "parentUuid": note["uuid"]}, *entries[at + 1 :]]
