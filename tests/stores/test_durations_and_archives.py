"""Durations as typed, ``--older-than`` and a checked archive, called from Python."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from flower.core.config import Settings
from flower.core.durations import duration_seconds
from flower.core.errors import UsageError
from flower.core.records import SessionKey
from flower.stores.archive import check_new_archive, read_archive, write_checked_archive
from flower.stores.open import open_session_store
from flower.stores.retention import parse_age
from flower.stores.tail import BadSinceError, parse_since

pytestmark = pytest.mark.usefixtures("english")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), (" 2H ", 7200), ("1.5d", 129600), ("2w", 1209600)],
)
def test_a_duration_is_a_number_and_a_unit(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["soon", "10 minutes", "-5m", "", "5", "m"])
def test_anything_else_is_no_duration(text: str) -> None:
    assert duration_seconds(text) is None


def test_older_than_and_since_read_the_same_durations() -> None:
    assert parse_age("30d") == 30 * 86400
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert (now - parse_since("30d", now)).total_seconds() == parse_age("30d")
    with pytest.raises(UsageError, match="--older-than 'soon': expected a number and a unit"):
        parse_age("soon")
    with pytest.raises(BadSinceError):
        parse_since("soon", now)


def test_a_checked_archive_is_new_named_and_read_back(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"name it \*\.jsonl\.gz"):
        check_new_archive(tmp_path / "old.json")
    (tmp_path / "there.jsonl.gz").write_bytes(b"")
    with pytest.raises(UsageError, match="archives never overwrite"):
        check_new_archive(tmp_path / "there.jsonl.gz")
    key = SessionKey("p", "s")
    out = tmp_path / "old.jsonl.gz"
    check_new_archive(out)
    with open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings()) as store:
        store.append(key, [{"type": "user", "uuid": "u1", "message": {"content": "hi"}}])
        store.append(key.child("subagents/agent-a"), [{"type": "user", "uuid": "a1"}])
        assert write_checked_archive(store, [key], out, {key: 1234}) == 2
    lines = list(read_archive(out))
    assert [(line.key.subpath, line.modified_ms) for line in lines] == [
        (None, 1234),
        ("subagents/agent-a", 1234),
    ]
