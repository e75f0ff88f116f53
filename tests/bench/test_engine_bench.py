"""``bench/engine_bench.py``'s raw SDK loop keeps the conversation as the engine does:
a tool call goes back with its input, answered by the engine's own denial."""

from __future__ import annotations

import asyncio

import anthropic

from bench import engine_bench
from flower.testing.fake_api import FakeMessagesAPI


def test_the_raw_loop_sends_back_what_the_engine_would() -> None:
    with FakeMessagesAPI(engine_bench.script(3)) as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key or "sk-any", max_retries=0
        )
        asyncio.run(engine_bench.raw_loop(client, 3))
    assert len(fake.requests) == 3
    _go, call, answer, *_ = fake.requests[-1].messages
    (use,) = [b for b in call["content"] if b["type"] == "tool_use"]
    assert use["input"] == {"command": "true"}
    (result,) = answer["content"]
    assert result["content"] == engine_bench.DENIED.format(name="Bash") and result["is_error"]
