"""Scale: listings and last_usage come from indexes and summary rows; loads stream."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from flower.core.records import SessionKey
from flower.testing.postgres import PostgresUnavailable, require_postgres, temporary_schema
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.schema import SEQ_SPAN, sessions
from flower_plugins.sql.store import SqlSessionStore
from tests.sql.conftest import migrated

BIG = SessionKey("proj", "big")
N_ENTRIES = 100_000
USAGE = {"input_tokens": 123_456, "output_tokens": 7}

# On SQLite the store numbers entries within the session's seq range (schema.py):
# the bulk rows continue after the first append's seq = pk * SEQ_SPAN + 1.
_SEQ = {"sqlite": ("seq, ", "{pk} * {span} + 1 + i, "), "postgres": ("", "")}
_BULK_SQL = (
    "INSERT INTO flower_entries ({seq_column}session_pk, uuid, type, payload) "
    "SELECT {seq_value}{pk}, 'u' || CAST(i AS TEXT), 'user', "
    '\'{{"type":"user","uuid":"u\' || CAST(i AS TEXT) || \'","n":\' || CAST(i AS TEXT) '
    '|| \',"pad":"{pad}"}}\' FROM {series}'
)
_SERIES = {
    "sqlite": "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
    "SELECT i FROM s)",
    "postgres": "generate_series(1, {n}) AS s(i)",
}


def bulk_session(store: SqlSessionStore, key: SessionKey, n: int, pad: int = 0) -> None:
    """``n`` entries: the first and last through append, the middle in one SQL statement."""
    store.append(key, [{"type": "user", "uuid": "u0", "n": 0, "pad": "x" * pad}])
    db = store.database
    with db.engine.connect() as conn:
        pk = conn.execute(sa.select(sessions.c.id).where(sessions.c.session_id == key.session_id))
        session_pk = pk.scalar_one()
        seq_column, seq_value = _SEQ[db.dialect]
        sql = _BULK_SQL.format(
            seq_column=seq_column,
            seq_value=seq_value.format(pk=session_pk, span=SEQ_SPAN),
            pk=session_pk,
            pad="x" * pad,
            series=_SERIES[db.dialect].format(n=n - 2),
        )
    with db.engine.begin() as conn:
        conn.exec_driver_sql(sql)
    store.append(key, [{"type": "assistant", "uuid": "last", "message": {"usage": USAGE}}])


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def big_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqlSessionStore]:
    """One 100,000-entry session, built once per dialect for this module."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('scale')}/s.db"
        else:
            try:
                url = stack.enter_context(temporary_schema())
            except PostgresUnavailable as exc:
                if require_postgres():
                    pytest.fail(f"FLOWER_REQUIRE_POSTGRES=1 but {exc}")
                pytest.skip(str(exc))
        store = SqlSessionStore(open_database(migrated(url)))
        stack.callback(store.close)
        bulk_session(store, BIG, N_ENTRIES)
        yield store


class StatementLog:
    def __init__(self, store: SqlSessionStore) -> None:
        self.statements: list[str] = []
        self.engine = store.database.engine
        event.listen(self.engine, "before_cursor_execute", self._record)

    def _record(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        self.statements.append(statement)

    def stop(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)


def test_last_usage_reads_the_summary_row_only(big_store: SqlSessionStore) -> None:
    log = StatementLog(big_store)
    try:
        assert big_store.last_usage(BIG) == USAGE
        assert big_store.exists(BIG)
        assert [i.session_id for i in big_store.list_sessions("proj")] == ["big"]
    finally:
        log.stop()
    assert log.statements and not any("flower_entries" in s for s in log.statements)


def test_a_100k_session_loads_whole_and_in_order(big_store: SqlSessionStore) -> None:
    loaded = big_store.load(BIG)
    assert loaded is not None and len(loaded) == N_ENTRIES
    assert [e.get("n") for e in loaded[:3]] == [0, 1, 2]
    assert loaded[-2]["n"] == N_ENTRIES - 2 and loaded[-1]["uuid"] == "last"


def test_streaming_keeps_memory_bounded(db_url: str) -> None:
    key = SessionKey("proj", "padded")
    store = SqlSessionStore(open_database(db_url))
    try:
        bulk_session(store, key, 20_000, pad=1_000)  # about 20 MB of entries
        tracemalloc.start()
        try:
            count = sum(1 for _ in store.iter_entries(key))
            _, streamed_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        store.close()
    assert count == 20_000
    # The whole transcript holds over 20 MB; the stream about one 1,000-row chunk.
    assert streamed_peak < 8_000_000, streamed_peak


def _plan(store: SqlSessionStore, query: sa.Select) -> str:
    db = store.database
    with db.engine.connect() as conn:
        compiled = query.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
        prefix = "EXPLAIN QUERY PLAN " if db.dialect == "sqlite" else "EXPLAIN "
        rows = conn.exec_driver_sql(prefix + str(compiled)).all()
    return "\n".join(str(row[-1]) for row in rows)


def test_list_sessions_over_ten_thousand_sessions_uses_an_index(db_url: str) -> None:
    store = SqlSessionStore(open_database(db_url))
    try:
        series = _SERIES[store.database.dialect].format(n=100_000)
        with store.database.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO flower_sessions (project_key, session_id, subpath, created_ms, "
                "mtime_ms) SELECT 'proj-' || CAST(i - (i / 10) * 10 AS TEXT), "
                f"'s' || CAST(i AS TEXT), '', i, i FROM {series}"
            )
            conn.exec_driver_sql("ANALYZE")
        listed = store.list_sessions("proj-3")
        assert len(listed) == 10_000
        assert listed[0].session_id == "s99993"  # newest first
        query = sa.select(sessions.c.session_id, sessions.c.mtime_ms).where(
            sessions.c.project_key == "proj-3", sessions.c.subpath == ""
        )
        plan = _plan(store, query)
    finally:
        store.close()
    assert "INDEX" in plan.upper(), plan  # SQLite: SEARCH ... USING INDEX; Postgres: Index Scan
    assert "SCAN flower_sessions" not in plan and "Seq Scan" not in plan, plan


def test_sqlite_loads_a_session_as_one_range_of_the_table(tmp_path: object) -> None:
    """No index and no sort: seq is clustered by session (schema.py)."""
    store = SqlSessionStore(open_database(migrated(f"sqlite:///{tmp_path}/s.db")))
    try:
        store.append(BIG, [{"type": "user", "uuid": "a"}])
        with store.database.engine.connect() as conn:
            raw = conn.connection.driver_connection
            plan = raw.execute(
                "EXPLAIN QUERY PLAN " + store._sql_select_payloads, store._payload_params(1)
            ).fetchall()
    finally:
        store.close()
    details = " | ".join(str(row[-1]) for row in plan)
    assert "INTEGER PRIMARY KEY" in details and "TEMP B-TREE" not in details, details
