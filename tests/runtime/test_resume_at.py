"""``Runtime.run(..., resume=ID, resume_at=UUID)``: continue a fork made at that entry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from flower.core.fork import ForkError, forked_from
from flower.core.transcript import active_chain, check_conversation
from flower.runtime.engine import InvalidRunOptionError, Runtime
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import FakeMessagesAPI, text

READER = AgentSpec("reader", "Be terse.", allowed_tools=["Read"], max_turns=4, model="m-1")


def test_resume_at_continues_a_fork_of_that_entry(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(text("tulip"), text("rose"))
    rt = make_runtime()
    first = asyncio.run(rt.run(READER, "Which flower?"))
    second = asyncio.run(rt.run(READER, "Another?", resume=first.session_id))
    old = rt.store.load(rt.key(first.session_id))
    tulip = next(e for e in old if e["type"] == "assistant")

    fake_api.add(text("daisy"))
    third = asyncio.run(
        rt.run(READER, "A third?", resume=second.session_id, resume_at=tulip["uuid"])
    )
    assert third.ok and third.session_id != first.session_id
    assert rt.store.load(rt.key(first.session_id)) == old  # the old session is untouched
    forked = rt.store.load(rt.key(third.session_id))
    assert forked_from(forked).session_id == first.session_id
    sent = fake_api.requests[-1].messages
    check_conversation(sent)
    said = [m["content"][-1]["text"] for m in sent]
    assert said == ["Which flower?", "tulip", "A third?"]  # "Another?" and "rose" are gone
    words = [
        b["text"]
        for e in active_chain(forked)
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    assert words[-1] == "daisy"


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_resume_at_off_the_chain_or_without_resume_spends_nothing(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(text("tulip"))
    rt = make_runtime()
    first = asyncio.run(rt.run(READER, "Which flower?"))
    asked = len(fake_api.requests)
    with pytest.raises(ForkError, match="not on the active chain"):
        asyncio.run(rt.run(READER, "again", resume=first.session_id, resume_at="nope"))
    with pytest.raises(InvalidRunOptionError, match="needs resume=ID"):
        asyncio.run(rt.run(READER, "again", resume_at="nope"))
    assert len(fake_api.requests) == asked
    assert [i.session_id for i in rt.store.list_sessions(rt.project_key)] == [first.session_id]
