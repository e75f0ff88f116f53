"""A damaged SQLite store is never read short and never written into (issue 29 item 6).

Real page corruptions of a real database: three sessions of 22 chained entries each
(about a kilobyte apiece, so the entries table has an interior page and several leaves),
checkpointed, then one page damaged in place the way a disk or a copy damages it.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flower.core.config import SessionsConfig, Settings
from flower.core.errors import StoreDamagedError
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower.stores.repair import repair_sqlite

pytestmark = pytest.mark.usefixtures("english")

PAGE = 4096
SECRET = "the-launch-code-is-swordfish"
"""Written into every entry: no error message may quote it."""
KEYS = [SessionKey("-proj", f"session-{n}") for n in range(3)]


def _entries(key: SessionKey) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    parent = None
    for n in range(22):
        uid = f"{key.session_id}-{n:02d}"
        text = f"{SECRET} {uid} " + "x" * 900
        role = "user" if n % 2 == 0 else "assistant"
        out.append(
            {
                "type": role,
                "uuid": uid,
                "parentUuid": parent,
                "message": {"role": role, "content": text},
            }
        )
        parent = uid
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir(mode=0o700)
    path = folder / "sessions.db"
    with open_session_store(f"sqlite:///{path}", settings=Settings()) as store:
        for key in KEYS:  # interleaved, as steps of one run write
            for chunk in range(0, 22, 2):
                store.append(key, _entries(key)[chunk : chunk + 2])
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _pages(path: Path, table: str, kind: str) -> list[int]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno",
            (table, kind),
        ).fetchall()
    return [row[0] for row in rows]


def _page_holding(path: Path, text: bytes) -> int:
    return path.read_bytes().index(text) // PAGE + 1


def _patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def _digest(path: Path) -> str:
    files = [path, Path(f"{path}-wal")]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.exists())).hexdigest()


def _fewer_children(path: Path) -> None:
    """The entries table's interior page says it has two cells fewer: the leaves they
    pointed at are no longer reached, and SQLite reads on without an error."""
    (page,) = _pages(path, "flower_entries", "internal")
    offset = (page - 1) * PAGE
    cells = int.from_bytes(path.read_bytes()[offset + 3 : offset + 5], "big")
    assert cells >= 3
    _patch(path, offset + 3, (cells - 2).to_bytes(2, "big"))


def _lost_index_key(path: Path) -> None:
    """One byte of session-1's name in the sessions key index: the lookup misses it."""
    (page,) = _pages(path, "sqlite_autoindex_flower_sessions_1", "leaf")
    raw = path.read_bytes()
    at = raw.index(b"session-1", (page - 1) * PAGE)
    assert at < page * PAGE
    _patch(path, at + len("session-"), b"7")


def _load_all(path: Path) -> dict[SessionKey, object]:
    """Each session's load through a read-only store: its entries or the error."""
    found: dict[SessionKey, object] = {}
    with open_session_store(f"sqlite:///{path}", settings=Settings(), read_only=True) as store:
        for key in KEYS:
            try:
                found[key] = store.load(key)
            except StoreDamagedError as exc:
                found[key] = exc
    return found


@pytest.mark.parametrize("damage", [_fewer_children, _lost_index_key])
def test_a_load_is_never_short_and_never_none_for_a_session_the_file_holds(
    db: Path, damage: object
) -> None:
    damage(db)  # type: ignore[operator]
    loaded = _load_all(db)
    for key, got in loaded.items():
        assert isinstance(got, StoreDamagedError) or got == _entries(key), key
    damaged = [key for key, got in loaded.items() if isinstance(got, StoreDamagedError)]
    assert damaged, "the damage was not noticed"
    for key in damaged:
        message = str(loaded[key])
        assert str(db) in message and "flower sessions repair" in message
        assert SECRET not in message and "x" * 20 not in message


@pytest.mark.parametrize("damage", [_fewer_children, _lost_index_key])
def test_nothing_is_written_into_a_damaged_file(db: Path, damage: object) -> None:
    damage(db)  # type: ignore[operator]
    before = _digest(db)
    with (
        pytest.raises(StoreDamagedError) as info,
        open_session_store(f"sqlite:///{db}", settings=Settings()) as store,
    ):
        store.append(SessionKey("-proj", "new"), [{"type": "user", "uuid": "n1"}])
    assert str(db) in str(info.value) and "flower sessions repair" in str(info.value)
    assert _digest(db) == before


def test_a_damage_found_by_a_read_stops_every_later_writer(db: Path) -> None:
    """A large file is not checked when it opens: what a load found is remembered beside
    it, and no process writes into it afterwards."""
    _lost_index_key(db)
    with (
        open_session_store(f"sqlite:///{db}", settings=Settings(), read_only=True) as store,
        pytest.raises(StoreDamagedError),
    ):
        store.load(KEYS[1])
    before = _digest(db)
    import flower_plugins.sql.engine as engine

    limit = engine.QUICK_CHECK_MAX_BYTES
    engine.QUICK_CHECK_MAX_BYTES = 0  # as for a file too large to check on opening
    try:
        with pytest.raises(StoreDamagedError):
            open_session_store(f"sqlite:///{db}", settings=Settings())
    finally:
        engine.QUICK_CHECK_MAX_BYTES = limit
    assert _digest(db) == before


def test_an_entry_that_is_not_json_is_a_damage_naming_no_content(db: Path) -> None:
    raw = db.read_bytes()
    at = raw.index(b'{"type":"assistant","uuid":"session-2-05"')
    _patch(db, at, b"~")
    loaded = _load_all(db)
    assert loaded[KEYS[0]] == _entries(KEYS[0]) and loaded[KEYS[1]] == _entries(KEYS[1])
    error = loaded[KEYS[2]]
    assert isinstance(error, StoreDamagedError)
    assert "session-2" in str(error) and SECRET not in str(error)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_page_corruptions_are_never_read_short(db: Path, seed: int) -> None:
    """A page of the file, chosen by the seed, overwritten with random bytes: every
    session reads back as written or is refused, and a writer refuses the file unless
    SQLite finds it sound."""
    rnd = random.Random(seed)
    pages = db.stat().st_size // PAGE
    page = rnd.randrange(2, pages + 1)
    _patch(db, (page - 1) * PAGE, rnd.randbytes(PAGE))
    for key, got in _load_all(db).items():
        assert isinstance(got, StoreDamagedError) or got == _entries(key), (page, key)
    with sqlite3.connect(db) as conn:
        try:
            sound = conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        except sqlite3.DatabaseError:
            sound = False
    before = _digest(db)
    if not sound:
        with pytest.raises(StoreDamagedError):
            open_session_store(f"sqlite:///{db}", settings=Settings())
        assert _digest(db) == before


def _sql_lineage(db: Path) -> Any:
    from flower_plugins.sql.factory import open_lineage_store

    return open_lineage_store("sqlite", url=f"sqlite:///{db}", options=None, settings=Settings())


def test_repair_saves_every_readable_session_and_sets_the_file_aside(db: Path) -> None:
    from flower.core.records import LineageRecord

    record = LineageRecord(workspace="/w", woke=3, steps={"work": "session-1"}, extra={"k": 1})
    kept = _sql_lineage(db)
    kept.save(record)
    kept.close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _fewer_children(db)
    damaged = db.read_bytes()
    done = repair_sqlite(f"sqlite:///{db}")
    assert done.why is not None and done.aside is not None and done.report is not None
    assert done.aside.read_bytes() == damaged
    assert not Path(f"{db}.damaged").exists()
    with open_session_store(f"sqlite:///{db}", settings=Settings()) as store:
        saved = {key: store.load(key) or [] for key in KEYS}
        store.append(SessionKey("-proj", "after"), [{"type": "user", "uuid": "a1"}])
    for key, got in saved.items():
        original = _entries(key)
        assert got == [e for e in original if e in got]  # what was readable, in order
    lost = {key for key, got in saved.items() if len(got) < 22}
    assert lost and {t.key for t in done.report.cut} == lost
    assert sum(map(len, saved.values())) == done.report.copy.entries_written
    assert repair_sqlite(f"sqlite:///{db}").why is None  # sound now: nothing to do
    lineage = _sql_lineage(db)  # a SQL lineage kept in the same file comes along
    try:
        assert lineage.load("/w") == record
    finally:
        lineage.close()


def test_doctor_fails_its_store_check_on_a_damaged_file(db: Path) -> None:
    from flower.core.config import SessionsConfig
    from flower.runtime.doctor import check_store

    settings = Settings(sessions=SessionsConfig(url=f"sqlite:///{db}"))
    assert check_store(settings).ok
    _lost_index_key(db)
    before = _digest(db)
    check = check_store(settings)
    assert not check.ok and "flower sessions repair" in check.detail and str(db) in check.detail
    assert _digest(db) == before


def test_repair_keeps_an_encrypted_store_encrypted(tmp_path: Path) -> None:
    from flower.stores.encrypt import EncryptedSessionStore
    from flower.stores.keyring import generate_key, parse_keys

    folder = tmp_path / "runs"
    folder.mkdir(mode=0o700)
    path = folder / "sessions.db"
    keyring = parse_keys(generate_key(), "a test key")

    def encrypted() -> EncryptedSessionStore:
        return EncryptedSessionStore(
            open_session_store(f"sqlite:///{path}", settings=Settings()), keyring
        )

    with encrypted() as store:
        for key in KEYS:
            store.append(key, _entries(key))
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _lost_index_key(path)
    done = repair_sqlite(f"sqlite:///{path}")
    assert done.why is not None
    assert SECRET.encode() not in path.read_bytes()  # copied sealed, as stored
    with encrypted() as store:
        for key in KEYS:
            assert store.load(key) == _entries(key)


def test_repair_saves_a_file_whose_schema_version_page_is_lost(db: Path) -> None:
    """Even the page that says which schema the file has: a reader still reads it."""
    (page,) = _pages(db, "flower_alembic_version", "leaf")
    _patch(db, (page - 1) * PAGE, bytes(PAGE))
    done = repair_sqlite(f"sqlite:///{db}")
    assert done.why is not None and done.report is not None
    with open_session_store(f"sqlite:///{db}", settings=Settings()) as store:
        for key in KEYS:
            assert store.load(key) == _entries(key)


def test_a_large_file_still_gets_its_sessions_table_checked_by_a_writer(db: Path) -> None:
    """Above the size a whole check costs too much, the sessions table and its key
    indexes are still checked before a write: a lost index row is refused at once."""
    _lost_index_key(db)
    before = _digest(db)
    import flower_plugins.sql.engine as engine

    limit = engine.QUICK_CHECK_MAX_BYTES
    engine.QUICK_CHECK_MAX_BYTES = 0
    try:
        with pytest.raises(StoreDamagedError):
            open_session_store(f"sqlite:///{db}", settings=Settings())
    finally:
        engine.QUICK_CHECK_MAX_BYTES = limit
    assert _digest(db) == before


def test_repair_configured_leaves_a_sound_store_as_it_is(db: Path) -> None:
    from flower.stores.repair import repair_configured

    settings = Settings(run_dir=str(db.parent), sessions=SessionsConfig(url=f"sqlite:///{db}"))
    before = _digest(db)
    done = repair_configured(settings)
    assert done.why is None and _digest(db) == before
    assert done.path == db
