"""Fixtures for the workflow tests: the fake Messages API and a Runtime pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flower.testing.fake_api import FakeMessagesAPI, RecordedRequest


@pytest.fixture
def fake(in_tmp: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    """The fake API, with the environment (inherited by child processes) pointing at it.

    One attempt per call: these tests are about continuity, not about waiting out faults.
    """
    with FakeMessagesAPI() as api:
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        monkeypatch.setenv("FLOWER_RESILIENCE_MAX_ATTEMPTS", "1")
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        yield api


Handler = Callable[[RecordedRequest], Any]


@pytest.fixture
def runtime_factory(in_tmp: Any) -> Iterator[Callable[..., Any]]:
    from flower.runtime.engine import Runtime

    made: list[Any] = []

    def make(**kw: Any) -> Any:
        kw.setdefault("workspace", ".")
        kw.setdefault("run_dir", "runs")
        rt = Runtime(**kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()
