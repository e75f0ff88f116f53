"""The safety net on damaged transcripts: whatever the damage, a load neither raises nor
hands the model an invalid conversation, and the stored entries are not touched."""

from __future__ import annotations

import copy
import warnings
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_properties import FAST, OPS, build, ctx, policies

from flower.core.transcript import conversation, conversation_problems
from flower.stores.prune import prune

DAMAGE = ["repeat", "no-uuid", "sidechain", "list-parent", "parent-elsewhere", "reply-id", "move"]


@st.composite
def damaged(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A generated transcript (compactions likelier) with up to three kinds of damage."""
    ops = st.tuples(st.sampled_from([*OPS, "compact", "compact"]), st.integers(0, 50))
    entries = copy.deepcopy(
        build(draw(st.lists(ops, min_size=1, max_size=30)), draw(st.booleans()))
    )
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(DAMAGE))
        entry = entries[draw(st.integers(0, len(entries) - 1))]
        if kind == "repeat":  # written twice
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
