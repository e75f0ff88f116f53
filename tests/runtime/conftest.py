from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import fast_resilience, sqlite_settings

from flower.runtime.engine import Runtime
from flower.testing.fake_api import FakeMessagesAPI
from flower.testing.pytest_plugin import fake_api  # noqa: F401  (the fixture)


@pytest.fixture
def workspace(in_tmp: Path) -> Path:
    ws = in_tmp / "ws"
    ws.mkdir()
    (ws / "seed.txt").write_text("tulip\n", encoding="utf-8")
    return ws


@pytest.fixture
def make_runtime(
    workspace: Path,
    in_tmp: Path,
    fake_api: FakeMessagesAPI,  # noqa: F811
) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(**kw: Any) -> Runtime:
        kw.setdefault("settings", sqlite_settings(in_tmp))
        kw.setdefault("resilience", fast_resilience(fake_api.base_url))
        rt = Runtime(workspace, in_tmp / "runs", **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()
