"""flower.stores.open.open_store: how a command opens the session store."""

from __future__ import annotations

from pathlib import Path

from flower.core.config import Settings, default_store_url, sqlite_file
from flower.core.records import SessionKey
from flower.stores.open import open_store


def _database(settings: Settings) -> Path:
    url = default_store_url(settings)
    assert url is not None
    database = sqlite_file(url)
    assert database is not None
    return database


def test_a_command_that_only_reads_or_deletes_creates_no_store(in_tmp: Path) -> None:
    settings = Settings()
    for options in ({"read_only": True}, {"create": False}):
        store = open_store(settings, **options)  # type: ignore[arg-type]
        assert not store.exists(SessionKey("p", "s"))
        store.close()
        assert not _database(settings).exists()


def test_a_command_that_writes_creates_it_and_delete_only_then_opens_it_to_write(
    in_tmp: Path,
) -> None:
    settings = Settings()
    open_store(settings).close()
    assert _database(settings).exists()
    store = open_store(settings, create=False)
    key = SessionKey("p", "s")
    store.append(key, [{"type": "user", "uuid": "u", "message": {"role": "user", "content": "x"}}])
    assert store.exists(key)
    store.close()
