from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import pytest

from flower.core.config import Price, ResilienceConfig
from flower.core.resilience import Resilience
from flower.runtime.engine import Runtime
from flower.runtime.events import Waiting
from flower.runtime.pricing import cost_of, price_for, price_table
from flower.runtime.spec import AgentSpec
from flower.testing.fake_api import FakeMessagesAPI, refuse, spend_limit, text, unauthorized
from flower_plugins.probes import TcpProber

AGENT = AgentSpec("a", "Be brief.", max_turns=3, model="claude-sonnet-4-6")


def test_price_lookup_dated_ids_overrides_and_unknown() -> None:
    table = price_table({"acme-1": Price(input=2.0, output=4.0)})
    assert price_for("claude-haiku-4-5-20251001", table) == price_for("claude-haiku-4-5", table)
    assert price_for("claude-sonnet-4-6", table).output == 15.0
    assert price_for("gpt-x", table) is None and cost_of({"input_tokens": 5}, None) is None
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 500_000,
        "cache_creation_input_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000,
    }
    # no cache prices given: write 1.25x input, read 0.1x input
    assert math.isclose(cost_of(usage, table["acme-1"]), 2.0 + 2.0 + 2.5 + 0.2)
    overridden = price_table({"claude-sonnet-4-6": Price(input=1.0, output=1.0)})
    assert overridden["claude-sonnet-4-6"].input == 1.0


def test_bad_key_and_spend_limit_are_fatal_at_once(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(unauthorized(), spend_limit())
    bad_key = asyncio.run(make_runtime().run(AGENT, "hi"))
    spent = asyncio.run(make_runtime().run(AGENT, "hi"))
    assert not bad_key.ok and bad_key.attempts == 1 and "ANTHROPIC_API_KEY" in bad_key.error
    assert not spent.ok and spent.attempts == 1 and spent.errors[0]["kind"] == "fatal"
    assert len(fake_api.requests) == 2


@pytest.mark.usefixtures("english")  # the waiting line is read in English
def test_refused_connections_wait_and_resume_the_same_session(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI
) -> None:
    fake_api.add(refuse(0.3), text("back"))
    events: list[Any] = []

    async def short_sleep(seconds: float) -> None:
        await asyncio.sleep(min(seconds, 0.02))

    resilience = Resilience(
        ResilienceConfig(base_delay=0.0, probe_interval=0.05, max_attempts=3),
        prober=TcpProber(),
        base_url=fake_api.base_url,
        sleep=short_sleep,
        on_status=lambda line: events.append(Waiting(line)),
    )
    rt = make_runtime(resilience=resilience)
    result = asyncio.run(rt.run(AGENT, "hi"))
    assert result.ok and result.text == "back" and result.resumed
    assert result.attempts == 2 and result.errors[0]["kind"] == "transient"
    assert result.errors[0]["status"] is None
    assert any("offline" in e.line for e in events)
    entries = rt.store.load(rt.key(result.session_id))
    assert [e.get("error") for e in entries if e.get("isApiErrorMessage")] == ["connection"]
    sent = fake_api.requests[-1]
    assert sent.texts()[-2:] == ["hi", resilience.resume_prompt]


def test_a_failing_store_is_not_retried_and_its_error_surfaces(
    make_runtime: Callable[..., Runtime], fake_api: FakeMessagesAPI, in_tmp: Any
) -> None:
    from runtime_helpers import sqlite_settings

    from flower.stores.open import open_session_store

    class BrokenAfterPrompt:
        """A real store whose second append fails with a plain bug, not an API error."""

        def __init__(self) -> None:
            self.inner = open_session_store(settings=sqlite_settings(in_tmp))
            self.appends = 0

        def append(self, key: Any, entries: Any) -> None:
            self.appends += 1
            if self.appends > 1:
                raise RuntimeError("disk full")
            self.inner.append(key, entries)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    sleeps: list[float] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    fake_api.add(text("hello"), text("again"))
    store = BrokenAfterPrompt()
    resilience = Resilience(ResilienceConfig(), base_url=fake_api.base_url, sleep=record_sleep)
    rt = make_runtime(store=store, resilience=resilience)
    try:
        asyncio.run(rt.run(AGENT, "hi"))
    except RuntimeError as exc:
        assert "disk full" in str(exc)
    else:
        raise AssertionError("the store's error must surface")
    assert sleeps == []
    assert len(fake_api.requests) == 1
