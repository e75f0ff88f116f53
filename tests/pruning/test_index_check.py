"""The safety-net check on the shared index: when a load may skip the full check.

``prune`` skips the generic check-and-repair only when the index that produced the
output proves, from its own walk of the view, that the active chain is already a valid
conversation. These tests hold that decision to the generic truth, in particular for
structural edits (dropped entries) that break the chain.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pruning_builders import TranscriptBuilder, built_in_policies
from test_properties import ctx, split_at_context, transcripts

from flower.core.transcript import (
    active_chain,
    chain_is_valid,
    drop_entries,
    has_leaf,
    repair_conversation,
    surviving_ancestor,
)
from flower.core.transcript_index import Fallback, TranscriptIndex
from flower.stores.prune import PruningWarning, needs_check, prune


class DropUuids:
    """A policy with both paths that drops fixed entries (whatever that breaks)."""

    name = "drop-uuids"

    def __init__(self, uuids: list[str]) -> None:
        self.uuids = uuids

    def prune(self, entries: list[dict], ctx: Any) -> list[dict]:
        return drop_entries(entries, self.uuids)

    def plan(self, index: TranscriptIndex) -> None:
        index.drop(self.uuids, surviving_ancestor)


def one_tool_round() -> tuple[list[dict], dict, dict]:
    b = TranscriptBuilder(streamed=False)
    b.user("start")
    b.tool_round([("Bash", {"command": "make"}, "built", False)])
    b.user("thanks")
    b.assistant([{"type": "text", "text": "welcome"}])
    asking = next(e for e in b.entries if e["type"] == "assistant")
    answering = next(e for e in b.entries if e["type"] == "user" and e.get("toolUseResult"))
    return b.entries, asking, answering


def test_an_untouched_valid_transcript_needs_no_check() -> None:
    entries, _, _ = one_tool_round()
    index = TranscriptIndex(entries)
    assert not needs_check(index)
    assert not needs_check_generic(index.materialise())


def test_dropping_a_result_makes_the_view_need_the_check_and_the_load_repairs_it() -> None:
    entries, _, answering = one_tool_round()
    index = TranscriptIndex(entries)
    index.drop([answering["uuid"]], surviving_ancestor)
    assert needs_check(index)

    policy = DropUuids([answering["uuid"]])
    with pytest.warns(PruningWarning, match="answered tool_use"):
        pruned = prune(entries, [policy], ctx())
    expected, fixes = repair_conversation(drop_entries(entries, [answering["uuid"]]))
    assert fixes and pruned == expected
    assert chain_is_valid(active_chain(pruned))


def test_dropping_the_call_leaves_an_orphan_result_that_the_load_removes() -> None:
    entries, asking, _ = one_tool_round()
    with pytest.warns(PruningWarning, match="answers nothing"):
        pruned = prune(entries, [DropUuids([asking["uuid"]])], ctx())
    assert chain_is_valid(active_chain(pruned))


def test_no_index_always_means_the_full_check() -> None:
    assert needs_check(None)


def test_a_view_the_index_cannot_vouch_for_gets_the_full_check() -> None:
    entries, asking, _ = one_tool_round()
    index = TranscriptIndex(entries)
    # a note reusing a base uuid: the index's walk would be ambiguous
    index.insert_after(len(entries) - 1, [{**asking, "type": "user"}])
    with pytest.raises(Fallback):
        index.active_chain()
    assert needs_check(index)


def needs_check_generic(entries: list[dict]) -> bool:
    return not chain_is_valid(active_chain(entries))


@settings(max_examples=150, deadline=None)
@given(transcripts, st.data())
def test_the_decision_matches_the_generic_check_after_any_drops(
    entries: list[dict], data: st.DataObject
) -> None:
    uuids = [e["uuid"] for e in entries if e.get("uuid")]
    doomed = data.draw(st.lists(st.sampled_from(uuids), unique=True, max_size=6))
    try:
        index = TranscriptIndex(entries)
        index.drop(doomed, surviving_ancestor)
    except Fallback:
        return
    view = index.materialise()
    assert view == drop_entries(entries, doomed)
    assert needs_check(index) == needs_check_generic(view)
    history, live = split_at_context(entries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)
        pruned = prune(entries, [DropUuids(doomed)], ctx())
    live_view = repair_conversation(drop_entries(live, doomed))[0]
    if history and not has_leaf(live_view):  # nothing left to stand on: all is pruned
        assert pruned == repair_conversation(view)[0]
    else:
        assert pruned == history + live_view
    assert not needs_check_generic(pruned)


@settings(max_examples=120, deadline=None)
@given(transcripts, st.permutations(range(4)), st.integers(min_value=0, max_value=2))
def test_stats_on_the_shared_index_match_the_generic_counts(
    entries: list[dict], order: list[int], keep: int
) -> None:
    from flower.stores.prune import _stats_generic, prune_with_stats

    *built_ins, trim = built_in_policies(keep)
    chosen = [*(built_ins[i] for i in order), trim]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)
        fast, fast_report = prune_with_stats(entries, chosen, ctx())
        history, live = split_at_context(entries)
        generic, generic_report = _stats_generic(live, chosen, ctx())
        generic = history + repair_conversation(generic)[0]
    assert fast == generic == prune(entries, chosen, ctx())
    assert [r.as_dict() for r in fast_report[:-1]] == [r.as_dict() for r in generic_report]
    assert fast_report[-1].policy == "(repair)"


def _healthy() -> TranscriptBuilder:
    b = TranscriptBuilder(streamed=True)
    b.user("fix the build")
    b.tool_round([("Read", {"file_path": "a.py"}, "x = 1", False)], text="Looking.")
    b.tool_round([("Bash", {"command": "make"}, "ok", False)])
    b.assistant([{"type": "text", "text": "Done."}])
    return b


def test_a_healthy_transcript_gives_the_policies_nothing_to_do() -> None:
    from flower_plugins.pruning import Denials, Ephemeral, Interrupted, SyntheticErrors

    entries = _healthy().entries
    index = TranscriptIndex(entries, ctx())
    assert index.unanswered() == []
    assert not (index.synthetic_slots or index.flagged_results or index.residue_slots)
    for policy in (SyntheticErrors(), Denials(), Interrupted(), Ephemeral(commands=["ls"])):
        policy.plan(index)
    assert not (index.replaced or index.dropped or index.inserted)
    assert index.materialise() == entries


def test_unanswered_still_finds_a_cut_call_and_one_a_drop_leaves_unanswered() -> None:
    b = _healthy()
    cut = b.cut("make test")
    index = TranscriptIndex(b.entries, ctx())
    assert index.unanswered() == [cut]

    b = _healthy()
    index = TranscriptIndex(b.entries, ctx())
    (answer,) = [e for e in b.entries if "toolUseResult" in e and "ok" in str(e["message"])]
    index.drop([answer["uuid"]], surviving_ancestor)
    (asked,) = [tid for tid, _ in index.bash_uses]
    assert index.unanswered() == [asked]


def _plain(kind: str, uid: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uid,
        "parentUuid": parent,
        "message": {"role": kind, "content": [{"type": "text", "text": text}]},
    }


@pytest.mark.parametrize(
    "entries",
    [
        # the leaf's parent is a system entry written after it: the walk is not in order
        [
            _plain("user", "u1", None),
            _plain("assistant", "a2", "s3"),
            {"type": "system", "uuid": "s3", "parentUuid": "u1"},
        ],
        # a cycle in corrupt data
        [_plain("user", "u1", "a2"), _plain("assistant", "a2", "u1")],
        # a replaced entry whose parent link changed
        [_plain("user", "u1", None), _plain("user", "u2", None), _plain("assistant", "a3", "u2")],
    ],
    ids=["parent-after-child", "cycle", "plain"],
)
def test_the_walk_without_notes_gives_the_generic_chain(entries: list[dict[str, Any]]) -> None:
    index = TranscriptIndex(entries, ctx())
    assert index.active_chain() == active_chain(entries)
    last = len(entries) - 1
    relinked = {**entries[last], "parentUuid": "u1"}
    index.replace(last, relinked)
    view = [*entries[:last], relinked]
    assert index.active_chain() == active_chain(view)
