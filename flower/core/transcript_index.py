"""One shared index and edit overlay for a run of built-in pruning policies.

The generic path runs each policy as ``prune(entries, ctx) -> list``: every policy
scans the whole transcript again and copies the list. For the built-in policies the
driver (:func:`flower.stores.prune.prune`) instead builds one :class:`TranscriptIndex`
per run of consecutive built-ins; each plans its edits on it (sparse: drops,
replacements, inserted notes) and the list is materialised once, by slicing.

The fast path must give exactly what the generic path gives. It therefore covers only
well-formed transcripts (string uuids that are unique, unique tool_use ids, results
after their tool_use) and a planner that meets anything else raises :class:`Fallback`;
the driver then runs the generic path for that run of policies from its input.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from flower.core.records import Entry


class Fallback(Exception):
    """The fast path does not cover this transcript or edit: use the generic path."""


class TranscriptIndex:
    """Facts about ``base`` gathered in one pass, plus the edits planned on top of it.

    A *slot* is a base position. Edits never reorder: a slot is kept, replaced or
    dropped, and notes are inserted after a slot, so base positions keep ordering the
    view and stay valid across every edit.
    """

    def __init__(self, base: Sequence[Entry]) -> None:
        self.base = base
        self.replaced: dict[int, Entry] = {}
        self.dropped: set[int] = set()
        self.inserted: dict[int, list[Entry]] = {}
        self.slot_of: dict[str, int] = {}
        self.children: dict[str, list[int]] = {}
        self.logical_children: dict[str, list[int]] = {}
        self.use_slot: dict[str, int] = {}  # tool_use id -> assistant slot holding it
        self.result_slots: dict[str, list[int]] = {}  # tool_use id -> user slots answering
        self.reply_slots: dict[Any, list[int]] = {}  # reply key -> its assistant slots
        self.assistant_slots: list[int] = []
        self.flagged_results: list[int] = []  # user slots that may hold a denial
        self.synthetic_slots: list[int] = []  # assistant slots flagged as API errors
        self.residue_slots: list[int] = []  # user slots whose results may be residue
        self.bash_uses: list[tuple[str, str]] = []  # (tool_use id, command), Bash calls
        self.use_alive: dict[str, int] = {}
        self.result_alive: dict[str, int] = {}
        self._build()

    # ------------------------------------------------------------------ building

    def _build(self) -> None:
        slot_of = self.slot_of
        children = self.children
        use_slot = self.use_slot
        result_slots = self.result_slots
        for i, entry in enumerate(self.base):
            if entry.__class__ is not dict:
                raise Fallback("an entry is not a dict")
            uid = entry.get("uuid")
            if uid is not None:
                if uid.__class__ is not str or uid in slot_of:
                    raise Fallback("a uuid is not a unique string")
                slot_of[uid] = i
            parent = entry.get("parentUuid")
            if parent.__class__ is str:
                children.setdefault(parent, []).append(i)
            if "logicalParentUuid" in entry:
                logical = entry["logicalParentUuid"]
                if logical.__class__ is str:
                    self.logical_children.setdefault(logical, []).append(i)
            kind = entry.get("type")
            if kind == "assistant":
                self.assistant_slots.append(i)
                message = entry.get("message")
                if message.__class__ is not dict:
                    if entry.get("isApiErrorMessage") is True:
                        self.synthetic_slots.append(i)
                    if uid is not None:
                        self.reply_slots.setdefault(uid, []).append(i)
                    continue
                if entry.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>":
                    self.synthetic_slots.append(i)
                if uid is not None:
                    self.reply_slots.setdefault(message.get("id") or uid, []).append(i)
                content = message.get("content")
                if content.__class__ is not list:
                    continue
                for block in content:
                    if block.__class__ is not dict or block.get("type") != "tool_use":
                        continue
                    tid = block.get("id")
                    if tid.__class__ is not str or tid in use_slot:
                        raise Fallback("a tool_use id is not a unique string")
                    use_slot[tid] = i
                    tool_input = block.get("input")
                    if tool_input.__class__ is dict:
                        command = tool_input.get("command")
                        if (
                            command.__class__ is str
                            and str(block.get("name", "")).lower()[:4] == "bash"
                        ):
                            self.bash_uses.append((tid, command))
            elif kind == "user":
                message = entry.get("message")
                if message.__class__ is not dict:
                    continue
                content = message.get("content")
                if content.__class__ is not list:
                    continue
                # a denial is an error result or carries flower's denied marker
                marker = entry.get("toolUseResult")
                flagged = marker.__class__ is dict and marker.get("denied") is True
                residue = False
                for block in content:
                    if block.__class__ is not dict or block.get("type") != "tool_result":
                        continue
                    tid = block.get("tool_use_id")
                    if tid.__class__ is not str or tid not in use_slot:
                        raise Fallback("a tool_result answers no earlier tool_use")
                    result_slots.setdefault(tid, []).append(i)
                    if block.get("is_error"):
                        flagged = True
                    body = block.get("content")
                    # every interruption text holds this within its first 100 characters
                    if body.__class__ is not str or "nterrupted" in body[:100]:
                        residue = True
                if flagged:
                    self.flagged_results.append(i)
                if residue:
                    self.residue_slots.append(i)
        self.use_alive = dict.fromkeys(use_slot, 1)
        self.result_alive = {tid: len(slots) for tid, slots in result_slots.items()}

    # ------------------------------------------------------------------ reading

    def current(self, slot: int) -> Entry | None:
        """The entry at ``slot`` as the view has it now (``None`` once dropped)."""
        if slot in self.dropped:
            return None
        return self.replaced.get(slot, self.base[slot])

    def notes(self) -> list[Entry]:
        return [note for chain in self.inserted.values() for note in chain]

    def asked_all_answered(self) -> bool:
        result_alive = self.result_alive
        return all(not alive or result_alive.get(tid, 0) for tid, alive in self.use_alive.items())

    # ------------------------------------------------------------------ editing

    def replace(self, slot: int, entry: Entry) -> None:
        self.replaced[slot] = entry

    def replace_with_ids(self, slot: int, entry: Entry) -> None:
        """Replace an entry whose tool_use/tool_result blocks may have changed."""
        self._count(self.current(slot), -1)
        self._count(entry, 1)
        self.replaced[slot] = entry

    def _count(self, entry: Entry | None, step: int) -> None:
        if entry is None:
            return
        message = entry.get("message")
        content = message.get("content") if message.__class__ is dict else None
        if content.__class__ is not list:
            return
        kind = entry.get("type")
        for block in content:
            if block.__class__ is not dict:
                continue
            if kind == "assistant" and block.get("type") == "tool_use":
                tid = block.get("id")
                self.use_alive[tid] = self.use_alive.get(tid, 0) + step
            elif kind == "user" and block.get("type") == "tool_result":
                tid = block.get("tool_use_id")
                self.result_alive[tid] = self.result_alive.get(tid, 0) + step

    def drop(self, uuids: Collection[str], survivors: Callable[..., str | None]) -> None:
        """What :func:`~flower.core.transcript.drop_entries` does, on the overlay:
        ``survivors(uid, parent_of, drop, resolved)`` resolves a re-linked parent."""
        drop = set(uuids)
        slots = []
        for uid in drop:
            slot = self.slot_of.get(uid)
            if slot is None or slot in self.dropped:
                raise Fallback("dropping an entry that is not a live base entry")
            if slot in self.inserted:
                raise Fallback("dropping an anchor of inserted notes")
            slots.append(slot)
        parent_of: dict[str, str | None] = {}
        for slot in slots:
            entry = self.current(slot)
            assert entry is not None
            parent = entry.get("parentUuid")
            parent_of[entry["uuid"]] = parent if isinstance(parent, str) else None
        for slot in slots:
            self._count(self.current(slot), -1)
            self.dropped.add(slot)
        resolved: dict[str, str | None] = {}
        for field, links in (
            ("parentUuid", self.children),
            ("logicalParentUuid", self.logical_children),
        ):
            for uid in drop:
                for child in links.get(uid, ()):
                    entry = self.current(child)
                    if entry is None or entry.get(field) != uid:
                        continue
                    new_parent = survivors(uid, parent_of, drop, resolved)
                    self.replaced[child] = {**entry, field: new_parent}
                    if new_parent is not None:
                        links.setdefault(new_parent, []).append(child)
        for note in self.notes():
            if note.get("parentUuid") in drop:
                raise Fallback("a dropped entry is the parent of an inserted note")

    def insert_after(self, slot: int, notes: list[Entry]) -> None:
        """What :func:`~flower.core.transcript.insert_chains` does for one anchor."""
        if slot in self.inserted or slot in self.dropped:
            raise Fallback("inserting twice after one entry")
        anchor = self.current(slot)
        assert anchor is not None
        uid = anchor["uuid"]
        previous = uid
        chain = []
        for new in notes:
            chain.append({**new, "parentUuid": previous})
            previous = new["uuid"]
            self._count(new, 1)
        self.inserted[slot] = chain
        for child in self.children.get(uid, ()):
            entry = self.current(child)
            if child > slot and entry is not None and entry.get("parentUuid") == uid:
                self.replaced[child] = {**entry, "parentUuid": previous}
                self.children.setdefault(previous, []).append(child)

    def replace_note(self, note: Entry, new: Entry) -> None:
        for chain in self.inserted.values():
            for k, old in enumerate(chain):
                if old is note:
                    chain[k] = new
                    return

    # ------------------------------------------------------------------ the view

    def materialise(self) -> list[Entry]:
        """The view as a list: untouched stretches are copied by slicing."""
        base = self.base
        marks = sorted(self.replaced.keys() | self.dropped | self.inserted.keys())
        if not marks:
            return list(base)
        out: list[Entry] = []
        start = 0
        for slot in marks:
            out += base[start:slot]
            if slot not in self.dropped:
                out.append(self.replaced.get(slot, base[slot]))
            chain = self.inserted.get(slot)
            if chain:
                out += chain
            start = slot + 1
        out += base[start:]
        return out
