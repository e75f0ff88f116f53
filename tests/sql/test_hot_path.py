"""The append hot path: positional rows and one reused cursor per thread."""

from __future__ import annotations

import threading

import pytest

from flower.core.errors import InvalidEntryError
from flower.core.records import SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.options import SqlOptions
from flower_plugins.sql.store import CLUSTERED_ENTRY_COLUMNS, ENTRY_COLUMNS, SqlSessionStore

KEY = SessionKey("-proj", "s1")


def test_positional_insert_binds_columns_in_row_order(db_url: str) -> None:
    db = open_database(db_url)
    try:
        store = SqlSessionStore(db)
        sql, order = db.compile_positional(store._insert_entries)
        assert order == (CLUSTERED_ENTRY_COLUMNS if db.dialect == "sqlite" else ENTRY_COLUMNS)
        assert ":session_pk" not in sql and "%(" not in sql
    finally:
        db.close()


def test_the_reused_cursor_survives_a_failed_transaction(store: SqlSessionStore) -> None:
    store.append(KEY, [{"type": "user", "uuid": "a"}])
    with pytest.raises(InvalidEntryError):
        store.append(KEY, [{"type": "user", "uuid": "b"}, {"type": "user", "x": (1,)}])
    # Another store deletes the session: our cached row id makes the insert fail on
    # the foreign key, the transaction is rolled back and redone on the same cursor.
    other = SqlSessionStore(open_database(store.url))
    try:
        other.delete(KEY)
    finally:
        other.close()
    store.append(KEY, [{"type": "user", "uuid": "c"}])
    store.append(KEY, [{"type": "user", "uuid": "c"}, {"type": "user", "uuid": "d"}])
    assert [e["uuid"] for e in store.load(KEY) or []] == ["c", "d"]


class NotTheDriver(Exception):
    """A failure inside a transaction that the database driver did not raise."""


def test_a_failure_outside_the_driver_ends_the_transaction(db_url: str) -> None:
    db = open_database(db_url, SqlOptions(busy_timeout=1.0))
    store = SqlSessionStore(db)
    other = SqlSessionStore(open_database(db_url, SqlOptions(busy_timeout=1.0)))
    try:
        store.append(KEY, [{"type": "user", "uuid": "a"}])

        def fail(cursor: object) -> None:
            store._append_tx(
                KEY, [("b", "user", '{"type":"user","uuid":"b"}')], [], 0, None, cursor
            )
            raise NotTheDriver

        with pytest.raises(NotTheDriver):
            db.raw_write(fail)
        # nothing of it was committed, and no lock or transaction was left behind
        other.append(KEY, [{"type": "user", "uuid": "c"}])
        store.append(KEY, [{"type": "user", "uuid": "d"}])
        assert [e["uuid"] for e in store.load(KEY) or []] == ["a", "c", "d"]
    finally:
        other.close()
        store.close()


def test_threads_append_through_their_own_cursors(store: SqlSessionStore) -> None:
    def write(thread: int) -> None:
        for i in range(20):
            store.append(KEY, [{"type": "user", "uuid": f"{thread}-{i}"}])

    threads = [threading.Thread(target=write, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = store.load(KEY) or []
    assert len(loaded) == 60
    for thread in range(3):  # each thread's entries keep their order
        mine = [e["uuid"] for e in loaded if e["uuid"].startswith(f"{thread}-")]
        assert mine == [f"{thread}-{i}" for i in range(20)]


def test_a_finished_thread_gives_its_connection_back_to_the_pool(store: SqlSessionStore) -> None:
    # A long-lived store used from short-lived threads (a thread per job): each
    # thread's hot connection must return to the pool when the thread ends, or the
    # pool runs dry after pool_size + max_overflow threads and the next one hangs.
    def write(thread: int) -> None:
        store.append(KEY, [{"type": "user", "uuid": f"t{thread}"}])
        assert store.load(KEY)

    for n in range(12):
        worker = threading.Thread(target=write, args=(n,))
        worker.start()
        worker.join()
    pool = store.database.engine.pool
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    store.append(KEY, [{"type": "user", "uuid": "main"}])
    assert pool.checkedout() == 1  # type: ignore[attr-defined]
    assert len(store.load(KEY) or []) == 13
