"""End to end: ``Runtime.run`` on the real SDK against the fake Messages API on loopback.

The seed's HT001 outage (01:52:40 -> 01:55:41) is replayed with real refused
connections and a real TCP probe, while a fake clock makes three minutes of waiting
take no time: the step ends with attempts=2, resumed=True, ok=True, and the resumed
request carries no trace of the error.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  (imported up front: the SDK's import is not the run)
import msgspec
import pytest
from resilience_helpers import FakeClock

from flower.core.config import ResilienceConfig, SessionsConfig, Settings
from flower.core.i18n import _
from flower.core.records import SessionKey
from flower.core.resilience import RESUME_PROMPT as ENGLISH_RESUME_PROMPT  # the msgid
from flower.core.resilience import Resilience
from flower.runtime.engine import Runtime
from flower.runtime.spec import AgentSpec, StepResult
from flower.testing.fake_api import (
    FakeMessagesAPI,
    api_error,
    overloaded,
    rate_limited,
    text,
    unauthorized,
)
from flower_plugins.probes import TcpProber

RESUME_PROMPT = _(ENGLISH_RESUME_PROMPT)  # in this wake's language
AGENT = AgentSpec(name="worker", instructions="Answer in one line.", max_turns=2)
PROMPT = "Read seed.txt and answer with the word in it."


@dataclass
class OutageClock(FakeClock):
    """A fake clock whose sleeps also end the outage: the fake API comes back online
    (its listening socket reopens) once simulated time reaches ``back_at``."""

    fake: FakeMessagesAPI | None = None
    back_at: float = 0.0
    status: list[str] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        if self.fake is not None and not self.fake.online and self.t >= self.back_at:
            self.fake.go_online()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        yield api


def _runtime(root: Path, resilience: Resilience) -> Runtime:
    workspace = root / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "seed.txt").write_text("tulip\n", encoding="utf-8")
    url = f"sqlite:///{root / 'runs' / 'sessions.db'}"
    settings = msgspec.structs.replace(
        Settings(), sessions=SessionsConfig(backend="sqlite", url=url)
    )
    return Runtime(workspace, root / "runs", settings=settings, resilience=resilience)


def _resilience(fake: FakeMessagesAPI, clock: OutageClock, **conf: Any) -> Resilience:
    return Resilience(
        ResilienceConfig(**conf),
        prober=TcpProber(),  # a real handshake against the fake's port
        base_url=fake.base_url,
        clock=clock,
        sleep=clock.sleep,
        now=clock.now,
        on_status=clock.status.append,
        rng=random.Random(5),
    )


def _run(rt: Runtime) -> tuple[StepResult, float]:
    assert rt.store is not None  # create and migrate the SQLite file before timing
    started = time.perf_counter()
    try:
        result = asyncio.run(rt.run(AGENT, PROMPT))
    finally:
        elapsed = time.perf_counter() - started
    return result, elapsed


def _stored(rt: Runtime, result: StepResult) -> list[dict[str, Any]]:
    assert result.session_id is not None
    return rt.store.load(SessionKey(rt.project_key, result.session_id)) or []


def test_three_minute_outage_resumes_without_the_error(
    in_tmp: Path, fake: FakeMessagesAPI, english: None
) -> None:
    clock = OutageClock(fake=fake, back_at=181.0)  # 01:52:40 -> 01:55:41
    rt = _runtime(in_tmp, _resilience(fake, clock))
    fake.add(text("tulip"))
    fake.go_offline()  # connections are refused from the first request on
    try:
        result, elapsed = _run(rt)

        assert (result.ok, result.attempts, result.resumed) == (True, 2, True)
        assert result.text == "tulip"
        assert [(e["attempt"], e["kind"]) for e in result.errors] == [(1, "transient")]
        # A refused connection carries no HTTP status; its text is the SDK's, so the
        # test holds the kind and the status, not the wording.
        assert result.errors[0]["status"] is None
        # Three simulated minutes, no real waiting. The bound is loose on purpose (the
        # machine is shared); the measured figure is well under a second.
        assert clock.t >= 181.0 and elapsed < 20.0
        print(f"simulated {clock.t:.0f} s of outage in {elapsed:.3f} s")

        assert (
            clock.status[0]
            == "offline since 01:52:40, probing 127.0.0.1:" + str(fake.port) + " every 15 s"
        )
        assert clock.status[1] == "back online after 3m15s"  # the first probe after 3m01s

        # The only request that reached the API is the resumed one, and it carries the
        # original prompt and the resume prompt, and not a word of the error.
        assert len(fake.requests) == 1
        sent = fake.requests[0].texts()
        assert PROMPT in sent and sent[-1] == ENGLISH_RESUME_PROMPT
        error_text = result.errors[0]["text"]
        assert not any("API Error" in t or error_text in t for t in sent)
        assert fake.rejections == []

        # The synthetic error entry stays in storage, for the record.
        stored = _stored(rt, result)
        synthetic = [e for e in stored if e.get("isApiErrorMessage")]
        assert len(synthetic) == 1
        assert synthetic[0]["message"]["model"] == "<synthetic>"
        assert synthetic[0]["message"]["content"][0]["text"].startswith("API Error:")
    finally:
        rt.close()


def test_overloaded_storm_is_retried_and_hidden(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    clock = OutageClock()
    rt = _runtime(in_tmp, _resilience(fake, clock))
    fake.add(overloaded(), overloaded(), text("tulip"))
    try:
        result, elapsed = _run(rt)
        assert (result.ok, result.attempts, result.resumed) == (True, 3, True)
        assert [e["status"] for e in result.errors] == [529, 529]
        assert elapsed < 20.0
        # Two backoffs, 4 s and 8 s +- 25 %, simulated.
        assert 3.0 <= clock.sleeps[0] <= 5.0 and 6.0 <= clock.sleeps[1] <= 10.0
        for request in fake.requests[1:]:
            assert request.texts()[-1] == RESUME_PROMPT
            assert not any("Overloaded" in t or "API Error" in t for t in request.texts())
        assert sum(1 for e in _stored(rt, result) if e.get("isApiErrorMessage")) == 2
    finally:
        rt.close()


def test_bad_key_stops_at_once_with_the_reason(in_tmp: Path, fake: FakeMessagesAPI) -> None:
    clock = OutageClock()
    rt = _runtime(in_tmp, _resilience(fake, clock))
    fake.add(unauthorized(), text("never sent"))
    try:
        result, _ = _run(rt)
        assert (result.ok, result.attempts) == (False, 1)
        assert result.errors[0]["kind"] == "fatal" and result.errors[0]["status"] == 401
        assert result.error is not None and "401" in result.error
        assert "\n" not in result.error
        assert clock.sleeps == [] and clock.status == []
        assert fake.remaining == 1
    finally:
        rt.close()


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(401, "api_error"), (401, "overloaded_error"), (403, "api_error"), (413, "api_error")],
)
def test_a_gateway_error_status_stops_at_once_whatever_its_body_says(
    in_tmp: Path, fake: FakeMessagesAPI, status: int, error_type: str
) -> None:
    clock = OutageClock()
    rt = _runtime(in_tmp, _resilience(fake, clock))
    fake.add(api_error(status, "upstream said no", error_type=error_type), text("never sent"))
    try:
        result, _ = _run(rt)
        assert (result.ok, result.attempts) == (False, 1)
        assert result.errors[0]["kind"] == "fatal" and result.errors[0]["status"] == status
        assert clock.sleeps == [] and clock.status == []
        assert fake.remaining == 1
    finally:
        rt.close()


def test_a_ten_minute_rate_limit_is_waited_out_without_spending_an_attempt(
    in_tmp: Path, fake: FakeMessagesAPI, english: None
) -> None:
    clock = OutageClock()
    rt = _runtime(in_tmp, _resilience(fake, clock, max_attempts=1))
    fake.add(rate_limited(retry_after=600), text("tulip"))
    try:
        result, _ = _run(rt)
        assert (result.ok, result.attempts) == (True, 2)
        assert [e["status"] for e in result.errors] == [429]
        assert clock.sleeps == [600.0]
        assert clock.status == [
            "rate limited: the API asks to wait 10m00s; waiting until 02:02:40 "
            "(not counted as an attempt)"
        ]
    finally:
        rt.close()


def test_outage_longer_than_max_offline_wait_gives_up(
    in_tmp: Path, fake: FakeMessagesAPI, english: None
) -> None:
    clock = OutageClock(fake=fake, back_at=10_000.0)
    rt = _runtime(in_tmp, _resilience(fake, clock, max_offline_wait=120.0))
    fake.add(text("never sent"))
    fake.go_offline()
    try:
        result, elapsed = _run(rt)
        assert (result.ok, result.attempts) == (False, 1)
        assert result.error is not None and "unreachable for 2m00s" in result.error
        assert clock.t == 120.0
        assert elapsed < 20.0
        assert fake.requests == []
    finally:
        rt.close()
