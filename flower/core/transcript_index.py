"""One shared index and edit overlay for a run of built-in pruning policies.

The generic path runs each policy as ``prune(entries, ctx) -> list``: every policy
scans the whole transcript again and copies the list. For the built-in policies the
driver (:func:`flower.stores.prune.prune`) instead builds one :class:`TranscriptIndex`
per run of consecutive built-ins; each plans its edits on it (sparse: drops,
replacements, inserted notes) and the list is materialised once, by slicing. The
safety net's check then walks the view's active chain on the same index
(:meth:`TranscriptIndex.view_is_valid`) instead of scanning the list again.

The index is built in one pass that reads everything it needs while the entry is in
the CPU cache: on a transcript of thousands of entries, every further pass over all of
them, even one at C speed, costs a cache miss per entry.

The fast path must give exactly what the generic path gives. It therefore covers only
well-formed transcripts (string uuids that are unique, unique tool_use ids, results
after their tool_use) and a planner that meets anything else raises :class:`Fallback`;
the driver then runs the generic path for that run of policies from its input.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from itertools import compress
from operator import not_
from typing import Any

from flower.core.records import Entry
from flower.core.transcript import is_leaf


class Fallback(Exception):
    """The fast path does not cover this transcript or edit: use the generic path."""


class TranscriptIndex:
    """Facts about ``base`` gathered in one pass, plus the edits planned on top of it.

    A *slot* is a base position. Edits never reorder: a slot is kept, replaced or
    dropped, and notes are inserted after a slot, so base positions keep ordering the
    view and stay valid across every edit.
    """

    def __init__(self, base: Sequence[Entry], ctx: Any = None) -> None:
        self.base = base
        self.ctx = ctx  # the load's PruneContext, for a planner that needs it (trim)
        self.replaced: dict[int, Entry] = {}
        self.dropped: set[int] = set()
        self.inserted: dict[int, list[Entry]] = {}
        self.slot_of: dict[str, int] = {}
        self.logical_slots: list[int] = []  # slots carrying a logicalParentUuid
        self.use_slot: dict[str, int] = {}  # tool_use id -> assistant slot holding it
        self.result_slots: dict[str, list[int]] = {}  # tool_use id -> user slots answering
        self._reply_keys: list[Any] = []  # reply key (message.id or uuid) of ...
        self._reply_at: list[int] = []  # ... each assistant slot that has a uuid
        self._parents: list[Any] = []  # each base slot's parentUuid
        self._result_ids: list[str] = []  # every tool_result's id ...
        self._result_at: list[int] = []  # ... and its slot, in order
        self._result_len: list[int] = []  # ... and its body's length (-1: not a string)
        self._ids_changed: set[int] = set()  # slots whose tool ids an edit changed
        self.flagged_results: list[int] = []  # user slots that may hold a denial
        self.synthetic_slots: list[int] = []  # assistant slots flagged as API errors
        self.residue_slots: list[int] = []  # user slots whose results may be residue
        self.bash_uses: list[tuple[str, str]] = []  # (tool_use id, command), Bash calls
        self.uuidless_messages: list[int] = []  # user/assistant slots with no uuid
        # live tool_use/tool_result blocks per id, as changes from the base counts
        # (1 per use in use_slot, one per slot in result_slots)
        self._use_delta: dict[str, int] = {}
        self._result_delta: dict[str, int] = {}
        self.valid_chain: list[Entry] | None = None  # set by view_is_valid
        self._build()

    # ------------------------------------------------------------------ building

    def _build(self) -> None:
        try:
            no_uuid = self._scan()
        except TypeError:  # an unhashable uuid or tool id
            raise Fallback("an id is not a string") from None
        slot_of = self.slot_of
        # checked once at the end rather than per entry: every uuid was filed, so a
        # duplicate shows as a missing key, and any other type as a key that is no str
        if len(slot_of) + no_uuid != len(self.base):
            raise Fallback("a uuid is not unique")
        if not set(map(type, slot_of)) <= {str}:
            raise Fallback("a uuid is not a string")

    def _scan(self) -> int:
        """The one pass; returns how many entries have no uuid."""
        # One pass reads all that is needed while the entry is in cache: separate
        # passes, even at C speed, each pay a cache miss per entry.
        slot_of = self.slot_of
        add_parent = self._parents.append
        logical_slots = self.logical_slots
        use_slot = self.use_slot
        result_slots = self.result_slots
        add_reply_key = self._reply_keys.append
        add_reply_at = self._reply_at.append
        synthetic_slots = self.synthetic_slots
        add_result_id = self._result_ids.append
        add_result_at = self._result_at.append
        add_result_len = self._result_len.append
        bash_uses = self.bash_uses
        no_uuid = 0
        for i, entry in enumerate(self.base):
            if entry.__class__ is not dict:
                raise Fallback("an entry is not a dict")
            uid = entry.get("uuid")
            if uid is None:
                no_uuid += 1
                if entry.get("type") in ("user", "assistant"):
                    self.uuidless_messages.append(i)
            else:
                slot_of[uid] = i
            add_parent(entry.get("parentUuid"))
            if "logicalParentUuid" in entry:
                logical_slots.append(i)
            kind = entry.get("type")
            if kind == "assistant":
                message = entry.get("message")
                if message.__class__ is not dict:
                    if entry.get("isApiErrorMessage") is True:
                        synthetic_slots.append(i)
                    if uid is not None:
                        add_reply_key(uid)
                        add_reply_at(i)
                    continue
                if entry.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>":
                    synthetic_slots.append(i)
                if uid is not None:
                    add_reply_key(message.get("id") or uid)
                    add_reply_at(i)
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
                        if command.__class__ is str:
                            name = block.get("name", "")
                            if name == "Bash" or str(name).lower()[:4] == "bash":
                                bash_uses.append((tid, command))
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
                    if tid not in use_slot:  # (use_slot holds only strings)
                        raise Fallback("a tool_result answers no earlier tool_use")
                    answering = result_slots.get(tid)
                    if answering is None:
                        result_slots[tid] = [i]
                    else:
                        answering.append(i)
                    add_result_id(tid)
                    add_result_at(i)
                    body = block.get("content")
                    if body.__class__ is str:
                        add_result_len(len(body))
                        # every interruption text holds this within its first 100 characters
                        if body.find("nterrupted", 0, 100) >= 0:
                            residue = True
                    else:
                        add_result_len(-1)
                        residue = True
                    if block.get("is_error"):
                        flagged = True
                if flagged:
                    self.flagged_results.append(i)
                if residue:
                    self.residue_slots.append(i)
        return no_uuid

    def reply_groups(self, keys: set[Any]) -> dict[Any, list[int]]:
        """The assistant slots of each reply key in ``keys`` (one pass over the
        assistants, no map of every reply: few replies are ever asked for)."""
        groups: dict[Any, list[int]] = {key: [] for key in keys}
        reply_keys = self._reply_keys
        try:
            pairs = zip(reply_keys, self._reply_at, strict=True)
            for key, slot in compress(pairs, map(groups.__contains__, reply_keys)):
                groups[key].append(slot)
        except TypeError:  # an unhashable message id
            raise Fallback("a reply id is not hashable") from None
        return groups

    def result_slots_over(self, size: int, upto: int) -> list[int]:
        """Live slots up to ``upto`` holding a tool_result whose body may be longer than
        ``size`` characters (a string body known shorter is ruled out), in order."""
        replaced = self.replaced
        dropped = self.dropped
        found: list[int] = []
        for slot, length in zip(self._result_at, self._result_len, strict=True):
            if slot > upto:
                break
            if (
                (length > size or length < 0 or slot in replaced)
                and slot not in dropped
                and (not found or found[-1] != slot)
            ):
                found.append(slot)
        return found

    # ------------------------------------------------------------------ reading

    def current(self, slot: int) -> Entry | None:
        """The entry at ``slot`` as the view has it now (``None`` once dropped)."""
        if slot in self.dropped:
            return None
        return self.replaced.get(slot, self.base[slot])

    def is_empty(self) -> bool:
        """Whether the view holds no entry at all."""
        return len(self.dropped) == len(self.base) and not self.inserted

    def notes(self) -> list[Entry]:
        return [note for chain in self.inserted.values() for note in chain]

    def use_live(self, tid: str) -> int:
        """How many tool_use blocks with this id the view holds."""
        return (tid in self.use_slot) + self._use_delta.get(tid, 0)

    def result_live(self, tid: str) -> int:
        """How many tool_result blocks answering this id the view holds."""
        return len(self.result_slots.get(tid, ())) + self._result_delta.get(tid, 0)

    def dead_uses(self) -> set[str]:
        """Tool_use ids of the base whose block the view no longer holds."""
        return {tid for tid in self._use_delta if not self.use_live(tid)}

    def unanswered(self) -> list[str]:
        """Tool_use ids the view asks and never answers, in transcript order."""
        if (
            not self._use_delta
            and not self._result_delta
            and len(self.use_slot) == len(self.result_slots)
        ):
            # O(1) for a healthy transcript: every answered id is a call's (the build
            # checks it), so as many answered ids as calls means every call is answered
            return []
        maybe = self.use_slot.keys() - self.result_slots.keys()
        maybe.update(self._use_delta, self._result_delta)
        if not maybe:
            return []
        use_live = self.use_live
        result_live = self.result_live
        order = list(filter(maybe.__contains__, self.use_slot))
        order += [tid for tid in self._use_delta if tid not in self.use_slot]
        return [tid for tid in order if use_live(tid) and not result_live(tid)]

    # ------------------------------------------------------------------ editing

    def replace(self, slot: int, entry: Entry) -> None:
        """Replace an entry's body. The copy keeps what identifies the entry (``uuid``,
        ``type``, ``isSidechain``, ``message.id``) and its tool ids: the view check
        reads those from the index (use :meth:`replace_with_ids` when ids change)."""
        self.replaced[slot] = entry

    def replace_with_ids(self, slot: int, entry: Entry) -> None:
        """Replace an entry whose tool_use/tool_result blocks may have changed."""
        self._ids_changed.add(slot)
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
                self._use_delta[tid] = self._use_delta.get(tid, 0) + step
            elif kind == "user" and block.get("type") == "tool_result":
                tid = block.get("tool_use_id")
                self._result_delta[tid] = self._result_delta.get(tid, 0) + step

    def drop(self, uuids: Collection[str], survivors: Callable[..., str | None]) -> None:
        """What :func:`~flower.core.transcript.drop_entries` does, on the overlay:
        ``survivors(uid, parent_of, drop, resolved)`` resolves a re-linked parent."""
        drop = set(uuids)
        slot_of = self.slot_of
        dropped = self.dropped
        inserted = self.inserted
        slots = []
        for uid in drop:
            slot = slot_of.get(uid)
            if slot is None or slot in dropped:
                raise Fallback("dropping an entry that is not a live base entry")
            if slot in inserted:
                raise Fallback("dropping an anchor of inserted notes")
            slots.append(slot)
        count = self._count
        parent_of: dict[str, str | None] = {}
        for slot in slots:
            entry, parent = self._base_entry(slot)
            parent_of[entry["uuid"]] = parent if isinstance(parent, str) else None
            count(entry, -1)
        dropped.update(slots)
        resolved: dict[str, str | None] = {}
        for field in ("parentUuid", "logicalParentUuid"):
            for child in self._linked_to(drop, field):
                entry = self.replaced.get(child, self.base[child])
                new_parent = survivors(entry[field], parent_of, drop, resolved)
                self.replaced[child] = _with(entry, field, new_parent)
        for note in self.notes():
            if note.get("parentUuid") in drop:
                raise Fallback("a dropped entry is the parent of an inserted note")

    def _base_entry(self, slot: int) -> tuple[Entry, Any]:
        """The entry at base ``slot`` as the view has it, and its ``parentUuid`` (read
        from the index unless an edit replaced the entry)."""
        entry = self.replaced.get(slot)
        if entry is None:
            return self.base[slot], self._parents[slot]
        return entry, entry.get("parentUuid")

    def _linked_to(self, targets: set[str] | dict[str, Any], field: str) -> list[int]:
        """Live base slots whose ``field``, as the view has it now, is one of ``targets``.

        One scan instead of a parent-to-children map kept for every entry: links are
        only needed for the few entries a policy drops or inserts after."""
        base = self.base
        replaced = self.replaced
        dropped = self.dropped
        try:
            if field == "parentUuid":
                hits = map(targets.__contains__, self._parents)
                found = list(compress(range(len(base)), hits))
            else:
                found = [i for i in self.logical_slots if base[i].get(field) in targets]
            moved = [i for i, e in replaced.items() if e.get(field) in targets]
        except TypeError:  # a hostile link (a list, a dict): the generic path copes
            raise Fallback("an unhashable parent link") from None
        live = [i for i in found if i not in replaced and i not in dropped]
        live += [i for i in moved if i not in dropped]
        return live

    def insert_after(self, slot: int, notes: list[Entry]) -> None:
        """What :func:`~flower.core.transcript.insert_after` does for one anchor."""
        self.insert_many({slot: notes})

    def insert_many(self, inserts: dict[int, list[Entry]]) -> None:
        """What :func:`~flower.core.transcript.insert_chains` does: after each anchor
        slot its notes as a little chain; the anchor's later children move below it."""
        last_of: dict[str, str] = {}  # anchor uuid -> its last note's uuid
        for slot in sorted(inserts):
            if slot in self.inserted or slot in self.dropped:
                raise Fallback("inserting twice after one entry")
            anchor = self.current(slot)
            assert anchor is not None
            uid = anchor["uuid"]
            previous = uid
            chain = []
            for new in inserts[slot]:
                chain.append({**new, "parentUuid": previous})
                previous = new["uuid"]
                self._count(new, 1)
            self.inserted[slot] = chain
            last_of[uid] = previous
        for child in self._linked_to(last_of, "parentUuid"):  # written before it too
            entry = self.replaced.get(child, self.base[child])
            self.replaced[child] = _with(entry, "parentUuid", last_of[entry["parentUuid"]])

    def replace_note(self, note: Entry, new: Entry) -> None:
        for chain in self.inserted.values():
            for k, old in enumerate(chain):
                if old is note:
                    chain[k] = new
                    return

    # ------------------------------------------------------------------ the view

    def materialise(self) -> list[Entry]:
        """The view as a list: replacements are written into a copy of the base, then
        untouched stretches between drops and insertions are copied by slicing."""
        view = list(self.base)
        for slot, entry in self.replaced.items():
            view[slot] = entry
        marks = sorted(self.dropped | self.inserted.keys())
        if not marks:
            return view
        out: list[Entry] = []
        start = 0
        for slot in marks:
            out += view[start:slot]
            if slot not in self.dropped:
                out.append(view[slot])
            chain = self.inserted.get(slot)
            if chain:
                out += chain
            start = slot + 1
        out += view[start:]
        return out

    # ------------------------------------------------------------------ the check

    def active_chain(self) -> list[Entry]:
        """:func:`~flower.core.transcript.active_chain` of the view, without building it
        or scanning it again: positions, reply groups and tool ids come from the index.

        A view key orders the view: ``slot * NOTE_SPAN`` for a base slot, plus ``k + 1``
        for the k-th note inserted after it. Relies on edits keeping what identifies an
        entry (see :meth:`replace`). Raises :class:`Fallback` where the index cannot
        vouch for the answer (a note reusing a uuid, an empty reply id)."""
        inserted = self.inserted
        slot_of = self.slot_of
        span = NOTE_SPAN
        notes_at: dict[str, int] = {}
        for slot, notes in inserted.items():
            if len(notes) >= span:
                raise Fallback("too many notes after one entry")
            for k, note in enumerate(notes):
                uid = note.get("uuid")
                if uid.__class__ is not str or uid in slot_of or uid in notes_at:
                    raise Fallback("a note's uuid is not unique")
                notes_at[uid] = slot * span + k + 1

        leaf = self._leaf_key(notes_at)
        if leaf is None:
            return []
        ordered = self._walk_ordered(leaf, notes_at)
        if ordered is None:
            on_chain, chain_slots = self._walk(leaf, notes_at)
        else:
            # every parent came before its child: the walk met the view in reverse order
            keys, entries = ordered
            on_chain = dict(zip(keys, entries, strict=True))
            chain_slots = {key // span for key in keys if not key % span}
        walked = len(on_chain)
        self._complete_replies(on_chain, chain_slots)
        self._complete_results(on_chain, chain_slots, notes_at)
        if ordered is not None and len(on_chain) == walked:
            entries.reverse()
            return entries
        return [on_chain[key] for key in sorted(on_chain)]

    def _walk_ordered(
        self, leaf: int, notes_at: dict[str, int]
    ) -> tuple[list[int], list[Entry]] | None:
        """The chain's view keys and entries from ``leaf`` to the root: the base's parent
        links come from the index, and only replaced entries and notes are read. ``None``
        when a parent does not come before its child (the general walk then copes,
        cycles included)."""
        parents = self._parents
        base = self.base
        replaced = self.replaced
        dropped = self.dropped
        inserted = self.inserted
        slot_of = self.slot_of
        span = NOTE_SPAN
        keys = [leaf]
        entries: list[Entry] = []
        add_key = keys.append
        add_entry = entries.append
        key = leaf
        while True:
            slot, k = divmod(key, span) if notes_at else (key // span, 0)
            if k:
                entry = inserted[slot][k - 1]
                parent = entry.get("parentUuid")
            else:  # _base_entry(slot), inlined: one call a step costs 10% of the walk
                entry = replaced.get(slot)
                if entry is None:
                    entry = base[slot]
                    parent = parents[slot]
                else:
                    parent = entry.get("parentUuid")
            add_entry(entry)
            if parent.__class__ is not str:
                return keys, entries
            above = slot_of.get(parent)
            if above is None:  # a note's uuid is no base uuid (active_chain checks it)
                above = notes_at.get(parent) if notes_at else None
                if above is None:
                    return keys, entries
            elif above in dropped:
                return keys, entries
            else:
                above *= span
            if above >= key:
                return None
            add_key(above)
            key = above

    def _walk(self, leaf: int, notes_at: dict[str, int]) -> tuple[dict[int, Entry], set[int]]:
        """The walk from the leaf to the root by view keys, notes included."""
        base = self.base
        replaced = self.replaced
        dropped = self.dropped
        inserted = self.inserted
        slot_of = self.slot_of
        span = NOTE_SPAN
        on_chain: dict[int, Entry] = {}
        chain_slots: set[int] = set()  # the base slots among them
        key = leaf
        while True:
            slot, k = divmod(key, span)
            if k:
                entry = inserted[slot][k - 1]
            else:
                entry = replaced.get(slot) or base[slot]
                chain_slots.add(slot)
            on_chain[key] = entry
            parent = entry.get("parentUuid")
            if parent.__class__ is not str:
                break
            key = notes_at.get(parent) if notes_at else None
            if key is None:
                slot = slot_of.get(parent)
                if slot is None or slot in dropped:
                    break
                key = slot * span
            if key in on_chain:  # a cycle in corrupt data
                break
        return on_chain, chain_slots

    def _complete_replies(self, on_chain: dict[int, Entry], chain_slots: set[int]) -> None:
        """Add the other block entries of every streamed reply on the chain."""
        keys = self._reply_keys
        try:
            # a reply is split when block entries of it are both on and off the chain
            on = list(map(chain_slots.__contains__, self._reply_at))
            on_keys = set(compress(keys, on))
            split = on_keys.intersection(compress(keys, map(not_, on))) if on_keys else on_keys
        except TypeError:  # an unhashable message id
            raise Fallback("a reply id is not hashable") from None
        split = {reply for reply in split if reply.__class__ is str}
        if not split:
            return
        if "" in split:  # the index files an empty id under the uuid
            raise Fallback("a reply with an empty message id")
        base = self.base
        replaced = self.replaced
        dropped = self.dropped
        floor = min(on_chain) // NOTE_SPAN  # nothing before the chain's first entry joins it
        for reply, group in self.reply_groups(split).items():
            members = [
                slot
                for slot in group
                if slot not in dropped
                and (slot > floor or slot in chain_slots)
                and _in_reply(replaced.get(slot) or base[slot], reply)
            ]
            if len(members) > 1 and any(slot in chain_slots for slot in members):
                for slot in members:
                    if slot not in chain_slots:
                        chain_slots.add(slot)
                        on_chain[slot * NOTE_SPAN] = replaced.get(slot) or base[slot]

    def _leaf_key(self, notes_at: dict[str, int]) -> int | None:
        """The newest main-thread user/assistant entry with a uuid, as a view key."""
        base = self.base
        for slot in range(len(base) - 1, -1, -1):
            for note in reversed(self.inserted.get(slot, ())):
                if is_leaf(note):
                    return notes_at[note["uuid"]]
            if slot not in self.dropped and is_leaf(self.replaced.get(slot) or base[slot]):
                return slot * NOTE_SPAN
        return None

    def _complete_results(
        self, on_chain: dict[int, Entry], chain_slots: set[int], notes_at: dict[str, int]
    ) -> None:
        """Results on side branches hanging off the chain, for calls it leaves unanswered."""
        span = NOTE_SPAN
        replaced = self.replaced
        # ids asked and answered on the chain: from the index where an edit kept them
        # (see replace), from the entries themselves where it changed them and for notes
        changed = self._ids_changed
        untouched = chain_slots - changed if changed else chain_slots
        use_slot = self.use_slot
        asked = set(compress(use_slot.keys(), map(untouched.__contains__, use_slot.values())))
        answered = set(compress(self._result_ids, map(untouched.__contains__, self._result_at)))
        edited = [slot * span for slot in chain_slots & changed]
        edited += [key for key in notes_at.values() if key in on_chain]
        for key in edited:
            uses, results = _tool_ids(on_chain[key])
            asked.update(uses)
            answered.update(results)
        if asked <= answered:
            return
        # rare: the missing calls in chain order, as the generic walk takes them
        missing = [
            tid
            for key in sorted(on_chain)
            for tid in _tool_ids(on_chain[key])[0]
            if tid not in answered
        ]
        chain_uuids = {entry.get("uuid") for entry in on_chain.values()}
        floor = min(on_chain)  # nothing before the chain's first entry joins it
        for tid in missing:
            if tid in answered:
                continue
            candidates = [slot * span for slot in self.result_slots.get(tid, ())]
            candidates += [
                slot * span + k + 1
                for slot, notes in self.inserted.items()
                for k, note in enumerate(notes)
                if tid in _tool_ids(note)[1]
            ]
            for key in sorted(candidates):
                slot, k = divmod(key, span)
                if key in on_chain or key < floor or (not k and slot in self.dropped):
                    continue
                entry = self.inserted[slot][k - 1] if k else replaced.get(slot) or self.base[slot]
                ids = _tool_ids(entry)[1]
                if (
                    tid not in ids
                    or entry.get("type") != "user"
                    or entry.get("isSidechain")
                    or entry.get("uuid").__class__ is not str
                ):
                    continue
                parent = entry.get("parentUuid")
                if (
                    parent.__class__ is str
                    and parent in chain_uuids
                    and not answered.intersection(ids)
                ):
                    on_chain[key] = entry
                    chain_uuids.add(entry.get("uuid"))
                    answered.update(ids)
                    break

    def view_is_valid(self) -> bool:
        """Whether the view's active chain is already a valid conversation (so the
        safety net has nothing to repair); ``False`` also when it cannot tell. When
        valid, the chain is kept as :attr:`valid_chain`."""
        from flower.core.transcript import chain_is_valid

        try:
            chain = self.active_chain()
        except Fallback:
            return False
        if not chain_is_valid(chain):
            return False
        self.valid_chain = chain
        return True


def _with(entry: Entry, field: str, value: Any) -> Entry:
    """``{**entry, field: value}``, by the faster ``dict.copy`` (same keys, same order)."""
    copy = entry.copy()
    copy[field] = value
    return copy


NOTE_SPAN = 1024  # view keys: slot * NOTE_SPAN (+ k + 1 for the k-th note after it)
_NONE: list[str] = []


def _reply_id(entry: Entry) -> str | None:
    """The ``message.id`` grouping a streamed reply's block entries (a string or None)."""
    message = entry.get("message")
    if message.__class__ is not dict:
        return None
    reply = message.get("id")
    return reply if isinstance(reply, str) else None


def _in_reply(entry: Entry, reply: str) -> bool:
    return (
        entry.get("type") == "assistant"
        and not entry.get("isSidechain")
        and entry.get("uuid").__class__ is str
        and _reply_id(entry) == reply
    )


def _tool_ids(entry: Entry) -> tuple[list[str], list[str]]:
    """(tool_use ids of an assistant entry, tool_result ids of a user entry)."""
    message = entry.get("message")
    content = message.get("content") if message.__class__ is dict else None
    if content.__class__ is not list:
        return _NONE, _NONE
    kind = entry.get("type")
    if kind == "assistant":
        wanted, field = "tool_use", "id"
    elif kind == "user":
        wanted, field = "tool_result", "tool_use_id"
    else:
        return _NONE, _NONE
    ids = [b.get(field) for b in content if b.__class__ is dict and b.get("type") == wanted]
    return (ids, _NONE) if kind == "assistant" else (_NONE, ids)
