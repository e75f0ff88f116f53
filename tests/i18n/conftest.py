from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.testing.fake_api import FakeMessagesAPI


@pytest.fixture
def fake(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    """The scripted Messages API, with flower pointed at it and one attempt per request."""
    with FakeMessagesAPI() as api:
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        monkeypatch.setenv("FLOWER_RESILIENCE_MAX_ATTEMPTS", "1")
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        yield api
