from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import Cli, transcript

from flower.core.records import SessionKey
from flower.stores.open import open_session_store


@pytest.fixture(params=["jsonfs", "sqlite"])
def store_url(request: pytest.FixtureRequest, in_tmp: Path) -> str:
    if request.param == "jsonfs":
        return f"jsonfs:///{in_tmp / 'transcripts'}"
    return f"sqlite:///{in_tmp / 'sessions.db'}"


@pytest.fixture
def cli(store_url: str) -> Cli:
    return Cli(store_url)


@pytest.fixture
def seeded(store_url: str, in_tmp: Path) -> Iterator[dict[str, SessionKey]]:
    """Two projects: alpha with sessions s1 and s2, beta with s3."""
    keys = {
        "s1": SessionKey("-work-alpha", "s1"),
        "s2": SessionKey("-work-alpha", "s2"),
        "s3": SessionKey("-work-beta", "s3"),
    }
    with open_session_store(store_url) as store:
        for sid, key in keys.items():
            store.append(key, transcript(sid, "/work/" + key.project_key[6:], prefix=sid))
    yield keys
