"""SQLite numbers entries within their session's seq range; migration 0003 renumbers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from flower.core.records import SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.migrate import downgrade, upgrade
from flower_plugins.sql.schema import SEQ_SPAN, seq_range
from flower_plugins.sql.store import SqlSessionStore

A = SessionKey("p", "a")
B = SessionKey("p", "b")
A_SUB = SessionKey("p", "a", "subagents/agent-1")


def _entry(uuid: str) -> dict[str, str]:
    return {"type": "user", "uuid": uuid}


def _seqs(path: Path) -> dict[int, list[int]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT session_pk, seq FROM flower_entries ORDER BY rowid").fetchall()
    finally:
        db.close()
    found: dict[int, list[int]] = {}
    for pk, seq in rows:
        found.setdefault(pk, []).append(seq)
    return found


def _indexes(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    finally:
        db.close()
    return {name for (name,) in rows}


def _interleave(store: SqlSessionStore) -> dict[SessionKey, list[str]]:
    """Appends that alternate between three transcripts, with a repeated uuid."""
    written: dict[SessionKey, list[str]] = {A: [], B: [], A_SUB: []}
    for n in range(6):
        for key in (A, B, A_SUB):
            batch = [f"{key.session_id}{key.subpath or ''}-{n}-{i}" for i in range(n % 3 + 1)]
            store.append(key, [_entry(u) for u in batch])
            written[key].extend(batch)
    store.append(A, [_entry(written[A][0])])  # ignored: already there
    return written


def test_each_session_owns_a_contiguous_seq_range_in_insertion_order(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqlSessionStore(open_database(f"sqlite:///{path}"))
    upgrade(store.database)
    try:
        written = _interleave(store)
        for key, uuids in written.items():
            assert [e["uuid"] for e in store.load(key) or []] == uuids
            assert [e["uuid"] for e in store.iter_entries(key)] == uuids
    finally:
        store.close()
    for pk, seqs in _seqs(path).items():
        low, high = seq_range(pk)
        assert seqs == list(range(low + 1, low + 1 + len(seqs))), pk
        assert high == low + SEQ_SPAN
    assert "ix_flower_entries_session_pk_seq" not in _indexes(path)


def _old_style_insert(path: Path, rows: list[tuple[int, str]]) -> None:
    """Insert as the code before 0003 did: seq from the one global rowid sequence."""
    raw = sqlite3.connect(path)
    try:
        raw.executemany(
            "INSERT INTO flower_entries (session_pk, uuid, type, payload) "
            'VALUES (?, ?, \'user\', \'{"type":"user","uuid":"\' || ? || \'"}\')',
            [(pk, uuid, uuid) for pk, uuid in rows],
        )
        raw.commit()
    finally:
        raw.close()


def _loaded(url: str, key: SessionKey) -> list[str]:
    store = SqlSessionStore(open_database(url))
    try:
        return [e["uuid"] for e in store.load(key) or []]
    finally:
        store.close()


def test_migration_0003_renumbers_old_rows_and_survives_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    db = open_database(url)
    try:
        upgrade(db, "0002_lineage_usage")
    finally:
        db.close()
    raw = sqlite3.connect(path)
    try:
        for pk, key in enumerate((A, B), start=1):
            raw.execute(
                "INSERT INTO flower_sessions (id, project_key, session_id, subpath, "
                "created_ms, mtime_ms) VALUES (?, ?, ?, '', 1, 1)",
                (pk, key.project_key, key.session_id),
            )
        raw.commit()
    finally:
        raw.close()
    _old_style_insert(
        path, [(1, "a0"), (2, "b0"), (1, "a1"), (1, "a2"), (2, "b1"), (2, "b2"), (1, "a3")]
    )
    assert "ix_flower_entries_session_pk_seq" in _indexes(path)

    db = open_database(url)
    try:
        upgrade(db)
    finally:
        db.close()
    assert "ix_flower_entries_session_pk_seq" not in _indexes(path)
    assert _seqs(path) == {
        1: [SEQ_SPAN + n for n in (1, 2, 3, 4)],
        2: [2 * SEQ_SPAN + n for n in (1, 2, 3)],
    }
    store = SqlSessionStore(open_database(url))
    try:
        store.append(A, [_entry("a4"), _entry("a0")])  # a0 is already there
    finally:
        store.close()
    assert _loaded(url, A) == ["a0", "a1", "a2", "a3", "a4"]
    assert _loaded(url, B) == ["b0", "b1", "b2"]

    db = open_database(url)
    try:
        downgrade(db, "0002_lineage_usage")
    finally:
        db.close()
    assert "ix_flower_entries_session_pk_seq" in _indexes(path)
    # The older code would append after the largest seq of all; upgrading again
    # renumbers through negative values, so no new seq collides with an old one.
    _old_style_insert(path, [(2, "b3"), (1, "a5")])
    db = open_database(url)
    try:
        upgrade(db)
    finally:
        db.close()
    assert _loaded(url, A) == ["a0", "a1", "a2", "a3", "a4", "a5"]
    assert _loaded(url, B) == ["b0", "b1", "b2", "b3"]
    assert _seqs(path)[2] == [2 * SEQ_SPAN + n for n in (1, 2, 3, 4)]
