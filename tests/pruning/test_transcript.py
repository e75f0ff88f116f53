"""Chain walking, reparenting, messages and the conversation invariant."""

from __future__ import annotations

import copy

import pytest
from pruning_builders import TranscriptBuilder

from flower.core.errors import FlowerError
from flower.core.i18n import language
from flower.core.transcript import (
    InvalidConversationError,
    active_chain,
    check_conversation,
    context_tokens,
    conversation,
    conversation_problems,
    drop_entries,
    insert_after,
    interrupted_note,
    leaf_uuid,
    repair_conversation,
    to_messages,
    unsent,
    unsent_notes,
)


def _e(uid: str, parent: str | None, kind: str = "user", **extra: object) -> dict:
    return {"type": kind, "uuid": uid, "parentUuid": parent, **extra}


def test_active_chain_follows_the_newest_leaf_and_skips_abandoned_branches() -> None:
    entries = [
        _e("a", None, message={"role": "user", "content": "q"}),
        _e("b", "a", "assistant", message={"id": "m1", "role": "assistant", "content": "x"}),
        _e("old", "b", message={"role": "user", "content": "first try"}),
        _e("new", "b", message={"role": "user", "content": "second try"}),
        {"type": "file-history-snapshot", "messageId": "new"},
    ]
    assert [e["uuid"] for e in active_chain(entries)] == ["a", "b", "new"]
    assert leaf_uuid(entries) == "new"


def test_active_chain_stops_at_a_compact_boundary() -> None:
    b = TranscriptBuilder()
    b.user("before")
    b.assistant([{"type": "text", "text": "old answer"}])
    b.compact("summary")
    b.assistant([{"type": "text", "text": "after"}])
    chain = active_chain(b.entries)
    assert chain[0]["subtype"] == "compact_boundary"
    assert chain[0]["logicalParentUuid"] == b.entries[1]["uuid"]
    assert [m["role"] for m in to_messages(chain)] == ["user", "assistant"]
    assert to_messages(chain)[0]["content"][0]["text"] == "summary"


def test_streamed_blocks_merge_into_one_assistant_message() -> None:
    b = TranscriptBuilder(streamed=True)
    b.user("go")
    b.tool_round(
        [("Bash", {"command": "ls"}, "a", False), ("Bash", {"command": "pwd"}, "/x", False)]
    )
    messages = conversation(b.entries)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [blk["type"] for blk in messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    assert [blk["type"] for blk in messages[2]["content"]] == ["tool_result", "tool_result"]
    check_conversation(messages)


def test_a_cycle_in_corrupt_data_does_not_hang() -> None:
    entries = [
        _e("a", "b", message={"role": "user", "content": "x"}),
        _e("b", "a", message={"role": "user", "content": "y"}),
    ]
    assert {e["uuid"] for e in active_chain(entries)} == {"a", "b"}


def test_unsent_notes_say_each_reason_a_stored_message_is_not_sent() -> None:
    entries = [
        _e("a", None),
        _e("b", "a", "assistant"),
        _e("old", "b"),  # an older branch: a resume from b
        _e("old-reply", "old", "assistant"),
        _e("new", "b"),
        {"type": "user", "message": {"role": "user", "content": "no uuid"}},
    ]
    assert unsent(entries) == (1, 0, 2)
    with language("en"):
        notes = unsent_notes(entries)
    assert notes == [
        "flower: note: 1 message of this session has no uuid, so it has no place in the "
        "chain: the model is not sent it",
        "flower: note: 2 messages of this session are off the active chain, on an older "
        "branch (a rewind, or a resume from an earlier point): the model is not sent them",
    ]
    assert unsent_notes(entries[:2]) == []


def test_drop_entries_relinks_children_to_the_nearest_survivor() -> None:
    entries = [_e("a", None), _e("b", "a"), _e("c", "b"), _e("d", "c"), _e("e", "a")]
    before = copy.deepcopy(entries)
    out = drop_entries(entries, {"b", "c"})
    assert [(e["uuid"], e["parentUuid"]) for e in out] == [("a", None), ("d", "a"), ("e", "a")]
    assert entries == before
    assert out[0] is entries[0]  # untouched entries are shared, not copied


def test_dropping_the_root_makes_its_child_a_root() -> None:
    out = drop_entries([_e("a", None), _e("b", "a")], ["a"])
    assert out == [_e("b", None)]


def test_drop_entries_relinks_a_compact_boundary_logical_parent() -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "c",
        "parentUuid": None,
        "logicalParentUuid": "b",
    }
    out = drop_entries([_e("a", None), _e("b", "a"), boundary], ["b"])
    assert out[-1]["logicalParentUuid"] == "a"
    assert out[-1]["parentUuid"] is None


def test_insert_after_puts_the_new_entry_on_the_chain() -> None:
    entries = [_e("a", None), _e("b", "a"), _e("c", "a")]
    out = insert_after(entries, "a", _e("n", None))
    assert [(e["uuid"], e["parentUuid"]) for e in out] == [
        ("a", None),
        ("n", "a"),
        ("b", "n"),
        ("c", "n"),
    ]
    with pytest.raises(KeyError):
        insert_after(entries, "nope", _e("n", None))


def test_to_messages_merges_roles_and_puts_tool_results_first() -> None:
    chain = [
        _e("a", None, message={"role": "user", "content": "hi"}),
        _e(
            "b",
            "a",
            "assistant",
            message={
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "X", "input": {}}],
            },
        ),
        _e("c", "b", message={"role": "user", "content": "also this"}),
        _e(
            "d",
            "c",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ),
        _e("p", "d", "progress"),
        _e("s", "d", "user", isSidechain=True, message={"role": "user", "content": "subagent"}),
    ]
    messages = to_messages(chain)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text"]
    check_conversation(messages)
    assert chain[2]["message"]["content"] == "also this"  # input untouched


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([{"role": "assistant", "content": "x"}], "first message"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "both user"),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
            ],
            "never answered",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz"}]}],
            "not asked",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t"},
                        {"type": "tool_result", "tool_use_id": "t"},
                    ],
                },
            ],
            "twice",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "x"},
                        {"type": "tool_result", "tool_use_id": "t"},
                    ],
                },
            ],
            "text before",
        ),
        ([{"role": "user", "content": []}], "empty"),
    ],
)
def test_check_conversation_names_each_problem(messages: list, fragment: str) -> None:
    assert any(fragment in p for p in conversation_problems(messages))
    with pytest.raises(InvalidConversationError) as info:
        check_conversation(messages)
    assert isinstance(info.value, FlowerError)


def test_repair_answers_a_cut_tool_use_and_drops_an_orphan_result() -> None:
    b = TranscriptBuilder(streamed=False)
    b.user("go")
    cut = b.cut()
    orphan = b.results([("toolu_ghost", "boo", False)])[0]
    b.user("resume")
    before = copy.deepcopy(b.entries)
    out, fixes = repair_conversation(b.entries)
    assert b.entries == before
    assert len(fixes) == 2
    messages = conversation(out)
    check_conversation(messages)
    assert messages[2]["content"][0]["tool_use_id"] == cut
    assert orphan["uuid"] not in {e.get("uuid") for e in out}
    assert repair_conversation(out) == (out, [])


def test_repair_puts_a_user_note_before_a_chain_starting_with_the_assistant() -> None:
    entries = [
        _e("a", None, "assistant", message={"id": "m", "role": "assistant", "content": "hello"})
    ]
    out, fixes = repair_conversation(entries)
    assert fixes
    messages = conversation(out)
    check_conversation(messages)
    assert messages[0]["role"] == "user"


def _block_entry(uid: str, parent: str | None, block: dict) -> dict:
    """One content-block entry of the streamed reply ``msg_1``."""
    message = {"id": "msg_1", "role": "assistant", "content": [block]}
    return _e(uid, parent, "assistant", message=message)


@pytest.mark.usefixtures("english")  # asserts the English fix texts
def test_repair_starts_a_chain_whose_first_entry_it_empties_with_the_next_one() -> None:
    entries = [
        _block_entry("a1", None, {"type": "tool_use", "name": "Bash", "input": {}}),
        _block_entry("a2", "a1", {"type": "text", "text": "hi"}),
    ]
    out, fixes = repair_conversation(entries)
    assert "removed a tool_use without an id" in fixes
    messages = conversation(out)
    assert conversation_problems(messages) == []
    assert messages[0]["role"] == "user"
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    assert repair_conversation(out) == (out, [])


@pytest.mark.usefixtures("english")  # asserts the English fix texts
def test_repair_of_a_chain_holding_only_an_id_less_call_is_empty() -> None:
    out, fixes = repair_conversation(
        [_e("a", None, "assistant", message={"content": [{"type": "tool_use"}]})]
    )
    assert fixes == ["removed a tool_use without an id"]
    assert conversation(out) == []


@pytest.mark.usefixtures("english")  # asserts the English fix texts
def test_repair_answers_a_call_whose_reply_ends_in_an_id_less_call() -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}
    entries = [
        _e("u1", None, message={"role": "user", "content": "go"}),
        _block_entry("a1", "u1", call),
        _block_entry("a2", "a1", {"type": "tool_use", "id": None, "name": "Bash", "input": {}}),
    ]
    out, fixes = repair_conversation(entries)
    assert "answered tool_use 'toolu_1' with the interrupted note" in fixes
    assert "a2" not in {e.get("uuid") for e in out}
    messages = to_messages(active_chain(out))
    assert conversation_problems(messages) == []
    assert messages[1] == {"role": "assistant", "content": [call]}
    (answer,) = messages[2]["content"]
    assert answer["tool_use_id"] == "toolu_1"
    assert answer["content"] == interrupted_note()
    assert repair_conversation(out) == (out, [])


def test_context_tokens_adds_input_and_both_cache_counts() -> None:
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 80000,
        "output_tokens": 999,
    }
    assert context_tokens(usage) == 80105
    assert context_tokens(None) == 0
    assert context_tokens({"input_tokens": 3, "cache_read_input_tokens": None}) == 3


# --------------------------------------------------------------------------- compaction


def _compacted() -> TranscriptBuilder:
    """A session compacted once: history, boundary, summary, two live rounds."""
    b = TranscriptBuilder(streamed=True)
    b.user("fix the build")
    b.tool_round([("Bash", {"command": "make"}, "error: x", False)], text="Building.")
    b.compact("The build failed on x.")
    b.tool_round([("Bash", {"command": "make"}, "ok", False)], text="Again.")
    b.assistant([{"type": "text", "text": "Fixed."}])
    return b


def _boundary(entries: list[dict]) -> int:
    return max(i for i, e in enumerate(entries) if e.get("subtype") == "compact_boundary")


def test_the_chain_starts_at_the_last_compaction_boundary() -> None:
    b = _compacted()
    b.compact("Second summary.")
    b.user("and now the docs")
    entries = b.entries
    start = _boundary(entries)
    assert start > 0
    assert active_chain(entries) == active_chain(entries[start:])
    assert active_chain(entries)[0] is entries[start]


def test_a_fork_back_into_the_history_walks_into_the_history() -> None:
    b = _compacted()
    first = b.entries[0]["uuid"]
    b.rewind_to(first)  # the user resumed from before the compaction
    b.user("let us try another way")
    assert active_chain(b.entries)[0]["uuid"] == first


def test_history_never_joins_the_conversation_after_the_boundary() -> None:
    entries = copy.deepcopy(_compacted().entries)
    start = _boundary(entries)
    live_chain = active_chain(entries[start:])
    # a side branch hanging off the live part, and a block of a live reply, both written
    # before the boundary (damaged or hand-edited data): still history
    hanging = copy.deepcopy(entries[1])
    hanging["uuid"] = "hangs-off-the-live-part"
    hanging["parentUuid"] = entries[-1]["uuid"]
    straddling = copy.deepcopy(next(e for e in entries[start:] if e["type"] == "assistant"))
    straddling["uuid"] = "a-block-written-before-the-boundary"
    damaged = [hanging, straddling, *entries[:start], *entries[start:]]
    assert active_chain(damaged) == live_chain


@pytest.mark.parametrize("role", [7, "system", "assistant", None])
def test_an_entrys_type_decides_its_role_whatever_its_message_says(role: object) -> None:
    """Damage the API would reject: a user entry whose message.role is another role
    (it holds tool results, which only a user message may)."""
    entries = [
        {"type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "list the files"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1",
         "message": {"role": role, "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]}},
    ]  # fmt: skip
    messages = to_messages(active_chain(entries))
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert conversation_problems(messages) == []


def test_a_prompt_given_again_after_a_pruned_turn_is_sent_once() -> None:
    """An old denial pruned away joins the user turns around it: the same words said on
    both sides would reach the model twice in a row."""
    from flower.core.protocols import PruneContext
    from flower.stores.prune import prune
    from flower_plugins.pruning.policies import Denials

    b = TranscriptBuilder()
    b.user("Do the task.")
    b.denied("rm -rf build")
    b.user("Do the task.")
    b.denied("rm -rf dist")
    b.user("Go on.")
    messages = conversation(prune(b.entries, [Denials(keep=1)], PruneContext()))
    first = messages[0]
    assert first["role"] == "user"
    assert [block.get("text") for block in first["content"]] == ["Do the task."]
    assert conversation_problems(messages) == []


# --------------------------------------------------------------------------- the package


def test_the_transcript_modules_import_one_way_and_the_package_has_every_name() -> None:
    """Each module of flower.core.transcript imports only the ones before it (no circle),
    none imports a plugin or a store, and the package re-exports every public name."""
    import ast
    import importlib
    from pathlib import Path

    import flower.core.transcript as package

    order = ["blocks", "chain", "editing", "messages", "usage", "repair", "view"]
    folder = Path(package.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.py")) == sorted([*order, "__init__"])
    for at, name in enumerate(order):
        tree = ast.parse((folder / f"{name}.py").read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
        }
        siblings = {m.rsplit(".", 1)[1] for m in imported if m.startswith(package.__name__ + ".")}
        assert siblings <= set(order[:at]), name
        assert not any(m.startswith(("flower_plugins", "flower.stores")) for m in imported)
        module = importlib.import_module(f"{package.__name__}.{name}")
        for public in (
            n
            for n, v in vars(module).items()
            if getattr(v, "__module__", None) == module.__name__ and not n.startswith("_")
        ):
            assert getattr(package, public) is getattr(module, public), public
            assert public in package.__all__
