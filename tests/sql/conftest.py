from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flower.core.config import SessionsConfig, Settings
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.migrate import upgrade
from flower_plugins.sql.store import SqlSessionStore


def migrated(url: str) -> str:
    """``url`` with flower's schema at head (Postgres is never upgraded implicitly)."""
    db = open_database(url)
    try:
        upgrade(db)
    finally:
        db.close()
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated database of each dialect, empty."""
    if request.param == "sqlite":
        return migrated(f"sqlite:///{tmp_path}/sessions.db")
    return migrated(request.getfixturevalue("pg_url"))


@pytest.fixture
def settings() -> Settings:
    return Settings(sessions=SessionsConfig(backend="sqlite"))


class Clock:
    """An injectable clock: seconds since the epoch, moved by hand."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(db_url: str, clock: Clock) -> Iterator[SqlSessionStore]:
    s = SqlSessionStore(open_database(db_url), clock=clock)
    yield s
    s.close()
