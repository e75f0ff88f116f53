"""The safety net on damaged transcripts: whatever the damage, a load neither raises nor
hands the model an invalid conversation, and the stored entries are not touched."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_properties import FAST, OPS, build, ctx, policies

from flower.core.transcript import (
    active_chain,
    conversation,
    conversation_problems,
    repair_conversation,
    to_messages,
)
from flower.stores.prune import prune

DAMAGE = ["repeat", "no-uuid", "sidechain", "list-parent", "parent-elsewhere", "reply-id", "move"]
CALL_DAMAGE = ["id-less-call", "id-less-block", "lost-result", "lost-prompt"]


def _with_blocks(
    entries: list[dict[str, Any]], kind: str, entry_type: str | None = None
) -> list[dict[str, Any]]:
    return [
        e
        for e in entries
        if entry_type in (None, e.get("type"))
        and isinstance(e.get("message"), dict)
        and isinstance(e["message"].get("content"), list)
        and any(b.get("type") == kind for b in e["message"]["content"])
    ]


def damage_calls(draw: st.DrawFn, entries: list[dict[str, Any]], kind: str) -> None:
    """Damage around tool calls, in place: a call without a usable id (also in a block
    entry of its own, as the last of a streamed reply), a result lost (its call left
    unanswered), a reply whose prompt is lost (the chain starts with the assistant)."""
    if kind == "id-less-call" and (asking := _with_blocks(entries, "tool_use")):
        entry = draw(st.sampled_from(asking))
        calls = [b for b in entry["message"]["content"] if b.get("type") == "tool_use"]
        call = draw(st.sampled_from(calls))
        id_damage = draw(st.sampled_from(["missing", None, ""]))
        if id_damage == "missing":
            call.pop("id", None)
        else:
            call["id"] = id_damage
    elif kind == "id-less-block" and (replies := _with_blocks(entries, "text", "assistant")):
        # one more block entry of the reply (sharing its message id), holding a call
        # without an id: the reply's last one when written after its last block
        entry = draw(st.sampled_from(replies))
        block = {"type": "tool_use", "name": "Bash", "input": {"command": "make"}}
        extra = {
            **entry,
            "uuid": f"id-less-{len(entries)}",
            "parentUuid": entry.get("uuid"),
            "message": {**entry["message"], "content": [block]},
        }
        for child in entries:
            if child.get("parentUuid") == entry.get("uuid"):
                child["parentUuid"] = extra["uuid"]
        entries.insert(entries.index(entry) + 1, extra)
    elif kind == "lost-result" and (answering := _with_blocks(entries, "tool_result")):
        entry = draw(st.sampled_from(answering))
        results = [b for b in entry["message"]["content"] if b.get("type") == "tool_result"]
        draw(st.sampled_from(results))["tool_use_id"] = "toolu_lost"
    elif kind == "lost-prompt":
        replies = [e for e in entries if e.get("type") == "assistant"]
        if replies:
            draw(st.sampled_from(replies))["parentUuid"] = None


@st.composite
def damaged(
    draw: st.DrawFn, kinds: Sequence[str] = (*DAMAGE, *CALL_DAMAGE)
) -> list[dict[str, Any]]:
    """A generated transcript (compactions likelier) with up to four damages of ``kinds``."""
    ops = st.tuples(st.sampled_from([*OPS, "compact", "compact"]), st.integers(0, 50))
    entries = copy.deepcopy(
        build(draw(st.lists(ops, min_size=1, max_size=30)), draw(st.booleans()))
    )
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        entry = entries[draw(st.integers(0, len(entries) - 1))]
        if kind in CALL_DAMAGE:
            damage_calls(draw, entries, kind)
        elif kind == "repeat":  # written twice
            entries.insert(draw(st.integers(0, len(entries))), copy.deepcopy(entry))
        elif kind == "no-uuid":
            entry.pop("uuid", None)
        elif kind == "sidechain":
            entry["isSidechain"] = True
        elif kind == "list-parent":
            entry["parentUuid"] = [entry.get("parentUuid")]
        elif kind == "parent-elsewhere":  # e.g. into the history before a compaction
            entry["parentUuid"] = entries[draw(st.integers(0, len(entries) - 1))].get("uuid")
        elif kind == "reply-id":  # two replies sharing a message id
            replies = [e for e in entries if e.get("type") == "assistant"]
            if len(replies) > 1:
                one, other = draw(st.sampled_from(replies)), draw(st.sampled_from(replies))
                other["message"]["id"] = one["message"].get("id")
        elif kind == "move":
            entries.insert(
                draw(st.integers(0, len(entries) - 1)), entries.pop(entries.index(entry))
            )
    return entries


@FAST
@given(damaged())
def test_a_damaged_transcript_still_gives_a_valid_conversation(entries: list[dict]) -> None:
    stored = copy.deepcopy(entries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repairs are expected here
        pruned = prune(entries, policies(), ctx())
        bare = prune(entries, [], ctx())  # the safety net alone
    assert conversation_problems(conversation(pruned)) == []
    assert conversation_problems(conversation(bare)) == []
    assert entries == stored


@FAST
@given(damaged(CALL_DAMAGE))
def test_the_repair_of_damaged_tool_calls_never_raises_and_gives_a_valid_conversation(
    entries: list[dict],
) -> None:
    stored = copy.deepcopy(entries)
    out, fixes = repair_conversation(entries)
    assert conversation_problems(to_messages(active_chain(out))) == []
    assert repair_conversation(out) == (out, [])
    assert entries == stored
    if not fixes:
        assert out == entries
