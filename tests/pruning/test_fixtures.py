"""Hand-written, anonymised transcripts in Claude Code's real shape (fixtures/*.jsonl)."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.protocols import PruneContext
from flower.core.transcript import (
    active_chain,
    conversation,
    conversation_problems,
    interrupted_note,
)
from flower.stores.prune import PruningSessionStore, PruningWarning, prune_with_stats
from flower_plugins.pruning.policies import stale_note

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def default_policies(tmp_path: Path) -> list:
    return PruningSessionStore.from_settings(object(), Settings(), run_dir=tmp_path).policies  # type: ignore[arg-type]


def test_claude_code_session_through_the_default_chain(tmp_path: Path) -> None:
    raw = load("claude_code_session.jsonl")
    before = copy.deepcopy(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)
        out, stats = prune_with_stats(
            raw, default_policies(tmp_path), PruneContext(run_dir=tmp_path)
        )
    assert raw == before
    messages = conversation(out)
    assert conversation_problems(messages) == []
    text = json.dumps(messages, ensure_ascii=False)
    assert "API Error" not in text
    assert '"command": "git push --force"' in text  # the newest denial is kept
    assert "summary" not in {e["type"] for e in active_chain(out)}
    assert messages[0]["content"][0]["text"].startswith("This session is being continued")
    # the compaction cut the chain: the STALE git status is before it, not in the messages
    assert stale_note() not in text
    # the view is the chain from the boundary on: the history before it (its API errors,
    # old denial and cut call included) is out of the model's context, and no policy
    # spent time on it
    boundary = next(i for i, e in enumerate(raw) if e.get("subtype") == "compact_boundary")
    assert out[0] is raw[boundary]
    history = {e.get("uuid") for e in raw[:boundary]}
    assert not any(e.get("uuid") in history for e in out)
    assert '"command": "rm -rf build"' in json.dumps(raw[:boundary])
    assert '"command": "rm -rf build"' not in json.dumps(out)
    assert [(s.policy, s.removed + s.changed + s.added) for s in stats] == [
        ("synthetic-errors", 0),
        ("denials", 0),
        ("interrupted", 0),
        ("ephemeral", 0),
        ("trim", 0),
        ("(repair)", 0),
    ]


def test_claude_code_session_before_compaction(tmp_path: Path) -> None:
    raw = load("claude_code_session.jsonl")
    boundary = next(i for i, e in enumerate(raw) if e.get("subtype") == "compact_boundary")
    head = raw[:boundary]
    assert conversation_problems(conversation(head))  # raw: the cut pytest -q is unanswered
    out, _ = prune_with_stats(head, default_policies(tmp_path), PruneContext(run_dir=tmp_path))
    messages = conversation(out)
    assert conversation_problems(messages) == []
    text = json.dumps(messages, ensure_ascii=False)
    assert stale_note() in text  # git status and ls
    assert interrupted_note() in text  # both the residue and the cut pytest -q
    assert 'Request interrupted by user for tool use]", "is_error' not in text
    assert messages[1]["content"][0]["type"] == "thinking"


def test_forked_session_follows_the_newest_branch_and_completes_parallel_results(
    tmp_path: Path,
) -> None:
    raw = load("forked_session.jsonl")
    out, _ = prune_with_stats(raw, default_policies(tmp_path), PruneContext(run_dir=tmp_path))
    messages = conversation(out)
    assert conversation_problems(messages) == []
    text = json.dumps(messages, ensure_ascii=False)
    assert "inlining the css" not in text and "minify app.js" in text
    assert [b["tool_use_id"] for b in messages[6]["content"]] == ["toolu_02", "toolu_03"]
    assert messages[6]["content"][1]["content"].startswith(stale_note())  # du is ephemeral


@pytest.mark.parametrize("name", ["claude_code_session.jsonl", "forked_session.jsonl"])
def test_fixtures_round_trip_through_a_store(name: str, tmp_path: Path) -> None:
    from pruning_memory_store import MemoryStore

    from flower.core.records import SessionKey

    raw = load(name)
    inner = MemoryStore()
    key = SessionKey("-home-user-proj", raw[-1].get("sessionId", "s"))
    view = PruningSessionStore.from_settings(inner, Settings(), run_dir=tmp_path)
    view.append(key, raw)
    assert view.load_raw(key) == raw
    assert conversation_problems(conversation(view.load(key) or [])) == []
