"""Shared helpers for the engine tests (imported by conftest.py and test modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from flower.core.config import ResilienceConfig, SessionsConfig, Settings
from flower.core.resilience import Resilience


class AlwaysUp:
    def reachable(self, host: str, port: int, timeout: float) -> bool:
        return True


async def no_sleep(seconds: float) -> None:
    return None


def fast_resilience(base_url: str, **conf: Any) -> Resilience:
    """The real Resilience with zero waits (an injected sleep), pointed at ``base_url``."""
    config = ResilienceConfig(**{"base_delay": 0.0, "max_attempts": 4, **conf})
    return Resilience(config, prober=AlwaysUp(), base_url=base_url, sleep=no_sleep)


def sqlite_settings(root: Path) -> Settings:
    url = f"sqlite:///{root / 'runs' / 'sessions.db'}"
    return msgspec.structs.replace(Settings(), sessions=SessionsConfig(backend="sqlite", url=url))
