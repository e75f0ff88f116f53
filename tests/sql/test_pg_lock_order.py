"""Two writers on one Postgres session never deadlock on each other's locks.

The other writer is a plain Postgres transaction doing what a store that already
knows the session's row id does on append: insert its entries, then touch the
session row. Its ``deadlock_timeout`` is long, so if a cycle forms it is the store
under test that detects it and gets the error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import psycopg
import pytest

from flower.core.records import SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.store import SqlSessionStore
from tests.sql.conftest import migrated

KEY = SessionKey("proj", "shared")


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
def other_writer(pg_url: str) -> Iterator[tuple[psycopg.Connection, int]]:
    """An open transaction that holds uuid 'S' of KEY and has not committed yet."""
    first = SqlSessionStore(open_database(migrated(pg_url)))
    try:
        first.append(KEY, [{"type": "user", "uuid": "first"}])
    finally:
        first.close()
    with psycopg.connect(_libpq(pg_url)) as conn:
        conn.execute("SET deadlock_timeout = '20s'")
        pk = conn.execute("SELECT id FROM flower_sessions").fetchone()[0]
        conn.execute(
            "INSERT INTO flower_entries (session_pk, uuid, type, payload) "
            """VALUES (%s, 'S', 'user', '{"type":"user","uuid":"S"}')""",
            (pk,),
        )
        yield conn, pk


def _append_in_thread(store: SqlSessionStore, batch: list[dict]) -> tuple[threading.Thread, list]:
    outcome: list[object] = []

    def run() -> None:
        try:
            store.append(KEY, batch)
            outcome.append("ok")
        except Exception as exc:  # asserted by the caller
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _wait_until_blocked(conn: psycopg.Connection) -> None:
    """Until another backend waits for a lock this transaction holds."""
    mine = conn.info.backend_pid
    with psycopg.connect(conn.info.dsn, autocommit=True) as watcher:
        for _ in range(500):
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (mine,),
            ).fetchone()[0]
            if waiting:
                return
            watcher.execute("SELECT pg_sleep(0.01)")
    raise AssertionError("the store never waited for the other writer")


def test_a_first_append_does_not_lock_the_session_row_before_its_entries(
    pg_url: str, other_writer: tuple[psycopg.Connection, int]
) -> None:
    conn, pk = other_writer
    store = SqlSessionStore(open_database(pg_url))  # a new process: row id not cached
    try:
        thread, outcome = _append_in_thread(
            store, [{"type": "user", "uuid": "mine"}, {"type": "user", "uuid": "S"}]
        )
        _wait_until_blocked(conn)  # the store waits for our 'S'
        conn.execute("UPDATE flower_sessions SET mtime_ms = mtime_ms + 1 WHERE id = %s", (pk,))
        conn.commit()
        thread.join(30)
        assert outcome == ["ok"]
        assert [e["uuid"] for e in store.load(KEY) or []] == ["first", "S", "mine"]
    finally:
        store.close()


def test_a_deadlock_on_uuids_sent_in_opposite_orders_is_retried(
    pg_url: str, other_writer: tuple[psycopg.Connection, int]
) -> None:
    # The other writer holds 'S' and is about to insert 'X'; the store sends X then S.
    # That cycle is real; Postgres aborts the store's transaction, which is redone
    # (idempotent by uuid), and the append succeeds once the other writer commits.
    conn, pk = other_writer
    store = SqlSessionStore(open_database(pg_url))
    try:
        thread, outcome = _append_in_thread(
            store, [{"type": "user", "uuid": "X"}, {"type": "user", "uuid": "S"}]
        )
        _wait_until_blocked(conn)
        conn.execute(
            "INSERT INTO flower_entries (session_pk, uuid, type, payload) "
            """VALUES (%s, 'X', 'user', '{"type":"user","uuid":"X"}')""",
            (pk,),
        )
        conn.commit()
        thread.join(30)
        assert outcome == ["ok"]
        assert [e["uuid"] for e in store.load(KEY) or []] == ["first", "S", "X"]
    finally:
        store.close()


ABORT_AS_A_DEADLOCK = "DO $$ BEGIN RAISE EXCEPTION 'cycle' USING ERRCODE = '40P01'; END $$"
"""Postgres ends the transaction exactly as it does to break a real deadlock."""


def test_a_transaction_aborted_again_and_again_runs_until_it_commits(pg_url: str) -> None:
    # Under load the redone transaction can meet the same cycle again (seen in a loaded
    # run of the test above): running it again once is not enough.
    db = open_database(migrated(pg_url))
    runs: list[str] = []

    def aborted_three_times(run: Callable[[str], object]) -> str:
        runs.append("run")
        if len(runs) <= 3:
            run(ABORT_AS_A_DEADLOCK)
        run("SELECT 1")
        return "committed"

    try:
        assert db.raw_write(lambda cursor: aborted_three_times(cursor.execute)) == "committed"
        assert len(runs) == 4
        runs.clear()
        assert db.write(lambda conn: aborted_three_times(conn.exec_driver_sql)) == "committed"
        assert len(runs) == 4
    finally:
        db.engine.dispose()
