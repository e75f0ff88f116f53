"""Each built-in policy on small transcripts in both flower's and Claude Code's shape."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
from pruning_builders import CC_INTERRUPTED, TranscriptBuilder

from flower.core.protocols import PruneContext
from flower.core.transcript import check_conversation, conversation, interrupted_note
from flower_plugins.pruning.policies import (
    Denials,
    Ephemeral,
    Interrupted,
    SyntheticErrors,
    Trim,
    stale_note,
)

CTX = PruneContext()


def _texts(entries: list[dict]) -> list[str]:
    out = []
    for message in conversation(entries):
        for block in message["content"]:
            if block.get("type") == "text":
                out.append(block["text"])
            elif block.get("type") == "tool_result":
                out.append(
                    block["content"] if isinstance(block["content"], str) else str(block["content"])
                )
    return out


@pytest.mark.parametrize("streamed", [True, False])
def test_synthetic_errors_are_dropped_and_the_chain_relinked(streamed: bool) -> None:
    b = TranscriptBuilder(streamed=streamed)
    b.user("go")
    b.assistant([{"type": "text", "text": "working"}])
    b.user("more")
    for _ in range(3):
        b.api_error()
    b.user("continue")
    raw = copy.deepcopy(b.entries)
    out = SyntheticErrors().prune(b.entries, CTX)
    assert b.entries == raw
    assert not any("API Error" in t for t in _texts(out))
    assert _texts(out)[-2:] == ["more", "continue"]
    check_conversation(conversation(out))


@pytest.mark.parametrize("claude_code", [True, False])
def test_denials_keep_only_the_newest(claude_code: bool) -> None:
    b = TranscriptBuilder(streamed=claude_code)
    b.user("clean up")
    first = b.denied("rm -rf a", claude_code=claude_code)
    second = b.denied("rm -rf b", claude_code=claude_code)
    b.assistant([{"type": "text", "text": "I'll leave it."}])
    out = Denials(keep=1).prune(b.entries, CTX)
    ids = {blk.get("id") for m in conversation(out) for blk in m["content"]}
    assert first not in ids and second in ids
    check_conversation(conversation(out))
    assert Denials(keep=1).prune(out, CTX) == out
    none_kept = Denials(keep=0).prune(b.entries, CTX)
    assert second not in {blk.get("id") for m in conversation(none_kept) for blk in m["content"]}
    check_conversation(conversation(none_kept))


def test_a_denied_block_is_removed_from_an_entry_with_other_blocks() -> None:
    b = TranscriptBuilder(streamed=False)
    b.user("go")
    uses = [
        b.tool_use_block("Bash", {"command": "rm x"}),
        b.tool_use_block("Bash", {"command": "rm y"}),
    ]
    b.assistant([{"type": "text", "text": "removing"}, *uses])
    b.results(
        [
            (uses[0]["id"], "Permission denied: Bash is not in allowed_tools", True),
            (uses[1]["id"], "ok", False),
        ]
    )
    b.assistant([{"type": "text", "text": "one done"}])
    out = Denials(keep=0).prune(b.entries, CTX)
    messages = conversation(out)
    check_conversation(messages)
    assert [blk["type"] for blk in messages[1]["content"]] == ["text", "tool_use"]
    assert messages[1]["content"][1]["id"] == uses[1]["id"]
    assert [blk["tool_use_id"] for blk in messages[2]["content"]] == [uses[1]["id"]]


def test_a_result_that_only_mentions_denial_without_error_is_not_a_denial() -> None:
    b = TranscriptBuilder()
    b.user("grep")
    b.tool_round(
        [("Bash", {"command": "grep denied log"}, "Permission denied: /etc/shadow", False)]
    )
    assert Denials(keep=0).prune(b.entries, CTX) == b.entries


@pytest.mark.parametrize("streamed", [True, False])
def test_interruption_residue_becomes_the_neutral_note(streamed: bool) -> None:
    b = TranscriptBuilder(streamed=streamed)
    b.user("test it")
    tid = b.interrupted()
    b.assistant([{"type": "text", "text": "ok"}])
    out = Interrupted().prune(b.entries, CTX)
    assert len(out) == len(b.entries)
    results = [
        blk for m in conversation(out) for blk in m["content"] if blk.get("tool_use_id") == tid
    ]
    assert [r["content"] for r in results] == [interrupted_note()]
    assert CC_INTERRUPTED in _texts(out)  # the user's own text marker is kept
    assert Interrupted().prune(out, CTX) == out


@pytest.mark.parametrize("streamed", [True, False])
def test_a_tool_use_cut_off_gets_a_synthetic_result_in_the_view(streamed: bool) -> None:
    b = TranscriptBuilder(streamed=streamed)
    b.user("build")
    tid = b.cut()
    b.user("continue")
    raw = copy.deepcopy(b.entries)
    out = Interrupted().prune(b.entries, CTX)
    assert b.entries == raw
    messages = conversation(out)
    check_conversation(messages)
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": tid,
        "content": interrupted_note(),
    }
    assert messages[2]["content"][1]["text"] == "continue"
    again = Interrupted().prune(out, CTX)
    assert again == out
    # the synthetic entry has the same uuid on every load, so a child written after it stays linked
    assert Interrupted().prune(b.entries, CTX) == out


def test_ephemeral_marks_stale_and_keeps_the_body() -> None:
    b = TranscriptBuilder()
    b.user("status?")
    ids = b.tool_round(
        [
            ("Bash", {"command": "git status --short"}, " M a.py", False),
            ("Bash", {"command": "cd src && ls -la | head"}, "x.py", False),
            ("Bash", {"command": "ls && rm -rf x"}, "gone", False),
            ("Bash", {"command": "date"}, [{"type": "text", "text": "Mon"}], False),
            ("Bash", {"command": "ps aux"}, "boom", True),
            ("Read", {"command": "ls"}, "not bash", False),
        ]
    )
    policy = Ephemeral(commands=["git status", "ls", "date", "ps"])
    out = policy.prune(b.entries, CTX)
    by_id = {
        blk["tool_use_id"]: blk["content"]
        for m in conversation(out)
        for blk in m["content"]
        if blk.get("type") == "tool_result"
    }
    assert by_id[ids[0]] == f"{stale_note()}\n M a.py"
    assert by_id[ids[1]].startswith(stale_note())
    assert by_id[ids[2]] == "gone"
    assert by_id[ids[3]] == [
        {"type": "text", "text": stale_note()},
        {"type": "text", "text": "Mon"},
    ]
    assert by_id[ids[4]] == "boom"
    assert by_id[ids[5]] == "not bash"
    assert policy.prune(out, CTX) == out


def _long_session(b: TranscriptBuilder, big: str, turns: int = 4) -> str:
    b.user("read it")
    [tid] = b.tool_round([("Read", {"file_path": "/x"}, big, False)])
    for i in range(turns):
        b.user(f"q{i}")
        b.assistant([{"type": "text", "text": f"a{i}"}])
    return tid


def test_trim_moves_large_old_results_to_a_file_once(tmp_path: Path) -> None:
    b = TranscriptBuilder(session_id="s-1")
    big = "line\n" * 2000
    tid = _long_session(b, big)
    ctx = PruneContext(run_dir=tmp_path)
    policy = Trim(min_chars=1000, keep_recent_turns=3)
    out = policy.prune(b.entries, ctx)
    path = tmp_path / "trimmed" / "s-1" / f"{tid}.txt"
    assert path.read_text() == big
    [pointer] = [
        blk["content"]
        for m in conversation(out)
        for blk in m["content"]
        if blk.get("tool_use_id") == tid
    ]
    assert str(path.resolve()) in pointer and len(pointer) < 1000
    mtime = path.stat().st_mtime_ns
    assert policy.prune(b.entries, ctx) == out
    assert policy.prune(out, ctx) == out
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_trim_keeps_recent_turns_and_small_results(tmp_path: Path) -> None:
    b = TranscriptBuilder()
    _long_session(b, "x" * 5000, turns=2)
    assert (
        Trim(min_chars=1000, keep_recent_turns=3).prune(b.entries, PruneContext(run_dir=tmp_path))
        == b.entries
    )
    assert (
        Trim(min_chars=10_000, keep_recent_turns=0).prune(b.entries, PruneContext(run_dir=tmp_path))
        == b.entries
    )
    assert not (tmp_path / "trimmed").exists()


def test_trim_keeps_the_full_result_when_the_file_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "trimmed"
    blocker.write_text("a file where a folder should be")
    b = TranscriptBuilder()
    _long_session(b, "y" * 5000)
    assert (
        Trim(min_chars=1000, keep_recent_turns=1).prune(b.entries, PruneContext(run_dir=tmp_path))
        == b.entries
    )


def test_trim_does_not_overwrite_a_different_file_with_the_same_name(tmp_path: Path) -> None:
    b = TranscriptBuilder(session_id="s")
    tid = _long_session(b, "z" * 5000)
    clash = tmp_path / "trimmed" / "s" / f"{tid}.txt"
    clash.parent.mkdir(parents=True, mode=0o700)
    clash.parent.parent.chmod(0o700)
    clash.write_text("something else")
    out = Trim(min_chars=1000, keep_recent_turns=1).prune(b.entries, PruneContext(run_dir=tmp_path))
    assert clash.read_text() == "something else"
    [other] = [p for p in clash.parent.iterdir() if p != clash]
    assert other.read_text() == "z" * 5000
    assert str(other.resolve()) in str(conversation(out))


def test_trim_compares_content_not_only_size(tmp_path: Path) -> None:
    b = TranscriptBuilder(session_id="s")
    tid = _long_session(b, "z" * 5000)
    clash = tmp_path / "trimmed" / "s" / f"{tid}.txt"
    clash.parent.mkdir(parents=True, mode=0o700)
    clash.write_text("q" * 5000)  # the same size, another content (a redacted copy, say)
    out = Trim(min_chars=1000, keep_recent_turns=1).prune(b.entries, PruneContext(run_dir=tmp_path))
    [other] = [p for p in clash.parent.iterdir() if p != clash]
    assert other.read_text() == "z" * 5000 and clash.read_text() == "q" * 5000
    assert str(other.resolve()) in str(conversation(out))
    # a second process (a new policy) finds both files and writes nothing
    mtimes = {p.name: p.stat().st_mtime_ns for p in clash.parent.iterdir()}
    again = Trim(min_chars=1000, keep_recent_turns=1).prune(
        b.entries, PruneContext(run_dir=tmp_path)
    )
    assert again == out
    assert {p.name: p.stat().st_mtime_ns for p in clash.parent.iterdir()} == mtimes


def test_holds_tells_a_missing_file_from_a_different_one(tmp_path: Path) -> None:
    from flower_plugins.pruning.policies import holds

    path = tmp_path / "toolu_1.txt"
    assert holds(path, b"abc") is None
    path.write_bytes(b"abc")
    assert holds(path, b"abc") is True and holds(str(path), b"abc") is True
    assert holds(path, b"abd") is False  # same size, other bytes
    assert holds(path, b"abcd") is False and holds(path, b"ab") is False
    fifo = tmp_path / "toolu_2.txt"
    os.mkfifo(fifo)  # no writer: a blocking open would hang here
    assert holds(fifo, b"") is False
    assert holds(tmp_path, b"x" * tmp_path.stat().st_size) is False  # a folder


def test_trim_dry_run_writes_nothing(tmp_path: Path) -> None:
    b = TranscriptBuilder()
    _long_session(b, "w" * 5000)
    out = Trim(min_chars=1000, keep_recent_turns=1).prune(
        b.entries, PruneContext(run_dir=tmp_path, options={"dry_run": True})
    )
    assert out != b.entries
    assert not (tmp_path / "trimmed").exists()


@pytest.mark.parametrize(
    "policy",
    [
        SyntheticErrors(),
        Denials(keep=0),
        Interrupted(),
        Ephemeral(commands=["ls"]),
        Trim(min_chars=1, keep_recent_turns=0),
    ],
)
def test_unknown_entry_types_pass_through_untouched(policy: object, tmp_path: Path) -> None:
    odd = [
        {"type": "queue-operation", "operation": "enqueue", "content": "ls"},
        {"type": "custom-title", "customTitle": "x", "sessionId": "s"},
        {
            "type": "mystery",
            "uuid": "m1",
            "parentUuid": None,
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t"}]},
        },
    ]
    out = policy.prune(odd, PruneContext(run_dir=tmp_path))  # type: ignore[attr-defined]
    assert out == odd
    assert all(a is b for a, b in zip(out, odd, strict=True))


def test_trim_writes_no_file_of_tool_output_when_encryption_is_on(tmp_path: Path) -> None:
    """Its file would hold the tool's output in the clear (issue 29 item 7): with
    encryption on, results stay whole, in the sealed transcript."""
    from flower.core.config import SessionsConfig, Settings

    b = TranscriptBuilder(session_id="s-1")
    _long_session(b, "line\n" * 2000)
    settings = Settings(sessions=SessionsConfig(encrypt=True))
    policy = Trim(settings, min_chars=1000, keep_recent_turns=3)
    assert policy.prune(b.entries, PruneContext(run_dir=tmp_path)) == b.entries
    assert not (tmp_path / "trimmed").exists()
