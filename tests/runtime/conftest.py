from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from flower.core.config import ResilienceConfig, SessionsConfig, Settings
from flower.core.resilience import Resilience
from flower.runtime.engine import Runtime
from flower.testing.fake_api import FakeMessagesAPI
from flower.testing.pytest_plugin import fake_api  # noqa: F401  (the fixture)


class AlwaysUp:
    def reachable(self, host: str, port: int, timeout: float) -> bool:
        return True


async def no_sleep(seconds: float) -> None:
    return None


def fast_resilience(fake: FakeMessagesAPI, **conf: Any) -> Resilience:
    """The real Resilience with zero waits (an injected sleep), pointed at the fake."""
    config = ResilienceConfig(**{"base_delay": 0.0, "max_attempts": 4, **conf})
    return Resilience(config, prober=AlwaysUp(), base_url=fake.base_url, sleep=no_sleep)


def sqlite_settings(root: Path) -> Settings:
    url = f"sqlite:///{root / 'runs' / 'sessions.db'}"
    return msgspec.structs.replace(Settings(), sessions=SessionsConfig(backend="sqlite", url=url))


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
        kw.setdefault("resilience", fast_resilience(fake_api))
        rt = Runtime(workspace, in_tmp / "runs", **kw)
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()
