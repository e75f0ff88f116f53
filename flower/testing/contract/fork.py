"""Contract cases for :func:`flower.core.fork.fork`: it must work on every store."""

from __future__ import annotations

import itertools
from typing import Any

from flower.core.fork import ForkError, fork
from flower.core.records import Entry, SessionKey
from flower.core.transcript.chain import active_chain
from flower.testing.contract.runner import Case, CaseContext
from flower.testing.contract.sessions import KEY, PROJECT, expect_equal, expect_raises

Ctx = CaseContext[Any]

FORK_ID = "5f1c1e4a-0000-4000-8000-0000000000f1"


def _turn(uid: str, kind: str, parent: str | None, text: str, **fields: Any) -> Entry:
    entry: Entry = {
        "type": kind,
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": KEY.session_id,
        "timestamp": "2026-11-30T02:15:31.000Z",
        "isSidechain": False,
        "message": {"role": "assistant" if kind == "assistant" else "user", "content": text},
    }
    entry.update(fields)
    return entry


def branched() -> list[Entry]:
    """Two prompts, a rewound side branch after the first reply, a compaction boundary."""
    return [
        _turn("u-1", "user", None, "first"),
        _turn("a-1", "assistant", "u-1", "one"),
        _turn("u-x", "user", "a-1", "abandoned"),  # a side branch: not on the chain
        _turn("a-x", "assistant", "u-x", "abandoned reply"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "c-1",
            "parentUuid": None,
            "logicalParentUuid": "a-1",
            "sessionId": KEY.session_id,
            "isSidechain": False,
        },
        _turn("s-1", "user", "c-1", "summary", isCompactSummary=True),
        _turn("u-2", "user", "s-1", "second", sourceToolAssistantUUID="a-1", slug="x"),
        _turn("a-2", "assistant", "u-2", "two"),
    ]


def _conversation(entries: list[Entry]) -> list[Any]:
    return [(e["type"], e.get("message")) for e in active_chain(entries)]


def fork_copies_the_chain(ctx: Ctx) -> None:
    store = ctx.store()
    source = branched()
    store.append(KEY, source)
    target = fork(store, KEY, session_id=FORK_ID)
    expect_equal(target, SessionKey(PROJECT, FORK_ID), "the fork's key")
    expect_equal(store.load(KEY), source, "the source after a fork")
    copied = store.load(target) or []
    chain = [e for e in copied if e["type"] != "custom-title"]
    expect_equal(
        [e["forkedFrom"]["messageUuid"] for e in chain],
        ["c-1", "s-1", "u-2", "a-2"],
        "what the fork copied: the active chain (from the compaction boundary on)",
    )
    for entry in copied:
        expect_equal(entry["sessionId"], FORK_ID, "sessionId of a copied entry")
    olds = {e["uuid"] for e in source}
    if any(e["uuid"] in olds for e in copied):
        raise AssertionError("a fork reused a uuid of its source")
    for before, after in itertools.pairwise(chain):
        expect_equal(after["parentUuid"], before["uuid"], "a copied entry's parentUuid")
    expect_equal(chain[0]["parentUuid"], None, "the boundary's parentUuid")
    expect_equal(chain[0]["logicalParentUuid"], None, "a logicalParentUuid left outside the fork")
    expect_equal(
        chain[0]["forkedFrom"], {"sessionId": KEY.session_id, "messageUuid": "c-1"}, "forkedFrom"
    )
    for dropped in ("sourceToolAssistantUUID", "slug"):
        if any(dropped in e for e in copied):
            raise AssertionError(f"the fork kept {dropped}, which names the source's state")
    expect_equal(copied[-1]["type"], "custom-title", "the fork's last entry")
    expect_equal(copied[-1]["customTitle"], "first (fork)", "the fork's title")
    expect_equal(_conversation(copied), _conversation(source), "the conversation of the fork")
    listed = {info.session_id for info in store.list_sessions(PROJECT)}
    expect_equal(listed, {KEY.session_id, FORK_ID}, "sessions after a fork")


def fork_at_an_entry(ctx: Ctx) -> None:
    store = ctx.store()
    source = [
        _turn("u-1", "user", None, "first"),
        _turn("a-1", "assistant", "u-1", "one", logicalParentUuid="u-1"),
        _turn("u-2", "user", "a-1", "second"),
        _turn("a-2", "assistant", "u-2", "two"),
    ]
    store.append(KEY, source)
    copied = store.load(fork(store, KEY, "a-1", session_id=FORK_ID)) or []
    chain = [e for e in copied if e["type"] != "custom-title"]
    expect_equal([e["forkedFrom"]["messageUuid"] for e in chain], ["u-1", "a-1"], "a fork at a-1")
    expect_equal(chain[1]["logicalParentUuid"], chain[0]["uuid"], "a re-linked logicalParentUuid")


def fork_is_idempotent(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, branched())
    first = fork(store, KEY, "u-2", session_id=FORK_ID)
    once = store.load(first)
    again = fork(store, KEY, "u-2", session_id=FORK_ID)
    expect_equal(again, first, "the key of a repeated fork")
    expect_equal(store.load(again), once, "a fork repeated with the same id")


def fork_refuses_bad_input(ctx: Ctx) -> None:
    store = ctx.store()
    store.append(KEY, branched())
    before = {info.session_id for info in store.list_sessions(PROJECT)}
    expect_raises(
        ForkError, lambda: fork(store, KEY, "u-x", session_id=FORK_ID), "an entry off the chain"
    )
    expect_raises(
        ForkError, lambda: fork(store, KEY, "nope", session_id=FORK_ID), "an unknown entry"
    )
    expect_equal(store.load(SessionKey(PROJECT, FORK_ID)), None, "a refused fork wrote")
    other = SessionKey(PROJECT, "5f1c1e4a-0000-4000-8000-0000000000f2")
    store.append(other, [_turn("o-1", "user", None, "another session")])
    expect_raises(
        ForkError,
        lambda: fork(store, KEY, session_id=other.session_id),
        "a fork into a session that holds another transcript",
    )
    expect_equal(len(store.load(other) or []), 1, "the other session after a refused fork")
    after = {info.session_id for info in store.list_sessions(PROJECT)}
    expect_equal(after, before | {other.session_id}, "sessions after refused forks")


FORK_CASES: list[Case[Any]] = [
    Case("fork_copies_the_chain", "fork copies the active chain, re-linked", fork_copies_the_chain),
    Case("fork_at_an_entry", "fork at an entry ends there", fork_at_an_entry),
    Case("fork_is_idempotent", "a fork repeated with its id changes nothing", fork_is_idempotent),
    Case(
        "fork_refuses_bad_input",
        "an entry off the chain or a taken id writes nothing",
        fork_refuses_bad_input,
    ),
]
