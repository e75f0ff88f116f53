"""What only the embedded SQLite default does: its file, pragmas and self-migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flower.core.config import SessionsConfig, Settings
from flower.core.errors import SchemaOutOfDateError, StoreUnavailableError
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower_plugins.sql.schema import HEAD_REVISION, VERSION_TABLE
from flower_plugins.sql.store import SqlSessionStore

KEY = SessionKey("p", "s")


def pragma(store: SqlSessionStore, name: str) -> object:
    with store.database.engine.connect() as conn:
        return conn.exec_driver_sql(f"PRAGMA {name}").scalar()


def test_default_url_is_relative_to_the_working_directory(in_tmp: Path) -> None:
    store = open_session_store(settings=Settings())
    try:
        store.append(KEY, [{"type": "user", "uuid": "1"}])
    finally:
        store.close()
    assert (in_tmp / "runs" / "sessions.db").is_file()
    with sqlite3.connect(in_tmp / "runs" / "sessions.db") as raw:
        assert raw.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall() == [
            (HEAD_REVISION,)
        ]


def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/deep/er/sessions.db"
    with open_session_store(url, settings=Settings()) as store:
        assert store.exists(KEY) is False
    assert (tmp_path / "deep" / "er" / "sessions.db").is_file()


@pytest.mark.parametrize(("setting", "expected"), [("normal", 1), ("full", 2)])
def test_wal_busy_timeout_and_synchronous_from_settings(
    tmp_path: Path, setting: str, expected: int
) -> None:
    settings = Settings(sessions=SessionsConfig(synchronous=setting))  # type: ignore[arg-type]
    store = open_session_store(f"sqlite:///{tmp_path}/s.db", settings=settings)
    try:
        assert pragma(store, "journal_mode") == "wal"
        assert pragma(store, "synchronous") == expected
        assert pragma(store, "foreign_keys") == 1
        assert pragma(store, "busy_timeout") == 30_000
    finally:
        store.close()


def test_busy_timeout_is_an_option(tmp_path: Path) -> None:
    settings = Settings(sessions=SessionsConfig(options={"busy_timeout": 2.5}))
    store = open_session_store(f"sqlite:///{tmp_path}/s.db", settings=settings)
    try:
        assert pragma(store, "busy_timeout") == 2_500
    finally:
        store.close()


@pytest.mark.usefixtures("english")
def test_a_corrupted_file_is_reported_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    garbage = b"this is not a database\x00\xff" * 400
    path.write_bytes(garbage)
    path.chmod(0o600)
    with pytest.raises(StoreUnavailableError) as info:
        open_session_store(f"sqlite:///{path}", settings=Settings())
    message = str(info.value)
    assert str(path) in message and "not a valid SQLite database" in message
    assert path.read_bytes() == garbage
    assert not (tmp_path / "sessions.db-wal").exists()


def test_an_empty_file_becomes_a_fresh_database(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.touch(mode=0o600)
    with open_session_store(f"sqlite:///{path}", settings=Settings()) as store:
        store.append(KEY, [{"type": "user"}])
        assert store.load(KEY) == [{"type": "user"}]


@pytest.mark.usefixtures("english")  # the error text is read in English
def test_a_schema_from_a_newer_flower_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    open_session_store(url, settings=Settings()).close()
    with sqlite3.connect(tmp_path / "s.db") as raw:
        raw.execute(f"UPDATE {VERSION_TABLE} SET version_num = '9999_from_the_future'")
    with pytest.raises(SchemaOutOfDateError, match=r"9999_from_the_future.*newer flower"):
        open_session_store(url, settings=Settings())


def test_in_memory_database_works(tmp_path: Path) -> None:
    with open_session_store("sqlite://", settings=Settings()) as store:
        store.append(KEY, [{"type": "user", "uuid": "1"}])
        assert store.load(KEY) == [{"type": "user", "uuid": "1"}]


@pytest.mark.usefixtures("english")
def test_a_folder_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailableError, match="cannot create the folder"):
        open_session_store(f"sqlite:///{blocker}/sub/s.db", settings=Settings())


@pytest.mark.usefixtures("english")
def test_a_file_another_process_holds_locked_says_so(tmp_path: Path) -> None:
    settings = Settings(sessions=SessionsConfig(options={"busy_timeout": 0.1}))
    store = open_session_store(f"sqlite:///{tmp_path}/s.db", settings=settings)
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailableError) as info:
            store.append(KEY, [{"type": "user", "uuid": "1"}])
    finally:
        holder.close()
        store.close()
    assert "another process held the write lock for more than 0.1 s" in str(info.value)


@pytest.mark.usefixtures("english")
def test_an_error_whose_words_say_locked_is_no_lock(tmp_path: Path) -> None:
    """Known by SQLite's error code: a missing table named ``locked_rows`` is no lock."""
    store = open_session_store(f"sqlite:///{tmp_path}/s.db", settings=Settings())
    try:
        with pytest.raises(StoreUnavailableError) as info:
            store.database.read(lambda conn: conn.exec_driver_sql("SELECT * FROM locked_rows"))
    finally:
        store.close()
    assert "write lock" not in str(info.value)
    assert str(info.value).startswith(f"SQLite database {tmp_path}/s.db: ")
