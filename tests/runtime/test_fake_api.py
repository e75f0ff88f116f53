from __future__ import annotations

import asyncio
import http.client
import json
import time
from typing import Any

import anthropic
import pytest

from flower.core.resilience import classify, retry_after
from flower.testing import FakeMessagesAPI
from flower.testing.fake_api import (
    accept_and_close,
    dropped,
    model_not_found,
    overloaded,
    rate_limited,
    refuse,
    reply,
    server_error,
    spend_limit,
    sse_error,
    stall,
    text,
    tool_use,
    unauthorized,
)

HI = [{"role": "user", "content": "hi"}]


def client(fake: FakeMessagesAPI, **kw: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=fake.base_url, api_key=fake.api_key, max_retries=0, **kw
    )


async def streamed(c: anthropic.AsyncAnthropic, **kw: Any) -> Any:
    params = {"model": "m", "max_tokens": 50, "messages": HI, **kw}
    async with c.messages.stream(**params) as stream:
        return await stream.get_final_message()


async def plain(c: anthropic.AsyncAnthropic, **kw: Any) -> Any:
    return await c.messages.create(model="m", max_tokens=50, messages=HI, **kw)


def failure(fake: FakeMessagesAPI, call: Any = streamed, **kw: Any) -> BaseException:
    async def go() -> BaseException:
        c = client(fake, **kw)
        try:
            await call(c)
        except Exception as exc:
            return exc
        finally:
            await c.close()
        raise AssertionError("the call did not fail")

    return asyncio.run(go())


def test_plain_and_streamed_replies_through_the_real_sdk() -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 2}
    script = [
        text("hello " * 10, usage=usage),
        reply("look", tool_use("Read", {"file_path": "a.txt"}, id="toolu_1"), usage=usage),
    ]

    async def go() -> tuple[Any, Any]:
        c = client(fake)
        try:
            return await plain(c), await streamed(c)
        finally:
            await c.close()

    with FakeMessagesAPI(script) as fake:
        first, second = asyncio.run(go())
    assert first.content[0].text == "hello " * 10
    assert first.stop_reason == "end_turn" and first.id.startswith("msg_")
    assert first.usage.input_tokens == 7 and first.usage.cache_read_input_tokens == 2
    assert second.content[0].text == "look"
    assert second.content[1].input == {"file_path": "a.txt"} and second.content[1].id == "toolu_1"
    assert second.stop_reason == "tool_use" and second.usage.output_tokens == 3
    assert [r.stream for r in fake.requests] == [False, True]
    assert fake.requests[0].body["messages"] == HI
    assert fake.requests[0].headers["authorization"] == f"Bearer {fake.api_key}"
    assert fake.remaining == 0


def test_thinking_streams_as_deltas_and_a_signature() -> None:
    thought = {"type": "thinking", "thinking": "step by step " * 5, "signature": "sig_1"}
    with FakeMessagesAPI([reply(thought, "answer", chunk=7)]) as fake:
        message = asyncio.run(streamed(client(fake)))
    assert message.content[0].type == "thinking"
    assert message.content[0].thinking == thought["thinking"]
    assert message.content[0].signature == "sig_1"
    assert message.content[1].text == "answer"


def test_callable_script_sees_the_request() -> None:
    with FakeMessagesAPI(lambda request: text(f"you said {request.texts()[-1]}")) as fake:
        message = asyncio.run(_one_plain(fake))
    assert message.content[0].text == "you said hi"


async def _one_plain(fake: FakeMessagesAPI) -> Any:
    c = client(fake)
    try:
        return await plain(c)
    finally:
        await c.close()


def _raw_post(fake: FakeMessagesAPI, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": HI})
    conn.request("POST", "/v1/messages", body, {"content-type": "application/json", **headers})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_accepts_x_api_key_and_bearer_and_rejects_no_or_wrong_key() -> None:
    with FakeMessagesAPI(["a", "b"]) as fake:
        assert _raw_post(fake, {"x-api-key": fake.api_key})[0] == 200
        assert _raw_post(fake, {"authorization": f"Bearer {fake.api_key}"})[0] == 200
        status, body = _raw_post(fake, {})
        assert status == 401 and body["error"]["type"] == "authentication_error"
        assert _raw_post(fake, {"x-api-key": "wrong"})[0] == 401
    assert fake.remaining == 0


@pytest.mark.parametrize(
    ("fault", "status", "error_type", "kind"),
    [
        (unauthorized(), 401, "authentication_error", "fatal"),
        (model_not_found("claude-x"), 404, "not_found_error", "fatal"),
        (rate_limited(), 429, "rate_limit_error", "transient"),
        (spend_limit(), 429, "rate_limit_error", "fatal"),
        (server_error(), 500, "api_error", "transient"),
        (overloaded(), 529, "overloaded_error", "transient"),
    ],
)
def test_status_faults(fault: Any, status: int, error_type: str, kind: str) -> None:
    with FakeMessagesAPI([fault]) as fake:
        exc = failure(fake)
    assert isinstance(exc, anthropic.APIStatusError)
    assert exc.status_code == status and exc.body["error"]["type"] == error_type
    assert classify(exc) == kind


def test_retry_after_and_spend_limit_details() -> None:
    with FakeMessagesAPI([rate_limited(retry_after=7), spend_limit()]) as fake:
        limited = failure(fake)
        spent = failure(fake)
    assert retry_after(limited) == 7.0
    assert spent.body["error"]["details"]["error_code"] == "workspace_spend_limit_reached"


def test_sse_error_mid_stream_has_status_200_and_its_type() -> None:
    with FakeMessagesAPI([sse_error(after=3)]) as fake:
        exc = failure(fake)
    assert isinstance(exc, anthropic.APIStatusError)
    assert exc.status_code == 200 and exc.type == "overloaded_error"
    assert classify(exc) == "transient"


def test_dropped_stream_and_closed_connection_are_transport_errors() -> None:
    with FakeMessagesAPI([dropped("x" * 200, after=4), accept_and_close()]) as fake:
        cut = failure(fake)
        closed = failure(fake, plain)
    assert "incomplete chunked read" in str(cut)
    assert isinstance(closed, anthropic.APIConnectionError)
    assert classify(cut) == classify(closed) == "transient"


def test_garbled_event_reaches_the_sdk_as_bad_json() -> None:
    with FakeMessagesAPI([text("x" * 200, garble_after=2)]) as fake:
        exc = failure(fake)
    assert isinstance(exc, json.JSONDecodeError)


def test_stall_makes_the_client_time_out() -> None:
    with FakeMessagesAPI([stall(5.0)]) as fake:
        started = time.monotonic()
        exc = failure(fake, plain, timeout=0.3)
        assert time.monotonic() - started < 3
    assert isinstance(exc, anthropic.APITimeoutError)


def test_refuse_closes_the_port_then_comes_back() -> None:
    with FakeMessagesAPI(["first", refuse(0.3), "after"]) as fake:
        assert asyncio.run(_one_plain(fake)).content[0].text == "first"
        assert not fake.online
        refused = failure(fake, plain)
        assert isinstance(refused, anthropic.APIConnectionError)
        assert "ConnectError" in repr(refused.__cause__)
        time.sleep(0.4)
        assert fake.online
        assert asyncio.run(_one_plain(fake)).content[0].text == "after"
    assert len(fake.requests) == 2


def test_invalid_conversation_is_rejected_like_the_api_would() -> None:
    orphan = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}],
        },
        {"role": "user", "content": "no answer to the tool"},
    ]
    with FakeMessagesAPI(["unused"]) as fake:
        exc = failure(fake, lambda c: plain_with(c, orphan))
    assert exc.status_code == 400 and "toolu_1" in str(exc)
    assert fake.remaining == 1 and len(fake.rejections) == 1


async def plain_with(c: anthropic.AsyncAnthropic, messages: list[dict[str, Any]]) -> Any:
    return await c.messages.create(model="m", max_tokens=5, messages=messages)


def test_unknown_model_list_and_exhausted_script() -> None:
    with FakeMessagesAPI(["a"], models={"claude-known"}) as fake:
        unknown = failure(fake)
        assert unknown.status_code == 404 and "model: m" in str(unknown)
        fake.models = None
        assert asyncio.run(_one_plain(fake)).content[0].text == "a"
        exhausted = failure(fake)
    assert exhausted.status_code == 400 and "no reply left" in str(exhausted)


def test_env_points_the_sdk_at_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeMessagesAPI(["from env"]) as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)

        async def go() -> Any:
            c = anthropic.AsyncAnthropic(max_retries=0)
            try:
                return await plain(c)
            finally:
                await c.close()

        assert asyncio.run(go()).content[0].text == "from env"
    assert set(fake.env()) == {"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"}
