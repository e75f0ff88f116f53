"""Edges of the built-in policies: what counts as a denial, subagents' sidechains, the
stale note and trim together, lone surrogates, trim's file names and its memory."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from pruning_builders import CC_DENIAL

from flower.core.protocols import PruneContext
from flower.core.records import SessionKey
from flower.core.transcript import active_chain, conversation, conversation_problems, to_messages
from flower.stores.prune import PruningWarning, model_bytes, prune, prune_with_stats
from flower_plugins.pruning.policies import (
    Denials,
    Ephemeral,
    Interrupted,
    SyntheticErrors,
    Trim,
    is_denial,
    stale_note,
    trim_mark,
)

Entry = dict[str, Any]


def turn(kind: str, uid: str, parent: str | None, content: Any, **extra: Any) -> Entry:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{uid}"
    return {"type": kind, "uuid": uid, "parentUuid": parent, "message": message, **extra}


def bash(tid: str, command: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}]


def result(tid: str, body: Any, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": tid, "content": body, "is_error": error}]


def pruned_view(entries: list[Entry], policies: list[Any], ctx: PruneContext) -> list[Entry]:
    """The view a load gives: the active chain through ``policies``, checked against
    the policies run by hand on that chain."""
    by_hand = active_chain(entries)
    for policy in policies:
        by_hand = policy.prune(by_hand, ctx)
    view = prune(entries, policies, ctx)
    assert view == prune(by_hand, [], ctx)
    return view


def bash_commands(entries: list[Entry]) -> list[str]:
    return [
        block["input"]["command"]
        for message in conversation(entries)
        for block in message["content"]
        if block.get("type") == "tool_use"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "PermissionError: [Errno 13] Permission denied: '/usr/lib/python3/x'",
        "error: Permission to use the registry has been denied by the server\nexit 1",
        "npm ERR! Claude requested permissions to use the cache (from a log line)",
    ],
)
def test_a_command_failing_with_denial_words_is_no_denial(text: str) -> None:
    entry = turn("user", "r", "a", result("t", text, error=True))
    assert not is_denial(entry, entry["message"]["content"][0])


def test_denials_keep_a_failed_command_and_drop_the_old_refusal() -> None:
    entries = [
        turn("user", "u1", None, "install it"),
        turn("assistant", "a1", "u1", bash("t1", "pip install .")),
        turn("user", "r1", "a1", result("t1", "OSError: Permission denied: '/usr/lib'", True)),
        turn("assistant", "a2", "r1", bash("t2", "sudo rm -rf /usr/lib")),
        turn("user", "r2", "a2", result("t2", CC_DENIAL, True)),
        turn("assistant", "a3", "r2", bash("t3", "sudo pip install .")),
        turn("user", "r3", "a3", result("t3", CC_DENIAL, True)),
        turn("assistant", "a4", "r3", [{"type": "text", "text": "I need your permission."}]),
    ]
    view = pruned_view(entries, [Denials(keep=1)], PruneContext())
    assert bash_commands(view) == ["pip install .", "sudo pip install ."]


def test_a_rejection_carrying_the_users_words_is_kept() -> None:
    feedback = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected. "
        "To tell you how to proceed, the user said:\nuse the staging database instead"
    )
    entries = [
        turn("user", "u1", None, "migrate"),
        turn("assistant", "a1", "u1", bash("t1", "migrate --prod")),
        turn("user", "r1", "a1", result("t1", feedback, True)),
        turn("assistant", "a2", "r1", bash("t2", "rm -rf data")),
        turn("user", "r2", "a2", result("t2", CC_DENIAL, True)),
        turn("assistant", "a3", "r2", [{"type": "text", "text": "Stopping."}]),
    ]
    view = pruned_view(entries, [Denials(keep=0)], PruneContext())
    assert bash_commands(view) == ["migrate --prod"]
    assert "use the staging database instead" in str(conversation(view))


def test_denials_leave_a_subagents_refusals_out_of_the_count() -> None:
    entries = [
        turn("user", "u1", None, "clean up"),
        turn("assistant", "a1", "u1", bash("t_main", "rm -rf build")),
        turn("user", "r1", "a1", result("t_main", CC_DENIAL, True)),
        turn("assistant", "a2", "r1", [{"type": "text", "text": "Asking a helper."}]),
        turn("user", "s1", None, "tidy", isSidechain=True),
        turn("assistant", "s2", "s1", bash("t_sub", "rm -rf dist"), isSidechain=True),
        turn("user", "s3", "s2", result("t_sub", CC_DENIAL, True), isSidechain=True),
        turn("user", "u2", "a2", "and now?"),
    ]
    view = pruned_view(entries, [Denials(keep=1)], PruneContext())
    assert bash_commands(view) == ["rm -rf build"]  # the newest main-thread denial stays
    # the subagent's entries are not on the chain: the model is never sent them
    assert [e["uuid"] for e in view] == ["u1", "a1", "r1", "a2", "u2"]


def test_denials_are_idempotent_on_an_entry_holding_several_results() -> None:
    """flower's older shape: one user entry for a whole response, marked denied."""
    calls = [*bash("t_ok", "make"), *bash("t_no", "rm -rf /")]
    results = [*result("t_ok", "built"), *result("t_no", "Permission denied: not allowed", True)]
    entries = [
        turn("user", "u1", None, "build"),
        turn("assistant", "a1", "u1", calls),
        turn("user", "r1", "a1", results, toolUseResult={"denied": True}),
        turn("assistant", "a2", "r1", bash("t2", "rm -rf /tmp/x")),
        turn("user", "r2", "a2", result("t2", "Permission denied: no", True)),
        turn("assistant", "a3", "r2", [{"type": "text", "text": "ok"}]),
    ]
    once = pruned_view(entries, [Denials(keep=1)], PruneContext())
    assert bash_commands(once) == ["make", "rm -rf /tmp/x"]
    assert pruned_view(once, [Denials(keep=1)], PruneContext()) == once


def test_a_subagents_cut_call_is_not_on_the_chain_and_not_answered() -> None:
    entries = [
        turn("user", "u1", None, "review"),
        turn("assistant", "a1", "u1", [{"type": "tool_use", "id": "t_task", "name": "Task"}]),
        turn("user", "s1", None, "review src/", isSidechain=True),
        turn("assistant", "s2", "s1", bash("t_sub", "pytest -q"), isSidechain=True),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)  # no repair needed
        view = pruned_view(entries, [Interrupted()], PruneContext())
    notes = [e for e in view if e.get("flowerSynthetic")]
    # the subagent's call is on its sidechain, which the model is never sent
    assert {n["message"]["content"][0]["tool_use_id"]: n["isSidechain"] for n in notes} == {
        "t_task": False,
    }
    assert conversation_problems(to_messages(active_chain(view))) == []


def big_ephemeral_session(size: int = 6400) -> list[Entry]:
    entries = [turn("user", "u1", None, "look around")]
    parent = "u1"
    for n in range(4):
        entries += [
            turn("assistant", f"a{n}", parent, bash(f"t{n}", "ls -la")),
            turn("user", f"r{n}", f"a{n}", result(f"t{n}", f"{n}" * size)),
        ]
        parent = f"r{n}"
    entries.append(turn("assistant", "end", parent, [{"type": "text", "text": "Listed."}]))
    return entries


@pytest.mark.parametrize("order", ["ephemeral-first", "trim-first"])
def test_stale_note_and_trim_together_are_idempotent_and_the_file_holds_the_output(
    tmp_path: Path, order: str
) -> None:
    policies: list[Any] = [Ephemeral(commands=["ls"]), Trim(min_chars=4000, keep_recent_turns=1)]
    if order == "trim-first":
        policies.reverse()
    ctx = PruneContext(key=SessionKey("-p", "s"), run_dir=tmp_path)
    once = pruned_view(big_ephemeral_session(), policies, ctx)
    assert pruned_view(once, policies, ctx) == once
    body = once[2]["message"]["content"][0]["content"]
    assert body.startswith(f"{stale_note()}\n{trim_mark()}")
    assert body.count(stale_note()) == 1
    assert (tmp_path / "trimmed" / "s" / "t0.txt").read_text() == "0" * 6400


def test_a_lone_surrogate_is_trimmed_and_counted(tmp_path: Path) -> None:
    """Claude Code cuts long output mid-emoji and stores the half: "\\ud83d"."""
    entries = big_ephemeral_session()
    entries[2]["message"]["content"][0]["content"] = "x" * 5000 + "\ud83d"
    ctx = PruneContext(key=SessionKey("-p", "s"), run_dir=tmp_path)
    policies = [Trim(min_chars=4000, keep_recent_turns=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)
        view, stats = prune_with_stats(entries, policies, ctx)
    assert view[2]["message"]["content"][0]["content"].startswith(trim_mark())
    saved = (tmp_path / "trimmed" / "s" / "t0.txt").read_bytes()
    assert saved.decode("utf-8", "surrogatepass") == "x" * 5000 + "\ud83d"
    assert stats[0].changed == 3 and stats[0].bytes_saved > 3 * 4000  # all but the newest
    assert model_bytes(entries[2]) > 5000


def pointed_file(pointer: str) -> str:
    """The file a trimmed result's pointer names, in whichever language it is written."""
    found = re.search(r"/\S*?/trimmed/\S*?\.txt", pointer)
    assert found is not None, pointer
    return found.group()


def test_tool_ids_that_differ_only_in_unsafe_characters_get_their_own_files(
    tmp_path: Path,
) -> None:
    entries = big_ephemeral_session(size=500)
    for n, tid in enumerate(("call/1", "call:1")):
        entries[1 + 2 * n]["message"]["content"][0]["id"] = tid
        entries[2 + 2 * n]["message"]["content"][0]["tool_use_id"] = tid
        entries[2 + 2 * n]["message"]["content"][0]["content"] = "XY"[n] * 500
    ctx = PruneContext(key=SessionKey("-p", "s"), run_dir=tmp_path)
    view = prune(entries, [Trim(min_chars=100, keep_recent_turns=1)], ctx)
    pointed = [pointed_file(view[i]["message"]["content"][0]["content"]) for i in (2, 4)]
    assert [Path(p).read_text() for p in pointed] == ["X" * 500, "Y" * 500]


def test_a_trim_file_emptied_behind_a_long_lived_view_is_written_again(tmp_path: Path) -> None:
    ctx = PruneContext(key=SessionKey("-p", "s"), run_dir=tmp_path)
    trim = Trim(min_chars=4000, keep_recent_turns=1)
    entries = big_ephemeral_session()
    prune(entries, [trim], ctx)
    (tmp_path / "trimmed" / "s" / "t0.txt").write_text("")  # damaged after the first load
    view = prune(entries, [trim], ctx)
    pointed = pointed_file(view[2]["message"]["content"][0]["content"])
    assert Path(pointed).read_text() == "0" * 6400
    assert os.path.getsize(tmp_path / "trimmed" / "s" / "t0.txt") == 0  # left for a human


@pytest.mark.usefixtures("english")  # the warning is read in English
def test_the_shared_index_warns_when_a_policy_removes_every_entry() -> None:
    def error(uid: str, parent: str | None) -> Entry:
        entry = turn("assistant", uid, parent, [{"type": "text", "text": "API Error: 529"}])
        entry["isApiErrorMessage"] = True
        return entry

    ctx = PruneContext(key=SessionKey("-p", "errors-only"))
    with pytest.warns(PruningWarning, match="'synthetic-errors' removed every entry of session"):
        assert prune([error("e1", None), error("e2", "e1")], [SyntheticErrors()], ctx) == []
