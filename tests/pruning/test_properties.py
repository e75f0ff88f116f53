"""Property tests: generated transcripts with errors, denials, interruptions, forks and
compaction boundaries, in both entry shapes, through each policy and the whole chain."""

from __future__ import annotations

import copy
import tempfile
import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pruning_builders import TranscriptBuilder, built_in_policies

from flower.core.protocols import PruneContext
from flower.core.transcript import (
    active_chain,
    context_start,
    conversation,
    conversation_problems,
)
from flower.stores.prune import PruningWarning, prune
from flower_plugins.pruning import Denials, Ephemeral, Interrupted, SyntheticErrors, Trim

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


def connected(entries: list[dict]) -> bool:
    uuids = {e.get("uuid") for e in entries if e.get("uuid")}
    return all(
        e.get(field) is None or e.get(field) in uuids
        for e in entries
        for field in ("parentUuid", "logicalParentUuid")
    )


def split_at_context(entries: list[dict]) -> tuple[list[dict], list[dict]]:
    """(history the model no longer sees, the part pruning works on)."""
    start = context_start(entries)
    return entries[:start], entries[start:]


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


def test_the_generator_makes_transcripts_pruned_from_their_last_compaction() -> None:
    entries = build([("tool", 1), ("compact", 0), ("api-error", 2), ("turn", 3)], True)
    history, live = split_at_context(entries)
    assert history and live[0]["subtype"] == "compact_boundary"


@FAST
@given(transcripts)
def test_the_chain_yields_a_valid_conversation_without_the_safety_net(entries: list[dict]) -> None:
    raw = copy.deepcopy(entries)
    current = entries
    for policy in policies():
        current = policy.prune(current, ctx())
    assert entries == raw
    assert connected(current)
    assert conversation_problems(conversation(current)) == []
    history, live = split_at_context(entries)
    live_pruned = live
    for policy in policies():
        live_pruned = policy.prune(live_pruned, ctx())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PruningWarning)  # the safety net has nothing to fix
        pruned = prune(entries, policies(), ctx())
    # the history before the last compaction is kept as stored; the model sees exactly
    # what pruning the whole transcript would show it
    assert pruned == history + live_pruned
    assert conversation(pruned) == conversation(current)
    assert prune(pruned, policies(), ctx()) == pruned


@FAST
@given(transcripts)
def test_the_safety_net_alone_makes_any_generated_transcript_valid(entries: list[dict]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)
        out = prune(entries, [], ctx())
    assert connected(out)
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


@given(transcripts, st.permutations(range(5)), st.integers(min_value=0, max_value=2))
def test_the_shared_index_path_gives_exactly_the_generic_output(
    entries: list[dict], order: list[int], keep: int
) -> None:
    from flower.core.transcript_index import Fallback, TranscriptIndex
    from flower.stores.prune import run_policies

    built_ins = built_in_policies(keep)
    chain = [built_ins[i] for i in order]
    before = copy.deepcopy(entries)
    generic = list(entries)
    for policy in chain:
        generic = policy.prune(generic, ctx())
    assert run_policies(entries, chain, ctx()) == generic
    try:
        index = TranscriptIndex(entries, ctx())
        for policy in chain:
            policy.plan(index)
    except Fallback:
        return
    assert index.materialise() == generic
    assert entries == before


def test_a_transcript_outside_the_index_falls_back_to_the_generic_path() -> None:
    from flower.core.transcript_index import Fallback, TranscriptIndex
    from flower.stores.prune import run_policies

    b = TranscriptBuilder()
    b.user("start")
    b.tool_round([("Bash", {"command": "git status"}, "clean", False)])
    b.api_error()
    b.user("again")
    entries = [*b.entries, dict(b.entries[1])]  # a duplicated uuid: not covered
    with_errors = [SyntheticErrors(), Ephemeral(commands=["git status"])]
    generic = list(entries)
    for policy in with_errors:
        generic = policy.prune(generic, ctx())
    try:
        TranscriptIndex(entries)
        raise AssertionError("a duplicated uuid must not be indexed")
    except Fallback:
        pass
    assert run_policies(entries, with_errors, ctx()) == generic


@given(transcripts, st.permutations(range(5)), st.integers(min_value=0, max_value=2))
def test_the_index_walks_the_same_active_chain_as_the_built_view(
    entries: list[dict], order: list[int], keep: int
) -> None:
    from flower.core.transcript_index import Fallback, TranscriptIndex

    built_ins = built_in_policies(keep)
    chosen = [built_ins[i] for i in order]
    for upto in (0, 1, len(chosen)):  # no edit, one policy's edits, all of them
        try:
            index = TranscriptIndex(entries, ctx())
            for policy in chosen[:upto]:
                policy.plan(index)
            chain = index.active_chain()
        except Fallback:
            continue
        assert chain == active_chain(index.materialise())


@FAST
@given(transcripts, st.booleans())
def test_the_one_pass_validity_check_agrees_with_the_problem_list(
    entries: list[dict], pruned: bool
) -> None:
    from flower.core.transcript import chain_is_valid, to_messages

    if pruned:
        entries = run_policies_generic(entries)
    for chain in (active_chain(entries), entries):
        assert chain_is_valid(chain) == (conversation_problems(to_messages(chain)) == [])


def run_policies_generic(entries: list[dict]) -> list[dict]:
    current = entries
    for policy in policies()[:2]:  # leaves cut calls unanswered: invalid chains too
        current = policy.prune(current, ctx())
    return current


@FAST
@given(transcripts, st.integers(min_value=0, max_value=4))
def test_the_chain_a_load_gives_the_engine_is_the_active_chain_of_the_view(
    entries: list[dict], first: int
) -> None:
    from flower.stores.prune import prune_to_chain

    chosen = policies()[first:]  # down to trim alone: chains the index check must vouch for
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PruningWarning)
        view, chain = prune_to_chain(entries, chosen, ctx())
        assert view == prune(entries, chosen, ctx())
    assert chain == active_chain(view)


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
