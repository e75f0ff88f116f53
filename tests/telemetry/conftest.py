"""Fixtures for the trace tests: a private tracer provider with the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from telemetry_helpers import Recorder

from flower.testing.pytest_plugin import fake_api  # noqa: F401  (the fixture)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    found = Recorder()
    yield found
    found.provider.shutdown()


@pytest.fixture
def workspace(in_tmp: Path) -> Path:
    ws = in_tmp / "ws"
    ws.mkdir()
    (ws / "seed.txt").write_text("tulip\n", encoding="utf-8")
    return ws
