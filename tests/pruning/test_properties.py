"""Property tests: generated transcripts with errors, denials, interruptions, forks and
compaction boundaries, in both entry shapes, through each policy and the whole chain."""

from __future__ import annotations

import copy
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pruning_builders import TranscriptBuilder

from flower.core.protocols import PruneContext
from flower.core.transcript import (
    active_chain,
    conversation,
    conversation_problems,
)
from flower.stores.prune import PruningWarning, prune
from flower_plugins.pruning.policies import Denials, Ephemeral, Interrupted, SyntheticErrors, Trim

COMMANDS = [
    "git status",
    "ls -la",
    "date",
    "pytest -q",
    "cat setup.cfg",
    "ps aux | grep py",
    "make",
]
OPS = [
    "turn",
    "tool",
    "parallel",
    "big",
    "denied",
    "denied-flower",
    "interrupted",
    "cut",
    "api-error",
    "noise",
    "compact",
    "fork",
]
LINKS = ("parentUuid", "logicalParentUuid")
RUN_DIR = Path(tempfile.mkdtemp(prefix="flower-prune-props-"))


def policies() -> list[Any]:
    return [
        SyntheticErrors(),
        Denials(keep=1),
        Interrupted(),
        Ephemeral(commands=["git status", "ls", "date", "ps"]),
        Trim(min_chars=300, keep_recent_turns=2),
    ]


def build(ops: list[tuple[str, int]], streamed: bool) -> list[dict]:
    b = TranscriptBuilder(streamed=streamed)
    b.user("start")
    prompts: list[dict] = [b.entries[-1]]
    for op, n in ops:
        command = COMMANDS[n % len(COMMANDS)]
        if op == "turn":
            prompts.append(b.user(f"question {n}"))
            b.assistant([{"type": "text", "text": f"answer {n}"}])
        elif op == "tool":
            b.tool_round([("Bash", {"command": command}, f"output {n}", n % 5 == 0)])
        elif op == "parallel":
            b.tool_round(
                [("Bash", {"command": c}, f"out {c}", False) for c in COMMANDS[: 2 + n % 3]]
            )
        elif op == "big":
            b.tool_round([("Read", {"file_path": f"/f{n}"}, "x" * (400 + n), False)], text=None)
        elif op == "denied":
            b.denied(f"rm -rf d{n}")
        elif op == "denied-flower":
            b.denied(f"rm -rf f{n}", claude_code=False)
        elif op == "interrupted":
            b.interrupted(command)
        elif op == "cut":
            b.cut(command)
            prompts.append(b.user("continue"))
        elif op == "api-error":
            for _ in range(1 + n % 3):
                b.api_error()
        elif op == "noise":
            [b.progress, b.system, b.snapshot, b.summary][n % 4]()
        elif op == "compact":
            b.compact(f"summary {n}")
        elif op == "fork":
            # a rewind: a new prompt beside an earlier one (Claude Code's double-Esc)
            b.rewind_to(prompts[n % len(prompts)]["parentUuid"])
            prompts.append(b.user(f"instead {n}"))
            b.assistant([{"type": "text", "text": f"new branch {n}"}])
    return b.entries


transcripts = st.builds(
    build,
    st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), min_size=1, max_size=40),
    st.booleans(),
)
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def connected(entries: list[dict], fields: Sequence[str] = LINKS) -> bool:
    uuids = {e.get("uuid") for e in entries if e.get("uuid")}
    return all(e.get(field) is None or e.get(field) in uuids for e in entries for field in fields)


def chain_connected(view: list[dict]) -> bool:
    """A view (an active chain) links inside itself; only its root may point out of it
    (a compaction boundary's ``logicalParentUuid`` names the history it summarises)."""
    return not view or connected([{"uuid": view[0].get("uuid")}, *view[1:]], ["parentUuid"])


def ctx() -> PruneContext:
    return PruneContext(run_dir=RUN_DIR)


@FAST
@given(transcripts)
def test_the_generator_makes_connected_transcripts(entries: list[dict]) -> None:
    assert connected(entries)


@FAST
@given(transcripts)
def test_each_policy_keeps_input_unchanged_chain_connected_and_is_idempotent(
    entries: list[dict],
) -> None:
    raw = copy.deepcopy(entries)
    for policy in policies():
        once = policy.prune(entries, ctx())
        assert entries == raw, policy.name
        assert connected(once), policy.name
        snapshot = copy.deepcopy(once)
        assert policy.prune(once, ctx()) == once, policy.name
        assert once == snapshot, policy.name


@FAST
@given(transcripts)
def test_a_policy_copies_only_the_entries_it_changes(entries: list[dict]) -> None:
    """Copy on edit (issue 32 item 12): an entry a policy leaves as it was is the very
    object it was given, and a policy with nothing left to change copies nothing: it
    returns the very list it was given."""
    for policy in policies():
        given_by_uuid = {e["uuid"]: e for e in entries if e.get("uuid")}
        once = policy.prune(entries, ctx())
        for entry in once:
            before = given_by_uuid.get(entry.get("uuid"))
            if before is not None and before == entry:
                assert entry is before, policy.name
        again = policy.prune(once, ctx())
        assert again is once, policy.name
        entries = once


def test_the_generator_makes_transcripts_whose_chain_starts_at_the_last_compaction() -> None:
    entries = build([("tool", 1), ("compact", 0), ("api-error", 2), ("turn", 3)], True)
    chain = active_chain(entries)
    assert chain[0]["subtype"] == "compact_boundary" and len(chain) < len(entries)


@FAST
@given(transcripts)
def test_the_chain_yields_a_valid_conversation_without_the_safety_net(entries: list[dict]) -> None:
    raw = copy.deepcopy(entries)
    chain = active_chain(entries)
    current = chain
    for policy in policies():
        current = policy.prune(current, ctx())
    assert entries == raw
    assert conversation_problems(conversation(current)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)  # the safety net has nothing to fix
        pruned = prune(entries, policies(), ctx())
    # the view is the pruned active chain: what the model is sent, nothing else
    assert pruned == active_chain(current)
    assert active_chain(pruned) == pruned
    assert prune(pruned, policies(), ctx()) == pruned
    # nothing off the chain reaches the view: every entry is a chain entry (maybe
    # changed) or a view-only note
    on_chain = {e.get("uuid") for e in chain}
    assert all(e.get("uuid") in on_chain or e.get("flowerSynthetic") for e in pruned)


@FAST
@given(transcripts)
def test_the_safety_net_alone_makes_any_generated_transcript_valid(entries: list[dict]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)
        out = prune(entries, [], ctx())
    assert chain_connected(out)
    assert conversation_problems(conversation(out)) == []


@FAST
@given(transcripts)
def test_pruning_never_loses_the_newest_user_words(entries: list[dict]) -> None:
    chain = active_chain(entries)
    prompts = [
        e["message"]["content"]
        for e in chain
        if e["type"] == "user" and isinstance(e["message"]["content"], str)
    ]
    texts = [
        b.get("text")
        for m in conversation(prune(entries, policies(), ctx()))
        for b in m["content"]
        if b.get("type") == "text"
    ]
    assert prompts[-1] in texts


@FAST
@given(transcripts, st.booleans())
def test_the_leaf_a_resume_writes_after_is_the_last_turn_of_the_active_chain(
    entries: list[dict], reuse_uuid: bool
) -> None:
    from flower.core.transcript import is_conversation, leaf_uuid

    if reuse_uuid and entries:  # corrupt data: a later entry takes the leaf's uuid
        entries = [*entries, {"type": "progress", "uuid": leaf_uuid(entries)}]
    walked = [e for e in active_chain(entries) if is_conversation(e)]
    assert leaf_uuid(entries) == (walked[-1].get("uuid") if walked else None)
