"""The safety net: a chain made a valid Messages API conversation, and what was fixed."""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from flower.core.i18n import N_, _, ngettext
from flower.core.records import Entry
from flower.core.transcript.blocks import content_blocks, is_conversation, tool_uses
from flower.core.transcript.chain import active_chain
from flower.core.transcript.editing import (
    SYNTHETIC_NAMESPACE,
    drop_entries,
    insert_chains,
    replace_blocks,
    synthetic_tool_result,
)
from flower.core.transcript.messages import (
    conversation_problems,
    is_tool_id,
    iter_messages,
)

INTERRUPTED_NOTE = N_(
    "[the previous round was interrupted here; this tool result was never produced]"
)
"""The note answering a call that got no result, in English (the msgid): the model is
sent :func:`interrupted_note`, the wake's language."""
OMITTED_NOTE = N_("[earlier conversation omitted]")
"""The note before a chain that starts with the assistant, in English (the msgid)."""


def interrupted_note() -> str:
    """:data:`INTERRUPTED_NOTE` in the active language: the notes are made on every
    load, never stored, so the model reads them in the language of this wake."""
    return _(INTERRUPTED_NOTE)


def answer_interrupted(
    entries: list[Entry], unanswered: Sequence[tuple[Entry, str]], marker: str
) -> list[Entry]:
    """``entries`` with the :func:`interrupted_note` answering each ``(anchor, tool_use
    id)`` right after its anchor entry, in the order given; ``entries`` itself when
    there is none. The one place a call that got no result is answered (the repair of
    a load and the ``interrupted`` pruning policy both come here)."""
    if not unanswered:
        return entries
    text = interrupted_note()
    inserts: dict[str, list[Entry]] = {}
    for anchor, tid in unanswered:
        note = synthetic_tool_result(tid, text, anchor, marker=marker)
        inserts.setdefault(anchor["uuid"], []).append(note)
    return insert_chains(entries, inserts)


def omitted_note() -> str:
    """:data:`OMITTED_NOTE` in the active language."""
    return _(OMITTED_NOTE)


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
    """Make the active chain a valid Messages API conversation; say what was fixed
    (in the active language: the fixes are only shown, in warnings and reports, never
    stored).

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
        repeats = len(entries) - len(out)
        fixes.append(
            ngettext(
                "kept only the last copy of {count} repeated entry",
                "kept only the last copy of {count} repeated entries",
                repeats,
            ).format(count=repeats)
        )
    for attempt in range(6):
        chain = active_chain(out)
        if not conversation_problems(iter_messages(chain)):
            return out, fixes, chain
        if attempt == 3:
            # damaged links (a reply split across branches, a parent skipping the
            # summary) can keep the fixes off the walked chain: link the chain's
            # entries one after the other, then fix that
            out = _linked_in_order(out, chain)
            fixes.append(_("re-linked the conversation's entries in order"))
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


def _without_idless_call(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "tool_use" and not is_tool_id(block.get("id")):
        return None
    return block


def _repair_once(entries: list[Entry], chain: list[Entry]) -> tuple[list[Entry], list[str]]:
    fixes: list[str] = []
    groups = _message_groups(chain)
    replacements: dict[str, Entry | None] = {}
    # (the entries of the assistant message that asked, a tool_use id nothing answers);
    # the note's anchor is picked once all fixes are known: an entry the pass keeps
    missing: list[tuple[list[Entry], str]] = []
    asked: list[Any] = []  # the ids as stored: a damaged one is no str
    for index, (role, group) in enumerate(groups):
        if role == "assistant":
            for tid in asked:  # the previous assistant message got no user reply at all
                missing.append((groups[index - 1][1], tid))
            asked = []
            for entry in group:
                new = replace_blocks(entry, _without_idless_call)
                if new is not entry:  # a call no result can answer: the API refuses it
                    replacements[entry["uuid"]] = new
                    fixes.append(_("removed a tool_use without an id"))
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
                    fixes.append(
                        _("removed a tool_result for {tool_id} that answers nothing").format(
                            tool_id=repr(tid)
                        )
                    )
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
    out = [
        (replacements.get(uid, e) if isinstance(uid := e.get("uuid"), str) else e) or e
        for e in entries
    ]
    out = drop_entries(out, emptied)
    out = _answer_interrupted(out, missing, replacements, fixes)
    first = _first_kept(groups, replacements)
    if first is not None and first[0] == "assistant":
        out = _omitted_note_before(out, first[1])
        fixes.append(_("added a user note before a chain that started with the assistant"))
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
    unanswered: list[tuple[Entry, str]] = []
    for asking, tid in missing:
        kept = _kept(asking, replacements)
        if not kept:  # all dropped (a uuid repeated in damaged data): no call is left
            continue
        unanswered.append((kept[-1], tid))
        fixes.append(
            _("answered tool_use {tool_id} with the interrupted note").format(tool_id=repr(tid))
        )
    return answer_interrupted(entries, unanswered, "repair")


def _omitted_note_before(entries: list[Entry], root: Entry) -> list[Entry]:
    """``entries`` with a user note as the parent of ``root``, the assistant entry the
    chain starts with (the API wants the user first)."""
    text = omitted_note()
    note = synthetic_tool_result("", text, root, marker="omitted")
    note["uuid"] = str(uuid_module.uuid5(SYNTHETIC_NAMESPACE, f"omitted:{root['uuid']}"))
    note["message"] = {"role": "user", "content": text}
    # the last entry with the root's uuid: the one the walk reached; its parent may have
    # been re-linked past an entry this pass dropped
    at = max(i for i, e in enumerate(entries) if e.get("uuid") == root["uuid"])
    note["parentUuid"] = entries[at].get("parentUuid")
    return [*entries[:at], note, {**entries[at], "parentUuid": note["uuid"]}, *entries[at + 1 :]]
