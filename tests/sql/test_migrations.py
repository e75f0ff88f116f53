"""Alembic owns the schema: one head, reversible, matching the models, on both dialects."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from flower.core.config import SessionsConfig, Settings
from flower.core.errors import SchemaOutOfDateError, StoreUnavailableError
from flower.core.records import SessionKey
from flower.stores.open import open_session_store
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.migrate import (
    downgrade,
    migrations_dir,
    read_state,
    script_directory,
    upgrade,
)
from flower_plugins.sql.schema import HEAD_REVISION, VERSION_TABLE, exists_on, metadata
from flower_plugins.sql.store import SqlSessionStore

KEY = SessionKey("p", "s")
ENTRY = {"type": "assistant", "uuid": "a1", "message": {"usage": {"input_tokens": 3}}}


@pytest.fixture(params=["sqlite", "postgres"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/s.db"
    return request.getfixturevalue("pg_url")


def test_one_head_and_it_is_the_one_the_code_expects() -> None:
    assert script_directory().get_heads() == [HEAD_REVISION]


def test_migrations_folder_is_not_an_importable_alembic_package() -> None:
    import alembic

    folder = migrations_dir()
    assert (folder / "env.py").is_file()
    assert not (folder / "__init__.py").exists()
    assert Path(alembic.__file__).parent != folder
    # first on the path, as a checkout's root is for `python` run there: `import alembic`
    # must still find the library, not the folder holding the migration scripts
    done = subprocess.run(
        [sys.executable, "-c", "import alembic.command, sys; print(alembic.command.__file__)"],
        cwd=folder.parent,
        env={**os.environ, "PYTHONPATH": str(folder.parent)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(alembic.__file__).parent / "command.py"


def test_upgrade_down_to_base_and_back_keeps_data_where_tables_stay(empty_url: str) -> None:
    db = open_database(empty_url)
    try:
        assert read_state(db).status == "empty"
        upgrade(db)
        store = SqlSessionStore(db)
        store.append(KEY, [ENTRY, {"type": "user", "uuid": "u1"}])
        assert store.last_usage(KEY) == {"input_tokens": 3}

        assert downgrade(db, "0001_initial").current == "0001_initial"
        with db.engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("flower_sessions")}
            assert "last_usage" not in columns
            assert not sa.inspect(conn).has_table("flower_lineage")

        before, after = upgrade(db)
        assert (before.status, after.status) == ("behind", "up to date")
        store = SqlSessionStore(db)
        assert store.load(KEY) == [ENTRY, {"type": "user", "uuid": "u1"}]
        store.append(KEY, [ENTRY])  # idempotency survived the table rebuild
        assert len(store.load(KEY) or []) == 2

        assert downgrade(db, "base").current is None
        upgrade(db)
        assert SqlSessionStore(db).load(KEY) is None
        assert read_state(db).status == "up to date"
    finally:
        db.close()


def test_models_match_the_migrations(empty_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    db = open_database(empty_url)
    try:
        upgrade(db)
        with db.engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": True,
                    "version_table": VERSION_TABLE,
                    "include_object": exists_on(conn.dialect.name),
                },
            )
            assert compare_metadata(context, metadata) == []
    finally:
        db.close()


def test_upgrading_twice_is_harmless_and_reports_nothing_to_do(empty_url: str) -> None:
    db = open_database(empty_url)
    try:
        first = upgrade(db)
        second = upgrade(db)
        assert first[0].status == "empty" and first[1].current == HEAD_REVISION
        assert second[0].current == second[1].current == HEAD_REVISION
    finally:
        db.close()


def test_migrations_leave_the_host_loggers_alone(empty_url: str) -> None:
    host = logging.getLogger("host.application")
    db = open_database(empty_url)
    try:
        upgrade(db)
    finally:
        db.close()
    assert host.disabled is False


def test_postgres_behind_is_an_error_naming_flower_db_upgrade(pg_url: str) -> None:
    with pytest.raises(SchemaOutOfDateError, match="flower db upgrade"):
        open_session_store(pg_url, settings=Settings())
    db = open_database(pg_url)
    try:
        upgrade(db, "0001_initial")
    finally:
        db.close()
    with pytest.raises(SchemaOutOfDateError, match=r"0001_initial.*flower db upgrade"):
        open_session_store(pg_url, settings=Settings())


def test_postgres_auto_migrate_is_opt_in(pg_url: str) -> None:
    settings = Settings(sessions=SessionsConfig(backend="postgres", auto_migrate=True))
    with open_session_store(pg_url, settings=settings) as store:
        store.append(KEY, [ENTRY])
    with open_session_store(pg_url, settings=Settings()) as store:  # now up to date
        assert store.load(KEY) == [ENTRY]


@pytest.mark.usefixtures("english")  # the error text is read in English
def test_postgres_ahead_is_a_clear_error(pg_url: str) -> None:
    db = open_database(pg_url)
    try:
        upgrade(db)
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f"UPDATE {VERSION_TABLE} SET version_num = 'zz_newer'")
    finally:
        db.close()
    with pytest.raises(SchemaOutOfDateError, match=r"zz_newer.*newer flower"):
        open_session_store(pg_url, settings=Settings())
    db = open_database(pg_url)
    try:
        with pytest.raises(SchemaOutOfDateError, match="newer flower"):
            upgrade(db)
    finally:
        db.close()


def test_two_postgres_upgrades_at_once_are_safe(pg_url: str) -> None:
    results: list[object] = []
    barrier = threading.Barrier(3)

    def run() -> None:
        db = open_database(pg_url)
        try:
            barrier.wait()
            results.append(upgrade(db)[1].current)
        except Exception as exc:  # collected and asserted below
            results.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [HEAD_REVISION] * 3
    db = open_database(pg_url)
    try:
        with db.engine.connect() as conn:
            versions = conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").all()
            tables = set(sa.inspect(conn).get_table_names())
        assert versions == [(HEAD_REVISION,)]
        assert {"flower_sessions", "flower_entries", "flower_lineage", VERSION_TABLE} <= tables
    finally:
        db.close()


def test_postgres_tables_land_in_the_search_path_schema(pg_url: str) -> None:
    db = open_database(pg_url)
    try:
        upgrade(db)
        with db.engine.connect() as conn:
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
            found = conn.exec_driver_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %(s)s",
                {"s": schema},
            ).scalars()
            assert schema.startswith("flower_test_")
            assert {VERSION_TABLE, "flower_sessions", "flower_entries"} <= set(found)
    finally:
        db.close()


def test_a_search_path_naming_a_missing_schema_is_a_clear_error(pg_url: str) -> None:
    # current_schema() is NULL then: the migration lock would lock nothing, and
    # Postgres would only say "no schema has been selected to create in".
    url = pg_url.rsplit("search_path%3D", 1)[0] + "search_path%3Dno_such_schema_flower"
    db = open_database(url)
    try:
        with pytest.raises(StoreUnavailableError, match=r"no_such_schema_flower.*CREATE SCHEMA"):
            upgrade(db)
    finally:
        db.close()


def test_doctor_names_a_store_behind_once(pg_url: str, in_tmp: Path) -> None:
    from flower.runtime.doctor import check_store

    db = open_database(pg_url)
    try:
        upgrade(db, "0001_initial")
    finally:
        db.close()
    settings = Settings(sessions=SessionsConfig(backend="postgres", url=pg_url))
    check = check_store(settings)
    assert not check.ok and "flower db upgrade" in check.detail
    assert check.detail.count("postgresql") == 1, check.detail


@pytest.mark.usefixtures("english")  # doctor's detail is read in English
def test_doctor_migrates_no_empty_schema_even_with_auto_migrate(pg_url: str, in_tmp: Path) -> None:
    import sqlalchemy as sa

    from flower.runtime.doctor import check_store

    for auto_migrate in (False, True):
        conf = SessionsConfig(backend="postgres", url=pg_url, auto_migrate=auto_migrate)
        check = check_store(Settings(sessions=conf))
        assert check.ok is auto_migrate, check.detail
        assert ("the first run creates it" in check.detail) is auto_migrate
        assert auto_migrate or "flower db upgrade" in check.detail
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert sa.inspect(conn).get_table_names() == []
    finally:
        engine.dispose()


def _assistant(uid: str, usage: dict | None, **extra: object) -> str:
    message: dict = {"role": "assistant", "content": [{"type": "text", "text": uid}]}
    if usage is not None:
        message["usage"] = usage
    import json

    return json.dumps({"type": "assistant", "uuid": uid, "message": message, **extra})


def test_0004_gives_sessions_written_at_0001_their_last_usage(empty_url: str) -> None:
    """Before 0002 a session row had no usage: its context size stayed unknown."""
    db = open_database(empty_url)
    try:
        upgrade(db, "0001_initial")
        rows = {  # session -> payloads in order, as 0001 wrote them
            "real-last": [
                _assistant("a1", {"input_tokens": 5}),
                _assistant("a2", {"input_tokens": 9}),
            ],
            "error-last": [
                _assistant("b1", {"input_tokens": 7}),
                _assistant("b2", {"input_tokens": 0}, isApiErrorMessage=True),
            ],
            "sealed": [
                '{"type": "assistant", "uuid": "c1", "message": {"usage": {"input_tokens": 4}}, '
                '"flowerEnc": {}}'
            ],
            "no-reply": [
                '{"type": "user", "uuid": "d1", "message": {"role": "user", "content": "hi"}}'
            ],
        }
        with db.engine.begin() as conn:
            for pk, (sid, payloads) in enumerate(rows.items(), start=1):
                conn.execute(
                    sa.text(
                        "INSERT INTO flower_sessions (id, project_key, session_id, subpath, "
                        "created_ms, mtime_ms) VALUES (:pk, 'p', :sid, '', 1, 1)"
                    ),
                    {"pk": pk, "sid": sid},
                )
                for n, payload in enumerate(payloads):
                    kind = "user" if '"type": "user"' in payload else "assistant"
                    conn.execute(
                        sa.text(
                            "INSERT INTO flower_entries (session_pk, uuid, type, payload) "
                            "VALUES (:pk, :uuid, :type, :payload)"
                        ),
                        {
                            "pk": pk,
                            "uuid": f"{sid}-{n}",
                            "type": kind,
                            "payload": payload,
                        },
                    )
        upgrade(db)
    finally:
        db.close()
    store = SqlSessionStore(open_database(empty_url))
    try:
        usage = {sid: store.last_usage(SessionKey("p", sid)) for sid in rows}
    finally:
        store.close()
    assert usage == {
        "real-last": {"input_tokens": 9},
        "error-last": {"input_tokens": 7},  # a synthetic error's zero is no context size
        "sealed": {"input_tokens": 4},
        "no-reply": None,
    }
