"""Resilience.run with a fake clock: retries, offline waits, fatal stops, resume, Ctrl-C."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx2
import pytest
from resilience_helpers import (
    FakeClock,
    OutageProber,
    connection_error,
    sse_error,
    status_error,
)

from flower.core.config import ResilienceConfig
from flower.core.resilience import (
    AttemptError,
    AttemptInfo,
    FatalAPIError,
    GaveUpError,
    Resilience,
)
from flower_plugins.probes import NoProber

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

BASE_URL = "https://api.anthropic.com"


class Script:
    """An attempt function that raises the scripted errors, then returns ``result``."""

    def __init__(self, *errors: BaseException, result: str = "done") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls: list[AttemptInfo] = []

    async def __call__(self, info: AttemptInfo) -> str:
        self.calls.append(info)
        if self.errors:
            raise self.errors.pop(0)
        return self.result


def make(clock: FakeClock, prober: Any = None, **conf: Any) -> tuple[Resilience, list[str]]:
    status: list[str] = []
    resilience = Resilience(
        ResilienceConfig(**conf),
        prober=prober or NoProber(),
        base_url=BASE_URL,
        clock=clock,
        sleep=clock.sleep,
        now=clock.now,
        on_status=status.append,
        rng=random.Random(1),
    )
    return resilience, status


def refused() -> BaseException:
    return connection_error(httpx2.ConnectError("[Errno 111] Connection refused"))


def test_success_first_time_sleeps_never(fake_clock: FakeClock) -> None:
    resilience, status = make(fake_clock)
    script = Script()
    result, errors = asyncio.run(resilience.run(script))
    assert (result, errors) == ("done", [])
    assert script.calls == [AttemptInfo(1, False)]
    assert fake_clock.sleeps == [] and status == []


def test_seed_outage_01_52_40_to_01_55_41(fake_clock: FakeClock) -> None:
    """The seed's HT001 outage: three minutes offline, then attempt 2 resumes and succeeds."""
    prober = OutageProber(fake_clock, back_at=176.0)  # the network returns at 01:55:36
    resilience, status = make(fake_clock, prober)
    script = Script(refused(), result="finished")
    recorded: list[AttemptError] = []
    session: list[str] = []
    attempt_times: list[str] = []

    async def attempt(info: AttemptInfo) -> str:
        attempt_times.append(f"{fake_clock.now():%H:%M:%S}")
        session.append("sid-1")  # the session id exists once the first message arrived
        return await script(info)

    started = time.perf_counter()
    result, errors = asyncio.run(
        resilience.run(attempt, has_session=lambda: bool(session), on_error=recorded.append)
    )
    elapsed = time.perf_counter() - started

    assert result == "finished"
    assert len(script.calls) == 2  # attempts=2
    assert script.calls[1] == AttemptInfo(2, True)  # resumed=True
    assert errors == recorded
    assert [(e.attempt, e.kind, e.status) for e in errors] == [(1, "transient", None)]
    assert "Connection refused" in errors[0].text
    assert status[0] == "offline since 01:52:40, probing api.anthropic.com:443 every 15 s"
    assert status[1] == "back online after 3m00s"  # the probe at 01:55:40 saw it
    assert len(status) == 3 and status[2].startswith("API error (transient)")
    # Probed every 15 s of fake time, each with the 5 s probe timeout.
    probe_times = [t for _h, _p, _t, t in prober.probes]
    assert probe_times == [15.0 * n for n in range(13)]
    assert {timeout for _h, _p, timeout, _t in prober.probes} == {5.0}
    # Then the backoff of attempt 1 (4 s +- 25 %) before resuming around 01:55:41.
    assert 3.0 <= fake_clock.sleeps[-1] <= 5.0
    assert attempt_times[0] == "01:52:40"
    assert "01:55:43" <= attempt_times[1] <= "01:55:45"
    assert elapsed < 10.0  # the fake clock, not real time: 199 simulated seconds


def test_outage_probing_uses_intervals_not_one_long_sleep(fake_clock: FakeClock) -> None:
    prober = OutageProber(fake_clock, back_at=40.0)
    resilience, _ = make(fake_clock, prober)
    asyncio.run(resilience.run(Script(refused())))
    assert fake_clock.sleeps[:3] == [15.0, 15.0, 15.0]
    assert len(fake_clock.sleeps) == 4


def test_no_session_yet_means_no_resume(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    script = Script(status_error(529, "overloaded_error", "Overloaded"))
    asyncio.run(resilience.run(script, has_session=lambda: False))
    assert script.calls == [AttemptInfo(1, False), AttemptInfo(2, False)]


@pytest.mark.parametrize(
    "error",
    [
        status_error(401, "authentication_error", "invalid x-api-key"),
        status_error(429, "rate_limit_error", "limit", error_code="enforced_spend_limit_reached"),
        status_error(400, "invalid_request_error", "Your credit balance is too low."),
        status_error(401, "api_error", "gateway says api_error"),
        status_error(403, "overloaded_error", "gateway says overloaded"),
        status_error(404, "api_error", "no such route"),
    ],
    ids=["401", "spend-limit", "credit", "401-api_error", "403-overloaded", "404-api_error"],
)
def test_fatal_stops_at_once_without_waiting(fake_clock: FakeClock, error: Exception) -> None:
    prober = OutageProber(fake_clock, back_at=1e9)
    resilience, status = make(fake_clock, prober)
    recorded: list[AttemptError] = []
    script = Script(error)
    with pytest.raises(FatalAPIError) as info:
        asyncio.run(resilience.run(script, on_error=recorded.append))
    assert len(script.calls) == 1
    assert fake_clock.sleeps == [] and prober.probes == [] and status == []
    assert info.value.errors == recorded
    assert info.value.errors[0].kind == "fatal"
    assert info.value.exit_code == 1
    message = str(info.value)
    assert "\n" not in message and "attempt 1" in message
    assert info.value.__cause__ is error


def test_unknown_is_retried_by_default(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    script = Script(KeyError("content"))
    result, errors = asyncio.run(resilience.run(script))
    assert result == "done"
    assert [e.kind for e in errors] == ["unknown"]


def test_unknown_is_fatal_when_retry_unknown_is_off(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock, retry_unknown=False)
    with pytest.raises(FatalAPIError, match="unknown API error"):
        asyncio.run(resilience.run(Script(KeyError("content"))))
    assert fake_clock.sleeps == []


def test_gives_up_after_max_attempts_counting_the_first(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    overloaded = [status_error(529, "overloaded_error", "Overloaded") for _ in range(10)]
    script = Script(*overloaded)
    with pytest.raises(GaveUpError) as info:
        asyncio.run(resilience.run(script))
    assert len(script.calls) == 6
    assert [e.attempt for e in info.value.errors] == [1, 2, 3, 4, 5, 6]
    assert info.value.attempts == 6
    assert [e.status for e in info.value.errors] == [529] * 6
    # Five waits between six attempts, each the jittered backoff 4, 8, 16, 32, 64.
    for sleep, centre in zip(fake_clock.sleeps, [4, 8, 16, 32, 64], strict=True):
        assert centre * 0.75 <= sleep <= centre * 1.25
    assert "gave up after 6 attempts" in str(info.value)


def test_mid_stream_overloaded_is_retried(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    script = Script(sse_error("overloaded_error", "Overloaded"))
    result, errors = asyncio.run(resilience.run(script))
    assert result == "done"
    assert (errors[0].kind, errors[0].status) == ("transient", 200)


def test_retry_after_is_honoured_but_capped(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    asks_30 = status_error(429, "rate_limit_error", "slow", headers={"retry-after": "30"})
    asks_an_hour = status_error(529, "overloaded_error", "x", headers={"retry-after-ms": "3.6e6"})
    asyncio.run(resilience.run(Script(asks_30, asks_an_hour)))
    assert fake_clock.sleeps == [30.0, 120.0]


def test_a_long_rate_limit_wait_is_honoured_and_not_counted(fake_clock: FakeClock) -> None:
    resilience, status = make(fake_clock, max_attempts=1)
    asks_ten_minutes = [
        status_error(429, "rate_limit_error", "slow down", headers={"retry-after": "600"})
        for _ in range(3)
    ]
    script = Script(*asks_ten_minutes)
    result, errors = asyncio.run(resilience.run(script))
    assert result == "done" and len(script.calls) == 4
    assert fake_clock.sleeps == [600.0, 600.0, 600.0]
    assert [e.attempt for e in errors] == [1, 2, 3]
    assert status[0] == (
        "rate limited: the API asks to wait 10m00s; waiting until 02:02:40 "
        "(not counted as an attempt)"
    )
    assert len(status) == 3


def test_long_rate_limit_waits_are_bounded_by_max_park_wait(fake_clock: FakeClock) -> None:
    resilience, status = make(fake_clock, max_park_wait=1000.0)
    asks = [
        status_error(429, "rate_limit_error", "slow", headers={"retry-after": "600"})
        for _ in range(3)
    ]
    with pytest.raises(
        GaveUpError, match=r"rate limited for 16m40s \(max_park_wait=1000 s\)"
    ) as info:
        asyncio.run(resilience.run(Script(*asks)))
    assert fake_clock.sleeps == [600.0, 400.0]
    assert info.value.attempts == 3
    assert "waiting until 02:09:20" in status[1]


def test_a_short_rate_limit_wait_still_counts_as_an_attempt(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock, max_attempts=2)
    asks = [
        status_error(429, "rate_limit_error", "slow", headers={"retry-after": "60"})
        for _ in range(2)
    ]
    with pytest.raises(GaveUpError, match="gave up after 2 attempts"):
        asyncio.run(resilience.run(Script(*asks)))
    assert fake_clock.sleeps == [60.0]


def test_gives_up_when_offline_longer_than_max_offline_wait(fake_clock: FakeClock) -> None:
    prober = OutageProber(fake_clock, back_at=1e9)
    resilience, status = make(fake_clock, prober)
    script = Script(refused())
    with pytest.raises(GaveUpError, match=r"unreachable for 1h00m00s") as info:
        asyncio.run(resilience.run(script))
    assert len(script.calls) == 1
    assert fake_clock.t == 3600.0
    assert len(prober.probes) == 1 + 240  # the first probe, then one per 15 s
    assert len(status) == 1
    assert info.value.errors[0].kind == "transient"


def test_reachable_endpoint_skips_the_offline_wait(fake_clock: FakeClock) -> None:
    prober = OutageProber(fake_clock, back_at=0.0)
    resilience, status = make(fake_clock, prober)
    asyncio.run(resilience.run(Script(refused())))
    assert len(prober.probes) == 1
    assert not any(line.startswith("offline") for line in status)


def test_a_prober_that_raises_counts_as_unreachable(fake_clock: FakeClock) -> None:
    class Broken:
        calls = 0

        def reachable(self, host: str, port: int, timeout: float) -> bool:
            Broken.calls += 1
            if Broken.calls == 1:
                raise OSError("boom")
            return True

    resilience, status = make(fake_clock, Broken())
    asyncio.run(resilience.run(Script(refused())))
    assert status[0].startswith("offline since")
    assert status[1] == "back online after 15s"


def test_ctrl_c_while_waiting_offline_propagates_promptly() -> None:
    """Real asyncio.sleep and a real cancel: the wait must end at once."""
    clock = FakeClock()
    prober = OutageProber(clock, back_at=1e9)
    resilience = Resilience(
        ResilienceConfig(probe_interval=30.0),
        prober=prober,
        base_url=BASE_URL,
        on_status=lambda _line: None,
    )

    async def main() -> float:
        task = asyncio.create_task(resilience.run(Script(refused())))
        while not prober.probes:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)  # now inside the 30 s offline sleep
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - started

    assert asyncio.run(main()) < 0.5


def test_cancel_during_a_slow_probe_does_not_wait_for_the_probe() -> None:
    class SlowProber:
        def reachable(self, host: str, port: int, timeout: float) -> bool:
            time.sleep(1.0)
            return False

    resilience = Resilience(prober=SlowProber(), base_url=BASE_URL)

    async def main() -> float:
        task = asyncio.create_task(resilience.run(Script(refused())))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - started

    assert asyncio.run(main()) < 0.5


def test_keyboard_interrupt_in_an_attempt_is_not_swallowed(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)

    async def attempt(info: AttemptInfo) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(resilience.run(attempt))


def test_attempt_errors_serialise_for_the_manifest(fake_clock: FakeClock) -> None:
    resilience, _ = make(fake_clock)
    _, errors = asyncio.run(resilience.run(Script(status_error(503, "api_error", "busy"))))
    record = errors[0].as_dict()
    assert record["attempt"] == 1 and record["kind"] == "transient" and record["status"] == 503
    assert "busy" in record["text"]
