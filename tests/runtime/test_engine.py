from __future__ import annotations

import asyncio
import errno
import itertools
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import fast_resilience

from flower.core.errors import UnknownSessionError
from flower.core.i18n import _
from flower.core.records import SessionKey
from flower.core.transcript import check_conversation
from flower.runtime.credentials import MissingAPIKeyError
from flower.runtime.engine import Runtime
from flower.runtime.events import StepDone, TextDelta, ToolCall, ToolResult, TurnEnd
from flower.runtime.loop import MAX_TOKENS_NUDGE, TRUNCATED_TOOL_USE
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import (
    FakeMessagesAPI,
    Reply,
    dropped,
    ended_early,
    model_not_found,
    overloaded,
    reply,
    sse_error,
    text,
    tool_use,
)

MODEL = "claude-sonnet-4-6"
READER = AgentSpec("reader", "Be terse.", allowed_tools=["Read"], max_turns=6, model=MODEL)
MakeRuntime = Callable[..., Runtime]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def chain_is_linked(entries: list[dict[str, Any]]) -> None:
    """Every entry's parent is the entry written just before it (one linear chain)."""
    assert entries[0]["parentUuid"] is None
    for before, after in itertools.pairwise(entries):
        assert after["parentUuid"] == before["uuid"]


def test_multi_turn_tool_run_persists_every_turn(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, workspace: Path
) -> None:
    fake_api.add(
        reply("Reading.", tool_use("Read", {"file_path": "seed.txt"}, id="toolu_read1")),
        reply(tool_use("Bash", {"command": "ls"}, id="toolu_bash1")),
        text("tulip"),
    )
    rt = make_runtime()
    result = run(rt.run(READER, "Which word is in seed.txt?"))

    assert result.ok and result.error is None
    assert result.text == "tulip"
    assert result.num_turns == 3 and result.attempts == 1 and not result.resumed
    assert result.step == "reader" and result.duration_s >= 0

    entries = rt.store.load(rt.key(result.session_id))
    assert [e["type"] for e in entries] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    chain_is_linked(entries)
    prompt, first, read_result, _second, denial, last = entries
    for entry in entries:
        assert entry["sessionId"] == result.session_id
        assert entry["cwd"] == str(workspace)
        assert entry["timestamp"].endswith("Z")
        assert entry["isSidechain"] is False and entry["userType"] == "external"
    assert prompt["message"] == {"role": "user", "content": "Which word is in seed.txt?"}
    assert first["message"]["id"].startswith("msg_")
    assert first["message"]["model"] == MODEL
    assert first["message"]["stop_reason"] == "tool_use"
    assert first["message"]["usage"]["input_tokens"] == 10
    assert first["requestId"].startswith("req_")
    assert first["message"]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_read1",
        "name": "Read",
        "input": {"file_path": "seed.txt"},
    }
    block = read_result["message"]["content"][0]
    assert block["tool_use_id"] == "toolu_read1" and "tulip" in block["content"]
    assert block["is_error"] is False
    assert read_result["sourceToolAssistantUUID"] == first["uuid"]
    assert read_result["toolUseResult"]
    denied = denial["message"]["content"][0]
    assert denied["is_error"] is True and denied["content"].startswith("Permission denied:")
    assert denial["toolUseResult"]["denied"] is True
    assert last["message"]["stop_reason"] == "end_turn"

    # what the model was sent: the whole conversation, cache marks on system + prefix
    final = fake_api.requests[-1].body
    assert final["stream"] is True
    assert final["system"] == [
        {"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert {t["name"] for t in final["tools"]} >= {"Read", "Write", "Edit", "Glob", "Grep", "Bash"}
    messages = final["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert messages[-3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    check_conversation(messages)
    # cache marks are request-only: nothing stored carries them
    assert "cache_control" not in str(entries)


def test_resume_continues_the_same_chain_and_sends_the_full_conversation(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(reply(tool_use("Read", {"file_path": "seed.txt"})), text("tulip"))
    rt = make_runtime()
    first = run(rt.run(READER, "Read seed.txt."))
    before = rt.store.load(rt.key(first.session_id))

    fake_api.add(text("Still tulip."))
    rt2 = make_runtime()
    second = run(rt2.run(READER, "And now?", resume=first.session_id))

    assert second.ok and second.resumed and second.session_id == first.session_id
    after = rt2.store.load(rt2.key(first.session_id))
    assert after[: len(before)] == before
    assert after[len(before)]["parentUuid"] == before[-1]["uuid"]
    assert after[len(before)]["message"]["content"] == "And now?"
    chain_is_linked(after)
    sent = fake_api.requests[-1].messages
    check_conversation(sent)
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[-1]["content"][-1]["text"] == "And now?"
    assert rt2.has_session(first.session_id)
    assert rt2.context_size(first.session_id) == 10


def test_a_resume_reads_the_transcript_from_the_store_once(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_api.add(text("tulip"))
    first = run(make_runtime().run(READER, "Which flower?"))
    fake_api.add(text("Still tulip."))
    rt = make_runtime()
    key = rt.key(first.session_id)
    loads: list[SessionKey] = []
    load = rt.store.load
    monkeypatch.setattr(rt.store, "load", lambda k: loads.append(k) or load(k))

    second = run(rt.run(READER, "And now?", resume=first.session_id))
    assert second.ok and second.resumed
    assert loads == [key]  # the writer's leaf and the pruned view share one read
    assert fake_api.requests[-1].messages[-1]["content"][-1]["text"] == "And now?"


@pytest.mark.usefixtures("english")  # the error is read in English
def test_resume_of_an_unknown_session_is_a_clear_error(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    with pytest.raises(UnknownSessionError, match="no session 'nope'"):
        run(rt.run(READER, "hi", resume="nope"))
    assert not rt.has_session("nope") and not rt.has_session("../x")
    assert rt.context_size("nope") is None


def test_529_mid_stream_then_success_resumes_and_hides_the_error(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(
        reply(tool_use("Read", {"file_path": "seed.txt"})),
        sse_error(after=3),
        overloaded(),
        text("tulip"),
    )
    rt = make_runtime()
    result = run(rt.run(READER, "Read seed.txt."))

    assert result.ok and result.resumed and result.attempts == 3
    assert [e["attempt"] for e in result.errors] == [1, 2]
    assert result.errors[0]["kind"] == "transient" and result.errors[0]["status"] == 200
    assert result.errors[1]["status"] == 529
    entries = rt.store.load(rt.key(result.session_id))
    chain_is_linked(entries)
    synthetic = [e for e in entries if e.get("isApiErrorMessage")]
    assert len(synthetic) == 2
    assert synthetic[0]["message"]["model"] == "<synthetic>"
    assert synthetic[0]["message"]["content"][0]["text"].startswith("API Error:")
    assert synthetic[1]["error"] == "overloaded" and synthetic[1]["apiErrorStatus"] == 529
    # the retries resumed with the resume prompt, and the model never saw an error text
    resume_prompt = rt.resilience.resume_prompt
    for request in fake_api.requests[2:]:
        check_conversation(request.messages)
        assert not any("API Error" in t for t in request.texts())
        assert request.texts()[-1] == resume_prompt


def test_words_still_waiting_for_a_reply_are_not_said_twice_on_resume(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(overloaded(), text("done"))
    rt = make_runtime(resilience=fast_resilience(fake_api.base_url, max_attempts=1))
    failed = run(rt.run(READER, "THE TASK"))
    assert not failed.ok and failed.session_id  # stored, never answered
    result = run(rt.run(READER, "THE TASK", resume=failed.session_id))
    assert result.ok and result.text == "done"
    sent = fake_api.requests[-1].messages
    assert [m["role"] for m in sent] == ["user"]
    assert [b["text"] for b in sent[0]["content"] if b["type"] == "text"] == ["THE TASK"]
    users = [e for e in rt.store.load(rt.key(result.session_id)) or [] if e.get("type") == "user"]
    assert len(users) == 1  # and stored once


def test_a_run_killed_between_two_tools_keeps_the_first_result(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.core.transcript import interrupted_note
    from flower.runtime.tools.box import ToolBox

    fake_api.add(
        reply(
            tool_use("Read", {"file_path": "seed.txt"}, id="toolu_first"),
            tool_use("Read", {"file_path": "seed.txt"}, id="toolu_second"),
        ),
        text("carried on"),
    )
    real_run = ToolBox.run
    calls = 0

    async def killed_on_the_second(self: ToolBox, name: str, tool_input: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt  # the process dies while the second tool runs
        return await real_run(self, name, tool_input)

    rt = make_runtime()
    sessions: list[str] = []
    rt.on_session = lambda sid: sessions.append(sid)
    with monkeypatch.context() as patched:
        patched.setattr(ToolBox, "run", killed_on_the_second)
        with pytest.raises(KeyboardInterrupt):
            run(rt.run(READER, "Read it twice."))
    result = run(rt.run(READER, "go on", resume=sessions[0]))
    assert result.ok and result.text == "carried on"
    answers = {
        block["tool_use_id"]: block["content"]
        for message in fake_api.requests[-1].messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    assert "tulip" in str(answers["toolu_first"])  # done before the kill: kept
    assert answers["toolu_second"] == interrupted_note()


def test_dropped_stream_is_retried(make_runtime: MakeRuntime, fake_api: FakeMessagesAPI) -> None:
    fake_api.add(dropped("a long answer that is cut", after=3), text("whole"))
    result = run(make_runtime().run(READER, "Say it."))
    assert result.ok and result.text == "whole" and result.attempts == 2
    assert result.errors[0]["kind"] == "transient"


@pytest.mark.usefixtures("english")  # the error is read in English
@pytest.mark.parametrize(
    ("damaged", "error"),
    [
        # the HTTP response is whole, the message is not: a proxy that closed it early
        (ended_early("a long answer that stops", after=3), "before the response was complete"),
        # a broken proxy cuts one event's JSON in half: a wire failure, not a bug of flower
        (text("a long answer that is garbled", garble_after=3), "not valid JSON"),
    ],
    ids=["ended-before-message_stop", "event-not-json"],
)
def test_a_damaged_stream_is_retried_like_a_cut_one(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, damaged: Reply, error: str
) -> None:
    fake_api.add(damaged, text("whole"))
    rt = make_runtime()
    result = run(rt.run(READER, "Say it."))
    assert result.ok and result.text == "whole" and result.attempts == 2
    assert result.errors[0]["kind"] == "transient"
    assert error in result.errors[0]["text"]
    entries = rt.store.load(rt.key(result.session_id))
    assert [e.get("error") for e in entries if e.get("isApiErrorMessage")] == ["connection"]
    assert "a long answer" not in json.dumps(entries)  # the half answer was not stored


@pytest.mark.usefixtures("english")  # the error is read in English
def test_unknown_model_is_fatal_and_clear(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(model_not_found("claude-nope"))
    agent = AgentSpec("x", "", model="claude-nope")
    result = run(make_runtime().run(agent, "hi"))
    assert not result.ok and result.attempts == 1
    assert "unknown model 'claude-nope'" in result.error and "404" in result.error
    assert len(fake_api.requests) == 1


def test_no_api_key_names_the_variable_and_flower_demo(
    make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch, fake_api: FakeMessagesAPI
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    rt = make_runtime()
    with pytest.raises(MissingAPIKeyError) as info:
        run(rt.run(READER, "hi"))
    assert "ANTHROPIC_API_KEY" in str(info.value) and "flower demo" in str(info.value)
    assert fake_api.requests == []
    assert info.value.exit_code == 1  # as the CLI's refusal (docs/cli.md): one error


def test_denied_tool_gets_a_readable_denial_and_the_run_goes_on(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, workspace: Path
) -> None:
    fake_api.add(reply(tool_use("Write", {"file_path": "x.txt", "content": "no"})), text("ok"))
    result = run(make_runtime().run(READER, "Write x.txt."))
    assert result.ok
    assert not (workspace / "x.txt").exists()
    answer = fake_api.requests[1].messages[-1]["content"][0]
    assert answer["is_error"] is True
    assert answer["content"].startswith("Permission denied:") and "Write" in answer["content"]


def test_malformed_tool_input_becomes_an_error_result(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(reply(tool_use("Read", raw_input='{"file_path": "seed.txt"')), text("sorry"))
    rt = make_runtime()
    result = run(rt.run(READER, "Read."))
    assert result.ok
    answer = fake_api.requests[1].messages[-1]["content"][0]
    assert answer["is_error"] is True
    # what goes back to the API is a valid tool_use whose input is an object
    assert fake_api.requests[1].messages[1]["content"][0]["input"] == {}


def test_max_turns_stops_with_a_valid_chain(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.set_script(lambda request: reply(tool_use("Read", {"file_path": "seed.txt"})))
    agent = AgentSpec("loop", "", allowed_tools=["Read"], max_turns=3, model=MODEL)
    rt = make_runtime()
    result = run(rt.run(agent, "Go."))
    assert not result.ok and "max_turns=3" in result.error
    assert result.num_turns == 3 and len(fake_api.requests) == 3
    entries = rt.store.load(rt.key(result.session_id))
    assert entries[-1]["type"] == "user" and entries[-1]["toolUseResult"]
    chain_is_linked(entries)


def test_cost_is_summed_from_the_price_table(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 200,
        "cache_creation_input_tokens": 4000,
        "cache_read_input_tokens": 10000,
    }
    fake_api.add(
        reply(tool_use("Read", {"file_path": "seed.txt"}), usage=usage), text("done", usage=usage)
    )
    result = run(make_runtime().run(READER, "Go."))
    one = (1000 * 3.0 + 200 * 15.0 + 4000 * 3.75 + 10000 * 0.30) / 1_000_000
    assert math.isclose(result.cost_usd, 2 * one)
    assert result.context == 15000


def test_unknown_model_price_is_none_not_a_guess(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(text("hi"))
    result = run(make_runtime().run(AgentSpec("x", "", model="acme-llm-9"), "hi"))
    assert result.ok and result.cost_usd is None


def test_pause_turn_continues_and_max_tokens_gets_one_nudge(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(
        text("part one", stop_reason="pause_turn"),
        text("part two, cut", stop_reason="max_tokens"),
        text("the end"),
    )
    result = run(make_runtime().run(READER, "Go."))
    assert result.ok and result.text == "the end" and result.num_turns == 3
    assert fake_api.requests[1].messages[-1]["role"] == "assistant"
    assert fake_api.requests[2].messages[-1]["content"][-1]["text"] == _(MAX_TOKENS_NUDGE)


def test_max_tokens_twice_or_cut_tool_use_is_handled(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(
        reply(tool_use("Read", raw_input='{"file_pa'), stop_reason="max_tokens"),
        text("again cut", stop_reason="max_tokens"),
    )
    result = run(make_runtime().run(READER, "Go."))
    assert not result.ok and "max_tokens" in result.error
    answer = fake_api.requests[1].messages[-1]["content"][0]
    assert answer["content"] == _(TRUNCATED_TOOL_USE)


def test_refusal_stops_with_the_reason(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(text("I can't help with that.", stop_reason="refusal"))
    result = run(make_runtime().run(READER, "Bad idea."))
    assert not result.ok and "refus" in result.error and "can't help" in result.error


def test_on_session_fires_before_the_first_api_call_and_events_stream(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    seen: list[tuple[str, int]] = []
    events: list[Any] = []
    fake_api.add(reply("Let me look.", tool_use("Read", {"file_path": "seed.txt"})), text("tulip"))
    rt = make_runtime(on_event=events.append)

    def on_session(sid: str) -> None:
        seen.append((sid, len(fake_api.requests)))
        raise RuntimeError("a broken hook must not stop the run")

    rt.on_session = on_session
    result = run(rt.run(READER, "Read."))
    assert result.ok
    assert seen == [(result.session_id, 0)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look.tulip"
    assert [e.name for e in events if isinstance(e, ToolCall)] == ["Read"]
    assert [e.is_error for e in events if isinstance(e, ToolResult)] == [False]
    assert len([e for e in events if isinstance(e, TurnEnd)]) == 2
    assert isinstance(events[-1], StepDone) and events[-1].result is result


def test_the_pruning_view_follows_the_configuration_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower.core.config import load_settings
    from flower_plugins.pruning.policies import Denials

    (tmp_path / "pyproject.toml").write_text(
        "[tool.flower.pruning]\nkeep_denials = 3\nephemeral = false\n"
        "[tool.flower.trim]\nenabled = true\n"
    )
    monkeypatch.chdir(tmp_path)
    settings = load_settings().settings

    def chain(**options: Any) -> tuple[list[str], int]:
        view = Runtime(settings=settings, **options).view
        keep = next(p.keep for p in view.policies if isinstance(p, Denials))
        return [p.name for p in view.policies], keep

    # the configuration, except trim, which a Runtime turns on only when asked (seed)
    assert chain() == (["synthetic-errors", "denials", "interrupted"], 3)
    assert chain(trim=True) == (["synthetic-errors", "denials", "interrupted", "trim"], 3)
    assert chain(ephemeral=True, keep_denials=0) == (
        ["synthetic-errors", "denials", "interrupted", "ephemeral"],
        0,
    )


def test_a_store_given_to_the_runtime_stays_open_and_in_use_after_close(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, in_tmp: Path
) -> None:
    from flower.stores.open import open_session_store

    fake_api.add(text("one"), text("two"))
    mine = open_session_store(f"jsonfs:///{in_tmp / 'mine'}")
    rt = make_runtime(store=mine)
    first = run(rt.run(READER, "first"))
    rt.close()
    second = run(rt.run(READER, "second"))
    assert rt.store is mine
    assert mine.exists(rt.key(first.session_id)) and mine.exists(rt.key(second.session_id))
    assert not (in_tmp / "runs" / "sessions.db").exists()  # no other store was opened
    mine.close()


def test_a_retry_in_the_same_run_does_not_call_fresh_output_stale(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI
) -> None:
    from flower_plugins.pruning.policies import stale_note

    shell = AgentSpec("sh", "Be terse.", allowed_tools=["Bash"], max_turns=6, model=MODEL)
    fake_api.add(reply(tool_use("Bash", {"command": "ls"}, id="toolu_ls")), overloaded(), text("a"))
    rt = make_runtime()
    first = run(rt.run(shell, "List the files."))
    assert first.ok and first.attempts == 2

    def ls_result(request: Any) -> str:
        return next(
            str(block["content"])
            for message in request.messages
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        )

    assert not ls_result(fake_api.requests[-1]).startswith(stale_note())  # seconds old
    fake_api.add(text("b"))
    run(rt.run(shell, "And now?", resume=first.session_id))  # a later run: a resume
    assert ls_result(fake_api.requests[-1]).startswith(stale_note())


def test_a_stalled_request_is_retried_after_the_request_timeout(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, in_tmp: Path
) -> None:
    import time

    import msgspec
    from runtime_helpers import sqlite_settings

    from flower.testing.fake_api import stall

    settings = sqlite_settings(in_tmp)
    settings = msgspec.structs.replace(
        settings, engine=msgspec.structs.replace(settings.engine, request_timeout=0.5)
    )
    fake_api.add(stall(5), text("after the stall"))
    started = time.monotonic()
    result = run(make_runtime(settings=settings).run(READER, "hello"))
    assert result.ok and result.text == "after the stall" and result.attempts == 2
    assert result.errors[0]["kind"] == "transient"
    assert time.monotonic() - started < 4  # it did not wait the stall out


@pytest.mark.usefixtures("english")  # the error is read in English
@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "the file system is read-only"),
        (errno.EDQUOT, "the disk quota is used up"),
        (errno.ENOSPC, "no space left on the device"),
    ],
)
def test_a_store_that_cannot_write_for_the_machines_sake_is_not_retried_as_an_api_error(
    make_runtime: MakeRuntime,
    fake_api: FakeMessagesAPI,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    words: str,
) -> None:
    from flower.core.errors import LocalFaultError

    fake_api.add(text("tulip"))
    rt = make_runtime()

    def refuse(key: SessionKey, entries: Any) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(rt.store, "append", refuse)
    with pytest.raises(LocalFaultError) as caught:
        run(rt.run(READER, "Which flower?"))
    assert f"{words}. Nothing stored was lost" in str(caught.value)
    assert len(fake_api.requests) <= 1  # no retry of the request


def test_a_store_error_leaves_the_run_with_its_cause(
    make_runtime: MakeRuntime, fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's own error leaves the run as it was raised, its cause with it (the
    driver's error a fleet worker reads to know a database it can wait for)."""
    from flower.core.errors import StoreUnavailableError

    fake_api.add(text("tulip"))
    rt = make_runtime()
    driver = ConnectionRefusedError("the server is down")

    def cut(key: SessionKey, entries: Any) -> None:
        raise StoreUnavailableError("cannot reach the store") from driver

    monkeypatch.setattr(rt.store, "append", cut)
    with pytest.raises(StoreUnavailableError) as caught:
        run(rt.run(READER, "Which flower?"))
    assert caught.value.__cause__ is driver
