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


def system_text(req: RecordedRequest) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def last_user_text(req: RecordedRequest) -> str:
    content = req.messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def user_prompts(req: RecordedRequest) -> list[str]:
    """The plain-text user prompts of a request, one per text block (tool results left
    out; the engine merges a resume prompt into a pending user turn as a second block)."""
    out = []
    for message in req.messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        out.extend(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")
    return out


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
