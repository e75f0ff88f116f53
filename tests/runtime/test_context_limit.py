"""``Runtime.run(context_limit=...)`` stops between turns, and ``relay_from`` marks a
relayed session's first entry (the real Runtime on the fake Messages API)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from flower.core.errors import FlowerError
from flower.core.transcript import check_conversation, context_tokens, to_messages
from flower.runtime.engine import InvalidRunOptionError, Runtime
from flower.runtime.spec import STOP_CONTEXT_LIMIT, STOP_MAX_TURNS, AgentSpec
from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest, reply, text, tool_use

MODEL = "claude-sonnet-4-6"
WORKER = AgentSpec("worker", "Work.", allowed_tools=["Read"], max_turns=50, model=MODEL)
MakeRuntime = Callable[..., Runtime]


def growing(step: int, *, finish_after: int = 1000) -> Callable[[RecordedRequest], Any]:
    """A worker that reads a file every turn; request n reports a context of n * step."""
    calls = {"n": 0}

    def handle(req: RecordedRequest) -> Any:
        calls["n"] += 1
        usage = {"input_tokens": 3, "cache_read_input_tokens": calls["n"] * step - 3}
        if calls["n"] >= finish_after:
            return text("all done", usage=usage)
        return reply(f"turn {calls['n']}", tool_use("Read", {"file_path": "seed.txt"}), usage=usage)

    return handle


def reported(fake: FakeMessagesAPI, step: int) -> list[int]:
    """The context of each request, as the fake's usage script reports it."""
    return [step * (i + 1) for i in range(len(fake.requests))]


def test_the_run_stops_between_turns_before_the_context_reaches_the_limit(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.set_script(growing(1000))
    rt = make_runtime()
    result = asyncio.run(rt.run(WORKER, "work", context_limit=4500))

    assert result.stop == STOP_CONTEXT_LIMIT and not result.ok
    assert "context_limit=4,500" in (result.error or "")
    # 1000, 2000, 3000: a fourth request (4000) would leave no room for a handoff (5000)
    assert len(fake_api.requests) == 3 and result.num_turns == 3
    assert max(reported(fake_api, 1000)) < 4500
    assert result.context == 3000
    entries = rt.store.load(rt.key(result.session_id or ""))
    assert entries is not None
    # a safe point: the last tool_use has its result stored, the chain is a valid conversation
    assert entries[-1]["type"] == "user" and "toolUseResult" in entries[-1]
    check_conversation(to_messages(entries))


def test_a_stopped_session_resumes_cleanly(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.set_script(growing(1000))
    rt = make_runtime()
    first = asyncio.run(rt.run(WORKER, "work", context_limit=4500))
    fake_api.set_script([text("handoff written")])
    again = asyncio.run(rt.run(WORKER, "write a handoff", resume=first.session_id))
    assert again.ok and again.stop is None
    sent = fake_api.last_request.messages
    # the resume prompt joined the pending tool_result turn: no dangling tool_use
    assert [b["type"] for b in sent[-1]["content"]] == ["tool_result", "text"]


def test_a_large_tool_result_counts_before_the_api_reports_it(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, workspace: Any
) -> None:
    # 120 lines of 70 characters: over 2,000 tokens once read
    (workspace / "big.txt").write_text(("x" * 70 + "\n") * 120, encoding="utf-8")
    fake_api.set_script(
        [
            reply(tool_use("Read", {"file_path": "big.txt"}), usage={"input_tokens": 1000}),
            text("never sent"),
        ]
    )
    rt = make_runtime()
    result = asyncio.run(rt.run(WORKER, "read big.txt", context_limit=5000))
    assert result.stop == STOP_CONTEXT_LIMIT and len(fake_api.requests) == 1


def test_without_a_limit_or_under_it_the_run_goes_to_its_end(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.set_script(growing(1000, finish_after=6))
    rt = make_runtime()
    result = asyncio.run(rt.run(WORKER, "work"))
    assert result.ok and result.stop is None and result.num_turns == 6

    fake_api.set_script(growing(10, finish_after=4))
    result = asyncio.run(rt.run(WORKER, "work", context_limit=100_000))
    assert result.ok and result.stop is None and result.num_turns == 4


def test_max_turns_is_named_in_stop(make_runtime: MakeRuntime, fake_api: FakeMessagesAPI) -> None:
    fake_api.set_script(growing(10))
    short = AgentSpec("short", "Work.", allowed_tools=["Read"], max_turns=2, model=MODEL)
    result = asyncio.run(make_runtime().run(short, "work"))
    assert result.stop == STOP_MAX_TURNS and not result.ok


def test_relay_from_is_on_the_first_user_entry_only(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.set_script([text("old"), reply(tool_use("Read", {"file_path": "seed.txt"})), "new"])
    rt = make_runtime()
    old = asyncio.run(rt.run(WORKER, "first")).session_id
    new = asyncio.run(rt.run(WORKER, "seeded", relay_from=old))
    entries = rt.store.load(rt.key(new.session_id or ""))
    assert entries is not None
    assert entries[0]["type"] == "user" and entries[0]["relayFrom"] == old
    assert [e for e in entries[1:] if "relayFrom" in e] == []


@pytest.mark.usefixtures("english")  # the errors are read in English
@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"context_limit": 0}, "context_limit must be a positive"),
        ({"context_limit": "160k"}, "context_limit must be a positive"),
        ({"context_limit": True}, "context_limit must be a positive"),
        ({"relay_from": ""}, "relay_from must be a session id"),
        ({"relay_from": "s-old", "resume": "s-1"}, "cannot be used with resume"),
    ],
)
def test_bad_options_are_clear_errors_before_anything_is_sent(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, kw: dict[str, Any], words: str
) -> None:
    rt = make_runtime()
    with pytest.raises(InvalidRunOptionError, match=words) as caught:
        asyncio.run(rt.run(WORKER, "work", **kw))
    assert isinstance(caught.value, FlowerError)
    assert fake_api.requests == [] and rt.store.list_sessions(rt.project_key) == []


def test_context_tokens_is_what_the_check_reads() -> None:
    # the limit is compared with the same figure the banner and relay use
    assert context_tokens({"input_tokens": 3, "cache_read_input_tokens": 997}) == 1000
