"""A usage or rate limit that names its reset time only in its words (no retry-after
header) is waited out as a 429 with retry-after is: parked through the gate, not
counted as an attempt; and no park is longer than ``max_park_wait`` (issue 31)."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from resilience_helpers import FakeClock, status_error

from flower.core.config import ResilienceConfig
from flower.core.protocols import GateAnswer
from flower.core.resilience import GaveUpError, Resilience, reset_in_text
from flower_plugins.probes import NoProber

pytestmark = pytest.mark.usefixtures("english")

NOW = datetime(2026, 12, 5, 1, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("words", "seconds"),
    [
        (f"Claude AI usage limit reached|{int(NOW) + 3600}", 3600),
        (f"Claude AI usage limit reached|{int(NOW + 90) * 1000}", 90),  # milliseconds
        ("Usage limit reached. Your limit resets at 2026-12-05T03:30:00Z.", 9000),
        ("Rate limited; try again after 2026-12-05 01:10:00+00:00", 600),
        ("Limit reached. You will regain access on 2026-12-05 at 04:00 UTC.", 10800),
        ("5-hour limit reached · resets 3am (UTC)", 7200),
        ("5-hour limit reached · resets 9:15am (Asia/Shanghai)", 15 * 60),  # 01:15 UTC
        ("usage limit reached, resets at 00:30 (UTC)", 23.5 * 3600),  # the next one
    ],
)
def test_the_reset_a_message_names(words: str, seconds: float) -> None:
    assert reset_in_text(words, now=NOW) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "words",
    [
        "Number of request tokens has exceeded your rate limit.",
        "usage limit resets in 5 hours",  # no time of day, no date
        f"Claude AI usage limit reached|{int(NOW) - 10}",  # already past
        "resets 13pm",
    ],
)
def test_no_reset_is_read_where_none_is_named(words: str) -> None:
    assert reset_in_text(words, now=NOW) is None


class Gate:
    """A gate that records its parks and lets every call go."""

    def __init__(self) -> None:
        self.parked: list[float] = []

    def reserve(self, input_tokens: int, output_tokens: int) -> GateAnswer:
        return GateAnswer(ticket=object())

    def settle(self, ticket: Any, used: Any, limits: Any, cost_usd: Any) -> None:
        pass

    def park(self, seconds: float) -> bool:
        self.parked.append(seconds)
        return True


def _resilience(
    clock: FakeClock, gate: Gate | None = None, **conf: Any
) -> tuple[Resilience, list[str]]:
    said: list[str] = []
    resilience = Resilience(
        ResilienceConfig(**conf),
        prober=NoProber(),
        base_url="https://api.anthropic.com",
        clock=clock,
        sleep=clock.sleep,
        now=clock.now,
        on_status=said.append,
        rng=random.Random(1),
        gate=gate,
    )
    return resilience, said


def _limit_in(seconds: float) -> BaseException:
    """A 429 whose only word of when is its message (no retry-after, no reset header)."""
    return status_error(
        429, "rate_limit_error", f"Claude AI usage limit reached|{int(time.time() + seconds)}"
    )


class Script:
    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self, info: Any) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_a_reset_named_in_words_parks_every_caller_uncounted() -> None:
    gate, clock = Gate(), FakeClock()
    resilience, _ = _resilience(clock, gate, max_attempts=1)
    result, errors = asyncio.run(resilience.run(Script(_limit_in(1800))))
    assert result == "done" and len(errors) == 1  # max_attempts=1: the park was no attempt
    assert len(gate.parked) == 1 and 1790 < gate.parked[0] <= 1800
    assert clock.sleeps == []  # the gate's admit waits it out, for every caller


def test_without_a_gate_it_is_waited_out_as_a_long_retry_after() -> None:
    clock = FakeClock()
    resilience, said = _resilience(clock, max_attempts=1)
    result, _ = asyncio.run(resilience.run(Script(_limit_in(1800))))
    assert result == "done"
    assert len(clock.sleeps) == 1 and 1790 < clock.sleeps[0] <= 1800
    assert said[0].startswith("rate limited: the API asks to wait 29m") or said[0].startswith(
        "rate limited: the API asks to wait 30m"
    )
    assert said[0].endswith("(not counted as an attempt)")


@pytest.mark.parametrize("with_gate", [True, False])
def test_a_park_longer_than_max_park_wait_stops_with_a_line_saying_so(with_gate: bool) -> None:
    gate, clock = Gate(), FakeClock()
    resilience, _ = _resilience(clock, gate if with_gate else None, max_park_wait=3600)
    script = Script(_limit_in(3 * 86400))  # a weekly limit, three days out
    with pytest.raises(GaveUpError) as info:
        asyncio.run(resilience.run(script))
    text = str(info.value)
    assert text.startswith("the API asks to wait 71h") or text.startswith(
        "the API asks to wait 72h"
    )
    assert "longer than max_park_wait=3600 s: not waiting" in text
    assert "set [tool.flower.resilience] max_park_wait to wait that long" in text
    assert gate.parked == [] and clock.sleeps == [] and script.calls == 1


def test_the_default_park_is_six_hours() -> None:
    assert ResilienceConfig().max_park_wait == 6 * 3600
    when = (datetime.now(UTC) + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    clock = FakeClock()
    gate = Gate()
    resilience, _ = _resilience(clock, gate)
    limit = status_error(429, "rate_limit_error", f"Usage limit reached; resets at {when}")
    asyncio.run(resilience.run(Script(limit)))
    assert len(gate.parked) == 1 and 5 * 3600 - 10 < gate.parked[0] <= 5 * 3600
